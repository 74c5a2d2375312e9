"""Every line of a run's output on one node; run as `python -c <this file> OPTIONS RUN_DIR...`.

Standard library, and teelines.py sent with it (launcher/lifecycle.py, nodecall.with_modules): torchrun's cut lines
are joined as the follower joins them. The guard keeps every line of every rank in RUN_DIR/out.log while the follower forwards only
what the head needs (edge.py), so `rlaunch logs` reads the whole log here. One RUN_DIR per attempt (a restarted run
has one per attempt), in order. OPTIONS is one JSON object:
  ranks  "all" or a list of local ranks (lines with torchrun's "[default3]:" prefix; unprefixed lines only with "all")
  grep   a regular expression, or "" for every line
  ago    only lines written in the last `ago` seconds by this node's clock (`--since 10m`), or
  since  only lines written at or after this time (seconds since the epoch, `--since 2026-12-01T19:00`)
  tail   only the last N lines that pass the filters (all RUN_DIRs together), or null
  follow true when `logs -f` goes on from here: a last line without its newline is left for the follower
Lines are printed as they are. Last, the reply (launcher/nodecall.py: the JSON object on the last line of stdout)
{"end": {RUN_DIR: byte offset read up to}}, so that `logs -f` follows on from exactly there (no line twice, none
missed).

Why an index for --since: the job writes out.log itself (the guard hands it the file as stdout), so its lines carry
no time. The guard appends "TIME SIZE" to RUN_DIR/out.idx (protocol.OUT_INDEX) whenever it sees out.log grow, at
most once per protocol.OUT_INDEX_EVERY_S: the first byte written after time T lies at or after the size of the last
entry at or before T. Reading from there never misses a line written after T and shows at most about a second (the
index interval plus one poll) from before it. A run directory from a guard without the index is shown whole when
out.log was written after T, else skipped.
"""

import collections
import json
import os
import re
import sys
import time

import teelines

OUT_INDEX = (
    "out.idx"  # protocol.OUT_INDEX (not imported: this file runs through `python -c` with teelines only)
)
LINE_START_SCAN = 1 << 16  # bytes looked back for the start of the line an index offset falls into

opts = json.loads(sys.argv[1])
run_dirs = sys.argv[2:]
prefix = re.compile(r"^\s*(?:\[rank\d+\]:)?\s*\[(?!rank\d)[A-Za-z_][\w-]*?(\d+)\]:")
ranks = opts.get("ranks", "all")
wanted = None if ranks == "all" else {int(r) for r in ranks if isinstance(r, int)}
pattern = re.compile(opts["grep"]) if opts.get("grep") else None
since = opts.get("since")
if opts.get("ago") is not None:
    since = time.time() - float(opts["ago"])
tail = opts.get("tail")
kept = collections.deque(maxlen=int(tail)) if tail is not None else None
out = sys.stdout.buffer


def start_offset(run_dir, log):
    """Where lines written at or after `since` begin in out.log (0: from the start; None: none are)."""
    if since is None:
        return 0
    try:
        with open(os.path.join(run_dir, OUT_INDEX), "rb") as f:
            index = f.read().splitlines()
    except OSError:
        return 0 if os.path.getmtime(log) >= since else None
    offset = 0
    for raw in index:
        parts = raw.split()
        try:
            at, size = float(parts[0]), int(parts[1])
        except (IndexError, ValueError):
            continue  # a line cut short by a crash: the entries around it still hold
        if at > since:
            break
        offset = size
    return offset


def line_start(f, offset):
    """The start of the line that holds byte `offset` (a size seen mid-line, e.g. a progress bar's \\r run)."""
    if offset <= 0:
        return 0
    back = max(0, offset - LINE_START_SCAN)
    f.seek(back)
    before = f.read(offset - back)
    cut = before.rfind(b"\n")
    return back + cut + 1 if cut >= 0 else back


def emit(text):
    if kept is not None:
        kept.append(text)
    else:
        out.write(text.encode("utf-8") + b"\n")


def show(text):
    if wanted is not None:
        found = prefix.match(text)
        if found is None or int(found.group(1)) not in wanted:
            return
    if pattern is not None and not pattern.search(text):
        return
    emit(text)


ends = {}
for run_dir in run_dirs:
    path = os.path.join(run_dir, "out.log")
    if not os.path.isfile(path):
        continue
    with open(path, "rb") as f:
        first = start_offset(run_dir, path)
        if first is None:
            f.seek(0, os.SEEK_END)
            ends[run_dir] = f.tell()
            continue
        f.seek(line_start(f, first))
        end = f.tell()
        join = teelines.TeeJoin()
        for raw in f:
            if not raw.endswith(b"\n") and opts.get("follow"):
                break  # a line still being written: the follower picks it up whole from `end`
            end += len(raw)
            for text in join.feed(raw.rstrip(b"\n").decode("utf-8", "replace")):
                show(text)
        for text in join.flush():
            show(text)
        ends[run_dir] = end
if kept is not None:
    for text in kept:
        out.write(text.encode("utf-8") + b"\n")
out.write(json.dumps({"end": ends}).encode() + b"\n")
out.flush()
