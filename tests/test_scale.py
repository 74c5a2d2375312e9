"""The scale harness (bench/scale.py) as CI runs it: every verb on many simulated SSH nodes, the nodes' process
tables read after every phase that ends the job (nothing left), and the head-only simulation (bench/headsim.py)
at a few hundred simulated guards. Figures are printed, never asserted (docs: BENCHMARKS.md)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import headsim  # noqa: E402
import scale  # noqa: E402
import simnodes  # noqa: E402

CI_NODES = 64
# Among them one hung node (every process stopped: connections open, nobody answers) and one dead one (its link
# down), made after `up --detach`: `status`, `logs` and `down` must serve every other node and name these two.
FAULTS = {"node2": "freeze", "node3": "partition"}


@contextlib.contextmanager
def yielding_cpu(niceness: int = 10) -> Iterator[None]:
    """Every thread of this test process, and so every process it starts (the simulated nodes' sshds, their
    guards and jobs, the CLI under test), at a lower CPU priority while the block runs. 64 simulated nodes load 2
    cores to 20+ for minutes, and the test on the other xdist worker was torn down meanwhile ("the head stalled":
    make test, turn 8). This test checks what is left behind and what the verbs answer, not how fast: its limits
    follow the load (e2e_helpers), so it yields the cores to its neighbour. Linux keeps a niceness per thread
    (setpriority(2)): every existing thread is set, and new ones inherit it from the thread that makes them."""
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    before = {tid: os.getpriority(os.PRIO_PROCESS, tid) for tid in tids}
    for tid in tids:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
    try:
        yield
    finally:
        for tid, prio in before.items():  # lowering it again needs root (CI runs as root); else it stays
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, prio)


@pytest.mark.slow
@pytest.mark.ssh
def test_every_verb_on_many_nodes_leaves_nothing_behind(capsys: pytest.CaptureFixture[str]) -> None:
    if simnodes.unavailable_reason():
        pytest.skip(simnodes.unavailable_reason())
    with yielding_cpu():
        phases = scale.run_sim(
            CI_NODES,
            pdsh=False,
            phases=["up-no-doctor", "up-detach", "status", "status-probe", "logs", "down"],
            faults=FAULTS,
        )
    print(scale.sim_table({CI_NODES: phases}))
    by_name = {p.name: p for p in phases}
    assert "left-at-end" not in by_name, by_name.get("left-at-end")
    for name in ("up-no-doctor", "up-detach", "status", "status-probe", "logs", "down-after-heal"):
        assert by_name[name].code == 0, f"{name}: {by_name[name].tail}"
    assert by_name["up-no-doctor"].left == 0  # the foreground run ended everywhere
    assert "step=10" in by_name["up-no-doctor"].tail  # node 0's rank's lines reached the terminal
    healthy = [f"node{i}" for i in range(1, CI_NODES + 1) if f"node{i}" not in FAULTS]

    # status, every node healthy: the supervisor's live view answered for all, and no node was touched.
    assert by_name["supervisor follows all"].code == 0, by_name["supervisor follows all"].tail
    text = by_name["status"].tail
    live, _ = json.JSONDecoder().raw_decode(text[text.index("{") :])
    assert live["view"]["source"] == "supervisor" and live["view"]["asked"] == [], live["view"]
    assert (
        all(node["state"] == "running" for node in live["nodes"].values()) and len(live["nodes"]) == CI_NODES
    )
    assert by_name["status"].logins == 0 and by_name["status-probe"].logins >= CI_NODES - len(FAULTS)
    # status --probe, the faults made: every other node's guard answered; the two broken ones are unknown, each
    # with its own reason.
    text = by_name["status-probe"].tail
    status, _ = json.JSONDecoder().raw_decode(text[text.index("{") :])
    assert status["state"] == "running", status.get("reason")
    assert all(status["nodes"][h]["state"] == "running" for h in healthy), status["nodes"]
    for node in FAULTS:
        assert status["nodes"][node]["state"] == "unknown" and node in status["nodes"][node]["error"], status
    # logs: every other node's own log came back (a line of its job), the broken ones from the head's copy.
    answered = {line.split("|", 1)[0] for line in by_name["logs"].tail.splitlines() if "tick" in line}
    assert set(healthy) <= answered, sorted(set(healthy) - answered)
    # down: every other node stopped and empty (read from the process tables); the two named, not clean (exit 3).
    down = by_name["down"]
    assert down.code == 3 and down.left == 0, down.tail
    assert f"not clean: {', '.join(sorted(FAULTS))}" in down.tail, down.tail
    # Healed, a second `down` stops what was left on them: nothing anywhere (left-at-end above reads every node).
    assert by_name["down-after-heal"].left == 0


def test_head_alone_follows_hundreds_of_simulated_guards() -> None:
    """The real head (plan, runner, heartbeat thread, watcher) over the simulated transport: every node gets
    beats from the head's own thread and every node ends succeeded."""
    result = headsim.run_head(300, nproc=8, follow_s=8.0)
    print(result)
    assert result["ok"] == 1.0
    assert result["nodes_beaten"] == 300


def test_a_follower_that_fails_to_open_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 250 simulated nodes sshd answered some channel opens late ("Timeout opening channel"): such a node is
    asked again while its guard waits for us, not lost at the first refusal."""
    import os

    from cluster.transport import TransportError
    from launcher import records
    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    inv = headsim.inventory(3, 1, str(tmp_path / "work"))
    sim = headsim.SimGuards([n.host for n in inv.nodes], 1, 60.0)
    refusals = {"n00001": 2}

    class Busy(headsim.SimTransport):
        def start(self, host, argv, on_line, *, on_exit=None):  # type: ignore[no-untyped-def]
            if refusals.get(host, 0) > 0:
                refusals[host] -= 1
                raise TransportError(host, "cannot start a command: Timeout opening channel.")
            return super().start(host, argv, on_line, on_exit=on_exit)

    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    runner = Runner(plan, Busy(sim), records.RunRecord.create(plan.run_id, plan.to_json()))
    runner.push()
    runner.start()
    runner.attach()
    assert refusals["n00001"] == 0
    assert all(s.follower is not None and not s.lost for s in runner.nodes.values())
    runner.record.close()


def test_a_late_follower_is_asked_for_its_guards_whole_window_and_beaten_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turn 7's 250-node runs lost a node whose sshd refused channels for longer than half the heartbeat
    timeout, while its guard still waited: a follower is now asked again until the guard's own window for its
    first beat (first_heartbeat_timeout, counted from the guard's start) leaves no time for one more try, and the follower that opens late hears a beat at
    once instead of up to a beat interval later. Past that window the node is lost, never followed late."""
    import os

    from cluster.transport import TransportError
    from launcher import records
    from launcher.guardctl import heartbeat_interval
    from launcher.plan import build_plan, load_sources
    from launcher.run import attempt
    from launcher.run.attempt import Runner

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    inv = headsim.inventory(3, 1, str(tmp_path / "work"))
    timeout = float(inv.health.heartbeat_timeout)
    window = max(
        timeout, float(inv.health.first_heartbeat_timeout)
    )  # what the guard waits for its first beat
    sim = headsim.SimGuards([n.host for n in inv.nodes], 1, 60.0)
    clock = [1000.0]
    monkeypatch.setattr(attempt.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(attempt.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    refused_until = {"n00001": 1000.0 + window * 0.7, "n00002": 1000.0 + window + 60}

    class Busy(headsim.SimTransport):
        def start(self, host, argv, on_line, *, on_exit=None):  # type: ignore[no-untyped-def]
            clock[0] += 1.0  # every try costs a second of the guard's window
            if clock[0] < refused_until.get(host, 0.0):
                raise TransportError(host, "cannot start a command: Timeout opening channel.")
            return super().start(host, argv, on_line, on_exit=on_exit)

    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    runner = Runner(plan, Busy(sim, max_parallel=1), records.RunRecord.create(plan.run_id, plan.to_json()))
    runner.push()
    runner.start()
    started = clock[0]
    assert runner.attach_deadline("n00001") == started + window - heartbeat_interval(timeout)
    runner.attach()
    runner.heartbeats().stop()
    late, gone = runner.nodes["n00001"], runner.nodes["n00002"]
    assert late.follower is not None and not late.lost  # opened at 0.7 of the window: past the old half
    assert sim.nodes["n00001"].beats, "a follower that opens late is beaten at once"
    assert gone.follower is None and gone.lost and "cannot follow" in gone.lost
    runner.record.close()


def test_a_detached_runs_supervisor_asks_a_busy_node_longer_than_a_foreground_head_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A detached run's guards wait for no heartbeat, so nothing is lost by asking a busy node again: at 250
    simulated nodes the supervisor's 10 s lost a node whose sshd answered a handshake late (turn 8)."""
    import os

    from cluster.transport import TransportError
    from launcher import records
    from launcher.plan import build_plan, load_sources
    from launcher.run import attempt
    from launcher.run.attempt import ATTACH_RETRY_S, DETACHED_ATTACH_RETRY_S, Runner

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    inv = headsim.inventory(3, 1, str(tmp_path / "work"))
    sim = headsim.SimGuards([n.host for n in inv.nodes], 1, 60.0)
    clock = [1000.0]
    monkeypatch.setattr(attempt.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(attempt.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    busy_for = (
        ATTACH_RETRY_S + DETACHED_ATTACH_RETRY_S
    ) / 2  # past the foreground bound, inside the detached one
    refused_until = {"n00001": 1000.0 + busy_for}

    class Busy(headsim.SimTransport):
        def start(self, host, argv, on_line, *, on_exit=None):  # type: ignore[no-untyped-def]
            clock[0] += 1.0
            if clock[0] < refused_until.get(host, 0.0):
                raise TransportError(host, "cannot start a command: Timeout opening channel.")
            return super().start(host, argv, on_line, on_exit=on_exit)

    plan = build_plan(
        inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ, detach=True
    )
    runner = Runner(plan, Busy(sim, max_parallel=1), records.RunRecord.create(plan.run_id, plan.to_json()))
    runner.push()
    runner.start()
    assert runner.attach_deadline("n00001") == clock[0] + DETACHED_ATTACH_RETRY_S
    runner.attach()
    runner.heartbeats().stop()
    late = runner.nodes["n00001"]
    assert late.follower is not None and not late.lost, late.lost
    runner.record.close()


def test_each_followers_window_counts_from_when_its_own_guard_was_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 250 simulated nodes the bounded fan-out sent the last guards' starts a minute or more after the first
    (103 s for all 250, turn 8): counted from the start call, the last nodes' followers had almost no window left
    and 21 nodes were lost ("Timeout opening channel"). Each node's window counts from when its start was sent."""
    import os

    from launcher import records
    from launcher.guardctl import heartbeat_interval
    from launcher.plan import build_plan, load_sources
    from launcher.run import attempt
    from launcher.run.attempt import Runner

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    inv = headsim.inventory(3, 1, str(tmp_path / "work"))
    sim = headsim.SimGuards([n.host for n in inv.nodes], 1, 60.0)
    clock = [1000.0]
    monkeypatch.setattr(attempt.time, "monotonic", lambda: clock[0])

    class Slow(headsim.SimTransport):
        def run(self, host, argv, *, stdin=None, timeout=60.0):  # type: ignore[no-untyped-def]
            clock[0] += (
                10.0  # every call to a node takes 10 s: one at a time, the last is sent 20 s after the first
            )
            return super().run(host, argv, stdin=stdin, timeout=timeout)

    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    runner = Runner(plan, Slow(sim, max_parallel=1), records.RunRecord.create(plan.run_id, plan.to_json()))
    runner.push()
    runner.start()
    asked = [runner.nodes[h].start_asked for h in ("n00000", "n00001", "n00002")]
    assert asked[0] is not None and asked == [asked[0], asked[0] + 10, asked[0] + 20]
    window = max(inv.health.heartbeat_timeout, inv.health.first_heartbeat_timeout)
    interval = heartbeat_interval(inv.health.heartbeat_timeout)
    for host, when in zip(("n00000", "n00001", "n00002"), asked, strict=True):
        assert runner.attach_deadline(host) == when + window - interval
    runner.record.close()


def test_heartbeats_begin_with_the_first_follower_not_after_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 250 simulated nodes opening every follower took 45 s and guards whose follower opened early heard no
    beat for the whole heartbeat timeout: beats now go out from `attach` on, before `watch` begins."""
    import os
    import time

    from launcher import records
    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    inv = headsim.inventory(4, 1, str(tmp_path / "work"))
    inv = inv.model_copy(update={"health": inv.health.model_copy(update={"heartbeat_timeout": 1.2})})
    sim = headsim.SimGuards([n.host for n in inv.nodes], 1, 60.0)
    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    runner = Runner(plan, headsim.SimTransport(sim), records.RunRecord.create(plan.run_id, plan.to_json()))
    runner.push()
    runner.start()
    runner.attach()  # and no watch: the slow rest of an attach, as far as the first nodes can tell
    deadline = time.monotonic() + 30
    while not all(node.beats for node in sim.nodes.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.detach_followers()  # stops the beats as well
    beaten = {host for host, node in sim.nodes.items() if node.beats}
    counts = {host: len(node.beats) for host, node in sim.nodes.items()}
    time.sleep(1.0)  # more than three intervals (0.3 s): a thread left beating would add beats
    runner.record.close()
    assert beaten == set(sim.nodes), counts
    assert counts == {host: len(node.beats) for host, node in sim.nodes.items()}


def test_known_hosts_is_parsed_once_per_transport_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """paramiko parsed the whole known_hosts for every connection: N² key parses for a verb on N nodes."""
    import os

    import paramiko

    from cluster import ssh
    from cluster.transport import Endpoint

    parses: list[str] = []

    class Counting(paramiko.HostKeys):
        def __init__(self, filename: str | None = None) -> None:
            parses.append(str(filename))
            super().__init__(filename)

    monkeypatch.setattr(ssh.paramiko, "HostKeys", Counting)
    known = tmp_path / "known_hosts"
    line = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    known.write_text(f"[10.0.0.1]:22 ssh-ed25519 {line}\n")
    transport = ssh.SSHTransport({"a": Endpoint("a", "10.0.0.1")})
    first = transport._host_keys(str(known))
    assert transport._host_keys(str(known)) is first and len(parses) == 1
    known.write_text(f"[10.0.0.1]:22 ssh-ed25519 {line}\n[10.0.0.2]:22 ssh-ed25519 {line}\n")
    os.utime(known, ns=(1, 1))  # a new stat, as an accept-new write gives
    assert transport._host_keys(str(known)).lookup("[10.0.0.2]:22") is not None and len(parses) == 2


ARENA_PROBE = """
import ctypes, sys, threading
if sys.argv[1] == "transport":
    from cluster.ssh import SSHTransport
    SSHTransport({})
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def hammer():  # ctypes calls run without the GIL: sixteen threads in malloc at once
    for _ in range(3000):
        libc.free(libc.malloc(65536))
threads = [threading.Thread(target=hammer) for _ in range(16)]
[t.start() for t in threads]
[t.join() for t in threads]
libc.malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


@pytest.mark.skipif(
    not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="glibc's arenas"
)
def test_the_head_caps_glibcs_malloc_arenas_unless_the_user_set_them() -> None:
    """The head's reader threads would each get a malloc arena kept for the process's life (cluster/ssh.py
    cap_malloc_arenas): 16 threads in malloc at once get at most MALLOC_ARENAS once a transport exists; the user's
    MALLOC_ARENA_MAX still wins."""
    import subprocess

    from cluster.ssh import MALLOC_ARENAS

    def arenas(mode: str, **env: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", ARENA_PROBE, mode],
            env={
                **{k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"},
                "PYTHONPATH": str(ROOT),
                **env,
            },
            capture_output=True,
            text=True,
            check=True,
        )
        return sum(line.startswith("Arena ") for line in out.stderr.splitlines())

    assert arenas("transport") <= MALLOC_ARENAS
    assert arenas("transport", MALLOC_ARENA_MAX="1") == 1
    # the probe does make more arenas without the cap
    assert max(arenas("plain") for _ in range(3)) > MALLOC_ARENAS
