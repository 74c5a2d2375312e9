"""out.log's lines as each rank wrote them: torchrun's tee can cut a line in two, and this joins the pieces.

Why. `torchrun --tee 3` (launcher/jobs/base.py) copies each worker's output to torchrun's own stdout from one thread
per worker, which reads the worker's file with readline() and writes "[<role><local_rank>]:" + what it read
(torch/distributed/elastic/multiprocessing/tail_log.py, tail_logfile). A readline() that meets a line still being
written returns the part written so far; the thread writes that with its prefix and no newline, and the rest of the
line comes with the next read, under its own prefix. Python under PYTHONUNBUFFERED=1 (rlaunch sets it, so logs are
live: launcher/envrules.py) writes print()'s text and its "\\n" as two writes, so "step=2 loss=4.40\\n" can reach
out.log as "[default0]:step=2 loss=4.40" + "[default0]:\\n", and another worker's thread may write whole lines
between the two. Turn 10's CI recorded "[default0]:step=2 loss=4.404990196228027[default0]:" that way; a fatal line
cut in two would be missed by every rule.

How. A prefix of the line's own role after the start of a line means the piece before it was cut short: that piece
waits, keyed by its prefix, and the next piece under the same prefix continues it. A progress bar never ends its
line (tqdm writes "\\r" and the whole bar at each redraw, a newline only when it closes): `bars()` gives each waiting
bar's latest redraw and drops the older ones, so a follower that calls it once per read shows a bar's progress as it
goes (the stall check counts it as activity) at most once per read, where a bar's one endless line used to be cut at
MAX_PIECE and its later redraws never seen. Every reader of out.log joins through here: the follower (the head's
record and health), the guard's edge rules and `rlaunch logs` (launcher/node/logcat.py).

Standard library only (pushed beside guard.py: protocol.GUARD_BUNDLE; sent with logcat.py: nodecall.with_modules).
"""

from __future__ import annotations

import re

# torchrun's prefix at the start of a line, as launcher/health/classify.py reads it ("[rank3]:" is PyTorch's global
# rank, not a tee prefix). The role is group 1: every worker of one torchrun shares it.
_LEAD = re.compile(r"\[(?!rank\d)([A-Za-z_][\w-]{0,63}?)\d{1,9}\]:")
_INNER = re.compile(r"\[([A-Za-z_][\w-]{0,63}?)\d{1,9}\]:")
MAX_HELD = 64  # prefixes with a piece waiting; more (a program printing prefixes of its own) go out unjoined
MAX_PIECE = 8192  # protocol.MAX_LINE_BYTES: a waiting piece this long goes out as it is


class TeeJoin:
    """Fed out.log's lines in order (without their newline); returns the lines as the workers wrote them."""

    def __init__(self) -> None:
        self.held: dict[str, str] = {}  # prefix -> the start of a line cut short under it

    def feed(self, line: str) -> list[str]:
        lead = _LEAD.match(line)
        if lead is None:
            return [line]
        if "]:" not in line[lead.end() :] and not self.held:
            return [line]  # the common case: one whole line
        role = lead.group(1)
        cuts = [lead] + [m for m in _INNER.finditer(line, lead.end()) if m.group(1) == role]
        out: list[str] = []
        for i, cut in enumerate(cuts):
            prefix = cut.group(0)
            end = cuts[i + 1].start() if i + 1 < len(cuts) else len(line)
            text = self.held.pop(prefix, "") + line[cut.end() : end]
            last = i + 1 == len(cuts)
            if last or len(text) >= MAX_PIECE or len(self.held) >= MAX_HELD:
                out.append(prefix + text)
            else:
                self.held[prefix] = text
        return out

    def bars(self) -> list[str]:
        """Each waiting progress bar's latest redraw (from its last carriage return); the older redraws are dropped."""
        out = []
        for prefix, text in list(self.held.items()):
            cr = text.rfind("\r")
            if cr >= 0:
                out.append(prefix + text[cr:])
                del self.held[prefix]
        return out

    def flush(self) -> list[str]:
        """What still waits (the end of the log: nothing will continue it)."""
        out = [prefix + text for prefix, text in self.held.items()]
        self.held.clear()
        return out
