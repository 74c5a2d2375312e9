"""The restart policy end to end (launcher/restart_policy.py): a job that crashes at the same step every time is
stopped by the no-progress breaker, not by the budget, through the CLI, with real torchrun on the local transport.

One run serves every assertion (CI time): the final line, the exit code, the record's budget, `status`, the
ledger's restart entries, nothing left running."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest
import yaml
from e2e_helpers import crash_loop_inventory, processes_of_run, rlaunch

from launcher import ledger, records

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_job_crashing_at_the_same_step_is_stopped_by_the_breaker(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ckpt = tmp_path / "ckpt"
    # The budget allows 5 restarts (node faults: 3 by default); the breaker stops after 2 without progress.
    restart = {"max_restarts": 5, "backoff": 0, "no_progress": 2}
    inventory = crash_loop_inventory(tmp_path, restart, cluster="breaker-test", python=sys.executable)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(inventory))
    cli = functools.partial(rlaunch, home=home)

    plan = cli("plan", str(path))
    assert plan.returncode == 0, plan.stderr
    assert (
        "restart policy: up to 5 restarts; per kind: code 1, node 3, network 2, hang 1, other 1; "
        in plan.stdout
    )
    assert "stop after 2 attempts in a row without progress" in plan.stdout

    up = cli("up", str(path), "--no-doctor", timeout=400)
    assert up.returncode == 1, up.stderr
    final = up.stderr.strip().splitlines()[-1]
    assert final == (
        f"rlaunch: not restarting: no progress in 2 attempts (each ended without a checkpoint newer than {ckpt}/step-4)"
    ), up.stderr
    assert "restart 1/5 (node faults)" in up.stderr and "restart 2/5 (node faults)" in up.stderr
    assert "restart 3/5" not in up.stderr

    run_id = records.list_run_ids(home)[-1]
    root = records.RunRecord.open(run_id, home).root
    outcomes = [json.loads((root / f"outcome-{i}.json").read_text()) for i in range(3)]
    assert not (root / "outcome-3.json").exists()
    assert [o["checkpoint"] for o in outcomes] == [str(ckpt / "step-4")] * 3
    assert [o["restarted"] for o in outcomes] == [True, True, False]
    assert outcomes[-1]["decision"]["rule"] == "no_progress"

    status = cli("status", run_id, "--json")
    left = json.loads(status.stdout)["restart_policy"]
    assert left["restarts"] == 2 and left["restarts_left"] == 3 and left["by_kind"]["node"] == 1
    assert left["stopped_by"]["rule"] == "no_progress"
    human = cli("status", run_id)
    assert (
        "restarts: 2 made, 3 left (per kind: code 1, node 1, network 2, hang 1, other 1)" in human.stdout
    ), human.stdout + human.stderr
    assert "stopped: no progress in 2 attempts" in human.stdout

    restarts = [e for e in ledger.read(home) if e["kind"] == ledger.RESTART]
    assert [(e["cluster"], e["run_id"], e["host"]) for e in restarts] == [
        ("breaker-test", run_id, "sim-node1")
    ] * 2
    for rid in (run_id, f"{run_id}-r1", f"{run_id}-r2"):
        assert not processes_of_run(rid)
