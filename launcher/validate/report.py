"""Validation reports: a rich table for the terminal, JSON, JUnit XML for CI, a Prometheus textfile.

All renderers take the same list of `StageResult`s; the verdict is "fail" as soon as one check fails (skips
do not fail a run).
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile
from rich.table import Table

from launcher.errors import ExitCode
from launcher.records import write_atomic
from launcher.validate.checks import Check

EXIT_OK, EXIT_FAILED = ExitCode.OK, ExitCode.FAILED
STATUS_STYLE = {"pass": "green", "fail": "bold red", "skip": "yellow"}


@dataclass
class StageResult:
    """One validation stage: its checks, measured values worth keeping (name → number), and how long it took."""

    name: str
    checks: list[Check] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)
    duration_s: float | None = None
    artifacts: dict[str, str] = field(default_factory=dict)  # name → path of a file the stage wrote (plots)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def verdict(self) -> str:
        return "fail" if self.failed else "pass"


def verdict(stages: Sequence[StageResult]) -> str:
    return "fail" if any(s.failed for s in stages) else "pass"


def exit_code(stages: Sequence[StageResult]) -> int:
    return EXIT_FAILED if verdict(stages) == "fail" else EXIT_OK


def _fmt(number: float | None) -> str:
    return "" if number is None else f"{number:.6g}"


# ---------------------------------------------------------------- terminal


def render_table(stages: Sequence[StageResult]) -> Table:
    table = Table(title=f"validation: {verdict(stages).upper()}", title_justify="left")
    for column in ("stage", "check", "node", "status", "value", "threshold", "unit", "message"):
        table.add_column(column, overflow="fold")
    for stage in stages:
        for c in stage.checks:
            status = f"[{STATUS_STYLE[c.status]}]{c.status}[/]"
            table.add_row(
                stage.name, c.name, c.node or "-", status, _fmt(c.value), _fmt(c.threshold), c.unit, c.message
            )
    return table


# ---------------------------------------------------------------- JSON


def to_json(stages: Sequence[StageResult], timestamp: float | None = None) -> dict[str, Any]:
    return {
        "verdict": verdict(stages),
        "timestamp": time.time() if timestamp is None else timestamp,
        "stages": [
            {
                "name": s.name,
                "verdict": s.verdict,
                "duration_s": s.duration_s,
                "values": s.values,
                "artifacts": s.artifacts,
                "checks": [c.to_dict() for c in s.checks],
            }
            for s in stages
        ],
    }


def _write_atomically(path: Path, text: str) -> None:
    write_atomic(path, text, mode=0o644)  # reports are meant to be read by others (CI, dashboards)


def write_json(path: Path, stages: Sequence[StageResult]) -> None:
    # allow_nan stays on: a NaN loss is exactly what a report must be able to carry.
    _write_atomically(path, json.dumps(to_json(stages), indent=2) + "\n")


# ---------------------------------------------------------------- JUnit XML


def to_junit_xml(stages: Sequence[StageResult]) -> str:
    """<testsuites> with one <testsuite> per stage and one <testcase> per check (classname = stage, name =
    check[node]); failures and skips as the JUnit schema CI systems read (Jenkins, GitLab, GitHub actions)."""
    root = ET.Element("testsuites", name="rlaunch-validate")
    root.set("tests", str(sum(len(s.checks) for s in stages)))
    root.set("failures", str(sum(len(s.failed) for s in stages)))
    for stage in stages:
        suite = ET.SubElement(root, "testsuite", name=stage.name)
        suite.set("tests", str(len(stage.checks)))
        suite.set("failures", str(len(stage.failed)))
        suite.set("errors", "0")
        suite.set("skipped", str(sum(c.status == "skip" for c in stage.checks)))
        suite.set("time", f"{stage.duration_s or 0.0:.3f}")
        for c in stage.checks:
            case = ET.SubElement(suite, "testcase", classname=stage.name, name=_case_name(c))
            detail = f"value={_fmt(c.value)} threshold={_fmt(c.threshold)} {c.unit}".strip()
            if c.status == "fail":
                failure = ET.SubElement(
                    case, "failure", message=c.message or "check failed", type="CheckFailed"
                )
                failure.text = detail
            elif c.status == "skip":
                ET.SubElement(case, "skipped", message=c.message or "skipped")
            else:
                ET.SubElement(case, "system-out").text = f"{detail} {c.message}".strip()
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _case_name(check: Check) -> str:
    return f"{check.name}[{check.node}]" if check.node else check.name


def write_junit(path: Path, stages: Sequence[StageResult]) -> None:
    _write_atomically(path, to_junit_xml(stages))


# ---------------------------------------------------------------- Prometheus textfile


def prometheus_registry(stages: Sequence[StageResult], timestamp: float | None = None) -> CollectorRegistry:
    registry = CollectorRegistry()
    labels = ["stage", "check", "node"]
    ok = Gauge(
        "rlaunch_validate_check_ok",
        "1 if the check passed, 0 if it failed (skips are absent)",
        labels,
        registry=registry,
    )
    value = Gauge(
        "rlaunch_validate_value", "value measured by the check", [*labels, "unit"], registry=registry
    )
    threshold = Gauge(
        "rlaunch_validate_threshold",
        "threshold or baseline the value was compared with",
        [*labels, "unit"],
        registry=registry,
    )
    stage_ok = Gauge(
        "rlaunch_validate_stage_ok", "1 if no check of the stage failed", ["stage"], registry=registry
    )
    run_ok = Gauge("rlaunch_validate_ok", "1 if no check failed", registry=registry)
    last_run = Gauge(
        "rlaunch_validate_last_run_timestamp", "unix time of the validation run", registry=registry
    )

    for stage in stages:
        stage_ok.labels(stage=stage.name).set(stage.verdict == "pass")
        for c in stage.checks:
            where = {"stage": stage.name, "check": c.name, "node": c.node}
            if c.status != "skip":
                ok.labels(**where).set(c.status == "pass")
            if c.value is not None:
                value.labels(**where, unit=c.unit).set(c.value)
            if c.threshold is not None:
                threshold.labels(**where, unit=c.unit).set(c.threshold)
    run_ok.set(verdict(stages) == "pass")
    last_run.set(time.time() if timestamp is None else timestamp)
    return registry


def write_prometheus(path: Path, stages: Sequence[StageResult], timestamp: float | None = None) -> None:
    """For node_exporter's textfile collector; write_to_textfile writes a temp file and renames it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), prometheus_registry(stages, timestamp))
