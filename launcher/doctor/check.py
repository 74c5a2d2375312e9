"""One doctor check's result, and the helpers every check module builds on (launcher/doctor/checks.py, net.py).

Their own room so that the check modules import it and not each other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]
Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    name: str
    severity: Severity
    status: Status
    message: str
    nodes: tuple[str, ...] = ()
    fix: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == "fail"


def _check(
    name: str, severity: Severity, failing: dict[str, str], ok_msg: str, fix: str, skipped: str | None = None
) -> Check:
    """One check from {node: what is wrong}; no failing nodes = pass (or skip when nothing could be checked)."""
    if failing:
        msg = "; ".join(f"{h}: {why}" for h, why in failing.items())
        return Check(name, severity, "fail", msg, tuple(failing), fix)
    if skipped:
        return Check(name, severity, "skip", skipped)
    return Check(name, severity, "pass", ok_msg)


def odd_ones_out(values: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The majority value and the nodes that differ from it (ties: the first node's value is the reference)."""
    counts = Counter(values.values())
    if not counts:
        return None, {}
    first = next(iter(values.values()))
    top = max(counts.values())
    majority = first if counts[first] == top else next(v for v, c in counts.items() if c == top)
    return majority, {h: v for h, v in values.items() if v != majority}
