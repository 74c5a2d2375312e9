"""Baselines: metric values from a known-good validation run, and regression checks against them.

File format (JSON, written atomically):
    {"version": 1, "created": <unix time>, "metrics": {"<metric>@<node>": {"metric", "node", "value"}}}
A node of "" means a cluster-wide metric.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from launcher.records import write_atomic
from launcher.validate.checks import Check, Record, size_records, step_losses

FORMAT_VERSION = 1
Direction = Literal["higher_is_better", "lower_is_better", "equal"]


@dataclass(frozen=True)
class Metric:
    name: str
    node: str
    value: float

    @property
    def key(self) -> str:
        return metric_key(self.name, self.node)


@dataclass(frozen=True)
class Tolerance:
    """How far a metric may move from its baseline. `rel` is a fraction of the baseline, `abs` an absolute
    slack; both apply (the larger wins). Only the bad direction counts, except for "equal"."""

    direction: Direction
    rel: float = 0.0
    abs: float = 0.0

    def allowed(self, baseline: float) -> float:
        return max(abs(baseline) * self.rel, self.abs)


# Bandwidth and throughput are noisy; losses of the deterministic probe should not move at all, but a new
# torch or BLAS may change the last bits, hence "exact-ish".
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "busbw_gbps": Tolerance("higher_is_better", rel=0.05),
    "algbw_gbps": Tolerance("higher_is_better", rel=0.05),
    "samples_per_s": Tolerance("higher_is_better", rel=0.10),
    "loss": Tolerance("equal", rel=1e-6, abs=1e-7),
    "final_loss": Tolerance("equal", rel=1e-6, abs=1e-7),
}


UNITS = {"busbw_gbps": "GB/s", "algbw_gbps": "GB/s", "samples_per_s": "samples/s", "final_loss": "loss"}


def metric_key(name: str, node: str) -> str:
    return f"{name}@{node}"


def tolerance_for(name: str, tolerances: Mapping[str, Tolerance]) -> Tolerance | None:
    """Exact name first, then its last dotted part ("allreduce.busbw_gbps" → "busbw_gbps")."""
    return tolerances.get(name) or tolerances.get(name.rsplit(".", 1)[-1])


# ---------------------------------------------------------------- metrics from workload output


def probe_metrics(records: Sequence[Record], node: str = "") -> list[Metric]:
    """Median throughput (the first step warms up and is left out) and the final loss."""
    steps = sorted((r for r in records if "step" in r), key=lambda r: r["step"])
    metrics = []
    rates = [float(r["samples_per_s"]) for r in steps[1:] if "samples_per_s" in r]
    if rates:
        metrics.append(Metric("probe.samples_per_s", node, statistics.median(rates)))
    losses = step_losses(records)
    if losses:
        metrics.append(Metric("probe.final_loss", node, losses[max(losses)]))
    return metrics


def allreduce_metrics(records: Sequence[Record], node: str = "") -> list[Metric]:
    """Bus bandwidth at the largest size measured."""
    sized = size_records(records)
    return [Metric("allreduce.busbw_gbps", node, float(sized[-1]["busbw_gbps"]))] if sized else []


# ---------------------------------------------------------------- files


def save_baseline(path: Path, metrics: Iterable[Metric]) -> None:
    body = {
        "version": FORMAT_VERSION,
        "created": time.time(),
        "metrics": {m.key: {"metric": m.name, "node": m.node, "value": m.value} for m in metrics},
    }
    write_atomic(path, json.dumps(body, indent=2, sort_keys=True) + "\n", mode=0o644)


def load_baseline(path: Path) -> dict[str, Metric]:
    """Raises ValueError naming the file on anything that is not a baseline of this format."""
    try:
        body = json.loads(path.read_text())
        if body.get("version") != FORMAT_VERSION:
            raise ValueError(f"version {body.get('version')!r}, expected {FORMAT_VERSION}")
        metrics = [Metric(e["metric"], e["node"], float(e["value"])) for e in body["metrics"].values()]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"{path}: not an rlaunch baseline: {exc}") from exc
    return {m.key: m for m in metrics}


# ---------------------------------------------------------------- comparison


def compare_metric(current: Metric, base: Metric, tol: Tolerance) -> Check:
    delta = current.value - base.value
    allowed = tol.allowed(base.value)
    if not math.isfinite(current.value):
        ok = False
    elif tol.direction == "higher_is_better":
        ok = delta >= -allowed
    elif tol.direction == "lower_is_better":
        ok = delta <= allowed
    else:
        ok = abs(delta) <= allowed
    rel = f" ({delta / base.value:+.1%})" if base.value else ""
    return Check(
        name=f"regression:{current.name}",
        node=current.node,
        status="pass" if ok else "fail",
        value=current.value,
        threshold=base.value,
        unit=UNITS.get(current.name.rsplit(".", 1)[-1], ""),
        message=f"{current.name} on {current.node or 'cluster'}: {current.value:.6g} vs baseline "
        f"{base.value:.6g}{rel}, allowed {tol.direction.replace('_', ' ')} within {allowed:.3g}",
    )


def compare_to_baseline(
    current: Iterable[Metric],
    baseline: Mapping[str, Metric],
    tolerances: Mapping[str, Tolerance] = DEFAULT_TOLERANCES,
) -> list[Check]:
    """One check per metric. Metrics without a baseline or a tolerance, and baseline metrics this run did not
    measure (a node left out), are skips: visible in the report, never silent passes."""
    checks = []
    seen = set()
    for metric in current:
        seen.add(metric.key)
        base = baseline.get(metric.key)
        tol = tolerance_for(metric.name, tolerances)
        name = f"regression:{metric.name}"
        if base is None:
            checks.append(Check(name, metric.node, "skip", value=metric.value, message="no baseline value"))
        elif tol is None:
            checks.append(
                Check(name, metric.node, "skip", value=metric.value, message="no tolerance defined")
            )
        else:
            checks.append(compare_metric(metric, base, tol))
    for key, base in sorted(baseline.items()):
        if key not in seen:
            checks.append(
                Check(
                    f"regression:{base.name}", base.node, "skip", threshold=base.value, message="not measured"
                )
            )
    return checks
