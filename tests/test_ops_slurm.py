"""ops/slurm scripts against a real one-node Slurm (tests/slurm_fixture.py): the prolog runs through real jobs
(srun), drains the node with an "rlaunch:" reason when the check fails and not when it passes; the health check
resumes only nodes rlaunch drained; the epilog kills a GPU-holding process a real job left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_fixture import (
    OneNodeSlurm,
    slurm_missing,
    start_one_node_slurm,
    write_standin_validate,
    write_wrapper,
)

OPS = Path(__file__).resolve().parents[1] / "ops"
VENV_PYTHON = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "python"

pytestmark = pytest.mark.skipif(slurm_missing() is not None, reason=str(slurm_missing()))


class Setup:
    def __init__(self, root: Path, cluster: OneNodeSlurm, standin: Path):
        self.root, self.cluster, self.standin = root, cluster, standin
        self.defaults = root / "rlaunch.env"
        self.log = root / "ops.log"
        self.textfiles = root / "textfile"
        self.textfiles.mkdir(exist_ok=True)

    def configure(self, **settings: str) -> None:
        """Rewrite the defaults file the installed prolog/epilog read (as /etc/default/rlaunch)."""
        base = {
            "RLAUNCH_LOG": str(self.log),
            "RLAUNCH_SYSLOG": "0",
            "RLAUNCH_TEXTFILE_DIR": str(self.textfiles),
            "RLAUNCH_PYTHON": str(VENV_PYTHON),
            **settings,
        }
        self.defaults.write_text("".join(f"{k}={_shell_quote(v)}\n" for k, v in base.items()))

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


def _shell_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("slurm")
    defaults = root / "rlaunch.env"
    prolog = write_wrapper(root / "prolog", OPS / "slurm" / "rlaunch-prolog", defaults)
    epilog = write_wrapper(root / "epilog", OPS / "slurm" / "rlaunch-epilog", defaults)
    standin = write_standin_validate(root)
    defaults.write_text("")
    cluster = start_one_node_slurm(root / "cluster", prolog=prolog, epilog=epilog)
    try:
        yield Setup(root, cluster, standin)
    finally:
        cluster.stop()


@pytest.fixture
def ops(slurm: Setup) -> Iterator[Setup]:
    slurm.cluster.resume()
    slurm.configure(RLAUNCH_PROLOG_CMD=f"{slurm.standin} pass")
    yield slurm
    slurm.cluster.resume()


def test_passing_prolog_leaves_node_idle(ops: Setup) -> None:
    done = ops.cluster.run("srun", "-N1", "-t", "1", "true")
    assert done.returncode == 0, done.stderr + ops.cluster.logs()
    assert ops.cluster.wait_state("idle") == ("idle", "none")
    assert "rlaunch-prolog" in ops.log_text() and "pass in" in ops.log_text()
    assert "rlaunch_ops_last_success" in (ops.textfiles / "rlaunch_prolog.prom").read_text()


def test_failing_prolog_drains_with_rlaunch_reason(ops: Setup) -> None:
    ops.configure(RLAUNCH_PROLOG_CMD=f"{ops.standin} fail gpu_memory")
    done = ops.cluster.run("srun", "-N1", "-t", "1", "true")
    assert done.returncode != 0
    assert "Prolog failure" in done.stderr
    state, reason = ops.cluster.wait_state("drained")
    assert state == "drained", ops.cluster.logs()
    # Our reason, not slurmd's "Prolog error": the failed check comes from the stand-in's JUnit file.
    assert reason.startswith("rlaunch: gpu_memory failed "), reason
    prom = (ops.textfiles / "rlaunch_prolog.prom").read_text()
    assert 'rlaunch_ops_check_failed{check="gpu_memory",job_kind="prolog"} 1.0' in prom


def test_prolog_over_budget_drains_as_timeout(ops: Setup) -> None:
    ops.configure(RLAUNCH_PROLOG_CMD=f"{ops.standin} hang", RLAUNCH_PROLOG_BUDGET="2")
    done = ops.cluster.run("srun", "-N1", "-t", "1", "true")
    assert done.returncode != 0
    state, reason = ops.cluster.wait_state("drained")
    assert reason.startswith("rlaunch: validate timed out after 2s"), (state, reason)


def _healthcheck(ops: Setup, mode: str) -> int:
    """Run the health check as slurmd would (root, SLURMD_NODENAME, SLURM_CONF), against the real cluster."""
    ops.configure(RLAUNCH_HEALTHCHECK_CMD=f"{ops.standin} {mode}")
    env = {
        "PATH": ops.cluster.env["PATH"],
        "SLURM_CONF": str(ops.cluster.conf),
        "SLURMD_NODENAME": ops.cluster.node,
        "RLAUNCH_DEFAULTS": str(ops.defaults),
    }
    return subprocess.run([str(OPS / "slurm" / "rlaunch-healthcheck")], env=env, timeout=60).returncode


def test_healthcheck_resumes_only_nodes_rlaunch_drained(ops: Setup) -> None:
    ops.cluster.drain("rlaunch: gpu_memory failed 2026-01-01T00:00:00Z")
    assert _healthcheck(ops, "pass") == 0
    assert ops.cluster.wait_state("idle")[0] == "idle"

    ops.cluster.drain("admin: replacing a DIMM")
    assert _healthcheck(ops, "pass") == 0
    assert ops.cluster.node_state() == ("drained", "admin: replacing a DIMM")
    # A failing check neither resumes nor overwrites someone else's reason.
    assert _healthcheck(ops, "fail") == 1
    assert ops.cluster.node_state() == ("drained", "admin: replacing a DIMM")


def test_healthcheck_failure_drains_idle_node(ops: Setup) -> None:
    assert _healthcheck(ops, "fail") == 1
    state, reason = ops.cluster.wait_state("drained")
    assert reason.startswith("rlaunch: gpu_memory failed"), (state, reason)


def test_epilog_kills_gpu_process_left_behind_by_a_job(ops: Setup) -> None:
    device = ops.root / "renderD128"  # stand-in for /dev/dri/renderD128 (no GPUs here)
    device.write_text("")
    pidfile = ops.root / "holder.pid"
    pidfile.unlink(missing_ok=True)
    ops.configure(
        RLAUNCH_PROLOG_CMD=f"{ops.standin} pass", RLAUNCH_GPU_DEVICES=str(device), RLAUNCH_EPILOG_GRACE="2"
    )
    # setsid + background: the holder leaves the step's process tree, so proctrack/linuxproc does not reap it,
    # like a rank that daemonized or was started over SSH.
    holder = f"exec 3<{device}; echo $$ >{pidfile}; exec sleep 300"
    job = f"setsid bash -c '{holder}' </dev/null >/dev/null 2>&1 & sleep 1"
    done = ops.cluster.run("srun", "-N1", "-t", "1", "bash", "-c", job)
    assert done.returncode == 0, done.stderr
    pid = int(pidfile.read_text())
    try:
        deadline = time.monotonic() + 60
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not _alive(pid), ops.log_text()
        assert f"left behind: pid={pid}" in ops.log_text()
        assert ops.cluster.wait_state("idle")[0] == "idle"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_srun_starts_per_node_process_inside_allocation(ops: Setup) -> None:
    """The contract for `rlaunch up --from-slurm` with srun instead of SSH (cluster/slurm.py): inside an
    allocation, one step per node with --overlap (several long-lived steps share the node), the job's env
    exported, SLURM_JOB_NODELIST naming the nodes."""
    out = ops.root / "step.out"
    script = ops.root / "alloc.sh"
    script.write_text(
        "#!/bin/bash\n"
        'echo "nodelist=$SLURM_JOB_NODELIST"\n'
        "export RLAUNCH_PROBE=from-head\n"
        'srun --nodes=1 --ntasks=1 --nodelist="$SLURM_JOB_NODELIST" --overlap --export=ALL -- '
        "bash -c 'echo step=$SLURMD_NODENAME probe=$RLAUNCH_PROBE'\n"
    )
    done = ops.cluster.run("sbatch", "--wait", "-N1", "-t", "1", f"--output={out}", str(script), timeout=90)
    assert done.returncode == 0, done.stderr + ops.cluster.logs()
    text = out.read_text()
    assert f"nodelist={ops.cluster.node}" in text
    assert f"step={ops.cluster.node} probe=from-head" in text


def test_nodes_drain_marks_a_struck_node_for_the_healthcheck(ops: Setup, tmp_path: Path) -> None:
    """`rlaunch nodes --drain N` drains a node at its strike limit with an rlaunch: reason (issue 16)."""
    from launcher import ledger

    home = tmp_path / "home"
    ledger.append(
        [ledger.strike(ops.cluster.node, "run-1", "gpu-fault", {"kind": "gpu", "text": "GPU reset"})],
        base=home,
    )
    env = {**ops.cluster.env, "RLAUNCH_HOME": str(home), "PYTHONPATH": str(OPS.parent)}
    rlaunch = [str(VENV_PYTHON), "-m", "launcher.cli", "nodes"]
    quiet = subprocess.run([*rlaunch, "--drain", "2"], env=env, capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 0 and "nothing drained" in quiet.stdout, quiet.stderr
    assert ops.cluster.node_state()[0] == "idle"
    done = subprocess.run([*rlaunch, "--drain", "1"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    state, reason = ops.cluster.wait_state("drained")
    assert reason.startswith("rlaunch: 1 strike(s), last gpu-fault in run run-1"), (state, reason)
    assert _healthcheck(ops, "pass") == 0  # ours to resume once the node passes again
    assert ops.cluster.wait_state("idle")[0] == "idle"
