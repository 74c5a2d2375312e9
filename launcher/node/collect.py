"""Collect a failed run's diagnostics from a node; run as `python -c <this file> RUN_DIR MAX_BYTES`.

Standard library only. Gathers PyTorch flight-recorder dumps (TORCH_NCCL_DEBUG_INFO_TEMP_FILE points them at
RUN_DIR/nccl_trace_rank_N) and torchrun's per-rank error files (RUN_DIR/torchrun-logs/**/error.json, whose earliest
entry is the root cause). Prints one JSON object {relative path: base64 content}, newest first, capped at MAX_BYTES.
"""

import base64
import glob
import json
import os
import sys

run_dir, budget = sys.argv[1], int(sys.argv[2])
paths = glob.glob(os.path.join(run_dir, "nccl_trace_rank_*"))
paths += glob.glob(os.path.join(run_dir, "torchrun-logs", "**", "error.json"), recursive=True)
paths.sort(key=lambda p: os.path.getmtime(p), reverse=True)
out = {}
for path in paths:
    size = os.path.getsize(path)
    if size > budget:
        continue
    budget -= size
    with open(path, "rb") as f:
        out[os.path.relpath(path, run_dir)] = base64.b64encode(f.read()).decode()
print(json.dumps(out))
