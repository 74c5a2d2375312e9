"""Health watching on real SSH nodes with real torchrun/gloo: first failure named, teardown, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import assert_nothing_left, scaled, wait_for, worker_pid

from cluster.inventory import from_mapping
from launcher import lifecycle

pytestmark = [pytest.mark.ssh, pytest.mark.usefixtures("run_home")]

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "examples" / "train.py")


def two_nodes(cluster: Any, args: list[str], *, nproc: int = 2, **over: Any) -> dict:
    """Two of the cluster's nodes running examples/train.py; `over` is merged in (limits scaled: simnodes)."""
    job = {"kind": "torchrun", "script": TRAIN, "args": args, "nproc_per_node": nproc, "timeout": 120}
    health = {"heartbeat_timeout": 5, "grace": 2, "stall_timeout": 60}
    over = {**over, "job": {**job, **over.get("job", {})}, "health": {**health, **over.get("health", {})}}
    data = cluster.inventory_dict(master={"port": "auto"}, **over)
    data["nodes"] = data["nodes"][:2]
    return data


def run_in_thread(inv: Any, lines: list | None = None) -> tuple[threading.Thread, dict]:
    result: dict[str, Any] = {}

    def target() -> None:
        result["out"] = lifecycle.up(
            inv, on_line=(lambda h, r, t: lines.append((h, r, t))) if lines is not None else None
        )

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, result


def test_sigkill_of_one_rank_names_it_and_tears_everything_down(sim3: Any) -> None:
    inv = from_mapping(two_nodes(sim3, ["--steps", "100000", "--sleep", "0.05"]))
    thread, result = run_in_thread(inv)
    pid = wait_for(lambda: worker_pid(sim3, "node2", 1), 90, "rank 3 on node2", result)
    wait_for(lambda: worker_pid(sim3, "node1", 0), 30, "rank 0 on node1")
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    thread.join(timeout=scaled(90))
    assert not thread.is_alive()
    _, outcome = result["out"]
    assert outcome.code == 1
    root = outcome.root_cause
    assert root is not None and root["node"] == "node2", outcome.summary
    assert root["rank"] in (3, None), outcome.summary  # torchrun's failure summary names global rank 3
    assert_nothing_left(sim3)


@pytest.mark.slow
def test_sigstopped_rank_is_a_hang_and_stopped_processes_die_too(sim3: Any) -> None:
    inv = from_mapping(
        two_nodes(sim3, ["--steps", "100000", "--sleep", "0.05"], health={"stall_timeout": 30})
    )
    thread, result = run_in_thread(inv)
    pid = wait_for(lambda: worker_pid(sim3, "node2", 0), 90, "rank 2 on node2", result)
    wait_for(lambda: worker_pid(sim3, "node1", 1), 30, "rank 1 on node1")
    time.sleep(1.0)
    os.kill(pid, signal.SIGSTOP)  # the node's namespace (sim3's teardown) kills it if this test fails
    thread.join(timeout=scaled(120))
    assert not thread.is_alive()
    _, outcome = result["out"]
    assert outcome.code == 1
    root = outcome.root_cause
    assert root is not None and root["node"] == "node2" and root["kind"] in ("stopped", "stall"), (
        outcome.summary
    )
    assert_nothing_left(sim3)


def test_rccl_error_line_is_classified_as_the_root_cause(sim3: Any) -> None:
    line = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, unhandled system error, NCCL version 2.18.3"
    data = two_nodes(sim3, [], nproc=1)
    # Like PyTorch's flight recorder on a watchdog timeout, the job leaves a dump where the plan told it to.
    code = (
        "import os,sys,time; open(os.environ['TORCH_NCCL_DEBUG_INFO_TEMP_FILE'] + '0', 'w').write('trace');"
        f"print({line!r}, flush=True); time.sleep(0.5); sys.exit(1)"
    )
    data["job"] = {"kind": "command", "command": [sys.executable, "-c", code]}
    run_id, outcome = lifecycle.up(from_mapping(data))
    assert outcome.code == 1
    assert outcome.root_cause is not None and outcome.root_cause["category"] == "comm-error"
    assert "unhandled system error" in outcome.root_cause["text"]
    from launcher import records

    dumps = records.RunRecord.open(run_id).root / "artifacts"
    assert (dumps / "node1" / "nccl_trace_rank_0").read_text() == "trace"  # collected into the run record
    assert_nothing_left(sim3)


def test_an_abort_racing_the_completion_line_of_another_node_is_an_end_of_run_abort(sim3: Any) -> None:
    # Issue 12 item 7: a gloo rank aborts at interpreter exit right after the final barrier, on another node than
    # rank 0's "training complete". Whichever line the head reads first, the run succeeded.
    data = two_nodes(sim3, [], nproc=1)
    data["job"]["script"] = str(ROOT / "tests" / "jobs" / "end_of_run_abort.py")
    data["job"]["args"] = ["race"]
    _, outcome = lifecycle.up(from_mapping(data))
    assert outcome.code == 0, outcome.summary
    assert outcome.end_of_run_abort, outcome.summary
    assert_nothing_left(sim3)


def losses(lines: list[tuple[str, int | None, str]]) -> dict[int, str]:
    out: dict[int, str] = {}
    for _, _, text in lines:
        if text.startswith("step="):
            step, loss = text.split()
            out[int(step.split("=")[1])] = loss.split("=")[1]
    return out


def clean_then_faulty(cluster: Any, shared: Path) -> tuple[list[tuple[str, int | None, str]], Any]:
    """Run 12 steps cleanly (checkpoints every 3 in `shared`) and return its lines, with the inventory of the same
    job whose rank 1 fails at step 8 and may restart once (tests/test_e2e_detach.py runs that one detached).

    World size 2 (one rank per node): a sum of two is order-free, so resumed losses are bitwise equal. With more
    ranks DDP rebuilds its gradient buckets after the first step of every fresh process, which changes gloo's
    summation order and the losses by ~1e-7 after a resume (seen here with 4 ranks)."""
    args = ["--steps", "12", "--ckpt-every", "3"]
    clean = from_mapping(two_nodes(cluster, args, nproc=1, job={"checkpoint_dir": str(shared / "clean")}))
    clean_lines: list = []
    _, outcome = lifecycle.up(clean, on_line=lambda h, r, t: clean_lines.append((h, r, t)))
    assert outcome.code == 0, outcome.summary
    faulty = from_mapping(
        two_nodes(
            cluster,
            [*args, "--fail-at-step", "8", "--fail-rank", "1"],
            nproc=1,
            job={"checkpoint_dir": str(shared / "faulty")},
            restart={"max_restarts": 1, "backoff": 0},
        )
    )
    return clean_lines, faulty


@pytest.mark.slow
def test_restart_resumes_from_the_latest_checkpoint_with_identical_losses(sim3: Any, tmp_path: Path) -> None:
    # Checkpoints must be visible to every node (shared storage): /var/tmp is not private per simulated node.
    shared = Path("/var/tmp") / f"rlaunch-test-ckpt-{os.getpid()}-{time.time_ns()}"
    try:
        clean_lines, faulty = clean_then_faulty(sim3, shared)
        lines: list = []
        run_id, outcome = lifecycle.up(faulty, on_line=lambda h, r, t: lines.append((h, r, t)))
        assert outcome.code == 0, outcome.summary
        assert any("resumed from step-6" in t for _, _, t in lines)
        reference, resumed = losses(clean_lines), losses(lines)
        assert sorted(resumed) == list(range(1, 13))
        assert resumed == reference  # bitwise: the same digits, before and after the resume
        from launcher import records

        first = json.loads((records.RunRecord.open(run_id).root / "outcome-0.json").read_text())
        assert first["code"] == 1 and first["root_cause"]["node"] == "node2"
        assert_nothing_left(sim3)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
