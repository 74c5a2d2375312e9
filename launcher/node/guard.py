"""Node-side guard: owns a job's whole process tree so that nothing is left behind.

Pushed to every node and run with the node's own Python (standard library only, Linux, Python >= 3.8):

    python guard.py start  RUNDIR              daemonize, run job.json's argv, print {"guard_pid", "job_pid"}
    python guard.py run    RUNDIR              start without leaving the caller's session (a child, not a daemon),
                                               print a "started" record, then follow (for srun steps)
    python guard.py follow RUNDIR [--offset N]  stream out.log lines, process lists and the final state as JSON lines
    python guard.py stop   RUNDIR [--grace S]   tear the job down, print the final state; exit 0 if nothing remains
    python guard.py status RUNDIR               print {"state", "alive", "descendants"}

Files in RUNDIR: job.json (input), guard.pid, guard.lock (flock held by the live guard), state.json (atomic),
out.log (job stdout+stderr), guard.log, heartbeat (mtime touched by the follower), pids (append-only
"PID STARTTIME" lines of every descendant seen, so `stop` can find them after the guard itself was SIGKILLed).

Why a subreaper: torchrun starts its workers with start_new_session=True (pytorch/pytorch
torch/distributed/elastic/multiprocessing/subprocess_handler/subprocess_handler.py), so killing torchrun's process
group misses them. With PR_SET_CHILD_SUBREAPER (prctl(2), value 36 in include/uapi/linux/prctl.h) every orphaned
descendant is reparented to the guard, so walking the ppid tree from the guard finds them all.

Processes are never matched by name: only by pid, and pids read back from disk only together with their start
time (field 22 of /proc/PID/stat, proc(5)) so that a reused pid is never signalled.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

if __package__:  # imported by the head or tests as launcher.node.guard
    from launcher.node import gpuact, protocol, stopreq
else:  # run as a script from the run directory, where protocol.py is pushed beside it (named explicitly:
    # `python -I` or PYTHONSAFEPATH leave the script's directory off sys.path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import protocol  # type: ignore[no-redef]

    try:
        import gpuact  # type: ignore[no-redef]
    except ImportError:  # a run directory pushed by an older rlaunch: no GPU activity, the CPU/IO rule alone
        gpuact = None  # type: ignore[assignment]
    try:  # stop requests (rlaunch stop --save, docs/preemption.md); absent in run dirs of an older rlaunch
        import stopreq  # type: ignore[no-redef]
    except ImportError:
        stopreq = None  # type: ignore[assignment]

HEAD_CLOSED = "head_closed"  # touched by a heartbeating follower whose stdin closed: the head's end went away
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INFRA = (
    protocol.EXIT_OK,
    protocol.EXIT_FAILED,
    protocol.EXIT_BAD_INPUT,
    protocol.EXIT_INFRA,
)
RUNNING, SUCCEEDED, FAILED, STOPPED = protocol.RUNNING, protocol.SUCCEEDED, protocol.FAILED, protocol.STOPPED
LOST_LAUNCHER, GUARD_LOST = protocol.LOST_LAUNCHER, protocol.GUARD_LOST

PR_SET_CHILD_SUBREAPER = 36
MAX_LINE_BYTES = 8192
CMD_CHARS = 200
PROCS_EVERY_S = 1.0
RECORD_EVERY_S = 1.0
START_REPLY_TIMEOUT_S = 60.0
NODE_LOCK_WAIT_S = 10.0
STATE_WAIT_S = 10.0
KILL_ROUNDS = (
    50  # SIGKILL rounds after the grace period; bounds teardown against unkillable (D-state) processes
)

# Edge health (edge.py, pushed beside this file with the head's rules.py): the key of the guard's own decision in
# state.json and in the follower's exit record.
EDGE_FILE = "edge.py"
EDGE_KEY = "edge"
# Follower record: per-local-rank line counts, last progress and the consumed offset (edge.Forwarder), sent instead
# of the healthy lines the terminal does not show.
ACTIVITY = protocol.K_ACTIVITY


# ------------------------------------------------------------------------------------------------------------
# /proc


def read_stat(pid: int) -> dict | None:
    """Parse /proc/PID/stat; None if the process is gone. comm may hold spaces and ')' so split at the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    close = raw.rfind(")")
    fields = raw[close + 2 :].split()
    # fields[0] is stat field 3 (state), so stat field N is fields[N - 3].
    return {
        "pid": pid,
        "comm": raw[raw.find("(") + 1 : close],
        "state": fields[0],
        "ppid": int(fields[1]),
        "pgrp": int(fields[2]),
        "session": int(fields[3]),
        "starttime": int(fields[19]),
    }


def all_stats() -> list:
    stats = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = read_stat(int(name))
            if st is not None:
                stats.append(st)
    return stats


def cmdline(pid: int, comm: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        raw = b""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return (text or f"[{comm}]")[:CMD_CHARS]


def valid_pid(value: object) -> bool:
    """A PID we may ever signal: an int above 1 (kill(1) or kill(-1) would hit init or every process we can)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 1


def valid_start(value: object) -> bool:
    """A start time as /proc/PID/stat field 22 gives it (clock ticks since boot)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_alive(pid: int, starttime: int | None = None) -> bool:
    """True if pid runs (zombies count as dead) and, when given, was started at `starttime`. Anything that may
    lead to a signal passes the start time (guard_identity never returns a pid without one): pids are reused."""
    if not valid_pid(pid):
        return False
    st = read_stat(pid)
    if st is None or st["state"] in ("Z", "X"):
        return False
    return starttime is None or st["starttime"] == starttime


def tree_of(roots: list, stats: list) -> list:
    """The stats of all descendants of `roots` (not the roots themselves), new sessions included."""
    children: dict = {}
    for st in stats:
        children.setdefault(st["ppid"], []).append(st)
    found, todo, seen = [], list(roots), set(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child["pid"] not in seen:
                seen.add(child["pid"])
                found.append(child)
                todo.append(child["pid"])
    return found


def job_processes(root_pids: list, records: set) -> list:
    """What is left of a job: descendants of live `root_pids`, plus whatever still matches `records`.

    `records` holds (pid, starttime, sid) triples (sid may be None). A record matches a live process only with the
    same start time, so a reused pid never does. Without a guard, a process can escape the tree: a dying parent
    forks a child that is reparented to init. It stays in its session, though, so members of a recorded session
    count too, if they started no earlier than the job and the session's leader is dead or still the recorded
    process (a leader pid reused by a stranger makes that session untrusted).
    """
    stats = all_stats()
    by_pid = {st["pid"]: st for st in stats}
    pairs = {(pid, start) for pid, start, _ in records}
    matched = [pid for pid, st in by_pid.items() if (pid, st["starttime"]) in pairs]
    sessions = set()
    for pid, start, sid in records:
        leader = by_pid.get(pid)
        if sid == pid and (leader is None or leader["starttime"] == start):
            sessions.add(sid)
    if sessions:
        earliest = min(start for _, start, _ in records)
        matched += [st["pid"] for st in stats if st["session"] in sessions and st["starttime"] >= earliest]
    result = {st["pid"]: st for st in tree_of(list(root_pids) + matched, stats)}
    for pid in matched:
        result[pid] = by_pid[pid]
    for pid in root_pids:
        result.pop(pid, None)
    return sorted(result.values(), key=lambda st: st["pid"])


def describe(procs: list) -> list:
    return [
        {"pid": st["pid"], "ppid": st["ppid"], "state": st["state"], "cmd": cmdline(st["pid"], st["comm"])}
        for st in procs
    ]


CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_RANKS: dict = {}  # (pid, starttime) -> global rank, read once from /proc/PID/environ
_GPU_ENV: dict = {}  # (pid, starttime) -> the rank's GPU visibility variables, read with its rank


def rank_of(st: dict) -> int | None:
    """The RANK a launcher (torchrun, DeepSpeed) gave this process, read from its environment once found.

    "No rank" is never cached: between fork and exec a new process still shows its parent's environment (and
    keeps its start time across exec), so a rank seen that early would otherwise stay rank-less for good."""
    key = (st["pid"], st["starttime"])
    if key not in _RANKS:
        try:
            with open("/proc/{}/environ".format(st["pid"]), "rb") as f:
                env = {}
                for item in f.read().split(b"\0"):
                    name, _, value = item.partition(b"=")
                    if name == b"RANK" and value.isdigit():
                        _RANKS[key] = int(value)
                    elif name.decode("ascii", "replace") in GPU_ENV_NAMES:
                        env[name.decode()] = value.decode("utf-8", "replace")
                if key in _RANKS:
                    _GPU_ENV[key] = env
        except OSError:
            pass
    return _RANKS.get(key)


GPU_ENV_NAMES = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "LOCAL_RANK")


def gpu_index_of(st: dict) -> int | None:
    """The physical GPU a rank process computes on (gpuact.device_of over its environment), once its rank is known."""
    env = _GPU_ENV.get((st["pid"], st["starttime"]))
    return None if env is None or gpuact is None else gpuact.device_of(env)


def usage(st: dict) -> dict:
    """Additive fields of a procs record for the launcher's hang and straggler rules: the rank, cumulative CPU
    seconds (utime + stime, stat fields 14-15) and bytes read + written through any file or socket (rchar + wchar
    of /proc/PID/io; proc(5)). A rank whose counters stand still is idle: asleep or blocked in a collective."""
    out: dict = {"rank": rank_of(st)}
    if out["rank"] is None:
        return out
    out["start"] = st[
        "starttime"
    ]  # the stack collector re-checks it before py-spy attaches (PIDs are reused)
    try:
        with open("/proc/{}/stat".format(st["pid"]), "rb") as f:
            raw = f.read().decode("utf-8", "replace")
        fields = raw[raw.rfind(")") + 2 :].split()
        out["cpu"] = (int(fields[11]) + int(fields[12])) / CLK_TCK
        with open("/proc/{}/io".format(st["pid"])) as f:
            io = dict(line.split(":", 1) for line in f if ":" in line)
        out["io"] = int(io["rchar"]) + int(io["wchar"])
    except (OSError, ValueError, KeyError, IndexError):
        pass
    return out


def describe_with_usage(procs: list) -> list:
    return [dict(describe([st])[0], **usage(st)) for st in procs]


def signal_pid(pid: int, sig: int) -> None:
    if not valid_pid(pid):
        return
    with contextlib.suppress(OSError):  # already gone, or not ours to signal: nothing more to do
        os.kill(pid, sig)


def signal_same(pid: int, starttime: int, sig: int) -> bool:
    """Signal pid only if it is still the process that started at `starttime`. A pidfd pins the process between
    the check and the signal, so a pid reused in between is never hit; without pidfds the window is one read."""
    if not (valid_pid(pid) and valid_start(starttime)):
        return False
    fd = None
    with contextlib.suppress(AttributeError, OSError):
        fd = os.pidfd_open(pid)
    try:
        if not is_alive(pid, starttime):
            return False
        if fd is not None:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
        return True
    except OSError:
        return False
    finally:
        if fd is not None:
            os.close(fd)


# ------------------------------------------------------------------------------------------------------------
# Files in RUNDIR


def path_in(rundir: str, name: str) -> str:
    return os.path.join(rundir, name)


def open_nofollow(path: str, flags: int, mode: int = 0o600) -> int:
    """os.open that never follows a symlink at `path` (a link planted there would redirect our writes)."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def write_json_atomic(path: str, data: dict) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover of a crashed writer with our pid; O_EXCL below refuses anything there
    with os.fdopen(open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w") as f:
        json.dump(data, f)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: str) -> dict | None:
    try:
        with os.fdopen(open_nofollow(path, os.O_RDONLY)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_records(rundir: str) -> set:
    """The (pid, starttime, sid) triples appended to RUNDIR/pids ("PID STARTTIME SID" lines; SID optional)."""
    records = set()
    try:
        with os.fdopen(open_nofollow(path_in(rundir, "pids"), os.O_RDONLY)) as f:
            for line in f:
                parts = line.split()
                if len(parts) in (2, 3) and all(part.isdigit() for part in parts):
                    pid, start = int(parts[0]), int(parts[1])
                    sid = int(parts[2]) if len(parts) == 3 else None
                    if valid_pid(pid):  # pid 1, 0 or no start time: never ours to kill
                        records.add((pid, start, sid if valid_pid(sid) else None))
    except OSError:
        pass
    return records


def record_of(st: dict) -> tuple:
    return st["pid"], st["starttime"], st["session"]


def append_records(rundir: str, records: list) -> None:
    with os.fdopen(open_nofollow(path_in(rundir, "pids"), os.O_WRONLY | os.O_CREAT | os.O_APPEND), "w") as f:
        f.write("".join(f"{pid} {start} {sid}\n" for pid, start, sid in records))


def touch(path: str) -> None:
    os.close(open_nofollow(path, os.O_WRONLY | os.O_CREAT))
    os.utime(path, None)


def load_job(rundir: str) -> dict:
    """job.json with defaults; raises ValueError with a readable message when it is unusable."""
    job = read_json(path_in(rundir, "job.json"))
    if not isinstance(job, dict):
        raise ValueError("{} is missing or not a JSON object".format(path_in(rundir, "job.json")))
    argv = job.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("job.json: argv must be a non-empty list of strings")
    env = job.get("env") or {}
    if not isinstance(env, dict):
        raise ValueError("job.json: env must be an object")
    try:
        return {
            "argv": argv,
            "env": {str(k): str(v) for k, v in env.items()},
            "cwd": job.get("cwd") or rundir,
            "heartbeat_timeout": float(job.get("heartbeat_timeout") or 0),
            "grace": float(job.get("grace", 10)),
            "poll_interval": float(job.get("poll_interval") or 0.2),
            EDGE_KEY: job.get(EDGE_KEY) if isinstance(job.get(EDGE_KEY), dict) else None,
            "node_lock": job.get("node_lock") if isinstance(job.get("node_lock"), str) else None,
            "run_id": job.get("run_id") if isinstance(job.get("run_id"), str) else None,
        }
    except (TypeError, ValueError) as e:
        raise ValueError(f"job.json: {e}") from e


def guard_identity(rundir: str) -> tuple:
    """(guard_pid, guard_starttime, state dict) from state.json; (None, None, None) if there is none yet.

    The pid and start time come back only when both are well-formed (ints, pid above 1): a record without its
    start time, or a tampered one, must never name a process to signal. The state is still returned."""
    state = read_json(path_in(rundir, "state.json"))
    if not isinstance(state, dict):
        return None, None, None
    pid, start = state.get("guard_pid"), state.get("guard_starttime")
    if not (valid_pid(pid) and valid_start(start)):
        return None, None, state
    return pid, start, state


def guard_alive(rundir: str) -> bool:
    pid, start, _ = guard_identity(rundir)
    return pid is not None and is_alive(pid, start)


# ------------------------------------------------------------------------------------------------------------
# The daemon


def log(msg: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} guard[{os.getpid()}]: {msg}\n")
    sys.stderr.flush()


class Guard:
    """The daemonized owner of one job: spawns it, records its tree, reaps, and tears everything down."""

    def __init__(self, rundir: str, job: dict) -> None:
        self.rundir = rundir
        self.job = job
        self.pid = os.getpid()
        self.stop_requested = False
        self.records: set = set()
        self.job_pid: int | None = None
        self.job_status: int | None = None  # raw waitpid status of the job's main process
        self.state: dict = {
            "state": RUNNING,
            "guard_pid": self.pid,
            "guard_starttime": read_stat(self.pid)["starttime"],
            "job_pid": None,
            "job_pgid": None,
            "job_sid": None,
            "exit_code": None,
            "signal": None,
            "started_at": time.time(),
            "ended_at": None,
            "reason": None,
        }
        # Kept open for the guard's life: appended to on every poll.
        self.pids_file = os.fdopen(
            open_nofollow(path_in(rundir, "pids"), os.O_WRONLY | os.O_CREAT | os.O_APPEND), "w"
        )
        self.edge = load_edge(rundir, job)
        if self.edge is not None:
            self.edge.on_bad_line = log
        self.procs: list = []

    def on_stop_signal(self, signum: int, _frame: object) -> None:
        self.stop_requested = True

    def spawn(self) -> None:
        if self.job["heartbeat_timeout"] > 0:
            touch(path_in(self.rundir, "heartbeat"))  # the follower connects only after `start` has returned
        env = dict(os.environ)
        env.update(self.job["env"])
        env["PYTHONUNBUFFERED"] = "1"
        out_fd = open_nofollow(path_in(self.rundir, "out.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        with os.fdopen(out_fd, "ab", buffering=0) as out:
            # start_new_session: the job gets its own session and process group, away from the guard's signals.
            proc = subprocess.Popen(
                self.job["argv"],
                cwd=self.job["cwd"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        # The guard reaps with waitpid(-1); keep Popen from ever waiting on the pid itself.
        proc.returncode = 0
        self.job_pid = proc.pid
        self.state.update(job_pid=proc.pid, job_pgid=proc.pid, job_sid=proc.pid)
        self.record_tree()
        self.write_state()

    def write_state(self) -> None:
        write_json_atomic(path_in(self.rundir, "state.json"), self.state)

    def record_tree(self) -> list:
        """Append newly seen descendants to RUNDIR/pids; return the current descendants."""
        # With the subreaper every descendant is in the tree; the records matter only if prctl failed.
        procs = job_processes([self.pid], self.records)
        fresh = [record_of(st) for st in procs if record_of(st) not in self.records]
        if fresh:
            self.pids_file.write("".join(f"{pid} {start} {sid}\n" for pid, start, sid in fresh))
            self.pids_file.flush()
            self.records.update(fresh)
        return procs

    def reap(self) -> None:
        """Collect every exited child (we are a subreaper, so orphans land here too); note the job's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            if pid == self.job_pid and self.job_status is None:
                self.job_status = status
                if os.WIFSIGNALED(status):
                    self.state["signal"] = os.WTERMSIG(status)
                else:
                    self.state["exit_code"] = os.WEXITSTATUS(status)
                log(f"job {pid} ended: exit_code={self.state['exit_code']} signal={self.state['signal']}")

    def heartbeat_expired(self) -> bool:
        return self.head_lost() is not None

    def head_lost(self) -> str | None:
        """Why the head counts as gone, or None. Two signs, told apart in the reason: the follower saw the head's
        end of the connection close (RUNDIR/head_closed newer than the last beat), or beats stopped while the
        connection stayed open (a stalled head or a silent network). Either way the guard waits the whole
        heartbeat_timeout since the last beat, BEATS_PER_TIMEOUT beats: a late beat or a follower that
        reconnects is never taken for a lost head."""
        timeout = self.job["heartbeat_timeout"]
        if timeout <= 0:
            return None
        now = time.time()
        try:
            beat = os.stat(path_in(self.rundir, "heartbeat")).st_mtime
        except OSError:
            return "no heartbeat file: the head never followed"
        age = now - beat
        if age <= timeout:
            return None
        try:
            closed: float | None = os.stat(path_in(self.rundir, HEAD_CLOSED)).st_mtime
        except OSError:
            closed = None
        if closed is not None and closed >= beat:
            return f"the head's connection closed {now - closed:.1f} s ago; no heartbeat for {age:.1f} s (timeout {timeout:g} s)"
        missed = int(age * protocol.BEATS_PER_TIMEOUT / timeout)
        return (
            f"no heartbeat for {age:.1f} s ({missed} beats missed, timeout {timeout:g} s) while the head's connection stayed open: "
            "the head stalled or the network went silent"
        )

    def grace(self) -> float:
        override = read_json(path_in(self.rundir, "stop_request.json"))
        if self.stop_requested and isinstance(override, dict) and override.get("grace") is not None:
            return float(override["grace"])
        return self.job["grace"]

    def run(self) -> None:
        poll = self.job["poll_interval"]
        next_record = 0.0
        while True:
            self.reap()
            if time.time() >= next_record:
                # A full /proc walk costs a few ms on a busy node: not every poll. Teardown walks every round.
                self.procs = self.record_tree()
                next_record = time.time() + RECORD_EVERY_S
            if self.stop_requested:
                self.finish(STOPPED, "guard received SIGTERM/SIGINT")
                return
            if self.job_status is not None:
                state = SUCCEEDED if self.state["exit_code"] == 0 else FAILED
                self.finish(state, "job exited")
                return
            late = self.stop_hook()
            if late is not None:
                self.finish(STOPPED, late)
                return
            lost = self.head_lost()
            if lost is not None:
                self.finish(LOST_LAUNCHER, lost)
                return
            decision = self.edge_decision()
            if decision is not None:
                self.state[EDGE_KEY] = decision
                self.finish(FAILED, decision["reason"])
                return
            time.sleep(poll)

    def stop_hook(self) -> str | None:
        """A stop request (stopreq.py): signal the ranks that catch the job's stop signal; after its deadline,
        the reason to tear down."""
        if stopreq is None:
            return None
        entry, late = stopreq.poll(self.rundir, self.procs, self.job, time.time(), signal_same)
        if entry is not None:
            self.state[stopreq.KEY] = entry
            self.write_state()
        return late

    def edge_decision(self) -> dict | None:
        """The node-local health rules (edge.py): a decision to tear this node down, or None."""
        if self.edge is None:
            return None
        try:
            return self.edge.check(time.time(), self.procs)
        except Exception:  # a bug in the rules must not take the job down: the head still watches
            log("edge health disabled after an error:\n" + traceback.format_exc())
            self.edge = None
            return None

    def finish(self, state: str, reason: str) -> None:
        log(f"tearing down: {state} ({reason})")
        signalled, survivors = self.teardown(self.grace())
        if signalled:
            reason += f"; signalled {signalled} remaining process(es)"
        if survivors:
            reason += f"; {len(survivors)} process(es) would not die: {survivors}"
        self.reap()
        self.state.update(state=state, reason=reason, ended_at=time.time())
        self.write_state()
        log(f"final state {json.dumps(self.state)}")

    def teardown(self, grace: float) -> tuple:
        """SIGTERM+SIGCONT every descendant, SIGKILL survivors after `grace`: (signalled, pids that never died).

        Zombies count as remaining until reaped: their parents are in the tree and die too, which reparents the
        zombies to us, and reaping them is ours to do."""

        def remaining() -> list:
            self.reap()
            return self.record_tree()

        return terminate(remaining, grace, poll=min(self.job["poll_interval"], 0.1))


def terminate(remaining, grace: float, poll: float = 0.1) -> tuple:
    """The one teardown loop (the guard's own, and `stop`'s after the guard died): SIGTERM+SIGCONT each process
    that `remaining()` lists once (a stopped process acts on SIGTERM only once continued), SIGKILL what is left
    after `grace`, for at most KILL_ROUNDS rounds. Every signal goes through `signal_same`, so a pid reused
    meanwhile is never hit. Returns (how many processes were signalled, pids that never died)."""
    termed: set = set()
    deadline = time.time() + grace
    while True:
        procs = remaining()
        if not procs:
            return len(termed), []
        for st in procs:
            key = (st["pid"], st["starttime"])
            if st["state"] != "Z" and key not in termed:
                termed.add(key)
                signal_same(st["pid"], st["starttime"], signal.SIGTERM)
                signal_same(st["pid"], st["starttime"], signal.SIGCONT)
        if time.time() >= deadline:
            break
        time.sleep(poll)
    for _ in range(KILL_ROUNDS):
        procs = remaining()
        if not procs:
            return len(termed), []
        for st in procs:
            if st["state"] != "Z":
                signal_same(st["pid"], st["starttime"], signal.SIGKILL)
        time.sleep(poll)
    return len(termed), [st["pid"] for st in remaining()]


def edge_module(rundir: str):
    """RUNDIR/edge.py as a module, or None when it was not pushed (an older run directory)."""
    path = path_in(rundir, EDGE_FILE)
    if not os.path.isfile(path):
        return None
    import importlib.util

    spec = importlib.util.spec_from_file_location("rlaunch_edge", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rlaunch_edge"] = module
    spec.loader.exec_module(module)
    return module


def load_edge(rundir: str, job: dict):
    """RUNDIR/edge.py's EdgeHealth for this job, or None (not pushed, switched off, or it does not load)."""
    if not job.get(EDGE_KEY):
        return None
    try:
        module = edge_module(rundir)
        edge = None if module is None else module.make(rundir, job)
    except Exception:
        log("edge health unavailable:\n" + traceback.format_exc())
        return None
    log("edge health on" if edge is not None else "edge health off (no rules.py)")
    return edge


def set_child_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            return True
        log(f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}")
    except (OSError, AttributeError) as e:
        log(f"prctl unavailable: {e}")
    return False


def daemon_main(rundir: str, job: dict, reply_fd: int) -> int:
    """Runs in the grandchild: redirect stdio, become subreaper, spawn the job, report to `start`, loop."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    guard_log = open_nofollow(path_in(rundir, "guard.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(guard_log, 1)
    os.dup2(guard_log, 2)
    os.close(guard_log)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the SSH session that started us may end at any time
    os.chdir("/")  # pin no mount point; job.json's cwd is applied to the job itself

    def reply(data: dict) -> None:
        try:
            os.write(reply_fd, (json.dumps(data) + "\n").encode())
            os.close(reply_fd)
        except OSError:
            pass  # `start` gave up waiting; the guard runs on regardless

    try:
        if not set_child_subreaper():
            log("continuing without subreaper: teardown relies on the recorded pids")
        guard = Guard(rundir, job)
        signal.signal(signal.SIGTERM, guard.on_stop_signal)
        signal.signal(signal.SIGINT, guard.on_stop_signal)
        with os.fdopen(
            open_nofollow(path_in(rundir, "guard.pid"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w"
        ) as f:
            f.write(f"{os.getpid()}\n")
        guard.spawn()
    except Exception as e:
        log(f"could not start job: {e!r}")
        now = time.time()
        failed = {
            "state": FAILED,
            "guard_pid": os.getpid(),
            "guard_starttime": (read_stat(os.getpid()) or {}).get("starttime"),
            "job_pid": None,
            "exit_code": None,
            "signal": None,
        }
        failed.update(started_at=now, ended_at=now, reason=f"could not start job: {e}")
        write_json_atomic(path_in(rundir, "state.json"), failed)
        reply({"error": str(e)})
        return EXIT_FAILED
    log(f"job {guard.job_pid} started: {job['argv']}")
    reply({"guard_pid": guard.pid, "job_pid": guard.job_pid})
    try:
        guard.run()
    except Exception as e:
        # A bug here must not leave the job unguarded: tear it down rather than vanish.
        log("guard error:\n" + traceback.format_exc())
        guard.finish(FAILED, f"guard error: {e!r}")
        return EXIT_FAILED
    return EXIT_OK


# ------------------------------------------------------------------------------------------------------------
# Commands


def take_node_lock(rundir: str, job: dict | None = None) -> tuple:
    """One run per node (and user) at a time, kept by the node itself: the guard holds an flock on
    <workdir>/.node-<host>.lock for the job's life (two `up`s from two heads, or `--force`, cannot both start here).
    job.json names the lock and the run ("node_lock", "run_id"); without them (an older plan) the run dir is
    <workdir>/<run id>/<host>. A previous run's (or attempt's) guard may still be finishing its teardown, so the
    lock is awaited for NODE_LOCK_WAIT_S. Returns (descriptor, None) or (None, why)."""
    host, run_id = os.path.basename(rundir), os.path.basename(os.path.dirname(rundir))
    path = os.path.join(os.path.dirname(os.path.dirname(rundir)), f".node-{host}.lock")
    if job and isinstance(job.get("node_lock"), str) and isinstance(job.get("run_id"), str):
        path, run_id = job["node_lock"], job["run_id"]
        host = os.path.basename(path)[len(".node-") : -len(".lock")]
    try:
        fd = open_nofollow(path, os.O_RDWR | os.O_CREAT)
    except OSError as e:
        return None, f"cannot open {path}: {e.strerror}"
    deadline = time.time() + NODE_LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.time() >= deadline:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another run"
                os.close(fd)
                return (
                    None,
                    f"node {host} is busy with run {holder} (its guard holds {path}); stop that run first",
                )
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    os.pwrite(fd, run_id.encode(), 0)
    return fd, None


def cmd_start(rundir: str, attached: bool = False) -> int:
    """Start the guard. Detached (default): a daemon in its own session, so the SSH exec that started it can end.
    Attached (`run`): the guard is our child and we go on as its follower, so the whole guard lives inside the
    caller's session — what schedulers need that track a step's processes (srun; Slurm's proctrack plugins)."""
    try:
        job = load_job(rundir)
    except ValueError as e:
        print(json.dumps({"error": str(e)}))
        return EXIT_BAD_INPUT
    # The live guard holds an flock on guard.lock for its whole life; it is released by the kernel on any death.
    try:
        lock_fd = open_nofollow(path_in(rundir, "guard.lock"), os.O_RDWR | os.O_CREAT)
    except OSError as e:
        print(json.dumps({"error": f"cannot open {path_in(rundir, 'guard.lock')}: {e.strerror}"}))
        return EXIT_INFRA
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pid, _, _ = guard_identity(rundir)
        print(json.dumps({"error": f"a live guard (pid {pid}) already owns {rundir}"}))
        return EXIT_INFRA
    node_lock, busy = take_node_lock(rundir, job)
    if busy:
        print(json.dumps({"error": busy}))
        return EXIT_INFRA
    for stale in ("stop_request.json", "heartbeat", HEAD_CLOSED):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path_in(rundir, stale))
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    first = os.fork()
    if first == 0:
        os.close(read_end)
        if not attached:
            os.setsid()
            if os.fork() != 0:
                os._exit(
                    0
                )  # the intermediate exits so the daemon is no session leader and gets no controlling tty
        code = EXIT_FAILED
        try:
            code = daemon_main(rundir, job, write_end)
        except BaseException:
            log("guard crashed:\n" + traceback.format_exc())
        finally:
            os._exit(code)
    os.close(write_end)
    os.close(lock_fd)  # the daemon holds its own copy of the locked descriptor
    os.close(node_lock)  # and of the node's
    if attached:
        reply = read_reply(read_end, START_REPLY_TIMEOUT_S)
        if reply is None or "error" in reply:
            emit(
                {
                    "k": protocol.K_ERROR,
                    "t": time.time(),
                    "error": (reply or {}).get("error", "guard did not report"),
                }
            )
            return EXIT_FAILED
        emit({"k": protocol.K_STARTED, "t": time.time(), **reply})
        return cmd_follow(rundir, 0)
    os.waitpid(first, 0)
    reply = read_reply(read_end, START_REPLY_TIMEOUT_S)
    if reply is None or "error" in reply:
        print(json.dumps(reply or {"error": f"guard did not report within {START_REPLY_TIMEOUT_S:.0f} s"}))
        return EXIT_FAILED
    print(json.dumps(reply))
    return EXIT_OK


def read_reply(fd: int, timeout: float) -> dict | None:
    deadline = time.time() + timeout
    data = b""
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.time()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        if data.endswith(b"\n"):
            break
    os.close(fd)
    try:
        return json.loads(data.decode())
    except ValueError:
        return None


def kill_recorded(rundir: str, grace: float) -> list:
    """Without a live guard: tear down what is left of the recorded pids and their trees (`terminate`). Their new
    parent (init or another subreaper) reaps them, so zombies are already dead here."""
    records = read_records(rundir)
    _, survivors = terminate(lambda: [st for st in job_processes([], records) if st["state"] != "Z"], grace)
    return survivors


def cmd_stop(rundir: str, grace: float | None) -> int:
    pid, start, state = guard_identity(rundir)
    if grace is None:
        job = read_json(path_in(rundir, "job.json"))
        grace = job.get("grace", 10) if isinstance(job, dict) else 10
        if not isinstance(grace, (int, float)) or isinstance(grace, bool) or not 0 <= grace <= 3600:
            grace = 10  # a tampered job.json must not make stop crash or wait forever
    guard_was_alive = pid is not None and is_alive(pid, start)
    if guard_was_alive:
        write_json_atomic(path_in(rundir, "stop_request.json"), {"grace": grace, "t": time.time()})
        signal_same(pid, start, signal.SIGTERM)
        deadline = time.time() + grace + 10
        while is_alive(pid, start) and time.time() < deadline:
            time.sleep(0.1)
        if is_alive(pid, start):
            # The guard is stuck: record its tree first, then take over the teardown ourselves.
            append_records(rundir, [record_of(st) for st in job_processes([pid], read_records(rundir))])
            signal_same(pid, start, signal.SIGKILL)
    remaining = kill_recorded(rundir, grace)
    _, _, state = guard_identity(rundir)
    if state is None:
        state = {"state": None, "reason": f"no state.json in {rundir}"}
    elif state.get("state") == RUNNING:
        # The guard died without a final word (SIGKILL, OOM): write the outcome on its behalf.
        state.update(
            state=STOPPED, ended_at=time.time(), reason="guard was gone; stop cleaned up its processes"
        )
        write_json_atomic(path_in(rundir, "state.json"), state)
    state = dict(state, remaining=remaining)
    print(json.dumps(state))
    return EXIT_OK if not remaining else EXIT_FAILED


def cmd_status(rundir: str) -> int:
    pid, start, state = guard_identity(rundir)
    alive = pid is not None and is_alive(pid, start)
    roots = [pid] if alive else []
    procs = job_processes(roots, read_records(rundir))
    shown = dict(state or {"state": None})
    if not alive and shown.get("state") == RUNNING:
        shown["state"] = GUARD_LOST
    shown.update(alive=alive, descendants=describe(procs))
    print(json.dumps(shown))
    return EXIT_OK


class LogTail:
    """Turns the growing out.log into ("line", offset-after-line, text) records."""

    def __init__(self, path: str, offset: int) -> None:
        self.path = path
        self.offset = offset  # bytes consumed so far (emitted or skipped)
        self.pending = b""
        self.skipping = False  # inside an over-long line whose head was already emitted
        self.file = None

    def read(self, final: bool = False) -> list:
        if self.file is None:
            try:
                self.file = os.fdopen(
                    open_nofollow(self.path, os.O_RDONLY), "rb"
                )  # kept open while following
            except FileNotFoundError:
                return []
            self.file.seek(self.offset)
        out = []
        while True:
            chunk = self.file.read(65536)
            if not chunk:
                break
            out.extend(self.split(chunk))
        if final and self.pending:
            out.append(self.emit(self.pending, len(self.pending)))
            self.pending = b""
        return out

    def emit(self, raw: bytes, consumed: int) -> tuple:
        self.offset += consumed
        text = raw[:MAX_LINE_BYTES].rstrip(b"\r").decode("utf-8", "replace")
        return self.offset, text

    def split(self, chunk: bytes) -> list:
        out = []
        data = self.pending + chunk
        self.pending = b""
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            line = data[start:nl]
            if self.skipping:
                self.offset += nl + 1 - start
                self.skipping = False
            else:
                out.append(self.emit(line, nl + 1 - start))
            start = nl + 1
        rest = data[start:]
        if self.skipping:
            self.offset += len(rest)
        elif len(rest) > MAX_LINE_BYTES:
            out.append(self.emit(rest, len(rest)))
            self.skipping = True
        else:
            self.pending = rest
        return out


def make_forwarder(rundir: str, show: str | None):
    """edge.Forwarder for `follow --show SPEC`; None (every line forwarded, as before) without --show or rules."""
    if show is None:
        return None
    try:
        module = edge_module(rundir)
        rules = None if module is None else module.load_rules(rundir)
        return None if rules is None else module.Forwarder(rules, show)
    except Exception as exc:
        log(f"forwarding every line: {type(exc).__name__}: {exc}")
        return None


def cmd_follow(rundir: str, offset: int, show: str | None = None) -> int:
    heartbeat = path_in(rundir, "heartbeat")
    touch(heartbeat)
    deadline = time.time() + STATE_WAIT_S
    pid, start, _ = guard_identity(rundir)
    while pid is None and time.time() < deadline:
        time.sleep(0.1)
        pid, start, _ = guard_identity(rundir)
    try:
        if pid is None:
            emit(
                {"k": protocol.K_EXIT, "t": time.time(), "state": {"state": None, "reason": "no state.json"}}
            )
            return EXIT_FAILED
        follow_loop(
            rundir, pid, start, LogTail(path_in(rundir, "out.log"), offset), make_forwarder(rundir, show)
        )
    except BrokenPipeError:
        # The launcher went away: exit quietly, and keep Python from complaining while flushing at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


class GpuWatch:
    """GPU health seen from the node, for the launcher's watcher: new amdgpu lines of the kernel log (GPU resets,
    ring timeouts, RAS/ACA and page faults appear there, not in the job's output), the kernel OOM killer's lines
    about this job's processes, per-GPU activity every ACTIVITY_EVERY_S (reported with each rank's usage, for the
    hang rule: gpuact.py) and every SNAPSHOT_EVERY_S the tool's whole output, kept in the run record. All optional:
    a node without the tools or without permission to read the kernel log (kernel.dmesg_restrict) reports nothing.

    At most one tool process runs at a time, and it never blocks the follower: it is started, then collected on a
    later pass (its output goes to a file, so a large output cannot fill a pipe), killed after TOOL_TIMEOUT_S."""

    SNAPSHOT_EVERY_S = 30.0
    ACTIVITY_EVERY_S = 5.0
    TOOL_TIMEOUT_S = 8.0
    TOOLS = (
        ("amd-smi", ["amd-smi", "metric", "--json"]),
        ("rocm-smi", ["rocm-smi", "--showuse", "--showmemuse", "--showpower", "--json"]),
    )

    def __init__(self) -> None:
        self.kmsg_fd: int | None = None
        self.kmsg_buf = b""
        path = os.environ.get("RLAUNCH_KMSG", "/dev/kmsg")  # tests point this at a file
        try:
            self.kmsg_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.kmsg_fd, 0, os.SEEK_END)  # only what happens from now on
        except OSError:
            self.kmsg_fd = None
        found = ((name, protocol.find_tool(name), argv) for name, argv in self.TOOLS)
        self.tool = next(((name, [exe, *argv[1:]]) for name, exe, argv in found if exe), None)
        now = time.time()
        self.next_sample = now  # at once: the GPUs idle while the job imports give each its idle power
        self.next_snapshot = now + 5.0
        self.proc: subprocess.Popen | None = None
        self.proc_out = None
        self.proc_started = 0.0
        self.killed = False  # the running tool overran TOOL_TIMEOUT_S and was sent SIGKILL
        self.readings: dict = {}  # GPU index -> {"gfx", "umc", "w"} of the latest sample
        self.idle_w: dict = {}  # GPU index -> lowest power seen: the baseline "near idle" is measured against
        self.fresh = False  # a sample arrived that no procs record carried yet

    def kernel_lines(self, pids: frozenset = frozenset()) -> list:
        """New kernel log lines worth forwarding: amdgpu/amdkfd ones, and OOM-killer lines naming one of `pids`."""
        if self.kmsg_fd is None:
            return []
        out = []
        while True:
            try:
                chunk = os.read(self.kmsg_fd, 8192)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # /dev/kmsg: records were overwritten while we slept; go on
                    continue
                self.kmsg_fd = None
                break
            if not chunk:
                break
            self.kmsg_buf += chunk
        *records, self.kmsg_buf = self.kmsg_buf.split(b"\n")
        for record in records:
            text = record.decode("utf-8", "replace")
            text = (
                text.split(";", 1)[1] if ";" in text[:64] else text
            )  # /dev/kmsg: "pri,seq,ts,flags;message"
            if "amdgpu" in text or "amdkfd" in text:
                out.append(text[:MAX_LINE_BYTES])
            elif pids and gpuact is not None and gpuact.oom_pid(text) in pids:
                out.append(text[:MAX_LINE_BYTES])  # another job's OOM kill is not this job's business
        return out

    def poll(self, now: float) -> dict | None:
        """Drive the tool: collect a finished sample, start the next when due. Returns a snapshot record (the tool's
        whole output, for the run record) every SNAPSHOT_EVERY_S, else None."""
        if self.tool is None:
            return None
        name, argv = self.tool
        record = None
        if self.proc is not None:
            rc = self.proc.poll()
            if rc is None and (self.killed or now - self.proc_started < self.TOOL_TIMEOUT_S):
                return None  # still running, or killed but not gone yet (stuck in the driver): never a second one
            if rc is None:
                # Killed, not waited for: a tool stuck in an ioctl (D state) would block the follower. It is
                # reaped on a later pass, and no other tool starts before it is gone.
                self.proc.kill()
                self.killed = True
                self.readings = {}
                if now >= self.next_snapshot:
                    self.next_snapshot = now + self.SNAPSHOT_EVERY_S
                    return {"tool": name, "error": f"no answer within {self.TOOL_TIMEOUT_S:.0f} s"}
                return None
            if self.killed:
                self.killed = False
            else:
                self.proc_out.seek(0)
                text = self.proc_out.read(1 << 20).decode("utf-8", "replace")
                record = {"tool": name, "rc": rc, "text": text[:65536]}
                self.take(gpuact.parse(name, text) if gpuact is not None and rc == 0 else {})
            self.proc_out.close()
            self.proc, self.proc_out = None, None
            self.next_sample = max(self.next_sample, now)
            if record is not None and now >= self.next_snapshot:
                self.next_snapshot = now + self.SNAPSHOT_EVERY_S
            else:
                record = None
        if self.proc is None and now >= self.next_sample:
            self.next_sample = now + self.ACTIVITY_EVERY_S
            self.proc_out = tempfile.TemporaryFile()  # noqa: SIM115 - kept open until a later pass collects it
            try:
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=self.proc_out, stderr=subprocess.DEVNULL
                )
                self.proc_started = now
            except OSError as e:
                self.proc_out.close()
                self.proc_out = None
                if now >= self.next_snapshot:
                    self.next_snapshot = now + self.SNAPSHOT_EVERY_S
                    record = {"tool": name, "error": str(e)}
        return record

    def take(self, readings: dict) -> None:
        self.readings = readings
        self.fresh = bool(readings)
        for index, reading in readings.items():
            watts = reading.get("w")
            if watts is not None and watts > 0:  # 0 W is a die that reports no power, not an idle one
                self.idle_w[index] = min(watts, self.idle_w.get(index, watts))

    def annotate(self, procs: list, described: list) -> None:
        """Add the fresh sample of each rank's GPU to its procs entry: {"id", "gfx", "umc", "w", "idle_w"}. Each
        sample is carried once, so the head counts it once."""
        if not self.fresh:
            return
        self.fresh = False
        for i, entry in enumerate(described):
            st = procs[i]
            if entry.get("rank") is None:
                continue
            index = gpu_index_of(st)
            reading = self.readings.get(index)
            if reading is not None:
                entry["gpu"] = dict(reading, id=index, idle_w=self.idle_w.get(index))

    def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1.0)  # one stuck in the driver dies when the driver lets it
            self.proc = None
        if self.proc_out is not None:
            self.proc_out.close()
            self.proc_out = None


def follow_loop(rundir: str, pid: int, start: int | None, tail: LogTail, fwd: object = None) -> None:
    gpu = GpuWatch()
    try:
        _follow(rundir, pid, start, tail, fwd, gpu)
    finally:
        gpu.close()  # a tool still running is ours: nothing is left behind


def _follow(rundir: str, pid: int, start: int | None, tail: LogTail, fwd: object, gpu: GpuWatch) -> None:
    try:
        stdin_fd: int | None = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        stdin_fd = None
    if stdin_fd is not None:
        # Its own thread: a head slow to read our records (stdout full) must not keep its heartbeats unread.
        threading.Thread(target=read_head_words, args=(rundir, stdin_fd, pid, start), daemon=True).start()
    next_procs = 0.0
    bad_lines = 0
    while True:
        finished = not is_alive(pid, start)
        for off, text in tail.read(final=finished):
            if fwd is None:
                emit({"k": protocol.K_LINE, "t": time.time(), "off": off, "text": text})
            else:
                try:
                    records = fwd.line(time.time(), off, text)
                except Exception as exc:  # one line the rules cannot read: forward it whole, unclassified
                    bad_lines += 1
                    if bad_lines == 1:
                        log(
                            f"follower: a line the edge rules could not read was forwarded as is: {exc!r:.200}"
                        )
                    records = [{"k": protocol.K_LINE, "t": time.time(), "off": off, "text": text}]
                for record in records:
                    emit(record)
        if fwd is not None and (finished or time.time() >= next_procs):
            summary = fwd.summary(time.time())
            if summary is not None:
                emit(summary)
        if finished:
            _, _, state = guard_identity(rundir)
            state = dict(state or {})
            if state.get("state") == RUNNING:
                state.update(state=GUARD_LOST, reason="guard died without writing a final state")
            emit({"k": protocol.K_EXIT, "t": time.time(), "state": state})
            return
        now = time.time()
        if now >= next_procs:
            records = read_records(rundir)
            procs = job_processes([pid], records)
            snapshot = gpu.poll(now)
            described = describe_with_usage(procs)
            gpu.annotate(procs, described)
            emit({"k": protocol.K_PROCS, "t": now, "procs": described})
            next_procs = now + PROCS_EVERY_S
            # Every process of the job ever seen (the pids file) and those seen now: an OOM-killed rank is gone by
            # the time its kernel line is read.
            pids = frozenset([r[0] for r in records] + [st["pid"] for st in procs])
            for text in gpu.kernel_lines(pids):
                emit({"k": protocol.K_KERNEL, "t": now, "text": text})
            if snapshot is not None:
                emit({"k": protocol.K_GPU, "t": now, **snapshot})
        time.sleep(0.2)


def read_head_words(rundir: str, fd: int, pid: int, start: int | None) -> None:
    """The head's words on the follower's stdin (protocol.py): a heartbeat touches RUNDIR/heartbeat, stop
    signals the guard. At EOF a follower that carried heartbeats touches RUNDIR/head_closed, so the guard says
    which sign it judged the head lost by (Guard.head_lost)."""
    heartbeat = path_in(rundir, "heartbeat")
    beaten = False  # only a follower that carried heartbeats speaks for the head when its stdin closes
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError as e:
            if e.errno == errno.EAGAIN:  # a non-blocking stdin: wait for it instead of spinning
                select.select([fd], [], [], 1.0)
                continue
            chunk = b"" if e.errno != errno.EINTR else b"\n"
        if not chunk:
            if beaten:
                touch(path_in(rundir, HEAD_CLOSED))
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            word = line.strip().decode("ascii", "replace")
            if word == protocol.HEARTBEAT:
                touch(heartbeat)
                beaten = True
            elif word == protocol.STOP_WORD:
                signal_same(pid, start, signal.SIGTERM)
        buf = buf[-4096:]  # a head that never sends a newline cannot grow this


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guard.py", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "run", "follow", "stop", "status"])
    parser.add_argument("rundir")
    parser.add_argument("--offset", type=int, default=0, help="follow: byte offset in out.log to start from")
    parser.add_argument("--grace", type=float, default=None, help="stop: seconds between SIGTERM and SIGKILL")
    parser.add_argument(
        "--show",
        default=None,
        help="follow: forward only flagged lines, activity and these local ranks (all|none|0,3)",
    )
    args = parser.parse_args(argv)
    rundir = os.path.abspath(args.rundir)
    if not os.path.isdir(rundir):
        print(json.dumps({"error": f"no such run directory: {rundir}"}))
        return EXIT_BAD_INPUT
    if args.command in ("start", "run"):
        return cmd_start(rundir, attached=args.command == "run")
    if args.command == "follow":
        return cmd_follow(rundir, args.offset, args.show)
    if args.command == "stop":
        return cmd_stop(rundir, args.grace)
    return cmd_status(rundir)


if __name__ == "__main__":
    sys.exit(main())
