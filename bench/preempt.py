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
(launcher/node/ckpt.py, the rule `up` resumes with) is the one the run ends with; "ranks gone" = no training
process (rlaunch_lf.py) left on either node; "gone" = nothing of the job in either node's process table (ranks,
torchrun agents, guards). Steps lost = the last step the job logged minus the step of that checkpoint; "since the
periodic" = the last step logged minus the last periodic checkpoint before the notice (what a stop without a save
loses). --repeat N runs N repetitions, rlaunch and plain interleaved, each its own checkpoint directory and
RLAUNCH_HOME (no run resumes another), with the load average before and after each.

Usage (root, after scripts/setup.sh; under the e2e slots):
  .venv/bin/python bench/preempt.py [--notice-at 13] [--save-steps 10] [--repeat 3] [--no-write]
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
from launcher.nodecall import node_script, with_modules  # noqa: E402
from launcher.run.loop import CKPT_MODULES  # noqa: E402

MARK_BEGIN = "<!-- preempt:begin (bench/preempt.py rewrites this section) -->"
MARK_END = "<!-- preempt:end -->"
CKPT = with_modules(node_script("ckpt.py"), "ckpt.py", CKPT_MODULES)  # ckpt.py uses push.py's path rule


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


def job_left(cluster: SimCluster, what: str = "") -> int:
    """Processes of the job on the two nodes (sshd aside); with `what`, only those whose command line has it."""
    return sum(
        len([p for p in cluster.node_pids(n.name) if "sshd" not in p[1] and what in p[1]])
        for n in cluster.nodes[:2]
    )


def load() -> float:
    return os.getloadavg()[0]


def one(
    cluster: SimCluster, shared: Path, tiny: Any, how: str, notice_at: int, save_steps: int, rep: int = 0
) -> dict[str, Any]:
    load_before = load()
    ckpt = shared / f"out-{how}-{rep}"
    config = lf_yaml(tiny, shared / f"{how}-{rep}.yaml", max_steps=400, save_steps=save_steps)
    inv = lf_inventory(Two(cluster), shared, config, ckpt, health={"grace": 30}, restart={"max_restarts": 0})
    os.environ["RLAUNCH_HOME"] = str(shared / f"home-{how}-{rep}")
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
    at_notice = logged(ckpt)
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
    seen: dict[str | None, float] = {}  # each latest complete checkpoint, when this loop first saw it
    ranks_gone = gone = None
    while time.monotonic() < t0 + 300 and gone is None:
        now = time.monotonic()
        seen.setdefault(latest_complete(ckpt), now - t0)
        if ranks_gone is None and job_left(cluster, "rlaunch_lf.py") == 0:
            ranks_gone = now - t0
        if job_left(cluster) == 0:
            gone = now - t0
        time.sleep(0.05)
    thread.join(120)
    if stopper is not None:
        stopper.join(120)
    final = latest_complete(ckpt)
    durable = seen.get(final) if final != before else None
    step = int(final.rsplit("-", 1)[1]) if final else 0
    periodic = int(before.rsplit("-", 1)[1]) if before else 0
    last = logged(ckpt)
    return {
        "rep": rep,
        "how": how,
        "notice_at_step": at_notice,
        "last_logged": last,
        "checkpoint": Path(final).name if final else None,
        "periodic_before": Path(before).name if before else None,
        "durable_s": durable,
        "ranks_gone_s": ranks_gone,
        "gone_s": gone,
        "lost": last - step,
        "since_periodic": last - periodic,
        "load_before": load_before,
        "load_after": load(),
        "summary": (result.get("stop") or {}).get("summary") or result["out"][1].summary,
    }


def render(rows: list[dict[str, Any]], save_steps: int, notice_at: int) -> str:
    def sec(v: float | None) -> str:
        return f"{v:.1f} s" if v is not None else "never"

    def median(how: str, key: str) -> str:
        vals = sorted(r[key] for r in rows if r["how"] == how and r[key] is not None)
        return sec(vals[len(vals) // 2]) if vals else "never"

    reps = len({r["rep"] for r in rows})
    loads = [r[k] for r in rows for k in ("load_before", "load_after")]
    names = {"rlaunch": "`rlaunch stop --save` (SIGUSR1 + stop file)", "plain": "SIGTERM to torchrun (plain)"}
    lines = [
        "## Preemption: `rlaunch stop --save` vs plain torchrun under the same notice (bench/preempt.py)",
        "",
        "LLaMA-Factory LoRA SFT, DeepSpeed ZeRO-3, the tiny local model, 2 simulated SSH nodes × 1 rank (CPU, gloo), "
        f"a periodic checkpoint every {save_steps} steps; the notice once step {notice_at} was logged (the bench polls "
        f"trainer_log.jsonl, so a notice lands at step {notice_at} or a little after). {reps} repetition(s), rlaunch "
        f"and plain interleaved, on this shared {os.cpu_count()}-core machine ({platform.platform(terse=True)}, "
        f"Python {platform.python_version()}); load average (1 min) {min(loads):.1f}–{max(loads):.1f}. Seconds from "
        "the notice. *Durable*: the checkpoint the run ends with is the latest complete one by the resume rule "
        "(launcher/node/ckpt.py). *Ranks gone*: no training process left on either node; *every process gone*: "
        "ranks, torchrun agents and rlaunch's guards. *Steps lost*: last step logged − step of the checkpoint the run "
        "ends with; *since the periodic*: last step logged − the last periodic checkpoint before the notice (what the "
        "stop would lose without a save).",
        "",
        "| rep | notice | notice at step | ends with | durable after | ranks gone after | every process gone after "
        "| steps lost | steps since the periodic | load before / after |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        durable = sec(r["durable_s"]) if r["how"] == "rlaunch" else f"(periodic {r['checkpoint']})"
        lines.append(
            f"| {r['rep'] + 1} | {names[r['how']]} | {r['notice_at_step']} | {r['checkpoint']} | {durable} "
            f"| {sec(r['ranks_gone_s'])} | {sec(r['gone_s'])} | {r['lost']} | {r['since_periodic']} "
            f"| {r['load_before']:.1f} / {r['load_after']:.1f} |"
        )
    lines += [""]
    for how in ("rlaunch", "plain"):
        lost = [r["lost"] for r in rows if r["how"] == how]
        lines.append(
            f"- {names[how]}: median durable {median(how, 'durable_s') if how == 'rlaunch' else 'n/a'}, ranks gone "
            f"{median(how, 'ranks_gone_s')}, every process gone {median(how, 'gone_s')}; steps lost "
            f"{' / '.join(map(str, lost))}."
        )
    summaries = sorted({r["summary"].split(" (")[0] for r in rows if r["how"] == "rlaunch"})
    lines.append(f"- rlaunch's records: {'; '.join(repr(x) for x in summaries)}.")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notice-at", type=int, default=13, help="logged steps before the notice")
    p.add_argument("--save-steps", type=int, default=10, help="the job's periodic checkpoint interval")
    p.add_argument("--repeat", type=int, default=1, help="repetitions (rlaunch and plain interleaved)")
    p.add_argument("--first-rep", type=int, default=1, help="first repetition's number (--rows)")
    p.add_argument("--rows", type=Path, help="also append each row to this JSON-lines file")
    p.add_argument(
        "--render", type=Path, help="run nothing: render the rows of this JSON-lines file (--rows)"
    )
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    rows: list[dict[str, Any]] = []
    if args.render:
        rows = [json.loads(line) for line in args.render.read_text().splitlines() if line.strip()]
    else:
        shared = Path(tempfile.mkdtemp(prefix="rlaunch-bench-preempt-", dir="/var/tmp"))
        try:
            tiny = build_tiny_assets(shared / "assets")
            with SimCluster(2) as cluster:
                for rep in range(args.first_rep - 1, args.first_rep - 1 + args.repeat):
                    for how in ("rlaunch", "plain"):
                        rows.append(one(cluster, shared, tiny, how, args.notice_at, args.save_steps, rep))
                        print(json.dumps(rows[-1]), flush=True)
                        if args.rows:
                            with args.rows.open("a") as f:
                                f.write(json.dumps(rows[-1]) + "\n")
        finally:
            shutil.rmtree(shared, ignore_errors=True)
    text = render(rows, args.save_steps, args.notice_at)
    print(text)
    if not args.no_write:
        benchmarks_md.write_section(MARK_BEGIN, MARK_END, text)


if __name__ == "__main__":
    main()
