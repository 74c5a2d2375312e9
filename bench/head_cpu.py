"""Head CPU per extra log line: every line to the head (RLAUNCH_FORWARD_ALL=1, the pre-edge path) vs. the guards
classifying and forwarding only what the head needs (default), side by side in the same run.

On 4 simulated nodes (tests/simnodes.py) × 2 ranks, a 300-step `command` job prints one step line per step on local
rank 0 of every node, and in the chatty variant 50 extra healthy lines per step and rank (NCCL-INFO-like, tqdm,
logging). For each path, `rlaunch up` runs in this process (paramiko's reader threads and decryption included) and
its CPU (psutil, user+system, all threads) is taken over the whole run; per extra line = (chatty - quiet) / extra
lines. After every chatty run `rlaunch logs` must return 100 % of the lines from the nodes.

Usage (root, after scripts/setup.sh): .venv/bin/python bench/head_cpu.py [--steps 300] [--extra 50] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import benchmarks_md  # noqa: E402
import psutil  # noqa: E402

from cluster.inventory import from_mapping  # noqa: E402
from launcher import lifecycle  # noqa: E402

NODES, RANKS = 4, 2
MARK_BEGIN = "<!-- head-cpu:begin (bench/head_cpu.py rewrites this section) -->"
MARK_END = "<!-- head-cpu:end -->"
JOB = """
import os, sys, time
steps, extra, ranks = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
node = os.environ["NODE_RANK"]
for step in range(1, steps + 1):
    out = ["[default0]:step=%d loss=%r" % (step, 1.0 / step)]
    for r in range(ranks):
        for i in range(extra):
            kind = i % 3
            if kind == 0:
                out.append("[default%d]:node%s:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC" % (r, node, step, i, r, i % 32, r, r, r + 1, r + 1))
            elif kind == 1:
                out.append("[default%d]: 12%%|#         | %d/%d [00:30<03:40,  4.00it/s]" % (r, step, steps))
            else:
                out.append("[default%d]:[INFO|trainer.py:2414] >> step %d item %d: prefetch queue length 3" % (r, step, i))
    sys.stdout.write("\\n".join(out) + "\\n")
    sys.stdout.flush()
    time.sleep(0.02)
print("[default0]:training complete", flush=True)
"""


def one_run(sim: Any, steps: int, extra: int, forward_all: bool) -> dict[str, Any]:
    inv = from_mapping(
        sim.inventory_dict(
            job={
                "kind": "command",
                "command": [sys.executable, "-c", JOB, str(steps), str(extra), str(RANKS)],
                "nproc_per_node": RANKS,
            },
            health={"stall_timeout": 600, "heartbeat_timeout": 5, "grace": 2},
        )
    )
    if forward_all:
        os.environ["RLAUNCH_FORWARD_ALL"] = "1"
    else:
        os.environ.pop("RLAUNCH_FORWARD_ALL", None)
    me = psutil.Process()
    t0 = me.cpu_times()
    wall0 = time.monotonic()
    run_id, outcome = lifecycle.up(inv, force=True, doctor=False)
    t1 = me.cpu_times()
    os.environ.pop("RLAUNCH_FORWARD_ALL", None)
    if outcome.code != 0:
        raise SystemExit(f"run failed: {outcome.summary}")
    lines = NODES * (steps * (1 + RANKS * extra) + 1)
    got = len(lifecycle.read_logs(run_id)) if extra else lines
    return {
        "cpu_s": (t1.user + t1.system) - (t0.user + t0.system),
        "wall_s": time.monotonic() - wall0,
        "lines": lines,
        "retrieved": got,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--extra", type=int, default=50, help="extra lines per step and rank (chatty)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from simnodes import SimCluster

    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rlaunch-bench-headcpu-") as tmp, SimCluster(NODES) as sim:
        os.environ["RLAUNCH_HOME"] = str(Path(tmp) / "home")
        for forward_all, name in (
            (True, "every line to the head (before)"),
            (False, "edge forwarding (now)"),
        ):
            quiet = one_run(sim, args.steps, 0, forward_all)
            chatty = one_run(sim, args.steps, args.extra, forward_all)
            extra_lines = chatty["lines"] - quiet["lines"]
            row = {
                "path": name,
                "quiet_cpu": quiet["cpu_s"],
                "chatty_cpu": chatty["cpu_s"],
                "extra": extra_lines,
                "us_per_line": 1e6 * (chatty["cpu_s"] - quiet["cpu_s"]) / extra_lines,
                "retrieved": 100.0 * chatty["retrieved"] / chatty["lines"],
            }
            rows.append(row)
            print(f"{name}: {row}", file=sys.stderr, flush=True)
    text = "\n".join(
        [
            "| path | head CPU s, quiet run | head CPU s, chatty run | extra lines | head CPU µs per extra line "
            "| lines `rlaunch logs` returns |",
            "|---|---:|---:|---:|---:|---:|",
            *(
                f"| {r['path']} | {r['quiet_cpu']:.2f} | {r['chatty_cpu']:.2f} | {r['extra']} "
                f"| {r['us_per_line']:.1f} | {r['retrieved']:.0f} % |"
                for r in rows
            ),
        ]
    )
    text_notes = (
        f"{NODES} simulated nodes × {RANKS} ranks, {args.steps} steps, chatty: {args.extra} extra lines per step and "
        f"rank. `rlaunch up` in process (paramiko included), CPU of the whole launcher process (psutil). Machine: "
        f"{os.cpu_count()} CPUs, Linux {platform.release()}, Python {platform.python_version()}, load average "
        f"{load_before[0]:.1f} before / {os.getloadavg()[0]:.1f} after (shared with other engineers' test runs)."
    )
    print(text, text_notes, sep="\n\n")
    if not args.no_write:
        benchmarks_md.write_section(
            MARK_BEGIN,
            MARK_END,
            f"## Head CPU per extra log line (bench/head_cpu.py)\n\n{text}\n\n{text_notes}",
        )


if __name__ == "__main__":
    main()
