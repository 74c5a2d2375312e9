"""Cadence, hang and straggler rules, replayed from plain data (no clock, no processes)."""

from __future__ import annotations

from launcher.health.progress import Progress, Settings, progress_step
from launcher.health.stacks import explain, where
from launcher.health.watch import ProcSample, State, Watcher


def test_progress_lines_of_the_common_emitters() -> None:
    assert progress_step("step=12 loss=0.5") == 12
    assert progress_step("[Rank 0] step=30, skipped=0, lr=[0.001], mom=[(0.9, 0.999)]") == 30
    assert progress_step(" 12%|█▏        | 12/100 [00:05<00:40,  2.10it/s]") == 12
    assert progress_step("{'loss': 1.234, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1}") is True
    assert progress_step("loading checkpoint shards") is None
    assert (
        progress_step("iteration 7 done", Progress(Settings(progress_regex=r"iteration (\d+)"))._custom) == 7
    )


def run_job(
    w: Watcher,
    until: float,
    *,
    busy: set[int] = frozenset(),
    hang_at: float = 1e9,
    unheard: tuple[str, ...] = (),
    unheard_at: float = 1e9,
) -> list:
    """Two nodes × two ranks, a step every 0.5 s until `hang_at`; ranks in `busy` keep burning CPU after it.
    From `unheard_at` on the `unheard` nodes' guards send nothing (a frozen host)."""
    found, t, step, cpu = [], 0.0, 0, {r: 0.0 for r in range(4)}
    while t <= until:
        if t < hang_at and abs(t * 2 - round(t * 2)) < 1e-9:
            step += 1
            w.observe_line(t, "node1", 0, f"step={step} loss=0.1")
        for r in range(4):
            cpu[r] += 0.4 if (t < hang_at or r in busy) else 0.0
        for node, ranks in (("node1", (0, 1)), ("node2", (2, 3))):
            if node in unheard and t >= unheard_at:
                continue
            w.observe_procs(t, node, [ProcSample(100 + r, "S", r, cpu[r], 0.0) for r in ranks])
        found += w.tick_progress(t)
        t = round(t + 0.5, 3)
    return found


def test_quiescent_hang_is_declared_after_the_floor_and_not_before() -> None:
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    assert run_job(w, 100.0, hang_at=100.5) == []  # a healthy job: never
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    found = run_job(w, 200.0, hang_at=40.0)
    assert [e.kind for e in found] == ["hang"]
    assert 39.5 + 30.0 <= found[0].time <= 40.0 + 40.0  # the floor (30 s) after the last step, ranks idle
    assert w.state is State.STOPPING


def test_a_silent_busy_phase_is_not_a_hang() -> None:
    for busy in ({0, 1, 2, 3}, {2}):  # every rank computing; one rank computing while the others wait
        w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
        assert run_job(w, 200.0, hang_at=40.0, busy=busy) == []
        assert w.state is State.RUNNING


def test_a_frozen_node_is_named_when_the_others_wait_for_it() -> None:
    """Issue 14 item 5: a host that freezes says nothing and breaks no connection; its peers wait idle in the
    collective. Its ranks' samples simply stop, which must neither hide the hang (missing samples used to mean
    "not covered yet": stall_timeout, 600 s) nor be blamed on the survivors."""
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    found = run_job(w, 200.0, hang_at=40.0, unheard=("node2",), unheard_at=40.0)
    assert [(e.kind, e.node, e.rule) for e in found] == [("lost", "node2", "unresponsive")]
    assert "node2 unresponsive: nothing heard from its node guard since" in found[0].text
    assert found[0].time == 39.5  # when it was last heard: the earliest evidence is the root cause
    assert w.first_failure is found[0] and w.state is State.STOPPING

    # Both nodes unheard: the head's own link or load, not one node's fault (left to stall_timeout / SSH).
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    assert run_job(w, 200.0, hang_at=40.0, unheard=("node1", "node2"), unheard_at=40.0) == []
    # A node's guard unheard while the job still steps: no verdict (only a job that stopped progressing is hung).
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    assert run_job(w, 200.0, unheard=("node2",), unheard_at=40.0) == []


def test_hang_needs_a_learned_cadence() -> None:
    w = Watcher({"node1": [0]}, stall_timeout=600)
    w.observe_line(0.0, "node1", 0, "loading model")
    for t in range(0, 120):
        w.observe_procs(float(t), "node1", [ProcSample(1, "S", 0, 1.0, 0.0)])
        assert w.tick_progress(float(t)) == []


def straggler_job(extra: float, seconds: float = 120.0) -> Watcher:
    """node2's ranks burn `extra` CPU seconds per step more; everyone else waits idle in the collective."""
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    cpu = {r: 0.0 for r in range(4)}
    t, step = 0.0, 0
    while t <= seconds:
        step += 1
        w.observe_line(t, "node1", 0, f"step={step} loss=0.1")
        for r in range(4):
            cpu[r] += 0.05 + (extra if r >= 2 else 0.0) + (0.001 * r)
        for node, ranks in (("node1", (0, 1)), ("node2", (2, 3))):
            w.observe_procs(t, node, [ProcSample(100 + r, "S", r, cpu[r], 0.0) for r in ranks])
        w.tick_progress(t)
        t = round(t + 0.5, 3)
    return w


def test_straggler_named_with_evidence_and_even_job_quiet() -> None:
    slow = straggler_job(0.3)
    warnings = [e for e in slow.events if e.kind == "straggler"]
    assert [e.node for e in warnings] == ["node2"] and warnings[0].severity == "warning"
    assert "per step" in warnings[0].text
    assert slow.state is State.RUNNING  # a warning, the job goes on
    even = straggler_job(0.0)
    assert not [e for e in even.events if e.kind == "straggler"]


def test_straggler_restart_without_is_fatal() -> None:
    w = Watcher({"node1": [0], "node2": [1]}, stall_timeout=600, straggler_action="restart-without")
    cpu = [0.0, 0.0]
    for i in range(200):
        t = i * 0.5
        w.observe_line(t, "node1", 0, f"step={i + 1}")
        cpu[0] += 0.05
        cpu[1] += 0.4
        w.observe_procs(t, "node1", [ProcSample(1, "S", 0, cpu[0], 0.0)])
        w.observe_procs(t, "node2", [ProcSample(2, "S", 1, cpu[1], 0.0)])
        w.tick_progress(t)
    assert w.first_failure is not None and w.first_failure.kind == "straggler"
    assert w.first_failure.node == "node2"


PY_SPY_WAITING = """Process 11: python train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 11 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2950)
    wrapper (torch/distributed/c10d_logger.py:83)
    main (/work/examples/train.py:91)
        > dist.all_reduce(reduced)
"""
PY_SPY_ASLEEP = """Process 12: python train.py

Thread 5 (idle): "Thread-1"
    run (threading.py:982)
Thread 12 (idle): "MainThread"
    main (/work/examples/train.py:90)
        > time.sleep(10**6)
    <module> (/work/examples/train.py:120)
"""


def test_the_rank_whose_stack_differs_is_named() -> None:
    places = [where("node1", 0, "py-spy", PY_SPY_WAITING), where("node1", 1, "py-spy", PY_SPY_WAITING),
              where("node2", 2, "py-spy", PY_SPY_WAITING), where("node2", 3, "py-spy", PY_SPY_ASLEEP)]  # fmt: skip
    culprit, sentence = explain(places)
    assert culprit is not None and (culprit.node, culprit.rank) == ("node2", 3)
    assert "train.py:90" in sentence and "time.sleep" in sentence and "3 others" in sentence
    assert "all_reduce" in sentence


def test_proc_fallback_and_no_majority() -> None:
    sleep = 'Thread 9 (S): "MainThread"\n    in clock_nanosleep (wchan hrtimer_nanosleep)\n'
    futex = 'Thread 9 (S): "MainThread"\n    in futex (wchan futex_wait_queue)\n'
    culprit, sentence = explain([where("a", 0, "proc", futex), where("a", 1, "proc", futex),
                                 where("b", 2, "proc", sleep)])  # fmt: skip
    assert culprit is not None and culprit.rank == 2 and "clock_nanosleep" in sentence
    culprit, _ = explain([where("a", 0, "proc", futex), where("b", 1, "proc", sleep)])
    assert culprit is None  # two ranks: nobody to outvote


def test_explain_hang_renames_the_hang_event() -> None:
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    run_job(w, 120.0, hang_at=40.0)
    dumps = [("node1", 0, "py-spy", PY_SPY_WAITING), ("node1", 1, "py-spy", PY_SPY_WAITING),
             ("node2", 2, "py-spy", PY_SPY_ASLEEP), ("node2", 3, "py-spy", PY_SPY_WAITING)]  # fmt: skip
    event = w.explain_hang(dumps)
    assert event is not None and (event.node, event.rank) == ("node2", 2)
    assert w.verdict().root_cause == event and "time.sleep" in w.verdict().summary
