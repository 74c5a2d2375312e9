"""What a run record keeps about attempts and progress, for goodput and `rlaunch report`.

The lifecycle marks each attempt's start and end in events.jsonl (info events with `phase` and `attempt`), and
the progress tracker appends one record per new step to progress.jsonl ({t, a, node, rank, step, loss}): log files
carry no times, and goodput and the loss curve need them. Everything here reads back tolerantly: a record written
by an older rlaunch (no marks) simply has no attempts.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from launcher import goodput, ledger
from launcher.health.progress import parse_progress
from launcher.records import PROGRESS_FILE, RunRecord
from launcher.states import is_active

PROGRESS = PROGRESS_FILE  # the name tests and older callers use


def mark(record: RunRecord, attempt: int, phase: str, text: str, **extra: Any) -> None:
    record.append_event(
        {
            "kind": "info",
            "severity": "info",
            "time": time.time(),
            "attempt": attempt,
            "phase": phase,
            "text": text,
            **extra,
        }
    )


class ProgressTracker:
    """Wraps a line sink: notes progress lines (a step number and/or a loss) of the current attempt.

    Called for every log line under the runner's lock, so the common case (not a progress line) costs a few
    substring tests; a record is written when an attempt reaches a new highest step, and for a loss printed without
    a step (a log dict), which is placed at the attempt's latest step ("at"). Lines are read by the hang rule's own
    parser (launcher/health/progress.py), with the job's `health.progress_regex`."""

    def __init__(self, record: RunRecord, progress_regex: str | None = None):
        self.record = record
        self.attempt = 0
        self._custom = re.compile(progress_regex) if progress_regex else None
        self._max_step: dict[int, int] = {}
        self._last_loss: tuple[int, float] | None = None
        self._loss_at: dict[int, int] = {}
        self._lock = threading.Lock()

    def wrap(
        self, sink: Callable[[str, int | None, str], None] | None
    ) -> Callable[[str, int | None, str], None]:
        def on_line(host: str, rank: int | None, text: str) -> None:
            self.observe(host, rank, text)
            if sink is not None:
                sink(host, rank, text)

        return on_line

    def max_step(self, attempt: int) -> int | None:
        """The highest step attempt `attempt` printed (None: no step line seen)."""
        with self._lock:
            return self._max_step.get(attempt)

    def observe(self, host: str, rank: int | None, text: str, now: float | None = None) -> None:
        parsed = parse_progress(text, self._custom)
        if parsed is None:
            return
        step, loss = parsed.step, parsed.loss
        now = time.time() if now is None else now
        with self._lock:
            at = self._max_step.get(self.attempt)
            if step is not None and step > self._max_step.get(self.attempt, -1):
                self._max_step[self.attempt] = step
                entry = {"t": now, "a": self.attempt, "node": host, "rank": rank, "step": step, "loss": loss}
            elif step is not None and (loss is None or not parsed.bar):
                return  # another rank's copy of a step already noted, or an older step (an eval bar)
            elif loss is None:
                return
            else:
                if self._last_loss == (self.attempt, loss):
                    return  # the same log dict from another rank
                # The bar's drawn count lags the real step (tqdm redraws at most every 0.1 s) and a dict comes
                # once per logging step: each loss-only point goes after the previous one, at least at the bar.
                prev = self._loss_at.get(self.attempt)
                at = (at or 1) if prev is None else max(at or 0, prev + 1)
                self._loss_at[self.attempt] = at
                self._last_loss = (self.attempt, loss)
                entry = {"t": now, "a": self.attempt, "node": host, "rank": rank, "step": None, "loss": loss}
                entry["at"] = at
            # Opened per record (a few per second at most): nothing to close when the run ends however it ends.
            with open(self.record.progress_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")


def read_progress(root: Path) -> list[dict[str, Any]]:
    """progress.jsonl of the run record at `root`."""
    try:
        text = RunRecord(root).progress_path.read_text(errors="replace")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "t" in entry:
            out.append(entry)
    return out


def read_events(record: RunRecord) -> list[dict[str, Any]]:
    path = record.events_path
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def goodput_of(record: RunRecord, now: float | None = None) -> goodput.Goodput | None:
    """The run's goodput so far (a running run counts up to now); None for a record without a start time."""
    state = record.read_state()
    started = state.get("started_at")
    if started is None:
        return None
    ended = state.get("ended_at") if not is_active(state.get("state")) else None
    end = float(ended) if ended else (time.time() if now is None else now)
    return goodput.compute(float(started), end, read_events(record), read_progress(record.root))


def write_prometheus(path: Path, run_id: str, cluster: str, gp: goodput.Goodput) -> None:
    """A node_exporter textfile (prometheus_client writes a temp file and renames it)."""
    from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

    registry = CollectorRegistry()
    labels = ["cluster", "run_id"]
    data = gp.to_json()

    def gauge(name: str, doc: str, value: float) -> None:
        Gauge(f"rlaunch_run_{name}", doc, labels, registry=registry).labels(cluster, run_id).set(value)

    gauge("goodput_ratio", "Share of the run's wall time spent on training progress that was kept", gp.ratio)
    for part in ("total_s", *goodput.PARTS):
        gauge(f"{part.removesuffix('_s')}_seconds", f"Wall time of the run spent in {part[:-2]}", data[part])
    gauge("lost_steps", "Steps done after the checkpoint a restart resumed from", gp.lost_steps)
    gauge("attempts", "Attempts (1 + restarts)", gp.attempts)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry)


def settle(record: RunRecord) -> goodput.Goodput | None:
    """When `up` returns: the run's goodput into its state and, per node, into the ledger. Called on the way
    out of `up` (also when it raises): a full disk here must not hide the run's own outcome."""
    try:
        gp = goodput_of(record)
        if gp is None:
            return None
        record.update_state(goodput=gp.to_json())
        now = time.time()
        ledger.append(
            {
                "kind": "goodput",
                "host": host,
                "run_id": record.run_id,
                "time": now,
                "total_s": round(part["total_s"], 2),
                "productive_s": round(part["productive_s"], 2),
            }
            for host, part in sorted(gp.by_node.items())
        )
    except (OSError, ValueError):
        return None
    return gp
