"""The node ledger on the head: `$RLAUNCH_HOME/nodes.jsonl`, append-only, one JSON object per line.

A few bad nodes cause most interruptions of large jobs, so every verdict whose root cause is the node itself adds a
*strike* to it — only on node-level evidence: a GPU or kernel fault, a lost (or unresponsive) node, the kernel's
OOM killer killing a rank on that node, an evicted straggler. A rank SIGKILLed from outside (a user's `kill -9`, a
scheduler) or a Python exception says nothing about the node: no strike. `rlaunch nodes` lists them,
`rlaunch nodes --clear HOST` forgives (a `clear` entry: nothing is ever rewritten), and `health.max_strikes` keeps
a node at the limit out of the next `up`. Each run also adds its goodput per node, so the ledger shows which nodes
train and which mostly restart.

Entries: {"kind": "strike", "host", "run_id", "time", "cause", "category", "text"} ·
{"kind": "clear", "host", "time"} · {"kind": "goodput", "host", "run_id", "time", "total_s", "productive_s"} ·
{"kind": "restart", "host" (the failed node, or ""), "cluster", "run_id", "time", "cause"}: what the restart-storm
guard counts (launcher/restart_policy.py); not a node's strike, so `summarize` leaves it out.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from launcher import records

# The watcher's OOM-kill evidence (launcher/health/watch.py): the kernel OOM killer's line naming a rank, or a
# SIGKILL blamed on memory evidence from that node ("— out of memory, per the kernel log: ...").
OOM_KILL_RULES = frozenset({"host-oom-killer"})
OOM_KILL_SOURCES = ("— out of memory, per ",)  # watch.py _blame_oom
RESTART = "restart"  # the entry kind of one restart (restart_policy.storm_times)
MAX_LINE = 2000  # a strike's text is a log line: keep the ledger small whatever a job prints


def path(base: Path | None = None) -> Path:
    return (base or records.home()) / "nodes.jsonl"


def node_fault(root_cause: Mapping[str, Any] | None) -> str | None:
    """The cause to strike the root cause's node for, or None when the failure is not the node's fault.

    Node-level evidence only: lost / unresponsive, a GPU or kernel fault, an OOM kill by the node's kernel, a
    straggler. Not: a death by a signal alone (SIGKILL from outside looks the same as any kill), a Python exception
    or any other error line (the job's own fault, the same on any node), a GPU out-of-memory error (the batch), a
    config, version or divergence verdict."""
    if not root_cause or not root_cause.get("node"):
        return None
    kind, category = root_cause.get("kind"), root_cause.get("category")
    if kind == "lost":
        return "lost"
    if kind == "gpu" or category == "gpu-fault":
        return "gpu-fault"
    if category == "straggler" or kind == "straggler":
        return "straggler"
    text = str(root_cause.get("text") or "")
    if category == "oom" and (
        root_cause.get("rule") in OOM_KILL_RULES or any(s in text for s in OOM_KILL_SOURCES)
    ):
        return "oom-kill"
    return None


def append(entries: Iterable[Mapping[str, Any]], base: Path | None = None) -> None:
    """Append entries under an exclusive lock: launchers of different runs may finish at the same moment."""
    data = "".join(json.dumps(dict(e), sort_keys=True) + "\n" for e in entries)
    if not data:
        return
    target = path(base)
    records._private_dir(target.parent)  # the home holds environments and logs: 0700 like every record dir
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data.encode())
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock


def read(base: Path | None = None) -> list[dict[str, Any]]:
    """Every entry; a torn or foreign line (a crash mid-write, a hand edit) is skipped, never fatal."""
    try:
        text = path(base).read_text(errors="replace")
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("host"), str) and entry.get("kind"):
            clean = _valid(entry)
            if clean is not None:
                out.append(clean)
    return out


def _number(value: Any) -> float | None:
    """A finite number, or None: a hand-edited `"time": "yesterday"` once crashed `nodes`, `up` and `report`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _valid(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The entry with its numeric fields checked (a foreign line is skipped, never fatal)."""
    if _number(entry.get("time", 0)) is None:
        return None
    for key in ("total_s", "productive_s"):
        if key in entry and _number(entry[key]) is None:
            return None
    for key in ("run_id", "cause", "category", "text"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            return None
    return entry


def strike(
    host: str, run_id: str, cause: str, root_cause: Mapping[str, Any], now: float | None = None
) -> dict[str, Any]:
    return {
        "kind": "strike",
        "host": host,
        "run_id": run_id,
        "time": time.time() if now is None else now,
        "cause": cause,
        "category": root_cause.get("category"),
        "evidence": root_cause.get(
            "kind"
        ),  # what saw it: a node-level observation, or a line the job printed
        "text": str(root_cause.get("text") or "")[:MAX_LINE],
    }


def restart(host: str, cluster: str, run_id: str, cause: str, now: float | None = None) -> dict[str, Any]:
    return {
        "kind": RESTART,
        "host": host,
        "cluster": cluster,
        "run_id": run_id,
        "time": time.time() if now is None else now,
        "cause": cause,
    }


# Root-cause kinds observed at the node itself, not read from the job's output (launcher/health/events.py): a lost
# node, a kernel/GPU report, a process's exit status, a measured straggler, a stopped process. A strike from a line
# the job printed ("line") may be any text a job chose to print, so it never drains a node in Slurm (issue 21).
NODE_EVIDENCE = frozenset({"lost", "gpu", "exit", "straggler", "stopped"})


def node_level(entry: Mapping[str, Any]) -> bool:
    """Whether a strike rests on node-level evidence (entries written before `evidence`: only lost/straggler)."""
    evidence = entry.get("evidence")
    if evidence is None:
        return entry.get("cause") in ("lost", "straggler")
    return evidence in NODE_EVIDENCE


def clear(host: str, now: float | None = None) -> dict[str, Any]:
    return {"kind": "clear", "host": host, "time": time.time() if now is None else now}


@dataclass
class NodeSummary:
    host: str
    strikes: int = 0  # since the last clear and within the window: what max_strikes compares with
    strikes_total: int = 0
    node_strikes: int = 0  # of `strikes`, those on node-level evidence (what `nodes --drain` counts)
    last_cause: str | None = None
    last_run: str | None = None
    last_time: float | None = None  # of the last strike
    last_strike_run: str | None = None
    runs: int = 0
    total_s: float = 0.0
    productive_s: float = 0.0

    @property
    def ratio(self) -> float | None:
        return round(self.productive_s / self.total_s, 4) if self.total_s > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def summarize(
    entries: Iterable[Mapping[str, Any]], *, window_s: float | None = None, now: float | None = None
) -> dict[str, NodeSummary]:
    """Per host: strikes that count (after the last clear, inside the window), last cause, goodput sums."""
    now = time.time() if now is None else now
    out: dict[str, NodeSummary] = {}
    for e in sorted(entries, key=lambda e: float(e.get("time") or 0)):
        if e.get("kind") == RESTART:
            continue
        node = out.setdefault(e["host"], NodeSummary(e["host"]))
        kind = e.get("kind")
        if kind == "clear":
            node.strikes = node.node_strikes = 0
        elif kind == "strike":
            node.strikes_total += 1
            if window_s is None or now - float(e.get("time") or 0) <= window_s:
                node.strikes += 1
                node.node_strikes += 1 if node_level(e) else 0
            node.last_cause = e.get("cause")
            node.last_time = e.get("time")
            node.last_strike_run = e.get("run_id")
        elif kind == "goodput":
            node.runs += 1
            node.total_s += float(e.get("total_s") or 0)
            node.productive_s += float(e.get("productive_s") or 0)
        if e.get("run_id"):  # entries are in time order: the latest run the node took part in wins
            node.last_run = e["run_id"]
    return out


def over_limit(
    hosts: Iterable[str],
    summary: Mapping[str, NodeSummary],
    max_strikes: int | None,
    *,
    node_level: bool = False,
) -> list[NodeSummary]:
    """The hosts whose counted strikes reached `max_strikes` (none when max_strikes is unset); with `node_level`,
    only strikes on node-level evidence count."""
    if not max_strikes:
        return []
    return [
        summary[h]
        for h in hosts
        if h in summary and (summary[h].node_strikes if node_level else summary[h].strikes) >= max_strikes
    ]


def describe_limit(node: NodeSummary, max_strikes: int, window_s: float) -> str:
    days = window_s / 86400
    span = f"{days:g} days" if days >= 1 else f"{window_s / 3600:g} hours"
    return (
        f"node {node.host} has {node.strikes} strike(s) in the last {span} (health.max_strikes {max_strikes}; "
        f"last: {node.last_cause} in run {node.last_strike_run}); fix the node, then forgive it with "
        f"`rlaunch nodes --clear {node.host}` (or list a spare under `spares:`)"
    )


DRAIN_PREFIX = "rlaunch:"  # the reason prefix ops/slurm/rlaunch-healthcheck resumes (and no other)


def drain_reason(node: NodeSummary) -> str:
    """A Slurm drain reason for a node at its strike limit: our prefix, the count, the last cause and run; control
    characters removed (the ledger is a file; a reason reaches `sinfo -R` on every operator's terminal)."""
    text = (
        f"{DRAIN_PREFIX} {node.node_strikes} strike(s), last {node.last_cause} in run {node.last_strike_run}"
    )
    return "".join(c for c in text if c.isprintable())[:MAX_LINE]
