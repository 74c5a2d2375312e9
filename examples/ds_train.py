"""A small DeepSpeed ZeRO-3 training script, the shape of a user's `job.kind: deepspeed` job.

    python -m torch.distributed.run --nnodes N --node-rank R --nproc-per-node P ... \\
        examples/ds_train.py --deepspeed_config ds.json --steps 20 --ckpt-dir ckpt --save-every 5

What it shows (and what the tests check):
  - `deepspeed.initialize` with the config rlaunch renders (`--deepspeed_config`, added by
    `deepspeed.add_config_arguments`) and a torch AdamW optimizer (ZeRO-3 accepts it through
    `zero_allow_untested_optimizer`);
  - rank 0 prints one line per step, `DS_TRAIN {"step": s, "loss": l}` (json keeps every float digit), so runs
    can be compared bitwise;
  - checkpoints in `--ckpt-dir/step-00000005/` (default $RLAUNCH_CKPT_DIR) with a `COMPLETE` marker written by
    rank 0 only after every rank returned from `save_checkpoint` (DeepSpeed writes its `latest` tag before every
    shard exists, so `latest` is never trusted); on start the script resumes from $RLAUNCH_RESUME_FROM (rlaunch's
    choice on a restart) or else from the newest directory holding the marker.

Determinism: the model comes from --seed and the global batch of step s from (seed, s) alone, split by rank, so a
resumed run replays exactly the batches an uninterrupted one sees.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import time
from pathlib import Path

import deepspeed
import torch
import torch.distributed as dist
from torch import nn

MARKER = "COMPLETE"
STEP_DIR = re.compile(r"^step-(\d+)$")
PREFIX = "DS_TRAIN "
IN_DIM, HIDDEN, OUT_DIM = 16, 64, 4


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="tiny ZeRO-3 training with exact resume")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument(
        "--ckpt-dir",
        type=Path,
        default=Path(os.environ["RLAUNCH_CKPT_DIR"]) if os.environ.get("RLAUNCH_CKPT_DIR") else None,
        help="checkpoint root, resumed from when it holds a complete checkpoint (default: $RLAUNCH_CKPT_DIR)",
    )
    parser.add_argument("--save-every", type=int, default=0, help="steps between checkpoints (0: never)")
    parser.add_argument("--step-sleep", type=float, default=0.0, help="pause after each step (paces tests)")
    parser.add_argument("--local_rank", type=int, default=-1, help="ignored: torchrun sets LOCAL_RANK")
    deepspeed.add_config_arguments(parser)  # --deepspeed, --deepspeed_config
    return parser.parse_args()


def build_model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                         nn.Linear(HIDDEN, OUT_DIM))  # fmt: skip


def batch_for(
    step: int, seed: int, micro_batch: int, rank: int, world: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's slice of global step `step`'s batch, generated from (seed, step) only."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x = torch.randn(micro_batch * world, IN_DIM, generator=gen)
    y = torch.sin(x[:, :OUT_DIM] * 2.0) + 0.1 * x[:, OUT_DIM : 2 * OUT_DIM]  # a learnable target
    rows = slice(rank * micro_batch, (rank + 1) * micro_batch)
    return x[rows], y[rows]


def latest_complete(ckpt_dir: Path | None) -> tuple[int, str] | None:
    if ckpt_dir is None or not ckpt_dir.is_dir():
        return None
    found = [
        (int(m.group(1)), p.name)
        for p in ckpt_dir.iterdir()
        if (m := STEP_DIR.match(p.name)) and (p / MARKER).is_file()
    ]
    return max(found) if found else None


def resume_point(ckpt_dir: Path | None) -> tuple[int, str] | None:
    """rlaunch's choice on a restart ($RLAUNCH_RESUME_FROM, a tag directory under ckpt_dir), else our own scan."""
    chosen = os.environ.get("RLAUNCH_RESUME_FROM")
    if (
        chosen
        and ckpt_dir is not None
        and Path(chosen).parent == ckpt_dir
        and STEP_DIR.match(Path(chosen).name)
    ):
        return int(STEP_DIR.match(Path(chosen).name).group(1)), Path(chosen).name
    return latest_complete(ckpt_dir)


def save(engine, ckpt_dir: Path, step: int, world: int) -> None:
    tag = f"step-{step:08d}"
    if dist.get_rank() == 0 and (ckpt_dir / tag).is_dir():
        # A resumed run re-saves a step an older attempt saved: drop the old copy first so that a crash
        # mid-save can never leave an old marker beside new, partial shards.
        shutil.rmtree(ckpt_dir / tag)
    dist.barrier()
    engine.save_checkpoint(str(ckpt_dir), tag=tag, client_state={"step": step})
    dist.barrier()  # every rank has returned from save_checkpoint: all shards are on disk
    if dist.get_rank() == 0:
        part = ckpt_dir / tag / (MARKER + ".part")
        part.write_text(json.dumps({"step": step, "world_size": world}))
        os.replace(part, ckpt_dir / tag / MARKER)
        emit({"checkpoint": step, "path": str(ckpt_dir / tag)})


def emit(event: dict) -> None:
    print(PREFIX + json.dumps(event), flush=True)


def main() -> None:
    args = parse_args()
    deepspeed.init_distributed()  # gloo on CPU, RCCL on ROCm; reads DEEPSPEED_TIMEOUT (minutes)
    rank, world = dist.get_rank(), dist.get_world_size()
    model = build_model(args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, optimizer=optimizer)
    micro = engine.train_micro_batch_size_per_gpu()
    dtype = next(p for p in engine.module.parameters()).dtype

    start = 0
    resume = resume_point(args.ckpt_dir)
    if resume is not None:
        step, tag = resume
        engine.load_checkpoint(str(args.ckpt_dir), tag=tag)
        start = step
        if rank == 0:
            emit({"resumed_from": step, "path": str(args.ckpt_dir / tag)})

    loss_fn = nn.MSELoss()
    for step in range(start + 1, args.steps + 1):
        for micro_step in range(engine.gradient_accumulation_steps()):
            x, y = batch_for(step * 1000 + micro_step, args.seed, micro, rank, world)
            loss = loss_fn(engine(x.to(engine.device, dtype)), y.to(engine.device, dtype))
            engine.backward(loss)
            engine.step()
        reduced = loss.detach().float().clone()
        dist.all_reduce(reduced)
        if rank == 0:
            emit({"step": step, "loss": reduced.item() / world, "world_size": world})
        if args.ckpt_dir is not None and args.save_every and step % args.save_every == 0:
            save(engine, args.ckpt_dir, step, world)
        if args.step_sleep:
            time.sleep(args.step_sleep)
    if rank == 0:
        emit({"done": True, "steps": args.steps, "world_size": world})
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
