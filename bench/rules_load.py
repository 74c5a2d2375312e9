"""What loading the health rules costs a node's process, side by side: the table as a node gets it, with the head's
index (rules.INDEX_FILE) and without it, and optionally the table at an older git revision.

Every guard and every follower on every node loads rules.py from its run directory (launcher/node/edge.py
`load_rules`), so this cost is paid twice per node per attempt. Each sample is a fresh `python -I` process (as the
guard runs) that loads the table exactly as edge.py does and reports its own CPU time for the load, then for the
first error-shaped line (which compiles the lookahead and one rule). The variants take turns, so a shared machine's
load hits all alike; the byte-code cache (`__pycache__`, which the guard writes in the attempt's directory and the
follower reuses) is warmed first.

Usage: .venv/bin/python bench/rules_load.py [--before REV] [--reps 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launcher import plan  # noqa: E402
from launcher.health import rules  # noqa: E402

PROBE = r"""
import importlib.util, sys, time
t0 = time.process_time()
spec = importlib.util.spec_from_file_location("rlaunch_edge_rules", sys.argv[1])
table = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = table
spec.loader.exec_module(table)
t1 = time.process_time()
table.classify("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error")
t2 = time.process_time()
print(f"{1000 * (t1 - t0):.2f} {1000 * (t2 - t1):.2f}")
"""


def variant(base: Path, name: str, files: dict[str, bytes]) -> Path:
    folder = base / name
    folder.mkdir()
    for file, data in files.items():
        (folder / file).write_bytes(data)
    return folder / "rules.py"


def sample(path: Path) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-I", "-c", PROBE, str(path)], capture_output=True, text=True, check=True
    )
    load, first = out.stdout.split()
    return float(load), float(first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="also load the table at this git revision")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--json", help="write the samples here")
    args = parser.parse_args()
    health = ROOT / "launcher" / "health"
    sources = {name: (health / name).read_bytes() for name in rules.SOURCE_FILES}
    index = plan.rules_index()
    assert index is not None, "the table did not load as a node loads it"
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        variants = {
            "with index": variant(base, "with-index", {**sources, rules.INDEX_FILE: index}),
            "without index": variant(base, "without-index", sources),
        }
        if args.before:
            old = {
                name: subprocess.run(
                    ["git", "show", f"{args.before}:launcher/health/{name}"],
                    cwd=ROOT,
                    capture_output=True,
                    check=True,
                ).stdout
                for name in rules.SOURCE_FILES
            }
            variants[f"at {args.before}"] = variant(base, "before", old)
        for path in variants.values():
            sample(path)  # writes __pycache__, as a node's guard does before its follower loads
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for _ in range(args.reps):
            for name, path in variants.items():
                samples[name].append(sample(path))
        shutil.rmtree(base, ignore_errors=True)
    print(f"index: {len(index)} bytes pushed per node (gzip)")
    print(f"{'table':<22} {'load, median ms':>16} {'load, best ms':>14} {'first error line, median ms':>28}")
    for name, got in samples.items():
        loads, firsts = [s[0] for s in got], [s[1] for s in got]
        print(
            f"{name:<22} {statistics.median(loads):>16.1f} {min(loads):>14.1f} {statistics.median(firsts):>28.1f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"index_bytes": len(index), "samples": samples}, indent=1))


if __name__ == "__main__":
    main()
