"""Trust boundaries (docs/security.md, issue 11) against a second real local user, `rlaunch-other` (otheruser.py).

Each test is the attack that worked before: a workdir another user created, a symlink planted in a run
directory, a state.json naming a stranger's process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import otheruser
import pytest
import yaml

from cluster.inventory import from_mapping
from launcher.node import guard as guard_module

ROOT = Path(__file__).resolve().parents[1]
PUSH = ROOT / "launcher" / "node" / "push.py"
GUARD = ROOT / "launcher" / "node" / "guard.py"


def push(run_dir: Path) -> dict:
    """Run the node's preflight + push exactly as the head does (`python -c <push.py> RUN_DIR`, payload on stdin)."""
    done = subprocess.run(
        [sys.executable, "-c", PUSH.read_text(), str(run_dir)],
        input=json.dumps({"files": []}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------ 1. workdir takeover
def test_default_workdir_is_per_user() -> None:
    inv = from_mapping({"nodes": [{"host": "n1"}], "job": {"kind": "command", "command": ["true"]}})
    assert (
        inv.workdir == "/var/tmp/rlaunch-root" if os.geteuid() == 0 else inv.workdir.startswith("/var/tmp/")
    )
    inv = from_mapping(
        {"ssh": {"user": "alice"}, "nodes": [{"host": "n1"}], "job": {"kind": "command", "command": ["true"]}}
    )
    assert inv.workdir == "/var/tmp/rlaunch-alice"


def test_push_creates_every_missing_directory_0700() -> None:
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        assert push(shared / "w" / "run1" / "node1")["ok"]
        for path in (shared / "w", shared / "w" / "run1", shared / "w" / "run1" / "node1"):
            assert path.stat().st_mode & 0o777 == 0o700, path


def test_workdir_created_by_another_user_is_refused_and_nothing_starts(tmp_path: Path) -> None:
    """The takeover: rlaunch-other pre-creates the shared workdir, so it could swap guard.py before the start."""
    other = otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        planted = shared / "rlaunch"
        otheruser.run_as_other(["mkdir", "-m", "0777", str(planted)])
        reply = push(planted / "run1" / "node1")
        assert not reply["ok"]
        assert f"{planted} is owned by {otheruser.NAME} (uid {other.pw_uid}), mode 0777" in reply["error"]
        assert list(planted.iterdir()) == []  # checked before anything was created in it

        # Through the CLI on the local transport (the prolog's path): exit 3, one line per node, no guard.
        inventory = tmp_path / "cluster.yaml"
        inventory.write_text(
            yaml.safe_dump(
                {
                    "transport": "local",
                    "python": sys.executable,
                    "workdir": str(planted),
                    "nodes": [{"host": "n1", "address": "127.0.0.1"}],
                    "job": {"kind": "command", "command": ["true"]},
                }
            )
        )
        done = subprocess.run(
            [sys.executable, "-m", "launcher.cli", "up", str(inventory), "--no-doctor"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "RLAUNCH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 3, done.stderr
        assert f"n1: refusing {planted}/" in done.stderr and "owned by rlaunch-other" in done.stderr
        assert "Traceback" not in done.stderr
        assert list(planted.iterdir()) == []


def test_world_writable_directory_without_sticky_bit_is_refused() -> None:
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        loose = shared / "loose"
        loose.mkdir()
        loose.chmod(0o777)  # root-owned, but anyone may rename entries in it
        reply = push(loose / "run1")
        assert not reply["ok"] and f"{loose} is writable by others, mode 0777" in reply["error"]


def test_symlink_planted_by_another_user_is_refused() -> None:
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        target = shared / "root-only"
        target.mkdir(mode=0o700)
        link = shared / "rlaunch"
        otheruser.run_as_other(["ln", "-s", str(target), str(link)])
        reply = push(link / "run1")
        assert not reply["ok"] and f"{link} is owned by {otheruser.NAME}" in reply["error"]
        assert list(target.iterdir()) == []  # nothing was created through the link


def job_dir(tmp_path: Path, argv: list[str]) -> Path:
    rundir = tmp_path / "run"
    rundir.mkdir()
    spec = {"argv": argv, "env": {}, "cwd": str(rundir), "heartbeat_timeout": 0, "grace": 1.0}
    (rundir / "job.json").write_text(json.dumps(spec))
    return rundir


def guard(rundir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(GUARD), *args, str(rundir)], capture_output=True, text=True, timeout=60
    )


def test_guard_does_not_follow_a_symlink_planted_in_the_run_directory(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    rundir = job_dir(tmp_path, ["echo", "overwritten"])
    (rundir / "out.log").symlink_to(victim)
    done = guard(rundir, "start")
    assert done.returncode != 0 and "Traceback" not in done.stdout
    time.sleep(0.5)  # a job that did start would have written by now; nothing is asserted about timing
    assert victim.read_text() == "precious\n"
    state = json.loads((rundir / "state.json").read_text())
    assert state["state"] == "failed" and isinstance(state["guard_starttime"], int)


# ------------------------------------------------------------------------------------------ 2. PID reuse
@pytest.fixture
def strangers_process() -> subprocess.Popen:
    """A process of rlaunch-other that happens to hold a PID a run record names."""
    proc = subprocess.Popen(otheruser.as_other(["sleep", "300"]))
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize(
    "identity",
    [
        {
            "guard_pid": "STRANGER"
        },  # a failed start used to leave no start time: any process with the pid matched
        {"guard_pid": "STRANGER", "guard_starttime": None},
        {"guard_pid": "STRANGER", "guard_starttime": "123"},
        {"guard_pid": 1, "guard_starttime": 1},
        {"guard_pid": "abc", "guard_starttime": 5},
        {"guard_pid": [1], "guard_starttime": 5},
    ],
)
def test_stop_never_signals_a_process_the_record_does_not_prove_ours(
    tmp_path: Path, strangers_process: subprocess.Popen, identity: dict
) -> None:
    rundir = job_dir(tmp_path, ["true"])
    if identity["guard_pid"] == "STRANGER":
        identity = dict(identity, guard_pid=strangers_process.pid)
    (rundir / "state.json").write_text(json.dumps({"state": "running", **identity}))
    # pids records: the stranger with a wrong start time, and pid 1 (whose tree is every process)
    (rundir / "pids").write_text(f"{strangers_process.pid} 1 {strangers_process.pid}\n1 0 1\n")
    done = guard(rundir, "stop", "--grace", "0.2")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert strangers_process.poll() is None  # still running: never signalled
    assert json.loads(done.stdout)["remaining"] == []


def test_signal_same_refuses_a_reused_pid(strangers_process: subprocess.Popen) -> None:
    st = guard_module.read_stat(strangers_process.pid)
    assert st is not None
    assert not guard_module.signal_same(strangers_process.pid, st["starttime"] + 1, signal.SIGKILL)
    assert not guard_module.signal_same(1, 0, signal.SIGKILL)
    assert strangers_process.poll() is None
