"""A tiny deterministic data-parallel training job for simulated CPU clusters (gloo).

Prints one `step=N loss=X` line per step on rank 0, checkpoints every --ckpt-every steps into
$RLAUNCH_CKPT_DIR (or --ckpt-dir) and resumes from the latest complete checkpoint with --resume.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

try:  # pushed beside this script by rlaunch (launcher/node/rlaunch_job.py); absent when run by hand
    from rlaunch_job import REQUEUE_EXIT_CODE, should_stop
except ImportError:
    REQUEUE_EXIT_CODE = 75

    def should_stop() -> bool:
        return False


def save(ckpt_dir: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, step: int) -> None:
    """A complete checkpoint or none: written to a temporary directory, renamed, then `latest` (ckpt.py's rule)."""
    tag = f"step-{step}"
    if (ckpt_dir / tag).exists():  # saved already at this step (a periodic save, then a stop request)
        return
    tmp = ckpt_dir / f".{tag}.tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp / "state.pt")
    os.replace(tmp, ckpt_dir / tag)
    (ckpt_dir / "latest.tmp").write_text(tag)
    os.replace(ckpt_dir / "latest.tmp", ckpt_dir / "latest")


def compute(cpu_seconds: float) -> None:
    """Burn this many CPU seconds of this thread (so the extra work is the same however busy the machine is)."""
    end = time.thread_time() + cpu_seconds
    while time.thread_time() < end:
        sum(i * i for i in range(2000))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--sleep", type=float, default=0.0, help="seconds per step (to make runs observable)")
    p.add_argument("--ckpt-dir", default=os.environ.get("RLAUNCH_CKPT_DIR", ""))
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--resume", action="store_true")
    p.add_argument(
        "--fail-at-step", type=int, default=0, help="fault injection: SIGKILL one rank at this step"
    )
    p.add_argument("--fail-rank", type=int, default=0)
    p.add_argument(
        "--fail-how",
        choices=("sigkill", "gpu-fault"),
        default="sigkill",
        help="sigkill: as if killed from outside; gpu-fault: print the HIP runtime's memory access fault, then die "
        "as the runtime does (SIGABRT)",
    )
    p.add_argument(
        "--stop-aware", action="store_true", help="save and exit 75 on `rlaunch stop --save` (rlaunch_job)"
    )
    p.add_argument(
        "--fail-always",
        action="store_true",
        help="--fail-at-step also after a resume (a deterministic crash)",
    )
    # Health scenarios (fresh runs only): a hang, a silent busy phase, a slow node.
    p.add_argument(
        "--hang-at-step", type=int, default=0, help="--hang-rank sleeps forever before this step's all_reduce"
    )
    p.add_argument("--hang-rank", type=int, default=0)
    p.add_argument(
        "--busy-phase",
        action="append",
        default=[],
        metavar="STEP:RANK",
        help="after STEP: RANK computes silently (-1: every rank), then a barrier; repeatable",
    )
    p.add_argument("--busy-seconds", type=float, default=75.0)
    p.add_argument(
        "--busy-share",
        type=float,
        default=1.0,
        help="share of a core a busy rank computes (1: all of it; less: compute, then sleep the rest)",
    )
    p.add_argument(
        "--slow-node", type=int, default=-1, help="ranks on this node (NODE_RANK) compute extra per step"
    )
    p.add_argument(
        "--extra-compute", type=float, default=0.3, help="CPU seconds added per step on --slow-node"
    )
    p.add_argument("--slow-from-step", type=int, default=0, help="--slow-node is slow from this step on")
    args = p.parse_args()
    busy = {int(step): int(rank) for step, rank in (phase.split(":") for phase in args.busy_phase)}

    timeout = timedelta(seconds=int(os.environ.get("RLAUNCH_PG_TIMEOUT", "600")))
    dist.init_process_group("gloo", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    start = 0
    ckpt_dir = Path(args.ckpt_dir) if args.ckpt_dir else None
    # rlaunch sets RLAUNCH_RESUME_FROM to the latest complete checkpoint when it restarts a failed job.
    resume_dir = os.environ.get("RLAUNCH_RESUME_FROM")
    if not resume_dir and args.resume and ckpt_dir and (ckpt_dir / "latest").is_file():
        resume_dir = str(ckpt_dir / (ckpt_dir / "latest").read_text().strip())
    if resume_dir:
        tag = Path(resume_dir).name
        state = torch.load(Path(resume_dir) / "state.pt", weights_only=True)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        if rank == 0:
            print(f"resumed from {tag} at step {start}", flush=True)

    global_batch = 8 * world
    node_rank = int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))
    for step in range(start, args.steps):
        # Fault injection happens only in a fresh run, so a resumed run can prove it continues cleanly
        # (--fail-always: every attempt, the job that crashes at the same step each time).
        fresh = start == 0 or args.fail_always
        if args.fail_at_step and step + 1 == args.fail_at_step and rank == args.fail_rank and fresh:
            if args.fail_how == "gpu-fault":  # HIP's report of a GPU page fault (ROCR runtime), then abort()
                print(
                    "Memory access fault by GPU node-1 (Agent handle: 0x55d8c2a0) on address 0x7f2a4c000000. "
                    "Reason: Page not present or supervisor privilege.",
                    flush=True,
                )
                os.kill(os.getpid(), signal.SIGABRT)
            os.kill(os.getpid(), signal.SIGKILL)
        g = torch.Generator().manual_seed(1000 + step)
        x = torch.randn(global_batch, 16, generator=g)
        y = (x * torch.linspace(-1, 1, 16)).sum(dim=1, keepdim=True)  # learnable: the loss goes down
        mine = slice(rank * 8, (rank + 1) * 8)
        loss = torch.nn.functional.mse_loss(ddp(x[mine]), y[mine])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == args.slow_from_step and rank == 0:
            print(f"slow from step {step + 1}", flush=True)  # when the test may start to expect a warning
        if node_rank == args.slow_node and step + 1 >= args.slow_from_step:
            compute(args.extra_compute)
        reduced = loss.detach().clone()
        if args.hang_at_step and step + 1 == args.hang_at_step and rank == args.hang_rank and start == 0:
            time.sleep(10**6)  # a rank stuck in Python: its peers wait in the all_reduce below
        dist.all_reduce(reduced)
        if rank == 0:
            print(f"step={step + 1} loss={reduced.item() / world!r}", flush=True)
        if ckpt_dir and args.ckpt_every and (step + 1) % args.ckpt_every == 0 and rank == 0:
            save(ckpt_dir, model, opt, step + 1)
        # `rlaunch stop --save`: every rank agrees at this step (one all-reduce), rank 0 saves, all exit 75.
        if args.stop_aware and should_stop():
            if rank == 0 and ckpt_dir:
                save(ckpt_dir, model, opt, step + 1)
                print(f"stop requested: saved step-{step + 1}", flush=True)
            dist.barrier()
            del ddp
            dist.destroy_process_group()
            raise SystemExit(REQUEUE_EXIT_CODE)
        if args.sleep:
            time.sleep(args.sleep)
        if step + 1 in busy and start == 0:
            if busy[step + 1] in (-1, rank):
                deadline = time.monotonic() + args.busy_seconds
                while time.monotonic() < deadline:  # silent compute: an evaluation, a checkpoint being built
                    compute(0.5 * args.busy_share)
                    if args.busy_share < 1:
                        time.sleep(0.5 * (1 - args.busy_share))
            dist.barrier()  # the others wait here for the busy rank
    dist.barrier()
    if rank == 0:
        print("training complete", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
