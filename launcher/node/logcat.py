"""Every line of a run's output on one node; run as `python -c <this file> LOCAL_RANKS GREP RUN_DIR...`.

Standard library only. The guard keeps every line of every rank in RUN_DIR/out.log while the follower forwards only
what the head needs (edge.py), so `rlaunch logs` reads the whole log here. LOCAL_RANKS: "all" or "0,3" (lines with
torchrun's "[default3]:" prefix; unprefixed lines only with "all"); GREP: a regular expression or "" for every
line. One RUN_DIR per attempt (a restarted run has one per attempt), in order. Lines are printed as they are.
"""

import os
import re
import sys

ranks, grep, run_dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
prefix = re.compile(r"^\s*(?:\[rank\d+\]:)?\s*\[(?!rank\d)[A-Za-z_][\w-]*?(\d+)\]:")
wanted = None if ranks == "all" else {int(r) for r in ranks.split(",") if r.isdigit()}
pattern = re.compile(grep) if grep else None
out = sys.stdout.buffer
for run_dir in run_dirs:
    path = os.path.join(run_dir, "out.log")
    if not os.path.isfile(path):
        continue
    with open(path, "rb") as f:
        for raw in f:
            text = raw.rstrip(b"\n").decode("utf-8", "replace")
            if wanted is not None:
                found = prefix.match(text)
                if found is None or int(found.group(1)) not in wanted:
                    continue
            if pattern is not None and not pattern.search(text):
                continue
            out.write(text.encode("utf-8") + b"\n")
