"""The benchmarks still run: each bench script once with its smallest settings (figures are not checked)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import simnodes
from e2e_helpers import scaled

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run_bench(script: str, *args: str, timeout: float = 540) -> str:
    """Run bench/SCRIPT with --no-write; on timeout SIGTERM it (it stops its nodes), then SIGKILL, by PID."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / script), *args, "--no-write"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=scaled(60))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        pytest.fail(f"{script} did not finish in {timeout:.0f} s: {err[-2000:]}")
    assert proc.returncode == 0, f"{script} exited {proc.returncode}: {err[-3000:]}"
    return out


@pytest.fixture(autouse=True)
def needs_simnodes() -> None:
    if reason := simnodes.unavailable_reason():
        pytest.skip(reason)


def test_health_bench_runs() -> None:
    # The hang case exercises both paths that matter: rlaunch's teardown and plain torchrun hitting the cap.
    out = run_bench("health.py", "--reps", "1", "--cases", "hang", "--cap", "10")
    assert "| hang (SIGSTOP)" in out and "| rlaunch |" in out and "| torchrun |" in out
    assert "> 10" in out  # plain torchrun never ends a hang on its own


def test_watcher_cpu_bench_runs() -> None:
    out = run_bench(
        "watcher_cpu.py", "--nodes", "2", "--seconds", "1", "--ranks", "2", "--rate", "5", "--real", "2"
    )
    assert "in process" in out and "real: SimCluster" in out and "classify" in out


def test_rules_load_bench_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "rules_load.py"), "--reps", "1", "--before", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "with index" in out.stdout and "without index" in out.stdout and "at HEAD" in out.stdout
