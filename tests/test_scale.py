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
from typing import Any

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


def _sim_runner(tmp_path: Path, n: int, transport_cls: type, *, detach: bool = False, **health: float) -> Any:
    """A real Runner over `transport_cls` (a headsim.SimTransport) on n simulated guards: (runner, sim)."""
    from launcher import records
    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    inv = headsim.inventory(n, 1, str(tmp_path / "work"))
    if health:
        inv = inv.model_copy(update={"health": inv.health.model_copy(update=health)})
    sim = headsim.SimGuards([node.host for node in inv.nodes], 1, 60.0)
    plan = build_plan(
        inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ, detach=detach
    )
    runner = Runner(
        plan, transport_cls(sim, max_parallel=1), records.RunRecord.create(plan.run_id, plan.to_json())
    )
    return runner, sim


def _fake_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """time.monotonic reads clock[0]; time.sleep adds to it (the runner's retries wait no real time)."""
    from launcher.run import attempt

    clock = [1000.0]
    monkeypatch.setattr(attempt.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(attempt.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    return clock


def test_a_guard_whose_channel_fails_to_open_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 250 simulated nodes sshd answered some channel opens late ("Timeout opening channel"): the guard's
    start-follow is asked again while its start window lasts, not failed at the first refusal."""
    from cluster.transport import TIMEOUT, TransportError

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    _fake_clock(monkeypatch)
    refusals = {"n00001": 2}

    class Busy(headsim.SimTransport):
        def start(self, host, argv, on_line, *, on_exit=None):  # type: ignore[no-untyped-def]
            if refusals.get(host, 0) > 0:
                refusals[host] -= 1
                raise TransportError(host, "cannot start a command: Timeout opening channel.", TIMEOUT)
            return super().start(host, argv, on_line, on_exit=on_exit)

    runner, sim = _sim_runner(tmp_path, 3, Busy)
    runner.launch()
    runner.heartbeats().stop()
    assert refusals["n00001"] == 0
    assert all(s.follower is not None and s.guard_pid and not s.lost for s in runner.nodes.values())
    assert all(node.started for node in sim.nodes.values())
    runner.record.close()


def test_a_guard_refused_past_its_start_window_fails_the_launch_and_the_others_are_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turn 7's 250-node runs lost a node whose sshd refused channels for long: a guard whose channel opens late
    but inside its start window (START_REPORT_S from its own first ask) starts and is beaten at once; one refused
    past it fails the launch, named, and every node that did start is stopped again (all or none)."""
    from cluster.transport import TIMEOUT, TransportError
    from launcher.run.attempt import START_REPORT_S, LaunchError

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    clock = _fake_clock(monkeypatch)
    refused_until = {"n00001": 1000.0 + START_REPORT_S * 0.7, "n00002": 1000.0 + START_REPORT_S * 10}

    class Busy(headsim.SimTransport):
        def start(self, host, argv, on_line, *, on_exit=None):  # type: ignore[no-untyped-def]
            clock[0] += 1.0  # every try costs a second
            if clock[0] < refused_until.get(host, 0.0):
                raise TransportError(host, "cannot start a command: Timeout opening channel.", TIMEOUT)
            return super().start(host, argv, on_line, on_exit=on_exit)

    runner, sim = _sim_runner(tmp_path, 3, Busy)
    with pytest.raises(LaunchError) as raised:
        runner.launch()
    assert set(raised.value.failed) == {"n00002"}, raised.value.failed
    assert "Timeout opening channel" in raised.value.failed["n00002"]
    assert raised.value.failures == {"n00002": TIMEOUT}
    assert sim.nodes["n00001"].beats, "a guard whose channel opened late is beaten at once"
    assert not sim.nodes["n00002"].started
    for host in ("n00000", "n00001"):  # started, then stopped again: all or none
        assert (sim.nodes[host].final or {}).get("state") == "stopped", sim.nodes[host].final
    runner.record.close()


def test_each_guards_start_window_counts_from_its_own_first_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 250 simulated nodes the bounded fan-out reached the last guards a minute or more after the first (103 s
    for all 250, turn 8): counted from the call, the last nodes had almost no window left. One node at a time here,
    each refused once and each try taking half the window: every node still starts, as each counts its own."""
    from cluster.transport import TIMEOUT, TransportError
    from launcher.run.attempt import START_REPORT_S

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    clock = _fake_clock(monkeypatch)
    tried: set[str] = set()

    class Slow(headsim.SimTransport):
        def start(self, host, argv, on_line, *, on_exit=None):  # type: ignore[no-untyped-def]
            clock[0] += START_REPORT_S / 2
            if host not in tried:
                tried.add(host)
                raise TransportError(host, "cannot start a command: Timeout opening channel.", TIMEOUT)
            return super().start(host, argv, on_line, on_exit=on_exit)

    runner, _ = _sim_runner(tmp_path, 3, Slow)
    began = clock[0]
    runner.launch()
    runner.heartbeats().stop()
    assert clock[0] - began > 2 * START_REPORT_S  # the last node started well past one window from the call
    assert all(s.guard_pid and s.follower is not None for s in runner.nodes.values())
    runner.record.close()


def test_a_detached_runs_supervisor_asks_a_busy_node_longer_than_a_foreground_head_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supervisor adopting running guards (`attach` after `adopt`) asks a node whose channel will not open again:
    a detached run's guards wait for no heartbeat, so nothing is lost by asking for DETACHED_ATTACH_RETRY_S (at 250
    simulated nodes 10 s lost a node whose sshd answered a handshake late, turn 8); a foreground run's for
    ATTACH_RETRY_S, then the node is lost."""
    from cluster.transport import TIMEOUT, TransportError
    from launcher.run.attempt import ATTACH_RETRY_S, DETACHED_ATTACH_RETRY_S

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    clock = _fake_clock(monkeypatch)
    busy_for = (
        ATTACH_RETRY_S + DETACHED_ATTACH_RETRY_S
    ) / 2  # past the foreground bound, inside the detached one
    refused_until: dict[str, float] = {}

    class Busy(headsim.SimTransport):
        def start(self, host, argv, on_line, *, on_exit=None):  # type: ignore[no-untyped-def]
            clock[0] += 1.0
            if clock[0] < refused_until.get(host, 0.0):
                raise TransportError(host, "cannot start a command: Timeout opening channel.", TIMEOUT)
            return super().start(host, argv, on_line, on_exit=on_exit)

    followed = {}
    for detach in (True, False):
        runner, _ = _sim_runner(tmp_path / str(detach), 3, Busy, detach=detach)
        runner.adopt({host: 0 for host in runner.nodes})  # guards that already run (the sim's always do)
        refused_until["n00001"] = clock[0] + busy_for
        bound = DETACHED_ATTACH_RETRY_S if detach else ATTACH_RETRY_S
        assert runner.attach_deadline() == clock[0] + bound
        runner.attach()
        runner.heartbeats().stop()
        late = runner.nodes["n00001"]
        followed[detach] = (late.follower is not None, late.lost)
        runner.record.close()
    assert followed[True] == (True, None), followed
    assert followed[False][0] is False and "cannot follow" in (followed[False][1] or ""), followed


def test_heartbeats_begin_with_the_first_guard_started_not_after_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 250 simulated nodes opening every follower took 45 s and guards whose follower opened early heard no
    beat for the whole heartbeat timeout: beats go out from the start on, each guard beaten when its channel
    opens and from the heartbeat thread after, before `watch` begins."""
    import time

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    runner, sim = _sim_runner(tmp_path, 4, headsim.SimTransport, heartbeat_timeout=1.2)
    runner.launch()  # and no watch: the slow rest of a start, as far as the first nodes can tell
    deadline = time.monotonic() + 30
    while not all(len(node.beats) >= 3 for node in sim.nodes.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.detach_followers()  # stops the beats as well
    counts = {host: len(node.beats) for host, node in sim.nodes.items()}
    time.sleep(1.0)  # more than three intervals (0.3 s): a thread left beating would add beats
    runner.record.close()
    assert all(n >= 3 for n in counts.values()), counts
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
# glibc hands an exited thread's arena to the next new thread: the barrier keeps all sixteen alive, each past its
# first malloc, so the count does not depend on how the scheduler interleaves them (a loaded CI made it 4 of 16)
alive = threading.Barrier(16)
def hammer():  # ctypes calls run without the GIL: sixteen threads in malloc at once
    libc.free(libc.malloc(65536))
    alive.wait()
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
    assert arenas("plain") > MALLOC_ARENAS


@pytest.mark.parametrize(
    ("start", "kind", "asked"),
    [
        (False, "timeout", 3),  # a follow only reads: asked again whatever the failure
        (False, "unreachable", 3),
        (True, "timeout", 3),  # a channel that never opened ran nothing: the start is asked again
        (True, "unreachable", 1),  # the command may have run: a second guard must not start
    ],
)
def test_guard_client_asks_a_busy_node_again_only_where_that_is_safe(
    monkeypatch: pytest.MonkeyPatch, start: bool, kind: str, asked: int
) -> None:
    """GuardClient.follow is the one home of "ask a busy node again" (the runner's starts and followers, and
    `rlaunch logs --follow`): two refusals, then a channel; a start refused for another reason than a channel that
    never opened is not asked again; a stop ends the asking at once."""
    import threading

    from cluster.transport import TIMEOUT, UNREACHABLE, TransportError
    from launcher.guardctl import GuardClient, GuardTarget

    _fake_clock(monkeypatch)
    calls: list[list[str]] = []

    class Refusing:
        def start(self, host, argv, on_line):  # type: ignore[no-untyped-def]
            calls.append(argv)
            if len(calls) <= 2:
                raise TransportError(
                    host, "cannot start a command", TIMEOUT if kind == "timeout" else UNREACHABLE
                )
            return "channel"

    target = GuardTarget("n1", "/usr/bin/python3", "/tmp/run")
    client = GuardClient(Refusing())  # type: ignore[arg-type]
    import time

    follow = lambda **kw: client.follow(target, lambda h, r: None, start=start, **kw)  # noqa: E731
    if asked == 3:
        assert follow(retry_until=time.monotonic() + 60) == "channel"
    else:
        with pytest.raises(TransportError):
            follow(retry_until=time.monotonic() + 60)
    assert len(calls) == asked
    calls.clear()
    with pytest.raises(TransportError):  # no window: the first refusal is the answer
        follow()
    assert len(calls) == 1
    calls.clear()
    stopped = threading.Event()
    stopped.set()
    with pytest.raises(TransportError):  # a teardown began: nothing more is asked
        follow(retry_until=time.monotonic() + 60, stop=stopped)
    assert len(calls) == 1
