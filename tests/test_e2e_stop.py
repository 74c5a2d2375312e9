"""`rlaunch stop --save` end to end on simulated SSH nodes (docs/preemption.md): real torchrun/gloo, 2 nodes ×
1 rank, examples/train.py with the pushed rlaunch_job.should_stop.

One test, two runs of the same cluster (CI cost: one stop that saves, one that misses its deadline):
1. --stop-aware: the guards signal the ranks that catch SIGUSR1 (never torchrun), every rank agrees on one step,
   rank 0 saves it, every process exits (read from the nodes' process tables); `up` returns "stopped" (130)
   without a restart; the record says "stopped for preemption at step N, saved" with 0 steps lost.
2. A fresh `up` of the same job resumes from that save by itself (the first step it prints is N+1), and this time
   the script ignores the request: the guards tear it down at the deadline, the record says "save did not finish
   within the deadline", and nothing is left on the nodes.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import assert_nothing_left, health, scaled, wait_for

from cluster.inventory import from_mapping
from launcher import lifecycle, preempt, records

ROOT = Path(__file__).resolve().parents[1]
NODES = ("node1", "node2")


def inventory(sim3: Any, ckpt: Path, *args: str) -> Any:
    data = sim3.inventory_dict(
        nodes=[n for n in sim3.inventory_dict()["nodes"] if n["host"] in NODES],
        master={"port": "auto"},
        profile="cpu",
        job={
            "kind": "torchrun",
            "script": str(ROOT / "examples" / "train.py"),
            # Far more steps than the test waits for, no periodic checkpoint before step 1000.
            "args": ["--steps", "100000", "--sleep", "0.05", "--ckpt-every", "1000", *args],
            "nproc_per_node": 1,
            "checkpoint_dir": str(ckpt),
            "timeout": scaled(60),
        },
        health=health(stall_timeout=60, heartbeat_timeout=10, grace=3),
        restart={"max_restarts": 3, "backoff": 0},  # a stop must not be restarted
    )
    return from_mapping(data)


def start(inv: Any, steps: list[int], statuses: list[str]) -> tuple[str, threading.Thread, dict]:
    run_id = records.new_run_id()
    result: dict = {}

    def run() -> None:
        result["out"] = lifecycle.up(
            inv,
            run_id=run_id,
            on_status=statuses.append,
            on_line=lambda h, r, t: steps.extend(int(m) for m in re.findall(r"^step=(\d+)", t)),
            head_env={},
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return run_id, thread, result


def guard_state(sim3: Any, node: str, run_id: str) -> dict:
    path = sim3.node_path(node, f"/tmp/rlaunch/{run_id}/{node}/.rlaunch/attempt-0/state.json")
    return json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.ssh
def test_stop_save_then_resume_then_a_missed_deadline(
    sim3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    shared = Path(tempfile.mkdtemp(prefix="rlaunch-stop-", dir="/var/tmp"))  # the nodes' /tmp is private
    try:
        ckpt = shared / "ckpt"
        # 1. A stop-aware job: saved at the step every rank agreed on.
        steps: list[int] = []
        statuses: list[str] = []
        run_id, thread, result = start(inventory(sim3, ckpt, "--stop-aware"), steps, statuses)
        wait_for(lambda: len(steps) >= 5, 120, "five training steps", result)
        stopped = preempt.stop(run_id, deadline=scaled(60))
        thread.join(timeout=scaled(60))
        assert not thread.is_alive()
        _, outcome = result["out"]
        step = stopped["step"]
        assert stopped["saved"] and not stopped["timed_out"], stopped
        assert (
            stopped["checkpoint"] == str(ckpt / f"step-{step}")
            and (ckpt / f"step-{step}" / "state.pt").is_file()
        )
        assert stopped["summary"] == f"stopped for preemption at step {step}, saved ({ckpt}/step-{step})"
        assert max(steps) == step and stopped["lost_steps"] == 0  # every step printed is in the save
        assert outcome.code == 130 and outcome.summary.startswith("stopped on request (rlaunch stop)"), (
            outcome
        )
        record = records.RunRecord.open(run_id)
        state = record.read_state()
        assert (
            state["state"] == "stopped"
            and state["preemption"]["saved"]
            and state["summary"] == stopped["summary"]
        )
        assert not (record.root / "outcome-1.json").exists()  # no restart
        assert_nothing_left(sim3, nodes=NODES)
        # The guards signal only processes that catch SIGUSR1 (tests/test_stop.py shows which): never torchrun's
        # agent, which SIGUSR1 would have killed. The agent exits with its workers' failure (their 75), by no
        # signal; or, when the other node's rank exited first, the run's teardown of the job (every rank had
        # passed the barrier behind the save by then) SIGTERMs it through its guard (seen on a loaded machine).
        for node in NODES:
            guard = guard_state(sim3, node, run_id)
            signalled = [p[0] for p in guard.get("stop", {}).get("signalled", [])]
            assert guard["job_pid"] not in signalled and guard["signal"] != signal.SIGUSR1, (node, guard)
            assert (guard["signal"] is None and guard["exit_code"] == 1) or (
                guard["signal"] == signal.SIGTERM and guard["reason"].startswith("guard received SIGTERM")
            ), (node, guard)
            assert len(signalled) <= 1, (node, guard)  # the one rank, if in time

        # 2. The same job again, now ignoring the request: resumed from the save, torn down at the deadline.
        steps2: list[int] = []
        statuses2: list[str] = []
        run2, thread2, result2 = start(inventory(sim3, ckpt), steps2, statuses2)
        wait_for(lambda: len(steps2) >= 3, 120, "three steps after the resume", result2)
        assert min(steps2) == step + 1  # lost_steps 0: it went on from the saved step
        assert any(s.startswith(f"resuming from {ckpt}/step-{step}: run {run_id} was stopped for preemption")
                   for s in statuses2), statuses2  # fmt: skip
        assert records.RunRecord.open(run2).read_state()["resumed_after_preemption"]["lost_steps"] == 0
        late = preempt.stop(run2, deadline=3)  # the job ignores it: the deadline is what ends it
        thread2.join(timeout=scaled(60))
        assert not thread2.is_alive()
        assert not late["saved"] and late["timed_out"], late
        assert late["summary"] == (
            f"save did not finish within the deadline (3 s): the job was torn down; the latest complete "
            f"checkpoint is {ckpt}/step-{step}"
        )
        assert late["lost_steps"] == max(steps2) - step > 0
        assert result2["out"][1].code == 130
        assert_nothing_left(sim3, nodes=NODES)
        assert guard_state(sim3, "node1", run2)["reason"].startswith("stop deadline passed (rlaunch stop)")
    finally:
        shutil.rmtree(shared, ignore_errors=True)
