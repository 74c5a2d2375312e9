"""Preemption benchmark: notice → checkpoint durable → every process gone, and steps lost, side by side.

The same LLaMA-Factory LoRA SFT job (DeepSpeed ZeRO-3, the tiny local model of tests/assets.py, a periodic
checkpoint every --save-steps steps) on 2 simulated SSH nodes × 1 rank (tests/simnodes.py), launched by
`lifecycle.up` (the `rlaunch up` code path), preempted after --notice-at logged steps, two ways:

  rlaunch stop --save   the notice is `preempt.stop` (what ops/slurm/rlaunch-batch runs on Slurm's B:USR1): the
                        guards signal the ranks that catch SIGUSR1, the StopCallback all-reduces the flag, the
                        Trainer saves checkpoint-N through its own path, the ranks exit 75
  plain torchrun        the notice is SIGTERM to each node's torchrun agent at the same moment (what Slurm's
                        preemption, `scancel` or a KillWait end sends to a step): torchrun's own path, which
                        SIGTERMs its workers; what survives is the last periodic checkpoint

Times are seconds from the notice: "durable" = the latest complete checkpoint by the resume rule
(launcher/node/ckpt.py, the rule `up` resumes with) is the one the run ends with; "gone" = nothing of the job in
either node's process table. Steps lost = the last step the job logged minus the step of that checkpoint.

Usage (root, after scripts/setup.sh; under the e2e slots):
  .venv/bin/python bench/preempt.py [--notice-at 7] [--save-steps 5] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import benchmarks_md  # noqa: E402
from assets import build_tiny_assets  # noqa: E402
from simnodes import SimCluster  # noqa: E402
from test_llamafactory_e2e import lf_inventory, lf_yaml, trainer_losses  # noqa: E402

from launcher import lifecycle, preempt, records  # noqa: E402

MARK_BEGIN = "<!-- preempt:begin (bench/preempt.py rewrites this section) -->"
MARK_END = "<!-- preempt:end -->"
CKPT = (ROOT / "launcher" / "node" / "ckpt.py").read_text()


class Two:
    """The first two nodes of a simulated cluster, as lf_inventory wants them."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster

    def inventory_dict(self, **kw: Any) -> dict[str, Any]:
        data = self.cluster.inventory_dict(**kw)
        data["nodes"] = data["nodes"][:2]
        return data


def latest_complete(ckpt: Path) -> str | None:
    out = subprocess.run(
        [sys.executable, "-c", CKPT, str(ckpt), "2"], capture_output=True, text=True, timeout=60
    )
    return json.loads(out.stdout)["latest"]


def logged(ckpt: Path) -> int:
    try:
        return max(trainer_losses(ckpt), default=0)
    except (OSError, ValueError):
        return 0


def job_left(cluster: SimCluster) -> int:
    return sum(len([p for p in cluster.node_pids(n.name) if "sshd" not in p[1]]) for n in cluster.nodes[:2])


def one(
    cluster: SimCluster, shared: Path, tiny: Any, how: str, notice_at: int, save_steps: int
) -> dict[str, Any]:
    ckpt = shared / f"out-{how}"
    config = lf_yaml(tiny, shared / f"{how}.yaml", max_steps=400, save_steps=save_steps)
    inv = lf_inventory(Two(cluster), shared, config, ckpt, health={"grace": 30}, restart={"max_restarts": 0})
    os.environ["RLAUNCH_HOME"] = str(shared / f"home-{how}")
    run_id = records.new_run_id()
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(out=lifecycle.up(inv, run_id=run_id, head_env={})), daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 600
    while logged(ckpt) < notice_at and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if logged(ckpt) < notice_at:
        raise SystemExit(f"{how}: the job never logged step {notice_at}")
    t0 = time.monotonic()
    before = latest_complete(ckpt)
    stopper = None
    if how == "rlaunch":
        stopper = threading.Thread(
            target=lambda: result.update(stop=preempt.stop(run_id, deadline=120)), daemon=True
        )
        stopper.start()
    else:
        for node in cluster.nodes[:2]:
            for pid, cmd in cluster.node_pids(node.name):
                if "torch.distributed.run" in cmd:
                    os.kill(pid, signal.SIGTERM)
    durable = gone = None
    final = before
    while time.monotonic() < t0 + 300 and gone is None:
        now = time.monotonic()
        latest = latest_complete(ckpt)
        if durable is None and latest != before:
            durable, final = now - t0, latest
        if job_left(cluster) == 0:
            gone = now - t0
        time.sleep(0.05)
    thread.join(120)
    if stopper is not None:
        stopper.join(120)
    final = latest_complete(ckpt)
    step = int(final.rsplit("-", 1)[1]) if final else 0
    last = logged(ckpt)
    return {
        "how": how,
        "notice_at_step": notice_at,
        "last_logged": last,
        "checkpoint": Path(final).name if final else None,
        "durable_s": durable,
        "gone_s": gone,
        "lost": last - step,
        "summary": (result.get("stop") or {}).get("summary") or result["out"][1].summary,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notice-at", type=int, default=7, help="logged steps before the notice")
    p.add_argument("--save-steps", type=int, default=5, help="the job's periodic checkpoint interval")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    shared = Path(tempfile.mkdtemp(prefix="rlaunch-bench-preempt-", dir="/var/tmp"))
    rows = []
    try:
        tiny = build_tiny_assets(shared / "assets")
        with SimCluster(2) as cluster:
            for how in ("rlaunch", "plain"):
                rows.append(one(cluster, shared, tiny, how, args.notice_at, args.save_steps))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(shared, ignore_errors=True)

    def s(v: float | None) -> str:
        return f"{v:.1f} s" if v is not None else "never"

    lines = [
        "## Preemption: `rlaunch stop --save` vs plain torchrun under the same notice (bench/preempt.py)",
        "",
        f"LLaMA-Factory LoRA SFT, DeepSpeed ZeRO-3, the tiny local model, 2 simulated SSH nodes × 1 rank (CPU, gloo), "
        f"a periodic checkpoint every {args.save_steps} steps; the notice after step {args.notice_at} was logged. "
        f"One run each on this shared 2-core machine ({platform.node()}, other engineers' tests beside it). Seconds "
        "from the notice; steps lost = last step logged − step of the checkpoint the run ends with.",
        "",
        "| notice | checkpoint it ends with | durable after | every process gone after | steps lost |",
        "|---|---|---:|---:|---:|",
    ]
    names = {"rlaunch": "`rlaunch stop --save` (SIGUSR1 + stop file)", "plain": "SIGTERM to torchrun (plain)"}
    for r in rows:
        lines.append(
            f"| {names[r['how']]} | {r['checkpoint']} | {s(r['durable_s']) if r['how'] == 'rlaunch' else '(periodic)'} "
            f"| {s(r['gone_s'])} | {r['lost']} |"
        )
    lines += ["", f'rlaunch\'s record: "{rows[0]["summary"]}".']
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        benchmarks_md.write_section(MARK_BEGIN, MARK_END, text)


if __name__ == "__main__":
    main()
