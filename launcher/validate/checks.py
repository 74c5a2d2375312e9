"""Checks over the output of the node workloads (launcher/node/probe.py, allreduce.py). Pure: no I/O.

Every function takes parsed records (lists of dicts, as the workloads print them) and returns `Check` values,
so stages can be tested with plain data and a check can always fail.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

PROBE_PREFIX = "RLAUNCH_PROBE "
ALLREDUCE_PREFIX = "RLAUNCH_ALLREDUCE "

Status = Literal["pass", "fail", "skip"]
Record = dict[str, Any]


@dataclass(frozen=True)
class Check:
    """One verdict. `node` is "" for checks about the whole cluster."""

    name: str
    node: str
    status: Status
    value: float | None = None
    threshold: float | None = None
    unit: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict(passed: bool) -> Status:
    return "pass" if passed else "fail"


# ---------------------------------------------------------------- parsers


def _parse(lines: Iterable[str], prefix: str) -> list[Record]:
    """Records after `prefix` anywhere in a line (runners may prepend host or rank tags). A torn last line of
    a killed process is not JSON and is skipped: a missing record is what the checks then report."""
    records = []
    for line in lines:
        _, found, payload = line.partition(prefix)
        if not found:
            continue
        try:
            record = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def parse_probe(lines: Iterable[str]) -> list[Record]:
    return _parse(lines, PROBE_PREFIX)


def parse_allreduce(lines: Iterable[str]) -> list[Record]:
    return _parse(lines, ALLREDUCE_PREFIX)


def step_losses(records: Iterable[Record]) -> dict[int, float]:
    """step → loss; a later record for the same step wins (a resumed run re-logs replayed steps)."""
    return {int(r["step"]): float(r["loss"]) for r in records if "step" in r and "loss" in r}


def last_checkpoint(records: Iterable[Record]) -> int | None:
    steps = [int(r["checkpoint"]) for r in records if "checkpoint" in r]
    return max(steps) if steps else None


def resumed_from(records: Iterable[Record]) -> int | None:
    """The step a run resumed from: its own report, else the step before its first logged step."""
    records = list(records)
    for r in records:
        if "resumed_from" in r:
            return int(r["resumed_from"])
    losses = step_losses(records)
    return min(losses) - 1 if losses else None


def is_done(records: Iterable[Record]) -> bool:
    return any(r.get("done") is True for r in records)


# ---------------------------------------------------------------- probe checks


def check_loss_decreases(records: Sequence[Record], node: str = "", name: str = "loss_decreases") -> Check:
    """Pass iff every loss is finite and the mean of the last quarter of steps is below the first quarter's
    (batches differ per step, so single steps may go up)."""
    losses = [loss for _, loss in sorted(step_losses(records).items())]
    if len(losses) < 2:
        return Check(name, node, "fail", message=f"need at least 2 logged steps, got {len(losses)}")
    bad = [i for i, loss in enumerate(losses) if not math.isfinite(loss)]
    if bad:
        return Check(name, node, "fail", message=f"non-finite loss at {len(bad)} step(s)")
    window = max(1, len(losses) // 4)
    first = sum(losses[:window]) / window
    last = sum(losses[-window:]) / window
    return Check(
        name,
        node,
        verdict(last < first),
        value=last,
        threshold=first,
        unit="loss",
        message=f"mean loss of last {window} step(s) {last:.6g} vs first {window} {first:.6g}",
    )


def _max_abs_diff(a: dict[int, float], b: dict[int, float]) -> tuple[float, list[int]]:
    common = sorted(set(a) & set(b))
    diffs = [abs(a[s] - b[s]) for s in common]
    return (max(diffs) if diffs else math.nan), common


def check_losses_equal(
    reference: Sequence[Record],
    candidate: Sequence[Record],
    tolerance: float = 1e-6,
    node: str = "",
    name: str = "ddp_matches_single",
) -> Check:
    """Same global batch, same seed: per-step losses must agree within `tolerance` on every reference step."""
    ref, cand = step_losses(reference), step_losses(candidate)
    diff, common = _max_abs_diff(ref, cand)
    missing = sorted(set(ref) - set(cand))
    if not common or missing:
        return Check(name, node, "fail", threshold=tolerance, message=f"steps missing: {missing or 'all'}")
    return Check(
        name,
        node,
        verdict(diff <= tolerance),
        value=diff,
        threshold=tolerance,
        unit="abs loss",
        message=f"max |Δloss| over {len(common)} steps",
    )


def check_resume(
    uninterrupted: Sequence[Record],
    resumed: Sequence[Record],
    interrupted: Sequence[Record] | None = None,
    tolerance: float = 0.0,
    node: str = "",
) -> list[Check]:
    """Three checks on a kill-and-resume experiment:
    - resume_losses_match: max |Δloss| between the uninterrupted run and the interrupted + resumed runs over
      every step they share (bitwise on CPU, so the default tolerance is 0);
    - resume_jump: |Δloss| at the first step after the resume point, where a bad restore shows first;
    - resume_from_latest: the run resumed from the interrupted run's last complete checkpoint (an older one
      means replayed work, a newer or foreign one means a wrong checkpoint). Skipped without `interrupted`.
    """
    reference = step_losses(uninterrupted)
    after = step_losses(resumed)
    stitched = step_losses(interrupted or []) | after
    checks = []

    diff, common = _max_abs_diff(reference, stitched)
    lost = sorted(s for s in reference if s not in stitched)
    if not common or not after:
        checks.append(
            Check("resume_losses_match", node, "fail", threshold=tolerance, message="no common steps")
        )
    else:
        checks.append(
            Check(
                "resume_losses_match",
                node,
                verdict(diff <= tolerance and not lost),
                value=diff,
                threshold=tolerance,
                unit="abs loss",
                message=f"max |Δloss| over {len(common)} steps"
                + (f"; steps never run: {lost}" if lost else ""),
            )
        )

    start = resumed_from(resumed)
    first = min(after) if after else None
    if first is None or first not in reference:
        checks.append(Check("resume_jump", node, "fail", threshold=tolerance, message="no step after resume"))
    else:
        jump = abs(after[first] - reference[first])
        checks.append(
            Check(
                "resume_jump",
                node,
                verdict(jump <= tolerance),
                value=jump,
                threshold=tolerance,
                unit="abs loss",
                message=f"|Δloss| at step {first}, first step after resuming from step {start}",
            )
        )

    expected = last_checkpoint(interrupted) if interrupted is not None else None
    if interrupted is None:
        checks.append(Check("resume_from_latest", node, "skip", message="interrupted run not given"))
    elif expected is None:
        checks.append(
            Check("resume_from_latest", node, "fail", message="interrupted run saved no checkpoint")
        )
    else:
        checks.append(
            Check(
                "resume_from_latest",
                node,
                verdict(start == expected),
                value=float(start) if start is not None else None,
                threshold=float(expected),
                unit="step",
                message=f"resumed from step {start}, latest complete checkpoint was step {expected}",
            )
        )
    return checks


def check_completed(records: Sequence[Record], node: str = "", name: str = "probe_completed") -> Check:
    return Check(name, node, verdict(is_done(records)), message="" if is_done(records) else "no final record")


# ---------------------------------------------------------------- all-reduce checks


def size_records(records: Iterable[Record]) -> list[Record]:
    return sorted((r for r in records if "bytes" in r), key=lambda r: r["bytes"])


def check_allreduce_correct(
    records: Sequence[Record], node: str = "", name: str = "allreduce_correct"
) -> Check:
    sized = size_records(records)
    wrong = [r["bytes"] for r in sized if r.get("correct") is not True]
    if not sized:
        return Check(name, node, "fail", message="no all-reduce results")
    message = f"wrong sums at sizes {wrong}" if wrong else f"{len(sized)} sizes correct"
    return Check(
        name, node, verdict(not wrong), value=float(len(wrong)), threshold=0.0, unit="sizes", message=message
    )


def check_busbw(
    records: Sequence[Record], min_gbps: float | None, node: str = "", name: str = "allreduce_busbw"
) -> Check:
    """Bus bandwidth at the largest size measured (small sizes measure latency, not bandwidth).
    Without a threshold the value is still reported, as a skip."""
    sized = size_records(records)
    if not sized:
        return Check(name, node, "fail", threshold=min_gbps, unit="GB/s", message="no all-reduce results")
    largest = sized[-1]
    value = float(largest["busbw_gbps"])
    where = f"busbw at {largest['bytes']} bytes"
    if min_gbps is None:
        return Check(name, node, "skip", value=value, unit="GB/s", message=where + "; no threshold set")
    return Check(name, node, verdict(value >= min_gbps), value, min_gbps, "GB/s", where)
