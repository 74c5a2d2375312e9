"""ops/slurm/rlaunch-epilog without Slurm: real processes hold a stand-in device file (no GPUs here); the epilog
must kill only the job user's holders that belong to this job, and report survivors. scontrol/sinfo are
stand-ins taking the argv the real ones take (tests/test_ops_slurm.py runs the epilog under a real slurmd)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import scaled

EPILOG = Path(__file__).resolve().parents[1] / "ops" / "slurm" / "rlaunch-epilog"


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def hold(
    started: list[subprocess.Popen[bytes]], device: Path, *, prefix: tuple[str, ...] = (), **env: str
) -> int:
    """Start `sleep` with the device open on fd 3 (opened before any uid change, like a GPU rank would)."""
    proc = subprocess.Popen(
        ["bash", "-c", f'exec 3<"{device}"; exec "$@" sleep 300', "holder", *prefix],
        env={"PATH": os.environ["PATH"], **env},
        start_new_session=True,
    )
    started.append(proc)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        # Wait for the exec into sleep: before it, bash holds the fd and the comm is still "bash".
        if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "sleep":
            return proc.pid
        time.sleep(0.05)
    raise AssertionError("holder did not start")


def run_epilog(tmp_path: Path, device: Path, **env: str) -> subprocess.CompletedProcess[str]:
    calls = tmp_path / "scontrol.calls"
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "scontrol").write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" "--" >>"{calls}"\n')
    (bindir / "sinfo").write_text("#!/bin/bash\necho 'idle|none'\n")
    # squeue -h -j ID -w NODE -t STATES -o %A: only job 43 runs on this node.
    (bindir / "squeue").write_text("#!/bin/bash\n[[ $3 == 43 && $5 == n1 ]] && echo 43\nexit 0\n")
    for tool in ("scontrol", "sinfo", "squeue"):
        (bindir / tool).chmod(0o755)
    base = {
        "PATH": os.environ["PATH"],
        "RLAUNCH_DEFAULTS": str(tmp_path / "absent"),
        "RLAUNCH_LOG": str(tmp_path / "epilog.log"),
        "RLAUNCH_SYSLOG": "0",
        "RLAUNCH_SCONTROL": str(bindir / "scontrol"),
        "RLAUNCH_SINFO": str(bindir / "sinfo"),
        "RLAUNCH_SQUEUE": str(bindir / "squeue"),
        "RLAUNCH_GPU_DEVICES": f"{tmp_path}/none-such {device.parent}/renderD*",
        "RLAUNCH_EPILOG_GRACE": "2",
        "SLURMD_NODENAME": "n1",
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_UID": str(os.getuid()),
    }
    return subprocess.run(
        [str(EPILOG)], env={**base, **env}, capture_output=True, text=True, timeout=scaled(60)
    )


@pytest.fixture
def device(tmp_path: Path) -> Path:
    path = tmp_path / "dev" / "renderD128"
    path.parent.mkdir()
    path.write_text("")
    path.parent.chmod(0o755)
    path.chmod(0o644)
    return path


def gone(pid: int) -> bool:
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def test_kills_left_behind_holder_of_this_job(tmp_path: Path, device: Path, holders: list) -> None:
    mine = hold(holders, device, SLURM_JOB_ID="42")
    orphan = hold(holders, device)  # no SLURM_JOB_ID: started over SSH, counts as this job's
    other_job = hold(holders, device, SLURM_JOB_ID="43")
    done = run_epilog(tmp_path, device)
    assert done.returncode == 0, done.stderr
    assert gone(mine) and gone(orphan)
    assert not gone(other_job)
    assert f"keeping pid={other_job}" in done.stderr and "belongs to running job 43" in done.stderr
    assert not (tmp_path / "scontrol.calls").exists()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_other_users_processes_are_never_touched(tmp_path: Path, device: Path, holders: list) -> None:
    nobody = hold(holders, device, prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    done = run_epilog(tmp_path, device)
    assert done.returncode == 0 and not gone(nobody)
    done = run_epilog(tmp_path, device, SLURM_JOB_UID="65534")
    assert done.returncode == 0 and gone(nobody), done.stderr


def test_survivors_fail_and_drain_with_rlaunch_reason(tmp_path: Path, device: Path, holders: list) -> None:
    pid = hold(holders, device, SLURM_JOB_ID="42")
    done = run_epilog(tmp_path, device, RLAUNCH_EPILOG_KILL="0")  # report only: the holder survives
    assert done.returncode == 1
    assert not gone(pid)
    args = (tmp_path / "scontrol.calls").read_text().split("\n--\n")[0].splitlines()
    assert args[:3] == ["update", "nodename=n1", "state=drain"]
    assert args[3].startswith("reason=rlaunch: epilog: 1 GPU processes of job 42 survive ")


# Runs as PID 1 of a fresh PID namespace, so the test can hand a freed pid to a new process (ns_last_pid): the
# job user's holder dies on the epilog's SIGTERM and root's `sleep` takes its pid before the SIGKILL round.
REUSE_DRIVER = r"""
import json, os, subprocess, sys, time
device, epilog, env, uid = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
holder = subprocess.Popen(["bash", "-c", 'exec 3<"$0"; exec setpriv --reuid=%s --regid=%s --clear-groups sleep 300'
                           % (uid, uid), device])
while open("/proc/%d/comm" % holder.pid).read().strip() != "sleep":
    time.sleep(0.05)
epilog_proc = subprocess.Popen([epilog], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
holder.wait()  # killed by the epilog's SIGTERM
reused = None
for _ in range(50):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(holder.pid - 1))
    proc = subprocess.Popen(["sleep", "300"])
    if proc.pid == holder.pid:
        reused = proc
        break
    proc.kill()
    proc.wait()
out = epilog_proc.communicate(timeout=60)[0]
alive = reused is not None and reused.poll() is None
if reused is not None:
    reused.kill()
    reused.wait()
print(json.dumps({"reused": reused is not None, "alive": alive, "rc": epilog_proc.returncode, "out": out}))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_a_pid_reused_by_root_between_term_and_kill_is_not_killed(tmp_path: Path, device: Path) -> None:
    import json
    import sys

    import otheruser

    other = otheruser.ensure()
    base = {
        "PATH": os.environ["PATH"],
        "RLAUNCH_DEFAULTS": str(tmp_path / "absent"),
        "RLAUNCH_LOG": str(tmp_path / "epilog.log"),
        "RLAUNCH_SYSLOG": "0",
        "RLAUNCH_SCONTROL": "true",
        "RLAUNCH_SINFO": "true",
        "RLAUNCH_GPU_DEVICES": str(device),
        "RLAUNCH_EPILOG_GRACE": "2",
        "RLAUNCH_EPILOG_DRAIN": "0",
        "SLURMD_NODENAME": "n1",
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_UID": str(other.pw_uid),
    }
    done = subprocess.run(
        [
            *("unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", REUSE_DRIVER),
            *(str(device), str(EPILOG), json.dumps(base), str(other.pw_uid)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["reused"]:
        pytest.skip("could not hand the freed pid to a new process (another fork took it)")
    assert result["alive"], result["out"]  # root's process with the reused pid was never signalled
    assert "left behind" in result["out"]


def test_a_grace_that_is_not_an_integer_is_never_evaluated(tmp_path: Path, device: Path) -> None:
    marker = tmp_path / "evaluated"
    done = run_epilog(tmp_path, device, RLAUNCH_EPILOG_GRACE=f"a[$(touch {marker})]")
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "is not a whole number of seconds" in done.stderr


def test_a_claimed_job_that_does_not_run_here_keeps_nothing(
    tmp_path: Path, device: Path, holders: list
) -> None:
    """SLURM_JOB_ID comes from the process's own environment: claiming a job that is not running protects nothing."""
    liar = hold(holders, device, SLURM_JOB_ID="999999")
    done = run_epilog(tmp_path, device)
    assert done.returncode == 0, done.stderr
    assert gone(liar)
    assert "claims job 999999, which does not run on n1" in done.stderr


def test_a_newline_in_a_command_line_cannot_forge_a_log_line(
    tmp_path: Path, device: Path, holders: list
) -> None:
    forged = "2026-01-01T00:00:00Z rlaunch-epilog node=n1 job=42 all clear"
    hold(holders, device, prefix=("bash", "-c", 'exec -a "$0" "$@"', f"x\n{forged}\n"), SLURM_JOB_ID="42")
    done = run_epilog(tmp_path, device)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "epilog.log").read_text()
    assert "all clear" in log
    assert not any(line.startswith("2026-01-01") for line in log.splitlines())
