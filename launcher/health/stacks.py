"""Read the ranks' stack dumps (launcher/node/stacks.py) and name the rank that is not where the others are.
No I/O.

In a hang the healthy ranks all sit in the same collective, at the same line; the culprit is elsewhere (asleep,
in a loop, in I/O). Each rank is reduced to the innermost frame of its main thread (py-spy) or to the system call
its main thread is blocked in (/proc fallback); the largest group is the majority, everyone else is named.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

FRAME = re.compile(r"^\s+(\S.*) \((.+):(\d+)\)\s*$")
SOURCE = re.compile(r"^\s+> (.*)$")
BLOCKED = re.compile(r"^\s+in (.+) \(wchan (.*)\)$")


@dataclass(frozen=True)
class Where:
    """Where one rank's main thread is: `key` groups ranks, `text` says it in words."""

    node: str
    rank: int | None
    key: str
    text: str


def where(node: str, rank: int | None, tool: str | None, text: str) -> Where:
    main = _main_thread(text)
    if tool == "py-spy":
        for i, line in enumerate(main):
            m = FRAME.match(line)
            if m:
                func, file, lineno = m.group(1), os.path.basename(m.group(2)), m.group(3)
                source = SOURCE.match(main[i + 1]) if i + 1 < len(main) else None
                code = source.group(1).split("  #")[0].strip() if source else ""
                said = f"in {func} at {file}:{lineno}" + (f" (`{code}`)" if code else "")
                return Where(node, rank, f"{func} {file}:{lineno}", said)
    for line in main:
        m = BLOCKED.match(line)
        if m:
            return Where(node, rank, m.group(1), f"blocked in {m.group(1)} (kernel: {m.group(2)})")
    return Where(node, rank, "?", "stack unknown")


def _main_thread(text: str) -> list[str]:
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Thread ")]
    if not starts:
        return []
    chosen = next((i for i in starts if '"MainThread"' in lines[i]), starts[0])
    end = next((i for i in starts if i > chosen), len(lines))
    return lines[chosen + 1 : end]


def odd_ones(places: list[Where]) -> tuple[list[Where], str | None, int]:
    """(the ranks outside the majority, the majority's place in words, its size). With no clear majority (fewer
    than two ranks agree, or no rank stands out) nobody is named."""
    known = [p for p in places if p.key != "?"]
    if len(known) < 3:
        return [], None, 0
    key, size = Counter(p.key for p in known).most_common(1)[0]
    odd = [p for p in known if p.key != key]
    if size < 2 or not odd or len(odd) >= size:
        return [], None, size
    majority = next(p for p in known if p.key == key)
    return odd, majority.text, size


def explain(places: list[Where]) -> tuple[Where | None, str]:
    """The rank to blame (None if the stacks do not single one out) and a sentence for the verdict."""
    odd, majority, size = odd_ones(places)
    if not odd:
        return None, f"stacks of {len(places)} rank(s) show no rank apart from the others"
    first = odd[0]
    who = f"rank {first.rank}" if first.rank is not None else f"pid on {first.node}"
    others = f"; {len(odd) - 1} more elsewhere" if len(odd) > 1 else ""
    return first, f"{who} is {first.text}; the {size} others are {majority}{others}"
