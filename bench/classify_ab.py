"""Classify speed, A/B in one process: the rule table at a git revision vs the working tree's, interleaved.

The lines are the healthy mix a rank prints most (HF Trainer / LLaMA-Factory dicts, tqdm, DeepSpeed step and timer
lines, NCCL INFO) plus every healthy (`-`) line of tests/fixtures/logs and heldout/. Each table classifies every line;
the two tables take turns, best of --reps, so a shared machine's load hits both alike. Also prints how many lines
each table sends past the one literal scan (into the rule loop).

Usage: .venv/bin/python bench/classify_ab.py [--before REV] [--reps 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launcher.health import rules as after  # noqa: E402
from launcher.health.classify import parse_rank_prefix  # noqa: E402

MIX = [
    "{'loss': 1.7319, 'grad_norm': 0.547949492931366, 'learning_rate': 2.7037732088676582e-05, 'epoch': 1.42}",
    " 12%|█▏        | 120/1000 [00:30<03:40,  4.00it/s]",
    "[2023-07-25 21:03:21,037] [INFO] [logging.py:96:log_dist] [Rank 0] step=35, skipped=0, lr=[2.17e-06]",
    "[2023-07-25 21:03:17,269] [INFO] [timer.py:215:stop] epoch=0/micro_step=34/global_step=34, "
    "RunningAvgSamplesPerSec=7.86, CurrSamplesPerSec=8.00, MemAllocated=59.65GB, MaxMemAllocated=63.31GB",
    "[INFO|trainer.py:2414] 2025-11-30 09:19:37,203 >> Saving model checkpoint to out/checkpoint-500",
    "step=120 loss=0.4213",
    "node1:1234:1234 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
]


def healthy_lines() -> list[str]:
    lines = list(MIX) * 20
    logs = ROOT / "tests" / "fixtures" / "logs"
    for path in sorted([*logs.glob("*.log"), *(logs / "heldout").glob("*.log")]):
        for raw in path.read_text(encoding="utf-8").splitlines():
            if raw.startswith("-\t"):
                lines.append(parse_rank_prefix(raw[2:])[1])
    return lines


def _show(rev: str, path: str) -> str | None:
    found = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return found.stdout if found.returncode == 0 else None


def _load(name: str, text: str, directory: Path) -> ModuleType:
    path = directory / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def load_at(rev: str) -> ModuleType:
    """rules.py at `rev`, with the vocabulary.py of the same revision (where it has one): importing the working
    tree's vocabulary would give the old rules the new tables. Each revision gets a directory of its own: since
    30733f5 a rules.py loaded by path (not as launcher.health.rules) loads the vocabulary.py beside it."""
    tag = f"rlaunch_{abs(hash(rev))}"
    directory = Path(tempfile.mkdtemp(prefix=f"{tag}_"))
    text = _show(rev, "launcher/health/rules.py")
    assert text is not None, rev
    vocabulary = _show(rev, "launcher/health/vocabulary.py")
    if vocabulary is not None:
        (directory / "vocabulary.py").write_text(vocabulary, encoding="utf-8")
        _load(f"{tag}_vocabulary", vocabulary, directory)
        text = text.replace(
            "from launcher.health import vocabulary", f"import {tag}_vocabulary as vocabulary"
        )
    return _load(f"{tag}_rules", text, directory)


def scans(module: ModuleType, line: str) -> bool:
    """Whether the table's literal scan lets `line` through to its rule loop (tables since turn 16 scan an ASCII line
    with the ASCII literals alone)."""
    low = line.lower()
    ascii_scan = getattr(module, "_ASCII_SCAN", None)
    return (ascii_scan if ascii_scan is not None and low.isascii() else module._SCAN).search(low) is not None


def entered(module: ModuleType, lines: list[str]) -> int:
    return sum(1 for line in lines if scans(module, line))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="main")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    before = load_at(args.before)
    lines = healthy_lines()
    fast = [line for line in lines if not scans(before, line)]  # the fast path (no literal)
    for label, subset in (("healthy mix", lines), ("fast path only", fast)):
        best = {"before": float("inf"), "after": float("inf")}
        for _ in range(args.reps):
            for name, module in (("before", before), ("after", after)):
                classify = module.classify
                cpu0 = time.process_time()
                for line in subset:
                    classify(line)
                best[name] = min(best[name], time.process_time() - cpu0)
        for name, module in (("before", before), ("after", after)):
            print(
                f"{label:15s} {name:6s} {len(module.RULES):4d} rules  {1e6 * best[name] / len(subset):6.2f} us/line  "
                f"({entered(module, subset)} of {len(subset)} lines past the literal scan)"
            )


if __name__ == "__main__":
    main()
