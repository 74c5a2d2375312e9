"""Deterministic training probe, run on nodes under torchrun.

    python -m torch.distributed.run --nproc_per_node N probe.py --steps 8 --global-batch 8 [...]

Node-side file: standard library + the node's torch (+ deepspeed for --engine zero3); imports nothing of rlaunch.

Determinism is the point: the model is built from --seed, and the batch of global step s is generated from
(seed, s) alone, then split across ranks. A DDP run on n ranks therefore sees exactly the global batch a 1-rank
run sees, and a run resumed from a checkpoint replays the same data as an uninterrupted one.

Rank 0 prints one line per event, prefixed ``RLAUNCH_PROBE `` and followed by JSON (floats keep full precision:
json writes repr):
    {"step", "loss", "grad_norm", "samples_per_s", "peak_mem_mb", "world_size"}   after every step
    {"checkpoint": step, "path"}                                                 once a checkpoint is complete
    {"resumed_from": step, "path"}                                               when training resumes
    {"done": true, "steps", "world_size", "engine", "final_loss"}               at the end
With ``--loader-pass N`` the same steps then run again in the same process, from a fresh model of the same seed,
with the batches made by N DataLoader worker processes: those step and done records carry ``"pass": "loader"``
(validation's single stage: whether worker processes change a single loss, without a second launch).

Checkpoints live in --ckpt-dir as ``step-00000004/`` directories holding a ``COMPLETE`` marker. They are
written under a temporary name and renamed only once complete, so a directory named ``step-*`` with a marker
is always loadable. (DeepSpeed writes its ``latest`` tag before every rank's shard exists, so we never trust it.)
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import re
import resource
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

PREFIX = "RLAUNCH_PROBE "
MARKER = "COMPLETE"
STEP_DIR = re.compile(r"^step-(\d+)$")
IN_DIM, HIDDEN, OUT_DIM = 16, 32, 4
EXIT_BAD_INPUT = 2


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cuda also means ROCm GPUs")
    p.add_argument("--engine", choices=["ddp", "zero3"], default="ddp")
    p.add_argument(
        "--ds-config", type=Path, help="DeepSpeed JSON config for --engine zero3 ('auto' is filled)"
    )
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--global-batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--ckpt-dir", type=Path)
    p.add_argument("--ckpt-every", type=int, default=0, help="0: never")
    p.add_argument("--resume", action="store_true", help="continue from the latest complete checkpoint")
    p.add_argument("--resume-from", type=Path, help="continue from this checkpoint directory")
    p.add_argument("--fail-at-step", type=int, default=0, help="fault injection: SIGKILL on reaching step K")
    p.add_argument("--fail-rank", type=int, default=0)
    p.add_argument("--dataloader-workers", type=int, default=0)
    p.add_argument(
        "--loader-pass",
        type=int,
        default=0,
        metavar="N",
        help="then run the same steps again from a fresh model with N DataLoader workers (records tagged pass=loader)",
    )
    return p.parse_args(argv)


def emit(record: dict[str, Any]) -> None:
    print(PREFIX + json.dumps(record), flush=True)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT_DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class StepBatches(torch.utils.data.Dataset):
    """Item s = this rank's share of global step s's batch, generated from (seed, s) only."""

    def __init__(self, seed: int, global_batch: int, rank: int, world_size: int) -> None:
        self.seed, self.global_batch = seed, global_batch
        self.lo = rank * global_batch // world_size
        self.hi = (rank + 1) * global_batch // world_size
        teacher = torch.Generator().manual_seed(seed)
        self.teacher = torch.randn(IN_DIM, OUT_DIM, generator=teacher)

    def __getitem__(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        # Large odd multiplier keeps (seed, step) streams apart for neighbouring seeds.
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        x = torch.randn(self.global_batch, IN_DIM, generator=gen)
        y = torch.tanh(x @ self.teacher)
        return x[self.lo : self.hi], y[self.lo : self.hi]


# ---------------------------------------------------------------- checkpoints


def step_dir_name(step: int) -> str:
    return f"step-{step:08d}"


def is_complete(path: Path) -> bool:
    return (path / MARKER).is_file()


def complete_checkpoints(ckpt_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    found = [
        (int(m.group(1)), p)
        for p in ckpt_dir.glob("step-*")
        if (m := STEP_DIR.match(p.name)) and is_complete(p)
    ]
    return [p for _, p in sorted(found)]


def latest_complete(ckpt_dir: Path) -> Path | None:
    found = complete_checkpoints(ckpt_dir)
    return found[-1] if found else None


def marker_step(path: Path) -> int:
    return int(json.loads((path / MARKER).read_text())["step"])


def write_marker(tmp: Path, step: int, world_size: int, engine: str) -> None:
    part = tmp / (MARKER + ".part")
    part.write_text(json.dumps({"step": step, "world_size": world_size, "engine": engine}))
    os.replace(part, tmp / MARKER)


def publish(tmp: Path, final: Path) -> None:
    """Rename a complete temporary checkpoint into place, replacing an older one of the same step."""
    if final.exists():
        # A resumed run re-saves steps an older run saved; move the old one aside first (rename is atomic,
        # replacing a non-empty directory is not possible).
        trash = final.with_name(f".old-{final.name}-{os.getpid()}")
        try:
            os.rename(final, trash)
        except FileNotFoundError:
            trash = None  # another node on a shared filesystem got there first
        try:
            os.rename(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another node published the same step already
        if trash:
            shutil.rmtree(trash, ignore_errors=True)
        return
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def tmp_name(ckpt_dir: Path, step: int) -> Path:
    # Unique per host and process: on a shared filesystem several nodes may save the same step at once.
    return ckpt_dir / f".tmp-{step_dir_name(step)}-{socket.gethostname()}-{os.getpid()}"


def save_ddp(ckpt_dir: Path, step: int, model: nn.Module, opt: torch.optim.Optimizer, world: int) -> Path:
    """DDP replicas are identical: each node's local rank 0 saves a full copy (works without shared storage)."""
    final = ckpt_dir / step_dir_name(step)
    if int(os.environ.get("LOCAL_RANK", "0")) == 0:
        tmp = tmp_name(ckpt_dir, step)
        tmp.mkdir(parents=True)
        torch.save({"step": step, "model": model.state_dict(), "optim": opt.state_dict()}, tmp / "state.pt")
        write_marker(tmp, step, world, "ddp")
        publish(tmp, final)
    dist.barrier()
    return final


def load_ddp(path: Path, model: nn.Module, opt: torch.optim.Optimizer) -> int:
    state = torch.load(path / "state.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optim"])
    return int(state["step"])


def save_zero3(ckpt_dir: Path, step: int, engine: Any, world: int) -> Path:
    """Every rank writes its shard into one temporary directory (shared storage, as DeepSpeed expects); rank 0
    marks it complete only after the barrier, once every rank's optimizer shard is on disk."""
    final = ckpt_dir / step_dir_name(step)
    holder = [str(tmp_name(ckpt_dir, step)) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    tmp = Path(holder[0])
    engine.save_checkpoint(str(tmp), tag="state", client_state={"step": step}, save_latest=False)
    dist.barrier()
    if dist.get_rank() == 0:
        shards = [tmp / "state" / f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt" for r in range(world)]
        missing = [s.name for s in shards if not s.is_file()]
        if missing:
            raise RuntimeError(f"checkpoint step {step} incomplete, missing {missing} (storage not shared?)")
        write_marker(tmp, step, world, "zero3")
        publish(tmp, final)
    dist.barrier()
    return final


def load_zero3(path: Path, engine: Any) -> int:
    _, client = engine.load_checkpoint(str(path), tag="state")
    if client is None:
        raise RuntimeError(f"DeepSpeed could not load {path}")
    return int(client["step"])


# ---------------------------------------------------------------- setup


def pg_timeout() -> datetime.timedelta:
    return datetime.timedelta(seconds=float(os.environ.get("RLAUNCH_PG_TIMEOUT", "600")))


def pick_device(kind: str) -> torch.device:
    if kind == "cpu":
        return torch.device("cpu")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def zero3_config(args: argparse.Namespace, world: int) -> dict[str, Any]:
    micro = args.global_batch // world
    if args.ds_config:
        cfg = json.loads(args.ds_config.read_text())
    else:
        cfg = {"zero_optimization": {"stage": 3}, "zero_allow_untested_optimizer": True}
    filled = {"train_batch_size": args.global_batch, "train_micro_batch_size_per_gpu": micro}
    filled["gradient_accumulation_steps"] = 1
    for key, value in filled.items():
        if cfg.get(key, "auto") == "auto":
            cfg[key] = value
    cfg = drop_auto(cfg)
    # fp32 only: bf16/fp16 on CPU either fails or changes the numbers the checks compare.
    for half in ("fp16", "bf16"):
        if isinstance(cfg.get(half), dict):
            cfg[half]["enabled"] = False
    cfg["steps_per_print"] = sys.maxsize
    return cfg


def drop_auto(node: Any) -> Any:
    """'auto' is filled by the HF integration only; left to DeepSpeed it is an error, so use its defaults."""
    if isinstance(node, dict):
        return {k: drop_auto(v) for k, v in node.items() if v != "auto"}
    return node


def peak_mem_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def grad_norm(model: nn.Module) -> float:
    norms = [torch.linalg.vector_norm(p.grad) for p in model.parameters() if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0


def resume_point(args: argparse.Namespace) -> Path | None:
    if args.resume_from:
        if not is_complete(args.resume_from):
            raise SystemExit(f"probe: {args.resume_from} is not a complete checkpoint (no {MARKER})")
        return args.resume_from
    # rlaunch's restart path names the latest complete checkpoint it found (launcher/node/ckpt.py).
    restart_from = os.environ.get("RLAUNCH_RESUME_FROM")
    if restart_from:
        if os.environ.get("RLAUNCH_PROBE_RESUME_OLDEST") and args.ckpt_dir:
            # validate --inject wrong-checkpoint: deliberately the oldest one, which the checks must catch.
            return complete_checkpoints(args.ckpt_dir)[0]
        return Path(restart_from)
    if args.resume and args.ckpt_dir and args.ckpt_dir.is_dir():
        return latest_complete(args.ckpt_dir)
    return None


def agree_on(value: int, device: torch.device) -> bool:
    """True when every rank holds the same value (e.g. each node found the same latest checkpoint)."""
    t = torch.tensor([value, -value], dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t[0]) == -int(t[1])


# ---------------------------------------------------------------- main


def loader_pass(args: argparse.Namespace, device: torch.device, rank: int, world: int) -> None:
    """`--loader-pass N`: the run's steps again, from a fresh model of the same seed, with batches made by N
    DataLoader worker processes (no checkpoints, no fault). The data of step s depends on (seed, s) only, so
    every loss must equal the first pass's; validation compares them (launcher/validate/stages.py)."""
    torch.manual_seed(args.seed)
    model = MLP().to(device)
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    data = StepBatches(args.seed, args.global_batch, rank, world)
    loader = torch.utils.data.DataLoader(
        data, sampler=range(1, args.steps + 1), batch_size=None, num_workers=args.loader_pass
    )
    loss_fn = nn.MSELoss()
    loss_value = math.nan
    for step, (x, y) in enumerate(loader, start=1):
        loss = loss_fn(ddp(x.to(device)), y.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        loss_value = float(mean) / world
        if rank == 0:
            emit({"pass": "loader", "step": step, "loss": loss_value, "world_size": world})
    if rank == 0:
        emit(
            {
                "pass": "loader",
                "done": True,
                "steps": args.steps,
                "world_size": world,
                "final_loss": loss_value,
            }
        )
    del ddp  # the Reducer goes while the process group is registered (see the end of main)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda":
        # Needed by deterministic cuBLAS (hipBLAS honours it too); must be set before the first GPU call.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    device = pick_device(args.device)
    backend = "nccl" if device.type == "cuda" else "gloo"

    # A first line before the rendezvous: from here on, silence is judged by the stall timeout (the launcher
    # allows start-up, imports included, more time).
    print(f"probe: starting (local rank {os.environ.get('LOCAL_RANK', '0')})", flush=True)
    if args.engine == "zero3":
        import deepspeed  # the node's DeepSpeed; only needed for this engine

        deepspeed.init_distributed(dist_backend=backend, timeout=pg_timeout(), verbose=False)
    else:
        dist.init_process_group(backend=backend, timeout=pg_timeout())
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.global_batch % world:
        if rank == 0:
            print(
                f"probe: --global-batch {args.global_batch} not divisible by {world} ranks", file=sys.stderr
            )
        dist.destroy_process_group()
        return EXIT_BAD_INPUT
    if args.ckpt_dir and rank == 0:
        args.ckpt_dir.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(args.seed)
    model = MLP().to(device)
    engine: Any = None
    if args.engine == "zero3":
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        engine, *_ = deepspeed.initialize(
            model=model, optimizer=optimizer, config=zero3_config(args, world), dist_init_required=False
        )
        trainer: nn.Module = engine
    else:
        trainer = nn.parallel.DistributedDataParallel(model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    start = 0
    source = resume_point(args)
    if not agree_on(marker_step(source) if source else 0, device):
        raise SystemExit(f"probe: rank {rank} found checkpoint {source}, other ranks found another one")
    if source:
        start = load_zero3(source, engine) if args.engine == "zero3" else load_ddp(source, model, optimizer)
        if rank == 0:
            emit({"resumed_from": start, "path": str(source)})

    data = StepBatches(args.seed, args.global_batch, rank, world)
    loader = torch.utils.data.DataLoader(
        data, sampler=range(start + 1, args.steps + 1), batch_size=None, num_workers=args.dataloader_workers
    )
    loss_fn = nn.MSELoss()
    loss_value = math.nan
    for step, (x, y) in enumerate(loader, start=start + 1):
        # Only a fresh run injects its fault: the restart that resumes it must be able to finish.
        if step == args.fail_at_step and rank == args.fail_rank and source is None:
            print(
                f"probe: fault injection, rank {rank} kills itself at step {step}",
                file=sys.stderr,
                flush=True,
            )
            os.kill(os.getpid(), signal.SIGKILL)
        t0 = time.perf_counter()
        x, y = x.to(device), y.to(device)
        loss = loss_fn(trainer(x), y)
        if args.engine == "zero3":
            engine.backward(loss)
            engine.step()
            norm = float(engine.get_global_grad_norm() or 0.0)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norm = grad_norm(model)
            optimizer.step()
        # Equal shards per rank, so the mean of rank means is the global-batch mean a 1-rank run reports.
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        loss_value = float(mean) / world
        elapsed = time.perf_counter() - t0
        if rank == 0:
            emit(
                {
                    "step": step,
                    "loss": loss_value,
                    "grad_norm": norm,
                    "samples_per_s": args.global_batch / elapsed if elapsed > 0 else math.inf,
                    "peak_mem_mb": peak_mem_mb(device),
                    "world_size": world,
                }
            )
        if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
            if args.engine == "zero3":
                saved = save_zero3(args.ckpt_dir, step, engine, world)
            else:
                saved = save_ddp(args.ckpt_dir, step, model, optimizer, world)
            if rank == 0:
                emit({"checkpoint": step, "path": str(saved)})

    if rank == 0:
        final = {"done": True, "steps": args.steps, "world_size": world, "engine": args.engine}
        emit(final | {"final_loss": loss_value})
    if args.loader_pass and args.engine == "ddp":
        loader_pass(args, device, rank, world)
    dist.barrier()
    # Drop DDP's Reducer while the process group is still registered: if the Reducer held the last reference,
    # the gloo group would be destroyed with the GIL held and deadlock against its own worker thread at exit
    # (pytorch/pytorch#56297; seen here as a rank hanging after "done").
    del trainer, engine, model, optimizer
    gc.collect()
    dist.destroy_process_group()
    # What is left lives until exit: the interpreter's own collections at exit walk every object torch made,
    # ~0.5 s of CPU per rank here (python -c "import torch": 1.7 s of CPU, 1.2 s with gc.freeze() before exit).
    # Frozen objects are still freed by reference counting; only the cycle search is skipped.
    gc.freeze()
    return 0


if __name__ == "__main__":
    sys.exit(main())
