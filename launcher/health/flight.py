"""What the ranks' flight-recorder summaries (launcher/node/frtrace.py) say about a hang and a straggler. No I/O.

Every rank numbers the collectives of a process group in the same order (``collective_seq_id``), so:

- **behind**: in a hang the healthy ranks have all enqueued collective N and wait in it; a rank whose last
  enqueued collective is below N never entered it: "rank 3 never entered nccl:all_reduce #41 (pg 0); the 3 others
  wait in it". Only a strict minority is named, as with the stacks (launcher/health/stacks.py).
- **arrival lag**: a rank's ``time_created_ns`` for collective N is when it arrived there; the last to arrive is the
  one the others waited for. Per node, the lag behind the earliest rank, median over the recent collectives that
  every rank recorded. ``time_created_ns`` is each node's wall clock, so across nodes it is as good as their clock
  sync (NTP: milliseconds), well below the tenths of a second a straggler costs.

A summary is {"rank", "pgs": {pg: {"enqueued", "started", "completed", "in", "last"}}, "entries": [[pg, seq, name,
time_created_ns, state], ...]} or {"rank", "error"}; summaries come per node: {node: [summary, ...]}.
"""

from __future__ import annotations

import statistics
from typing import Any

Summaries = dict[str, list[dict[str, Any]]]


def _readable(summaries: Summaries) -> list[tuple[str, dict[str, Any]]]:
    return [
        (node, s)
        for node, ranks in sorted(summaries.items())
        if isinstance(ranks, list)
        for s in ranks
        if isinstance(s, dict) and "error" not in s and isinstance(s.get("rank"), int)
    ]


def _pg_order(pg: str) -> tuple[int, str]:
    return (0, pg) if pg == "0" else (1, pg)


def behind(summaries: Summaries) -> tuple[tuple[str, int] | None, str | None]:
    """((node, rank) of the rank that never entered the collective its peers wait in, a sentence), or (None, a
    sentence saying where the ranks are), or (None, None) without readable summaries."""
    ranks = _readable(summaries)
    if not ranks:
        return None, None
    pgs = sorted({pg for _, s in ranks for pg in s.get("pgs", {})}, key=_pg_order)
    for pg in pgs:
        here = [
            (node, s["rank"], s["pgs"][pg]) for node, s in ranks if isinstance(s.get("pgs", {}).get(pg), dict)
        ]
        if len(here) < 2:
            continue
        low = min(p["enqueued"] for _, _, p in here)
        late = sorted((node, rank) for node, rank, p in here if p["enqueued"] == low)
        ahead = [p for _, _, p in here if p["enqueued"] > low]
        # NCCL enqueues asynchronously, so healthy ranks may be several collectives ahead of each other; the one
        # that matters is the rank at the bottom, if only a minority is there.
        if not ahead or len(late) * 2 >= len(here):
            continue
        (node, rank), seq = late[0], low + 1
        name = _name_of(ranks, pg, seq) or "collective"
        # Nobody completes #seq without the late rank: the others are in it (or queued behind it).
        stale = sum(1 for p in ahead if p["completed"] >= seq)
        rest = (
            f"the {len(ahead)} others wait in it"
            if not stale
            else f"{stale} of {len(ahead)} others are past it"
        )
        more = f"; {len(late) - 1} more with it" if len(late) > 1 else ""
        return (node, rank), f"rank {rank} never entered {name} #{seq} (process group {pg}); {rest}{more}"
    pg = pgs[0] if pgs else None
    if pg is None:
        return None, f"flight recorder: {len(ranks)} rank(s) recorded no collective"
    here = [s["pgs"][pg] for _, s in ranks if isinstance(s.get("pgs", {}).get(pg), dict)]
    top = max(p["enqueued"] for p in here)
    waiting = [p for p in here if p.get("in")]
    where = (
        f"{len(waiting)} wait in {waiting[0]['in'][1]} #{waiting[0]['in'][0]}"
        if waiting
        else "none is in one"
    )
    return (
        None,
        f"flight recorder: all {len(here)} rank(s) reached collective #{top} (process group {pg}); {where}",
    )


def _name_of(ranks: list[tuple[str, dict[str, Any]]], pg: str, seq: int) -> str | None:
    for _, s in ranks:
        for entry in s.get("entries", []):
            if entry[0] == pg and entry[1] == seq:
                return str(entry[2])
    return None


def arrival_lag(summaries: Summaries, window: int = 50) -> tuple[dict[str, float], int]:
    """(per node: median seconds by which its last rank arrived after the earliest rank, over the last `window`
    collectives of process group 0 that every rank recorded; the number of collectives used)."""
    ranks = _readable(summaries)
    created: dict[tuple[str, int], dict[int, int]] = {}
    for node, s in ranks:
        times = {e[1]: e[3] for e in s.get("entries", []) if e[0] == "0" and isinstance(e[3], int)}
        if times:
            created[(node, s["rank"])] = times
    if len({node for node, _ in created}) < 2:
        return {}, 0
    common = sorted(set.intersection(*(set(t) for t in created.values())))[-window:]
    if not common:
        return {}, 0
    per_node: dict[str, list[float]] = {}
    for seq in common:
        first = min(t[seq] for t in created.values())
        lags: dict[str, float] = {}
        for (node, _), t in created.items():
            lags[node] = max(lags.get(node, 0.0), (t[seq] - first) / 1e9)
        for node, lag in lags.items():
            per_node.setdefault(node, []).append(lag)
    return {node: statistics.median(v) for node, v in sorted(per_node.items())}, len(common)


def lag_evidence(node: str, lags: dict[str, float], count: int) -> str | None:
    """The straggler warning's flight-recorder evidence for `node`, or None when the timings do not show it."""
    if node not in lags or count == 0:
        return None
    others = [v for n, v in lags.items() if n != node]
    if not others:
        return None
    return (
        f"flight recorder: {node} arrives {lags[node]:.2f} s after the earliest rank at each collective "
        f"(median of the last {count}), the other nodes ≤ {max(others):.2f} s"
    )


def unreadable(summaries: Summaries) -> list[str]:
    """One note per dump that could not be read (torn, not a dump, or refused: a pickle that would run code)."""
    notes = []
    for node, ranks in sorted(summaries.items()):
        if isinstance(ranks, dict):
            notes.append(f"{node}: flight recorder not read ({ranks.get('error', '?')})")
            continue
        for s in ranks:
            if isinstance(s, dict) and "error" in s:
                notes.append(f"{node} rank {s.get('rank')}: flight-recorder dump {s['error']}")
    return notes
