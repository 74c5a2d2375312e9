"""The node-side guard (launcher/node/guard.py) against real process trees on this machine.

Every job gets a unique marker in its environment (inherited by every descendant, new sessions included), so the
tests find what is left of a job by walking /proc themselves instead of trusting the guard's word. Cleanup kills
only the guard (pid + start time from state.json) and processes that carry this test's own marker, by PID.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e_helpers import push_guard_bundle, wait_for

from launcher.node import guard as guard_module

GUARD = Path(guard_module.__file__)
MARKER = "RLAUNCH_GUARD_TEST"
TORCHRUN = Path(sys.executable).parent / "torchrun"

# Long-running job: children in new sessions (one of them two levels deep), writes its first child's pid.
SETSID_JOB = (
    "setsid sleep 300 & echo $! > child.pid; "
    "setsid bash -c 'sleep 301 & sleep 302' & "
    "while true; do echo tick; sleep 0.2; done"
)

# Two gloo ranks that all-reduce forever, so the death of one is noticed by the other.
RANK_SCRIPT = """
import os, time
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
with open("rank%d.pid" % dist.get_rank(), "w") as f:
    f.write(str(os.getpid()))
print("rank", dist.get_rank(), "up", flush=True)
t = torch.zeros(1)
while True:
    dist.all_reduce(t)
    time.sleep(0.2)
"""


def marked_pids(token: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries this job's marker: our own walk of /proc."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if needle in environ and guard_module.is_alive(int(name)):
            found.append(int(name))
    return found


class Job:
    """One guarded job in a temporary RUNDIR."""

    def __init__(self, rundir: Path, argv: list[str], **options: object) -> None:
        self.rundir = rundir
        self.token = uuid.uuid4().hex
        env = {MARKER: self.token, "OMP_NUM_THREADS": "1"}
        env.update(options.pop("env", {}))  # type: ignore[arg-type]
        spec = {"argv": argv, "env": env, "cwd": str(rundir), "heartbeat_timeout": 0, "grace": 1.0}
        spec.update(options)
        (rundir / "job.json").write_text(json.dumps(spec))
        self.followers: list[subprocess.Popen] = []

    def guard(self, command: str, *args: str, timeout: float = 60) -> tuple[int, dict]:
        done = subprocess.run(
            [sys.executable, str(GUARD), command, str(self.rundir), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        lines = done.stdout.strip().splitlines()
        return done.returncode, json.loads(lines[-1]) if lines else {"stderr": done.stderr}

    def start(self) -> dict:
        rc, reply = self.guard("start")
        assert rc == 0, reply
        return reply

    def state(self) -> dict:
        return json.loads((self.rundir / "state.json").read_text())

    def guard_alive(self) -> bool:
        state = self.state()
        return guard_module.is_alive(state["guard_pid"], state["guard_starttime"])

    def wait_finished(self, timeout: float = 60) -> dict:
        wait_for(lambda: not self.guard_alive(), timeout, "the guard to finish")
        return self.state()

    def records(self) -> set[tuple[int, int]]:
        """(pid, starttime) pairs the guard recorded in RUNDIR/pids."""
        return {(pid, start) for pid, start, _ in guard_module.read_records(str(self.rundir))}

    def assert_nothing_left(self) -> None:
        assert not self.guard_alive()
        alive_records = [(pid, start) for pid, start in self.records() if guard_module.is_alive(pid, start)]
        assert alive_records == []
        assert marked_pids(self.token) == []

    def follow(self, *args: str) -> Follower:
        follower = Follower(
            [sys.executable, str(GUARD), "follow", str(self.rundir), *args], stdin_open=not args
        )
        self.followers.append(follower.proc)
        return follower

    def start_follow(self) -> Follower:
        """`guard.py start-follow`: start the guard and stream its records on the same process's stdout."""
        follower = Follower([sys.executable, str(GUARD), "start-follow", str(self.rundir)], stdin_open=True)
        self.followers.append(follower.proc)
        return follower

    def cleanup(self) -> None:
        for proc in self.followers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        try:
            state = self.state()
            if guard_module.is_alive(state["guard_pid"], state["guard_starttime"]):
                os.kill(state["guard_pid"], signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass
        for pid in marked_pids(self.token):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)


class Follower:
    """A `guard.py follow` process whose JSON lines are collected by a thread, so reads never block a test."""

    def __init__(self, argv: list[str], stdin_open: bool) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin_open else subprocess.DEVNULL, stdout=subprocess.PIPE
        )
        self.records: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.records.put(json.loads(raw))
        self.records.put(None)

    def send(self, word: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(word.encode() + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def until(self, match: Callable[[dict], bool], timeout: float = 60) -> list[dict]:
        """All records up to and including the first that matches."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            record = self.records.get(timeout=max(0.1, deadline - time.monotonic()))
            assert record is not None, f"follow ended before the awaited record; saw {seen[-3:]}"
            seen.append(record)
            if match(record):
                return seen


@pytest.fixture
def make_job(tmp_path: Path) -> Iterator[Callable[..., Job]]:
    jobs: list[Job] = []

    def make(argv: list[str], **options: object) -> Job:
        rundir = tmp_path / f"run{len(jobs)}"
        rundir.mkdir()
        jobs.append(Job(rundir, argv, **options))
        return jobs[-1]

    yield make
    for job in jobs:
        job.cleanup()


def recorded_count_at_least(job: Job, n: int) -> Callable[[], bool]:
    return lambda: len(job.records()) >= n


# ------------------------------------------------------------------------------------------------------------
# Shell jobs: fast, cover every path of the guard


def test_stop_kills_children_in_new_sessions_and_double_start_is_refused(
    make_job: Callable[..., Job],
) -> None:
    job = make_job(["bash", "-c", SETSID_JOB])
    reply = job.start()
    assert reply["guard_pid"] != reply["job_pid"]
    rc, refused = job.guard("start")
    assert rc == 3 and "already owns" in refused["error"]

    # bash, sleep 300, bash -c, sleep 301, sleep 302 all seen (plus short-lived tick sleeps)
    wait_for(lambda: len(marked_pids(job.token)) >= 5, 30, "the job tree")
    before = set(marked_pids(job.token))
    rc, status = job.guard("status")
    # A process alive both before and after `status` was alive while it looked (a tick sleep born or gone in
    # between may be missing from one side: the job forks one every few tenths of a second).
    lived_through = before & set(marked_pids(job.token))
    assert rc == 0 and status["alive"] and status["state"] == "running"
    assert len(lived_through) >= 5 and lived_through <= {p["pid"] for p in status["descendants"]}

    rc, final = job.guard("stop", "--grace", "0.5")
    assert rc == 0 and final["state"] == "stopped" and final["remaining"] == []
    job.assert_nothing_left()
    rc, status = job.guard("status")
    assert not status["alive"] and status["descendants"] == []


def test_job_exit_records_code_and_kills_orphans(make_job: Callable[..., Job]) -> None:
    job = make_job(["bash", "-c", "setsid sleep 300 & sleep 0.5; exit 3"])
    job.start()
    final = job.wait_finished()
    assert (final["state"], final["exit_code"], final["signal"]) == ("failed", 3, None)
    job.assert_nothing_left()


def test_job_success(make_job: Callable[..., Job]) -> None:
    job = make_job(["bash", "-c", "echo done"])
    job.start()
    final = job.wait_finished()
    assert (final["state"], final["exit_code"]) == ("succeeded", 0)
    assert (job.rundir / "out.log").read_text() == "done\n"


def test_heartbeat_expiry_tears_down(make_job: Callable[..., Job]) -> None:
    job = make_job(["bash", "-c", SETSID_JOB], heartbeat_timeout=2)
    job.start()
    final = job.wait_finished()
    assert final["state"] == "lost-launcher"
    job.assert_nothing_left()


def test_stop_after_guard_was_sigkilled_uses_recorded_pids(make_job: Callable[..., Job]) -> None:
    job = make_job(["bash", "-c", SETSID_JOB])
    reply = job.start()
    wait_for(recorded_count_at_least(job, 5), 30, "the job tree to be recorded")
    os.kill(reply["guard_pid"], signal.SIGKILL)
    wait_for(lambda: not job.guard_alive(), 10, "the guard to die")
    assert len(marked_pids(job.token)) >= 4  # the orphans really survived their guard

    rc, status = job.guard("status")
    assert status["state"] == "guard-lost" and not status["alive"] and status["descendants"]
    rc, final = job.guard("stop", "--grace", "0.5")
    assert rc == 0 and final["state"] == "stopped" and final["remaining"] == []
    job.assert_nothing_left()


def test_bad_job_json_and_unstartable_job(make_job: Callable[..., Job]) -> None:
    job = make_job([])
    rc, reply = job.guard("start")
    assert rc == 2 and "argv" in reply["error"]

    job = make_job(["/nonexistent/program"])
    rc, reply = job.guard("start")
    assert rc == 1 and "nonexistent" in reply["error"]
    assert job.state()["state"] == "failed"


def test_follow_streams_lines_procs_and_exit(make_job: Callable[..., Job]) -> None:
    job = make_job(["bash", "-c", SETSID_JOB])
    job.start()
    follower = job.follow()
    child = int(wait_for(lambda: (job.rundir / "child.pid").read_text().strip(), 30, "child.pid"))
    os.kill(child, signal.SIGSTOP)
    stopped_seen = follower.until(
        lambda r: r["k"] == "procs" and any(p["pid"] == child and p["state"] == "T" for p in r["procs"])
    )
    # "tick\n" is 5 bytes: wait for a few lines before stopping.
    three_lines = follower.until(lambda r: r["k"] == "line" and r["off"] >= 15)
    follower.send("hb")
    follower.send("stop")
    records = stopped_seen + three_lines + follower.until(lambda r: r["k"] == "exit")
    assert follower.proc.wait(timeout=30) == 0
    assert records[-1]["state"]["state"] == "stopped"
    job.assert_nothing_left()  # the SIGSTOPped child died too

    log = (job.rundir / "out.log").read_bytes()
    lines = [r for r in records if r["k"] == "line"]
    assert len(lines) >= 2
    previous = 0
    for record in lines:
        assert record["off"] > previous
        assert log[previous : record["off"]] == record["text"].encode() + b"\n"
        previous = record["off"]
    assert previous == len(log)  # drained before the exit record

    # Resuming from an offset replays exactly the rest, then the exit record.
    middle = lines[len(lines) // 2]["off"]
    resumed = job.follow("--offset", str(middle)).until(lambda r: r["k"] == "exit")
    assert [r["text"] for r in resumed if r["k"] == "line"] == [r["text"] for r in lines if r["off"] > middle]


def test_start_follow_starts_a_daemon_and_follows_it_on_the_same_channel(
    make_job: Callable[..., Job],
) -> None:
    """`start-follow` (a foreground run's one channel per node): a "started" record naming a guard that is not the
    channel's process (a daemon in its own session, as `start` makes), the job's lines from offset 0, heartbeats
    read from the same stdin (beats sent before it follows wait in the pipe), and its exit record; the stop word
    ends the job and nothing is left. A second start-follow while the guard lives is refused as a record."""
    job = make_job(["bash", "-c", SETSID_JOB], heartbeat_timeout=2)
    follower = job.start_follow()
    follower.send("hb")  # sent at once by the head: waits in the pipe until the start follows
    started = follower.until(lambda r: r["k"] == "started")[-1]
    guard_pid = started["guard_pid"]
    assert guard_pid != follower.proc.pid and job.state()["guard_pid"] == guard_pid
    assert os.getsid(guard_pid) != os.getsid(
        follower.proc.pid
    )  # a daemon in its own session, as `start` makes
    for _ in range(12):  # 3 s of beats on the same channel: longer than heartbeat_timeout
        follower.send("hb")
        time.sleep(0.25)
    lines = follower.until(lambda r: r["k"] == "line" and r["off"] >= 15)
    assert lines[0]["k"] == "line" and lines[0]["text"] == "tick"  # from offset 0
    assert job.guard_alive() and job.state()["state"] == "running"

    again = job.start_follow()
    refused = again.until(lambda r: r["k"] == "error")[-1]
    assert f"a live guard (pid {guard_pid}) already owns" in refused["error"]
    assert again.proc.wait(timeout=30) == 3  # protocol.EXIT_INFRA

    follower.send("stop")
    assert follower.until(lambda r: r["k"] == "exit")[-1]["state"]["state"] == "stopped"
    assert follower.proc.wait(timeout=30) == 0
    job.assert_nothing_left()


def test_start_follow_reports_a_bad_job_json_as_a_record(make_job: Callable[..., Job]) -> None:
    follower = make_job([]).start_follow()
    error = follower.until(lambda r: r["k"] == "error")[-1]
    assert "argv" in error["error"]
    assert follower.proc.wait(timeout=30) == 2  # protocol.EXIT_BAD_INPUT


def test_follower_keeps_job_alive_until_its_stdin_closes(make_job: Callable[..., Job]) -> None:
    job = make_job(["bash", "-c", SETSID_JOB], heartbeat_timeout=2)
    job.start()
    follower = job.follow()
    for _ in range(12):  # 3 s of heartbeats: longer than heartbeat_timeout
        follower.send("hb")
        time.sleep(0.25)
    assert job.guard_alive() and job.state()["state"] == "running"
    follower.close_stdin()
    exit_record = follower.until(lambda r: r["k"] == "exit")[-1]
    assert exit_record["state"]["state"] == "lost-launcher"
    # The guard says which sign it went by: here the head's end of the connection closed.
    assert "the head's connection closed" in exit_record["state"]["reason"]
    assert follower.proc.wait(timeout=30) == 0
    job.assert_nothing_left()


def test_silent_open_connection_is_judged_by_missed_beats(make_job: Callable[..., Job]) -> None:
    """Beats stop while the follower's stdin stays open (a stalled head): lost after the timeout, said so."""
    job = make_job(["bash", "-c", SETSID_JOB], heartbeat_timeout=2)
    job.start()
    follower = job.follow()
    follower.send("hb")
    exit_record = follower.until(lambda r: r["k"] == "exit")[-1]
    reason = exit_record["state"]["reason"]
    assert exit_record["state"]["state"] == "lost-launcher"
    assert "beats missed" in reason and "connection stayed open" in reason
    follower.close_stdin()
    assert follower.proc.wait(timeout=30) == 0
    job.assert_nothing_left()


def test_follower_reads_heartbeats_while_its_output_is_not_read(make_job: Callable[..., Job]) -> None:
    """A head slow to read the records (the follower's stdout pipe full) still keeps its guard: the follower reads
    the head's words in a thread of its own."""
    job = make_job(["bash", "-c", "yes tick-tick-tick | head -c 2000000; sleep 300"], heartbeat_timeout=2)
    job.start()
    wait_for(lambda: (job.rundir / "out.log").stat().st_size >= 2000000, 30, "the job's output")
    # Never read: 2 MB of lines fill the pipe (64 KiB, pipe(7)) and block the follower's writes.
    follower = subprocess.Popen(
        [sys.executable, str(GUARD), "follow", str(job.rundir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    job.followers.append(follower)
    assert follower.stdin is not None
    for _ in range(16):  # 4 s of heartbeats: twice heartbeat_timeout
        follower.stdin.write(b"hb\n")
        follower.stdin.flush()
        time.sleep(0.25)
    assert job.guard_alive() and job.state()["state"] == "running"
    assert follower.poll() is None  # still blocked writing, not ended
    rc, final = job.guard("stop", "--grace", "0.5")
    assert rc == 0 and final["state"] == "stopped"
    follower.kill()
    follower.wait(timeout=30)
    job.assert_nothing_left()


def test_log_tail_truncates_long_lines_and_keeps_offsets(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    long_line = b"x" * 20000
    log.write_bytes(b"a\n" + long_line + b"\nb\xff\npart")
    tail = guard_module.LogTail(str(log), 0)
    got = tail.read()
    assert [text for _, text in got] == ["a", "x" * guard_module.MAX_LINE_BYTES, "b\ufffd"]
    assert got[-1][0] == len(log.read_bytes()) - len(b"part")
    assert tail.read(final=True) == [(len(log.read_bytes()), "part")]


# ------------------------------------------------------------------------------------------------------------
# Real torchrun (gloo on CPU): workers run in their own sessions, which is what the guard exists for

needs_torchrun = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed in this venv")


def torchrun_job(make_job: Callable[..., Job], **options: object) -> Job:
    job = make_job([str(TORCHRUN), "--standalone", "--nproc_per_node", "2", "rank.py"], **options)
    (job.rundir / "rank.py").write_text(RANK_SCRIPT)
    return job


def rank_pids(job: Job, timeout: float = 180) -> list[int]:
    """Wait until both ranks have joined the process group; their pids."""

    def both() -> list[int] | None:
        files = [job.rundir / f"rank{r}.pid" for r in (0, 1)]
        if all(f.exists() and f.read_text() for f in files):
            return [int(f.read_text()) for f in files]
        return None

    pids = wait_for(both, timeout, "both ranks to join")
    wait_for(
        lambda: {(p, guard_module.read_stat(p)["starttime"]) for p in pids} <= job.records(), 10, "records"
    )
    return pids  # type: ignore[return-value]


@pytest.mark.slow
@needs_torchrun
def test_torchrun_stop_with_a_sigstopped_rank(make_job: Callable[..., Job]) -> None:
    job = torchrun_job(make_job)
    job.start()
    ranks = rank_pids(job)
    os.kill(ranks[1], signal.SIGSTOP)
    wait_for(lambda: guard_module.read_stat(ranks[1])["state"] == "T", 10, "rank 1 to stop")
    rc, final = job.guard("stop", "--grace", "1")
    assert rc == 0 and final["state"] == "stopped"
    job.assert_nothing_left()


@pytest.mark.slow
@needs_torchrun
def test_torchrun_rank_killed_fails_the_job(make_job: Callable[..., Job]) -> None:
    job = torchrun_job(make_job)
    job.start()
    ranks = rank_pids(job)
    os.kill(ranks[0], signal.SIGKILL)
    final = job.wait_finished(timeout=120)
    assert final["state"] == "failed" and final["exit_code"] not in (None, 0)
    job.assert_nothing_left()


@pytest.mark.slow
@needs_torchrun
def test_torchrun_heartbeat_expiry(make_job: Callable[..., Job]) -> None:
    job = torchrun_job(make_job, heartbeat_timeout=2)
    job.start()
    heartbeat = job.rundir / "heartbeat"
    # Stand in for the follower while torch imports (slow on a shared machine), then fall silent.
    beating = threading.Event()
    beating.set()

    def beat() -> None:
        while beating.is_set():
            os.utime(heartbeat, None)
            time.sleep(0.3)

    threading.Thread(target=beat, daemon=True).start()
    try:
        rank_pids(job)
    finally:
        beating.clear()
    final = job.wait_finished()
    assert final["state"] == "lost-launcher"
    job.assert_nothing_left()


@pytest.mark.slow
@needs_torchrun
def test_torchrun_guard_sigkilled_then_stop(make_job: Callable[..., Job]) -> None:
    job = torchrun_job(make_job)
    reply = job.start()
    ranks = rank_pids(job)
    os.kill(reply["guard_pid"], signal.SIGKILL)
    wait_for(lambda: not job.guard_alive(), 10, "the guard to die")
    assert all(guard_module.is_alive(pid) for pid in ranks)  # orphaned ranks keep running without a guard
    rc, final = job.guard("stop", "--grace", "1")
    assert rc == 0 and final["remaining"] == []
    job.assert_nothing_left()


def test_guard_is_standard_library_only() -> None:
    """The guard runs with the node's bare python: it must import nothing of ours nor third-party."""
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(GUARD), "--help"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    assert shutil.which("bash")  # the shell jobs above need it


# ------------------------------------------------------------------------------------------------------------
# The tree walk: once a node, and only when something new was created (issue 22: 64 simulated nodes spent most
# of their CPU walking one shared /proc, twice a second a node)


def test_the_tree_is_walked_again_only_after_a_process_was_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's last handed-out PID (faked: the layer below) unchanged means nothing new on the node: the guard
    re-reads its known members instead of every process's stat; a member that ended drops out; a changed counter
    walks again and finds the newcomer. Every result also lands in procs.json for the followers."""
    from launcher.node import daemon
    from launcher.node import procs as proctab
    from launcher.node import rundir as rd

    (tmp_path / "job.json").write_text(json.dumps({"argv": ["true"], "cwd": str(tmp_path)}))
    guard = daemon.Guard(str(tmp_path), rd.load_job(str(tmp_path)))  # this test process is the "guard"
    counter = {"last": 100}
    monkeypatch.setattr(proctab, "last_pid", lambda: counter["last"])
    walks = {"n": 0}
    real_walk = proctab.all_stats

    def counted() -> list:
        walks["n"] += 1
        return real_walk()

    monkeypatch.setattr(proctab, "all_stats", counted)
    first = subprocess.Popen(["sleep", "60"])
    second = None
    try:
        assert first.pid in [st["pid"] for st in guard.record_tree()] and walks["n"] == 1
        assert (
            first.pid in [st["pid"] for st in guard.record_tree()] and walks["n"] == 1
        )  # nothing new: no walk
        first.kill()
        first.wait()
        assert first.pid not in [st["pid"] for st in guard.record_tree()] and walks["n"] == 1
        second = subprocess.Popen(["sleep", "60"])
        counter["last"] = 101
        assert second.pid in [st["pid"] for st in guard.record_tree()] and walks["n"] == 2
        me = proctab.read_stat(os.getpid())
        assert me is not None
        snapshot = rd.read_procs(str(tmp_path), (os.getpid(), me["starttime"]), 5.0)
        # (this process's other children, a pytest worker's, may be in it too)
        assert snapshot is not None
        assert second.pid in [st["pid"] for st in snapshot] and first.pid not in [
            st["pid"] for st in snapshot
        ]
        assert {first.pid, second.pid} <= {pid for pid, _, _ in guard.records}  # both recorded for `stop`
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_follower_trusts_only_its_own_guards_fresh_snapshot(tmp_path: Path) -> None:
    """procs.json names its guard and its time: another guard's, an old one or a malformed one is no answer (the
    follower walks /proc itself); a listed pid now held by another process (a different start time) is left out."""
    from launcher.node import procs as proctab
    from launcher.node import rundir as rd

    child = subprocess.Popen(["sleep", "60"])
    try:
        st = proctab.read_stat(child.pid)
        me = proctab.read_stat(os.getpid())
        assert st is not None and me is not None
        guard = (os.getpid(), me["starttime"])
        reused = dict(
            st, pid=os.getpid(), starttime=me["starttime"] + 1
        )  # our pid, another start: a reused pid
        rd.write_procs(str(tmp_path), guard, [st, reused])
        assert [p["pid"] for p in rd.read_procs(str(tmp_path), guard, 5.0) or []] == [child.pid]
        assert rd.read_procs(str(tmp_path), (os.getpid(), me["starttime"] + 1), 5.0) is None  # another guard
        data = json.loads((tmp_path / rd.PROCS_SNAPSHOT).read_text())
        (tmp_path / rd.PROCS_SNAPSHOT).write_text(json.dumps(dict(data, t=data["t"] - 60)))
        assert rd.read_procs(str(tmp_path), guard, 5.0) is None  # 60 s old: the guard stopped walking
        for bad in ([[1, 0]], [["x", 1]], [[child.pid]], "all"):
            (tmp_path / rd.PROCS_SNAPSHOT).write_text(json.dumps(dict(data, procs=bad)))
            assert rd.read_procs(str(tmp_path), guard, 5.0) is None, bad
    finally:
        child.kill()
        child.wait()


def test_the_guard_loads_its_rule_table_only_after_answering_start(tmp_path: Path) -> None:
    """Loading the health rules costs a node a quarter CPU-second (docs/scale.md): the guard answers `start` first,
    so the table is off every node's "started", then turns edge health on (daemon.Guard.load_edge)."""
    import inspect

    from launcher.node import daemon
    from launcher.node import rundir as rd

    push_guard_bundle(tmp_path)
    (tmp_path / "job.json").write_text(
        json.dumps({"argv": ["true"], "cwd": str(tmp_path), "edge": {"stall_timeout": 30}})
    )
    guard = daemon.Guard(str(tmp_path), rd.load_job(str(tmp_path)))
    assert guard.edge is None  # not loaded while the node has yet to report started
    guard.load_edge()
    assert guard.edge is not None and guard.edge.on_bad_line is rd.log
    body = inspect.getsource(daemon.daemon_main)
    assert body.index('reply({"guard_pid"') < body.index("guard.load_edge()") < body.index("guard.run()")
