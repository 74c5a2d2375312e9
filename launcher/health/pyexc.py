"""A rank's own Python exception, read from its traceback lines. No I/O, no clock.

When a rank dies of an uncaught exception, the interpreter prints the traceback to stderr and exits with status 1
(Python docs, "sys.excepthook" and "Exit status"; CPython Python/pythonrun.c). torchrun then reports only its own
wrapper line (`api.py:...] failed (exitcode: 1) local_rank: 0 (pid: ...)`, torch/distributed/elastic/
multiprocessing/api.py) and, without `@record` on the script's entry point, an error file it never got
(`error_file: <N/A>`): the cause is in the rank's own output, so it is read there (issue 20).

The traceback's shape is CPython's (Lib/traceback.py, StackSummary.format / TracebackException.format):

    Traceback (most recent call last):
      File "/path/x.py", line 123, in fn
        code line                       (indented further; 3.11+ adds ~~~^^^ marker lines)
    IndexError: index out of range in self

A chained traceback prints the cause first and the exception that was raised last, so the last exception line of a
rank is the one it died of. Lines of several ranks interleave: each rank (the watcher's node and rank) is followed on
its own. Frames are accepted without the "Traceback" header, because a node's guard forwards a flagged line with
only a few lines of context before it (launcher/node/edge.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FRAME = re.compile(r'^\s{2}File "([^"]{1,1000})", line (\d{1,9}), in (.{1,300})$')
HEADER = "Traceback (most recent call last):"
# "IndexError: index out of range in self", "torch.OutOfMemoryError: ...", a bare "AssertionError"
EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w{0,100}\.){0,10}[A-Z]\w{0,100})(?::\s?(.{0,2000}))?$")
LIBRARY_DIRS = ("site-packages/", "dist-packages/")
KEEP_S = 120.0  # an exception counts as the cause of an exit this long after it was printed


def short_path(path: str) -> str:
    """A frame's file as a reader finds it: inside a library from its package on ("llamafactory/data/x.py"),
    elsewhere its file name (the user's script, pushed into the run directory)."""
    for marker in LIBRARY_DIRS:
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PyException:
    time: float
    type: str
    message: str
    frame: str | None  # "file.py:123" of the innermost frame, when its line was seen
    line: str  # the exception line as printed

    def describe(self) -> str:
        text = f"{self.type}: {self.message}" if self.message else self.type
        if len(text) > 240:
            text = text[:237] + "..."
        return f"{text} ({self.frame})" if self.frame else text


@dataclass
class Tracebacks:
    """Feed every line of every rank; `last` holds each rank's latest completed exception."""

    last: dict[tuple[str, int | None], PyException] = field(default_factory=dict)
    _frame: dict[tuple[str, int | None], str | None] = field(
        default_factory=dict
    )  # open traceback → its last frame

    def feed(self, time: float, key: tuple[str, int | None], text: str) -> PyException | None:
        """One line of a rank (torchrun's prefix removed). Returns the exception when this line completes one."""
        if text.startswith("Traceback (most recent call"):
            self._frame[key] = None
            return None
        if text.startswith("  File "):
            m = FRAME.match(text.rstrip())
            if m:
                self._frame[key] = f"{short_path(m.group(1))}:{m.group(2)}"
            return None
        if key not in self._frame or not text or text[0].isspace():
            return None  # code and marker lines of the frames, or no traceback open
        m = EXCEPTION.match(text.rstrip())
        if m is None:
            # "During handling of the above exception, ..." and other prose between the parts of a chain: the
            # next part opens with its own header.
            return None
        found = PyException(time, m.group(1), (m.group(2) or "").strip(), self._frame.pop(key), text.strip())
        self.last[key] = found
        return found

    def recent(self, node: str, rank: int | None, now: float) -> list[tuple[int | None, PyException]]:
        """(rank, exception) of `rank` on `node` (every rank of the node when rank is None) printed within
        KEEP_S before `now`, earliest first."""
        found = [
            (key[1], exc)
            for key, exc in self.last.items()
            if key[0] == node and (rank is None or key[1] == rank) and 0 <= now - exc.time + 1.0 <= KEEP_S
        ]
        return sorted(found, key=lambda item: (item[1].time, -1 if item[0] is None else item[0]))

    def forget(self, node: str, rank: int | None) -> None:
        self.last.pop((node, rank), None)
