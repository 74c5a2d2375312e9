"""Static ops artefacts checked by their real consumers: systemd units with `systemd-analyze verify`, the alert
rules as YAML over metric names rlaunch_ops.py really writes, and rlaunch_ops.py's JUnit reading."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

OPS = Path(__file__).resolve().parents[1] / "ops"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_units_verify(tmp_path: Path) -> None:
    # verify checks that ExecStart exists: point it at this checkout instead of /opt/rlaunch.
    service = (OPS / "systemd" / "rlaunch-validate.service").read_text()
    (tmp_path / "rlaunch-validate.service").write_text(
        service.replace("/opt/rlaunch/ops/rlaunch-cron", str(OPS / "rlaunch-cron"))
    )
    shutil.copy(OPS / "systemd" / "rlaunch-validate.timer", tmp_path)
    done = subprocess.run(
        ["systemd-analyze", "verify", "rlaunch-validate.service", "rlaunch-validate.timer"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "rlaunch-validate" not in done.stderr, done.stderr
    timer = (OPS / "systemd" / "rlaunch-validate.timer").read_text()
    assert "Persistent=true" in timer and "RandomizedDelaySec=" in timer
    assert "SuccessExitStatus=75" not in service  # a skipped run (lock busy) must show as a failure


def test_alert_rules_use_metrics_we_write(tmp_path: Path) -> None:
    rules = yaml.safe_load((OPS / "prometheus" / "rlaunch-alerts.yml").read_text())["groups"][0]["rules"]
    for kind in ("cron", "prolog", "epilog"):
        args = ["--name", kind, "--exit-code", "1", "--failed", "gpu_memory"]
        args += ["--gauge", "surviving_processes=1"] if kind == "epilog" else []
        subprocess.run(
            [sys.executable, str(OPS / "rlaunch_ops.py"), "textfile", "--dir", str(tmp_path), *args],
            check=True,
        )
    written = "".join(p.read_text() for p in tmp_path.glob("*.prom"))
    for rule in rules:
        assert {"alert", "expr", "labels", "annotations"} <= rule.keys()
        metric = next(tok for tok in rule["expr"].replace("(", " ").split() if tok.startswith("rlaunch_ops_"))
        assert metric.split("{")[0] + "{" in written, rule["alert"]


def test_failed_checks_from_junit(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="single">'
        '<testcase name="torch_import"/><testcase name="gpu_memory"><failure message="x"/></testcase>'
        '<testcase name="rccl_allreduce"><error message="y"/></testcase></testsuite></testsuites>'
    )
    done = subprocess.run(
        [sys.executable, str(OPS / "rlaunch_ops.py"), "failed-checks", str(junit)],
        capture_output=True,
        text=True,
    )
    assert done.stdout.strip() == "gpu_memory,rccl_allreduce"
    bad = subprocess.run([sys.executable, str(OPS / "rlaunch_ops.py"), "failed-checks", str(tmp_path / "no")])
    assert bad.returncode == 2
