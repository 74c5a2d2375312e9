"""The stop request's pieces without a job: the node script that raises it, the job helper that reads it, and the
restart policy that never restarts a stopped run (docs/preemption.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from launcher.restart_policy import AttemptResult, Policy

NODE = Path(__file__).resolve().parents[1] / "launcher" / "node"


def _helper():
    spec = importlib.util.spec_from_file_location("rlaunch_job", NODE / "rlaunch_job.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stopreq(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", (NODE / "stopreq.py").read_text(), *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return json.loads(proc.stdout)


def test_the_request_file_is_written_atomically_and_read_by_the_helper(tmp_path: Path, monkeypatch) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    job = _helper()
    monkeypatch.setenv("RLAUNCH_RUN_DIR", str(run_dir))
    assert not job.should_stop() and not job.stop_requested()
    reply = stopreq(str(run_dir), "1700000120", "rlaunch stop")
    assert reply == {"ok": True, "path": str(run_dir / "stop-request.json")}
    data = json.loads((run_dir / "stop-request.json").read_text())
    assert data["deadline"] == 1700000120 and data["reason"] == "rlaunch stop"
    assert (os.stat(run_dir / "stop-request.json").st_mode & 0o777) == 0o600
    assert sorted(p.name for p in run_dir.iterdir()) == ["stop-request.json"]  # no temporary file left
    assert job.should_stop()  # no process group here: the node's own view
    assert not job.should_stop(every=2) and job.should_stop(every=2)  # every 2nd call only
    monkeypatch.delenv("RLAUNCH_RUN_DIR")
    assert not job.stop_requested()


def test_a_symlinked_or_missing_run_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert not stopreq(str(tmp_path / "link"), "0", "x")["ok"]
    assert not (tmp_path / "real" / "stop-request.json").exists()
    assert "No such file" in stopreq(str(tmp_path / "none"), "0", "x")["error"]


def test_a_requested_stop_is_never_restarted() -> None:
    exit75 = {"kind": "line", "node": "n1", "category": "crash", "text": "  exitcode  : 75 (pid: 1)"}
    policy = Policy(max_restarts=5, on_exit_codes=(75,))
    history = [AttemptResult(0, 1, exit75)]
    assert policy.decide(history).restart
    stop = policy.decide(history, stop_requested=True)
    assert not stop.restart and stop.rule == "stop_requested" and stop.exit_code == 75
