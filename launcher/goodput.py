"""Goodput: how much of a run's wall time went into training. Pure: events and progress records in, numbers out.

Large-scale reports measure the same thing under different names (Meta's "effective training time ratio",
Google's "goodput"): the share of wall time in which the job made progress that it kept. A run's wall time is cut
into consecutive phases, so the parts always add up to the total:

    startup     up → the first progress line (doctor, push, start, imports, model load, rendezvous)
    productive  progress kept: first progress → last progress of each attempt, minus the steps redone after a resume
    detect      a failed attempt's last progress → the runner starts tearing down (the failing step + detection)
    teardown    tearing down (or, after the last step, finishing) → the attempt's end
    restart     the attempt's end → the next attempt's progress past the step the failed one had reached
                (backoff, choosing a spare, push, start, checkpoint reload, and redoing the lost steps)

`lost_steps` counts the steps done after the checkpoint that a restart resumed from (done twice).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PARTS = ("startup_s", "productive_s", "detect_s", "teardown_s", "restart_s")
# An attempt ended by a deliberate stop (`rlaunch down`, Ctrl-C: launcher/errors.py INTERRUPTED) detected nothing:
# from its last progress it is teardown, like a finished attempt.
STOPPED_CODE = 130
# Checkpoint names of the usual savers: step-6, checkpoint-8 (HF Trainer), global_step8 (DeepSpeed). Progress lines
# themselves are read by the one progress parser, launcher/health/progress.py (parse_progress).
CKPT_STEP = re.compile(r"(?:step|checkpoint)[-_]?(\d{1,12})/*$", re.IGNORECASE)


def checkpoint_step(path: str | None) -> int | None:
    if not path:
        return None
    m = CKPT_STEP.search(path.rstrip("/"))
    return int(m.group(1)) if m else None


@dataclass
class Attempt:
    index: int
    start: float
    end: float | None = None
    code: int | None = None
    hosts: list[str] = field(default_factory=list)
    resume_from: str | None = None
    teardown_at: float | None = None  # the runner began tearing down
    progress: list[tuple[float, int | None, float | None]] = field(default_factory=list)
    # Losses of lines without a step (HF Trainer's log dicts), at the latest step seen before them.
    losses: list[tuple[float, int, float]] = field(default_factory=list)

    @property
    def max_step(self) -> int | None:
        steps = [s for _, s, _ in self.progress if s is not None]
        return max(steps) if steps else None

    @property
    def first_step(self) -> int | None:
        return next((s for _, s, _ in self.progress if s is not None), None)


def attempts_from(
    events: Iterable[Mapping[str, Any]], progress: Iterable[Mapping[str, Any]]
) -> list[Attempt]:
    """Attempts from the lifecycle's marks in events.jsonl ({"phase": "start"|"end", "attempt": k}), with the
    runner's teardown events and the progress records placed into the attempt they belong to."""
    attempts: dict[int, Attempt] = {}
    current: Attempt | None = None
    for e in sorted(events, key=lambda e: float(e.get("time") or 0)):
        t = float(e.get("time") or 0)
        phase = e.get("phase")
        if phase == "start":
            k = int(e.get("attempt") or 0)
            current = attempts[k] = Attempt(
                k, t, hosts=list(e.get("hosts") or []), resume_from=e.get("resume_from")
            )
        elif current is None:
            continue
        elif phase == "end":
            current.end, current.code = t, e.get("code")
        elif (
            current.end is None
            and current.teardown_at is None
            and str(e.get("text", "")).startswith("tearing down")
        ):
            current.teardown_at = t
    for p in progress:
        a = attempts.get(int(p.get("a") or 0))
        if a is None:
            continue
        if p.get("step") is None and isinstance(p.get("at"), int) and p.get("loss") is not None:
            a.losses.append((float(p["t"]), int(p["at"]), float(p["loss"])))
        else:
            a.progress.append((float(p["t"]), p.get("step"), p.get("loss")))
    for a in attempts.values():
        a.progress.sort(key=lambda x: x[0])
        a.losses.sort(key=lambda x: x[0])
    return [attempts[k] for k in sorted(attempts)]


@dataclass
class Goodput:
    total_s: float
    parts: dict[str, float]
    lost_steps: int
    attempts: int
    by_node: dict[str, dict[str, float]]

    @property
    def ratio(self) -> float:
        return round(self.parts["productive_s"] / self.total_s, 4) if self.total_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "total_s": round(self.total_s, 2),
            "productive_s": round(self.parts["productive_s"], 2),
            "ratio": self.ratio,
            **{k: round(v, 2) for k, v in self.parts.items() if k != "productive_s"},
            "lost_steps": self.lost_steps,
            "attempts": self.attempts,
        }


def compute(
    started_at: float,
    ended_at: float,
    events: Iterable[Mapping[str, Any]],
    progress: Iterable[Mapping[str, Any]],
) -> Goodput:
    """Cut [started_at, ended_at] into phases (see the module doc); a running run passes now as ended_at."""
    attempts = attempts_from(events, progress)
    switches: list[tuple[float, str, int]] = [(started_at, "startup_s", 0)]
    lost = 0
    prev: Attempt | None = None
    for a in attempts:
        if prev is not None:
            switches.append((prev.end if prev.end is not None else a.start, "restart_s", a.index))
        if a.progress:
            target = prev.max_step if prev is not None else None
            if prev is not None:
                resumed = checkpoint_step(a.resume_from)
                if resumed is None:
                    # The first step the new attempt printed tells where it resumed, also from a checkpoint of the
                    # program's own (a relative snapshot.pt in its run directory) that rlaunch never chose.
                    resumed = max(0, a.first_step - 1) if a.first_step is not None else 0
                lost += max(0, (prev.max_step or 0) - resumed)
            if target is None:
                switches.append((a.progress[0][0], "productive_s", a.index))
            else:
                # Redoing steps up to where the failed attempt got is part of the restart, not new progress.
                caught = next((t for t, s, _ in a.progress if s is not None and s >= target), None)
                if caught is not None:
                    switches.append((caught, "productive_s", a.index))
            last = a.progress[-1][0]
            if a.end is not None:
                if a.code not in (0, None, STOPPED_CODE):
                    switches.append((last, "detect_s", a.index))
                    switches.append((a.teardown_at or a.end, "teardown_s", a.index))
                else:
                    switches.append((last, "teardown_s", a.index))
        elif a.end is not None and a.teardown_at is not None:
            switches.append((a.teardown_at, "teardown_s", a.index))
        prev = a
    if prev is not None and prev.end is not None:
        switches.append((prev.end, "teardown_s", prev.index))  # after the last attempt: closing the record

    parts = dict.fromkeys(PARTS, 0.0)
    hosts_of = {a.index: a.hosts for a in attempts}
    by_node: dict[str, dict[str, float]] = {}
    floor = started_at
    end = max(ended_at, started_at)
    bounded = [(min(max(t, floor), end), label, k) for t, label, k in switches]
    for i, (t, label, k) in enumerate(bounded):
        t = max(t, floor)
        floor = t
        nxt = max(bounded[i + 1][0], t) if i + 1 < len(bounded) else end
        span = max(0.0, min(nxt, end) - t)
        parts[label] += span
        for host in hosts_of.get(k, []):
            node = by_node.setdefault(host, {"total_s": 0.0, "productive_s": 0.0})
            node["total_s"] += span
            if label == "productive_s":
                node["productive_s"] += span
    return Goodput(end - started_at, parts, lost, len(attempts), by_node)


def loss_curve(attempts: Iterable[Attempt]) -> list[tuple[int, int, float]]:
    """(attempt, step, loss) points for plotting the loss across restarts: losses printed with their step, and
    losses of log dicts (HF Trainer, LLaMA-Factory: no step in the line) at the step the progress bar had reached."""
    points = []
    for a in attempts:
        timed = [(t, s, loss) for t, s, loss in a.progress if s is not None and loss is not None]
        points += [(a.index, s, loss) for _, s, loss in sorted(timed + a.losses, key=lambda x: x[0])]
    return points
