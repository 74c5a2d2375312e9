"""`rlaunch stop --save` end to end (docs/preemption.md): real torchrun on the local transport (2 simulated nodes ×
1 rank, gloo), examples/train.py --stop-aware using the pushed rlaunch_job.should_stop. One run: every rank agrees
on the stop step, rank 0 saves it, every process exits, `up` returns "stopped" (130) without restarting, and the
record says which step was saved; no step printed after the save is lost."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from e2e_helpers import wait_for

from cluster.inventory import from_mapping
from launcher import lifecycle, records

ROOT = Path(__file__).resolve().parents[1]


def processes_of_run(run_id: str) -> list[int]:
    marker = f"RLAUNCH_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_stop_save_makes_every_rank_save_once_and_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    ckpt = tmp_path / "ckpt"
    inv = from_mapping(
        {
            "cluster": "stop-test",
            "transport": "local",
            "nodes": [
                {"host": "sim-node0", "address": "127.0.0.1", "gpus": 0},
                {"host": "sim-node1", "address": "127.0.0.1", "gpus": 0},
            ],
            "master": {"port": "auto"},
            "workdir": str(tmp_path / "work"),
            "python": str(ROOT / ".venv" / "bin" / "python"),
            "profile": "cpu",
            "job": {
                "kind": "torchrun",
                "script": str(ROOT / "examples" / "train.py"),
                # Far more steps than the test waits for, no periodic checkpoint before step 1000.
                "args": ["--steps", "100000", "--sleep", "0.05", "--ckpt-every", "1000", "--stop-aware"],
                "nproc_per_node": 1,
                "checkpoint_dir": str(ckpt),
                "timeout": 60,
            },
            "health": {"stall_timeout": 60, "heartbeat_timeout": 10},
            "restart": {"max_restarts": 3, "backoff": 0},  # a stop must not be restarted
        }
    )
    run_id = records.new_run_id()
    steps: list[int] = []
    result: dict = {}

    def run() -> None:
        result["up"] = lifecycle.up(
            inv,
            run_id=run_id,
            on_line=lambda h, r, t: steps.extend(int(m) for m in re.findall(r"^step=(\d+)", t)),
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_for(lambda: len(steps) >= 5, 120, "five training steps")
    stopped = lifecycle.stop(run_id, deadline=60)
    thread.join(timeout=60)
    assert not thread.is_alive()
    _, outcome = result["up"]
    assert stopped["saved"], stopped
    step = stopped["step"]
    assert (
        stopped["checkpoint"] == str(ckpt / f"step-{step}") and (ckpt / f"step-{step}" / "state.pt").is_file()
    )
    assert stopped["summary"] == f"stopped for preemption at step {step}, saved ({ckpt}/step-{step})"
    assert max(steps) == step  # every step printed is in the save: nothing lost
    assert outcome.code == 130 and outcome.summary.startswith("stopped on request (rlaunch stop)"), (
        outcome.summary
    )
    record = records.RunRecord.open(run_id)
    state = record.read_state()
    assert (
        state["state"] == "stopped"
        and state["preemption"]["saved"]
        and state["summary"] == stopped["summary"]
    )
    assert not (record.root / "outcome-1.json").exists()  # no restart
    assert not processes_of_run(run_id)
    # The CLI on the finished run: bad input, one line.
    proc = subprocess.run(
        [sys.executable, "-m", "launcher.cli", "stop", run_id, "--save", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "RLAUNCH_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert proc.returncode == 2 and f"run {run_id} is stopped: nothing to stop" in proc.stderr, proc.stderr
    assert json.loads((record.root / "state.json").read_text())["preemption"]["step"] == step
