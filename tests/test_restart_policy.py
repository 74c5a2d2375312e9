"""The restart policy on plain event data (launcher/restart_policy.py): budgets per kind, the no-progress breaker,
exit-code lists, the restart-storm guard, and the line that names the rule that stopped the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.inventory import InventoryError, load_inventory
from launcher import ledger
from launcher.restart_policy import AttemptResult, Policy, kind_of, no_progress_streak, storm_times

SIGKILL = {"kind": "exit", "node": "n2", "rank": 1, "code": -9, "signal": "SIGKILL", "category": "crash"}
TRACEBACK = {"kind": "line", "node": "n1", "rank": 0, "category": "crash", "rule": "python-traceback"}
NCCL = {"kind": "line", "node": "n1", "rank": 0, "category": "network", "rule": "nccl-socket"}
LOST = {"kind": "lost", "node": "n3", "rank": None, "category": None}
HANG = {"kind": "hang", "node": "n1", "rank": 2, "category": None}


def attempts(*specs: tuple[dict | None, str | None, int | None], code: int = 1) -> list[AttemptResult]:
    """(root cause, checkpoint after it, highest step) per attempt; every one but the last was restarted."""
    out = [
        AttemptResult(i, code, root, {}, ckpt, step, restarted=i < len(specs) - 1)
        for i, (root, ckpt, step) in enumerate(specs)
    ]
    return out


def test_kinds_follow_the_ledger_and_the_rule_categories() -> None:
    assert kind_of(SIGKILL) == "node"  # a signal death is no code bug (the ledger strikes only with evidence)
    assert kind_of(LOST) == "node"
    assert kind_of({"kind": "line", "node": "n1", "category": "gpu-fault"}) == "node"
    assert kind_of(NCCL) == "network"
    assert kind_of({"kind": "line", "node": "n1", "category": "collective-timeout"}) == "network"
    assert kind_of(TRACEBACK) == "code"
    assert kind_of({"kind": "line", "node": "n1", "category": "oom"}) == "code"
    assert kind_of({"kind": "exit", "node": "n1", "code": 1, "category": "crash"}) == "code"
    assert kind_of(HANG) == "hang"
    assert kind_of(None) == "other"


def test_the_budget_of_code_errors_stops_a_deterministic_bug_after_one_retry() -> None:
    policy = Policy(max_restarts=10)
    first = policy.decide(attempts((TRACEBACK, None, 3)))
    assert first.restart and first.kind == "code"
    second = policy.decide(attempts((TRACEBACK, None, 3), (TRACEBACK, None, 7)))
    assert not second.restart and second.rule == "budget"
    assert (
        second.message
        == "not restarting: the budget for code errors is used up (1 of restart.budgets.code 1)"
    )


def test_node_faults_get_three_and_network_two() -> None:
    policy = Policy(max_restarts=10, no_progress=0)
    assert policy.decide(attempts(*[(SIGKILL, None, s) for s in (1, 2, 3, 4)])).rule == "budget"
    assert policy.decide(attempts(*[(SIGKILL, None, s) for s in (1, 2, 3)])).restart
    assert policy.decide(attempts(*[(NCCL, None, s) for s in (1, 2, 3)])).rule == "budget"
    # Kinds have separate budgets: two network errors leave every node-fault restart.
    assert policy.decide(attempts((NCCL, None, 1), (NCCL, None, 2), (LOST, None, 3))).restart


def test_max_restarts_caps_every_kind_and_zero_never_restarts() -> None:
    assert Policy().decide(attempts((LOST, None, 1))).message == "not restarting: restart.max_restarts is 0"
    capped = Policy(max_restarts=2, no_progress=0).decide(
        attempts((LOST, None, 1), (NCCL, None, 2), (HANG, None, 3))
    )
    assert capped.rule == "max_restarts" and "restart.max_restarts 2 reached" in capped.message


def test_the_breaker_stops_attempts_that_never_pass_the_checkpoint_before_the_budget_does() -> None:
    policy = Policy(max_restarts=10, budgets={"code": 10, "node": 10, "network": 10, "hang": 10, "other": 10})
    # Each attempt resumes from step-4 and crashes at step 5 before its next checkpoint.
    same = [(SIGKILL, "/ck/step-4", 5)] * 4
    assert policy.decide(attempts(*same[:3])).restart  # two attempts without progress: not yet
    stop = policy.decide(attempts(*same))
    assert stop.rule == "no_progress"
    assert stop.message == (
        "not restarting: no progress in 3 attempts (each ended without a checkpoint newer than /ck/step-4)"
    )
    # A newer checkpoint resets the streak.
    moving = [(SIGKILL, "/ck/step-4", 5), (SIGKILL, "/ck/step-4", 5), (SIGKILL, "/ck/step-6", 7)]
    moving += [(SIGKILL, "/ck/step-6", 7)]
    assert no_progress_streak(attempts(*moving)) == 1
    assert policy.decide(attempts(*moving)).restart


def test_without_checkpoints_the_breaker_compares_steps() -> None:
    policy = Policy(max_restarts=10, no_progress=2, budgets={"code": 10})
    assert policy.decide(attempts((TRACEBACK, None, 5), (TRACEBACK, None, 9), (TRACEBACK, None, 12))).restart
    stop = policy.decide(attempts((TRACEBACK, None, 5), (TRACEBACK, None, 5), (TRACEBACK, None, 5)))
    assert stop.rule == "no_progress" and "none got past step 5" in stop.message
    # An attempt that ran past its checkpoint but died before the next save kept nothing.
    assert no_progress_streak(attempts((SIGKILL, "/ck/step-4", 5), (SIGKILL, "/ck/step-4", 9))) == 1


def test_exit_code_lists() -> None:
    policy = Policy(max_restarts=5, on_exit_codes=(75,), never_on=(3,))
    bad_args = {"kind": "exit", "node": "n1", "code": 3, "category": "crash"}
    stop = policy.decide(attempts((bad_args, None, 0)))
    assert stop.rule == "never_on" and stop.message == "not restarting: exit code 3 is in restart.never_on"
    # torchrun's agent exits 1; the worker's code comes from its failure table.
    requeue = {"kind": "line", "node": "n1", "category": "crash", "text": "  exitcode  : 75 (pid: 4242)"}
    five = [(requeue, None, s) for s in range(1, 6)]
    assert policy.decide(attempts(*five[:5])).restart  # four asked restarts, no code budget spent
    assert policy.used(attempts(*five[:5]))["code"] == 0
    assert policy.decide(attempts(*five, (requeue, None, 6))).rule == "max_restarts"
    # The node's exit code counts when the root cause carries none.
    on_node = AttemptResult(0, 1, TRACEBACK, {"n1": {"exit_code": 3}})
    assert policy.decide([on_node]).rule == "never_on"


def test_the_storm_guard_counts_this_clusters_restarts_of_every_run() -> None:
    entries = [ledger.restart("n1", "prod", f"run{i}", "node", now=1000.0 + 60 * i) for i in range(5)]
    entries += [ledger.restart("n1", "other", "x", "node", now=1200.0)]
    entries += [ledger.strike("n1", "run0", "lost", {}, now=1000.0)]
    times = storm_times(entries, "prod")
    assert len(times) == 5
    policy = Policy(max_restarts=10)
    stop = policy.decide(attempts((LOST, None, 3)), times, now=1300.0)
    assert stop.rule == "storm" and "5 restarts of this cluster in the last 30 min" in stop.message
    assert policy.decide(attempts((LOST, None, 3)), times, now=1000.0 + 240 + 1801).restart  # all older
    # The guard's ledger entries are not strikes: `rlaunch nodes` does not see them.
    assert ledger.summarize(entries)["n1"].strikes == 1


def test_budget_left_for_status_and_plan_line() -> None:
    policy = Policy.from_config({"max_restarts": 4, "budgets": {"node": 2}, "never_on": [3]})
    left = policy.budget_left(attempts((LOST, "/ck/a", 3), (NCCL, "/ck/b", 5), (NCCL, "/ck/b", 5)))
    assert left == {
        "restarts": 2,
        "restarts_left": 2,
        "by_kind": {"code": 1, "node": 1, "network": 1, "hang": 1, "other": 1},
        "no_progress_in_a_row": 1,
    }
    line = policy.describe()
    assert "up to 4 restarts" in line and "node 2" in line and "never on exit codes 3" in line
    assert Policy.from_config({}).describe() == "restart policy: never restart (restart.max_restarts 0)"


def test_the_inventory_names_bad_restart_keys(tmp_path: Path) -> None:
    base = "nodes: [{host: a}]\njob: {script: t.py}\nrestart:\n  max_restarts: 2\n"
    cases = {
        "  never_on: [three]\n": "restart.never_on",
        "  on_exit_codes: [75]\n  never_on: [75]\n": "both restart.on_exit_codes and restart.never_on",
        "  budgets: {codes: 1}\n": "restart.budgets.codes",
        "  never_on: [300]\n": "0 to 255",
    }
    for extra, expected in cases.items():
        path = tmp_path / "c.yaml"
        path.write_text(base + extra)
        with pytest.raises(InventoryError) as exc:
            load_inventory(path)
        assert expected in str(exc.value), str(exc.value)
        assert str(exc.value).startswith(f"{path}:"), str(exc.value)
    (tmp_path / "ok.yaml").write_text(
        base + "  budgets: {code: 0}\n  no_progress: 2\n  on_exit_codes: [75]\n"
    )
    inv = load_inventory(tmp_path / "ok.yaml")
    assert (
        inv.restart.budgets.code == 0 and inv.restart.budgets.node == 3 and inv.restart.on_exit_codes == (75,)
    )


def test_the_status_line_keeps_the_kind_order_after_a_json_round_trip() -> None:
    import json

    from launcher.restart_policy import budget_line

    left = Policy(max_restarts=3).budget_left(attempts((LOST, None, 1)))
    sorted_back = json.loads(json.dumps(left, sort_keys=True))  # as state.json stores it
    assert budget_line(sorted_back).startswith(
        "restarts: 0 made, 3 left (per kind: code 1, node 3, network 2, hang 1, other 1)"
    )


def test_a_worker_killed_by_a_signal_in_torchruns_wrapper_line_is_a_node_fault() -> None:
    """The root cause is often torchrun's wrapper line, not the exit event: its negative exitcode is a signal."""
    line = {
        "kind": "line",
        "node": "n2",
        "category": "crash",
        "rule": "torchrun-worker-failed",
        "text": "api.py:1002] failed (exitcode: -9) local_rank: 0 (pid: 21597) of binary: python",
    }
    assert kind_of(line) == "node"
    assert kind_of({**line, "text": "api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 2)"}) == "code"
