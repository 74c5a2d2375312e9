#!/usr/bin/env python3
"""Small helpers the ops shell scripts call (run with the rlaunch venv's Python).

    rlaunch_ops.py failed-checks JUNIT.xml
        Prints the names of failed/errored test cases, comma-separated (empty when none). Standard library only.
    rlaunch_ops.py textfile --dir DIR --name NAME --exit-code N --duration S [--failed a,b] [--gauge key=value]...
        Writes DIR/rlaunch_NAME.prom for node_exporter's textfile collector through prometheus_client, whose
        write_to_textfile writes a temp file and renames it, so the collector never reads half a file.

Exit codes: 0 written/printed, 2 bad input, 3 prometheus_client missing or the directory not writable.
"""

from __future__ import annotations

import argparse
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path


def failed_checks(junit_path: Path) -> list[str]:
    """Names of JUnit test cases with a <failure> or <error> child, in file order."""
    root = ET.parse(junit_path).getroot()
    names: list[str] = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            names.append(case.get("name") or case.get("classname") or "?")
    return names


def write_textfile(
    directory: Path,
    name: str,
    exit_code: int,
    duration_s: float,
    failed: list[str],
    gauges: dict[str, float],
    now: float | None = None,
) -> Path:
    """One file per job kind (prolog, epilog, cron): the last run's outcome, overwritten each run."""
    from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

    registry = CollectorRegistry()
    labels = ["job_kind"]

    def gauge(metric: str, doc: str, value: float) -> None:
        Gauge(metric, doc, labels, registry=registry).labels(name).set(value)

    gauge("rlaunch_ops_last_run_timestamp_seconds", "Unix time the last run finished", now or time.time())
    gauge("rlaunch_ops_last_exit_code", "Exit code of the last run (0 = healthy)", exit_code)
    gauge("rlaunch_ops_last_success", "1 if the last run passed, else 0", 1 if exit_code == 0 else 0)
    gauge("rlaunch_ops_last_duration_seconds", "Wall time of the last run", duration_s)
    failed_gauge = Gauge(
        "rlaunch_ops_check_failed",
        "1 for each check that failed in the last run",
        [*labels, "check"],
        registry=registry,
    )
    for check in failed:
        failed_gauge.labels(name, check).set(1)
    for key, value in gauges.items():
        gauge(f"rlaunch_ops_{key}", f"{key} of the last {name} run", value)
    path = directory / f"rlaunch_{name}.prom"
    write_to_textfile(str(path), registry)
    return path


def _key_value(text: str) -> tuple[str, float]:
    key, sep, value = text.partition("=")
    if not sep or not key.replace("_", "").isalnum():
        raise argparse.ArgumentTypeError(f"expected name=number, got {text!r}")
    return key, float(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rlaunch_ops.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    fc = sub.add_parser("failed-checks", help="names of failed test cases in a JUnit file")
    fc.add_argument("junit", type=Path)
    tf = sub.add_parser("textfile", help="write a node_exporter textfile with the last run's outcome")
    tf.add_argument("--dir", type=Path, required=True)
    tf.add_argument("--name", required=True, choices=["prolog", "healthcheck", "epilog", "cron"])
    tf.add_argument("--exit-code", type=int, required=True)
    tf.add_argument("--duration", type=float, default=0.0)
    tf.add_argument("--failed", default="", help="comma-separated names of failed checks")
    tf.add_argument("--gauge", type=_key_value, action="append", default=[], help="extra gauge, name=value")
    args = parser.parse_args(argv)

    if args.verb == "failed-checks":
        try:
            print(",".join(failed_checks(args.junit)))
        except (OSError, ET.ParseError) as exc:
            print(f"cannot read {args.junit}: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        failed = [c for c in args.failed.split(",") if c]
        path = write_textfile(args.dir, args.name, args.exit_code, args.duration, failed, dict(args.gauge))
    except ImportError:
        print("prometheus_client is not installed in this Python (set RLAUNCH_PYTHON)", file=sys.stderr)
        return 3
    except OSError as exc:
        print(f"cannot write to {args.dir}: {exc}", file=sys.stderr)
        return 3
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
