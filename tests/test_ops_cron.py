"""ops/rlaunch-cron: lock against overlapping runs (two real overlapping runs), log rotation, one-line summary,
exit codes, and the node_exporter textfile it writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_fixture import write_standin_validate

CRON = Path(__file__).resolve().parents[1] / "ops" / "rlaunch-cron"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "RLAUNCH_DEFAULTS": str(tmp_path / "absent"),
        "RLAUNCH_CRON_LOCK": str(tmp_path / "cron.lock"),
        "RLAUNCH_CRON_LOG_DIR": str(tmp_path / "logs"),
        "RLAUNCH_PYTHON": sys.executable,
    }


def run_cron(env: dict[str, str], cmd: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CRON)], env={**env, "RLAUNCH_CRON_CMD": cmd, **extra}, capture_output=True, text=True, timeout=60
    )


def test_second_overlapping_run_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    # The first run holds the lock until the test releases it (bounded: it gives up after 30 s).
    hold = f"touch {started}; for i in $(seq 300); do [ -e {release} ] && exit 0; sleep 0.1; done; exit 1"
    first = subprocess.Popen(
        [str(CRON)],
        env={**env, "RLAUNCH_CRON_CMD": hold},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists()
        second = run_cron(env, "echo should-not-run")
        assert second.returncode == 75
        assert second.stdout.startswith("rlaunch-cron: SKIP ")
        assert f"pid {first.pid}" in second.stdout
        assert len(second.stdout.splitlines()) == 1
        release.touch()
        out, _ = first.communicate(timeout=30)
        assert first.returncode == 0
        assert out.startswith("rlaunch-cron: PASS ")
        logs = list((tmp_path / "logs").glob("validate-*.log"))
        assert len(logs) == 1 and "should-not-run" not in logs[0].read_text()
        # The lock is free again once the holder is gone.
        assert run_cron(env, "true").returncode == 0
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=10)


def test_failure_summary_exit_code_and_junit(tmp_path: Path, env: dict[str, str]) -> None:
    standin = write_standin_validate(tmp_path)
    done = run_cron(env, f"{standin} fail nic_bandwidth")
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert line.startswith("rlaunch-cron: FAIL ") and "rc=1" in line and "FAIL nic_bandwidth" in line
    log = Path(line.rsplit("log=", 1)[1])
    assert log.exists() and (log.parent / log.name.replace(".log", ".junit.xml")).exists()
    assert (tmp_path / "logs" / "latest.log").resolve() == log
    assert run_cron(env, f"{standin} broken").returncode == 3


def test_budget_timeout_and_quiet_success(env: dict[str, str]) -> None:
    done = run_cron(env, "sleep 30", RLAUNCH_CRON_BUDGET="1")
    assert done.returncode == 124
    assert done.stdout.startswith("rlaunch-cron: TIMEOUT ")
    quiet = run_cron(env, "true", RLAUNCH_CRON_QUIET_OK="1")
    assert quiet.returncode == 0 and quiet.stdout == ""


def test_rotation_keeps_newest_runs(tmp_path: Path, env: dict[str, str]) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for stamp in ("20200101T000000Z-1", "20200102T000000Z-2", "20200103T000000Z-3"):
        (logs / f"validate-{stamp}.log").write_text("old\n")
        (logs / f"validate-{stamp}.junit.xml").write_text("<testsuite/>\n")
    assert run_cron(env, "echo new", RLAUNCH_CRON_KEEP="2").returncode == 0
    kept = sorted(p.name for p in logs.glob("validate-*"))
    assert kept[:2] == ["validate-20200103T000000Z-3.junit.xml", "validate-20200103T000000Z-3.log"]
    assert len(kept) == 3 and kept[2].startswith("validate-2") and "2020" not in kept[2]


def test_textfile_for_node_exporter(tmp_path: Path, env: dict[str, str]) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    assert run_cron(env, "exit 1", RLAUNCH_TEXTFILE_DIR=str(textfiles)).returncode == 1
    families = {
        f.name: f for f in text_string_to_metric_families((textfiles / "rlaunch_cron.prom").read_text())
    }
    (sample,) = families["rlaunch_ops_last_exit_code"].samples
    assert sample.value == 1 and sample.labels == {"job_kind": "cron"}
    assert families["rlaunch_ops_last_success"].samples[0].value == 0


def test_lock_in_a_directory_others_can_write_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    """/run/lock is world-writable: another user planted a symlink there and root truncated its target."""
    import otheruser

    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        target = tmp_path / "precious"
        target.write_text("precious\n")
        otheruser.run_as_other(["ln", "-s", str(target), str(shared / "cron.lock")])
        done = run_cron({**env, "RLAUNCH_CRON_LOCK": str(shared / "cron.lock")}, "true")
        assert done.returncode == 3, done.stdout
        assert f"lock directory {shared} must be owned by uid 0 and not writable by others" in done.stdout
        assert target.read_text() == "precious\n"
        planted = shared / "locks"
        otheruser.run_as_other(["mkdir", "-m", "0700", str(planted)])
        done = run_cron({**env, "RLAUNCH_CRON_LOCK": str(planted / "cron.lock")}, "true")
        assert done.returncode == 3 and "must be owned by uid 0" in done.stdout


def test_a_skipped_run_is_logged_and_counted(tmp_path: Path, env: dict[str, str]) -> None:
    import fcntl

    lock = Path(env["RLAUNCH_CRON_LOCK"])
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = run_cron(
            env, "true", RLAUNCH_TEXTFILE_DIR=str(textfiles), RLAUNCH_LOG=str(tmp_path / "ops.log")
        )
    assert done.returncode == 75
    assert "SKIP" in (tmp_path / "ops.log").read_text()
    assert "75" in next(textfiles.glob("*cron*.prom")).read_text()
