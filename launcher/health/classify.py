"""Classify whole logs: the pure line loop plus the one file-reading helper behind
``rlaunch logs classify FILE [--json]``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from launcher.health.rules import classify

# torchrun --tee / --redirects prefixes every worker line with "[<role><local_rank>]:" (role is
# "default" unless set; torch/distributed/elastic/multiprocessing/tail_log.py). PyTorch's own
# excepthook and rank-aware logging add "[rank<global_rank>]:" (torch/distributed/distributed_c10d.py,
# torch/_logging/_internal.py). They can stack: "[default0]:[rank4]: Traceback ...".
# Bounded digit counts, as in launcher/node/edge.py: int() refuses more than 4300 digits (issue 21).
_LOCAL_PREFIX = re.compile(r"^\s*\[(?!rank\d)[A-Za-z_][\w-]{0,63}?(\d{1,9})\]:")
# PyTorch writes "[rank1]: " (one space) before each line a rank prints, a traceback's "  File" lines included:
# the space is the prefix's, so what is left is the line as the rank printed it (pyexc.py reads its indentation).
_GLOBAL_PREFIX = re.compile(r"^\s*\[rank(\d{1,9})\]: ?")
# What the job launchers above torchrun put before every line of a task (after round 17, from their formats): Slurm's
# `srun --label` writes the task id, right-aligned, then ": " (src/common/io_hdr / srun's output labelling: "%*d: ");
# Open MPI's `mpirun --tag-output` writes "[jobid,rank]<stdout>:" or "<stderr>:". They name a launcher task, not a
# PyTorch rank, so they are stripped and not reported.
_TASK_PREFIX = re.compile(r"^ *\d{1,7}: |^\s*\[\d+,\d+\]<std(?:out|err)>: ?")
# What log collectors put before a line (before round 35: anchored rules, "^RuntimeError: ...", "Killed", missed the
# same line behind them): a container runtime's or kubectl's RFC 3339 timestamp (`docker logs -t`, `kubectl logs
# --timestamps`), syslog's / journald's "Mon DD HH:MM:SS host ident[pid]: " (RFC 3164, `journalctl`'s short format),
# Ray's worker tag "(<Actor> pid=N, ip=A) " (ray/_private/log_monitor.py), a multi-node runner's IP label ("10.0.0.1:
# ", DeepSpeed's pdsh runner), a stream tag ("stderr: ", "[stderr] "). They carry no rank and no level; each is
# followed by one space, so a traceback's indentation survives. Not a host name (rccl-tests print their own "%s: Test
# NCCL failure"), not a bracketed timestamp (MIOpen's and DeepSpeed's own formats begin with one).
_ENVELOPE = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?:[^\s:]+ )?[^\s:\[\]]+(?:\[\d{1,9}\])?:"
    r"|\((?:[\w.]+ )?pid=\d{1,9}(?:, ip=[\d.a-fA-F:]+)?\)"
    r"|(?:\d{1,3}\.){3}\d{1,3}:"
    r"|\[std(?:err|out)\]|std(?:err|out):) "
)


@dataclass(frozen=True)
class LinePrefix:
    local_rank: int | None
    global_rank: int | None
    rest: str


@dataclass(frozen=True)
class Flag:
    line: int
    category: str
    severity: str
    text: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


def parse_prefixes(text: str) -> LinePrefix:
    """Strip torchrun's and PyTorch's rank prefixes, in either order, and report both ranks; a job launcher's task
    label before them (srun --label, mpirun --tag-output) and a log collector's envelope (a timestamp, syslog's
    host and program, Ray's worker tag, a host label, a stream tag) are stripped too."""
    local_rank: int | None = None
    global_rank: int | None = None
    while True:
        if global_rank is None and (found := _GLOBAL_PREFIX.match(text)):
            global_rank = int(found.group(1))
        elif local_rank is None and (found := _LOCAL_PREFIX.match(text)):
            local_rank = int(found.group(1))
        elif global_rank is None and local_rank is None and (found := _TASK_PREFIX.match(text)):
            pass  # a launcher's task label comes before the ranks' prefixes, never after them
        elif global_rank is None and local_rank is None and (found := _ENVELOPE.match(text)):
            pass  # a log collector's timestamp, host or stream tag, before everything else
        else:
            return LinePrefix(local_rank, global_rank, text)
        text = text[found.end() :]


def parse_rank_prefix(text: str) -> tuple[int | None, str]:
    """(local rank from a ``[default0]:`` prefix or None, the line without any rank prefix).

    A ``[rank3]:`` prefix carries the *global* rank; it is stripped too, but use
    :func:`parse_prefixes` to read it.
    """
    prefix = parse_prefixes(text)
    return prefix.local_rank, prefix.rest


def classify_lines(lines: Iterable[str]) -> list[Flag]:
    """Every line a rule flags, with its 1-based line number and its text without rank prefixes."""
    flags: list[Flag] = []
    for number, raw in enumerate(lines, start=1):
        text = parse_prefixes(raw.rstrip("\r\n")).rest
        match = classify(text)
        if match is not None:
            flags.append(Flag(number, match.category, match.severity, text.strip()))
    return flags


MAX_LINE_CHARS = 64 * 1024  # a longer line is classified by its head: one giant line must not fill memory


def bounded_lines(handle: TextIO, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of `handle`, each cut to `limit` characters; the rest of an over-long line is read in chunks
    and dropped, so memory stays bounded whatever the file holds."""
    while True:
        line = handle.readline(limit)
        if not line:
            return
        yield line
        while not line.endswith("\n"):
            line = handle.readline(limit)
            if not line:
                return


def classify_file(path: str | Path) -> list[Flag]:
    """classify_lines over a log file; undecodable bytes are replaced, never fatal."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return classify_lines(bounded_lines(handle))
