"""All-reduce benchmark, run on nodes under torchrun.

    python -m torch.distributed.run --nproc_per_node N allreduce.py --min-bytes 1024 --max-bytes 1048576

Node-side file: standard library + the node's torch only; imports nothing of rlaunch.

For every size from --min-bytes to --max-bytes (doubling), rank 0 prints
    RLAUNCH_ALLREDUCE {"bytes", "time_us", "algbw_gbps", "busbw_gbps", "correct"}
and finally ``RLAUNCH_ALLREDUCE {"done": true, "world_size", "backend"}``.

Bandwidths are in GB/s (1e9 bytes/s) and follow rccl-tests: algbw = S/t, and for all-reduce
busbw = algbw * 2(n-1)/n, which makes the figure comparable to the link's peak whatever the rank count
(ROCm/rccl-tests doc/PERFORMANCE.md, "Bus bandwidth" / "AllReduce"). The time is the slowest rank's mean.
Correctness: every rank fills the buffer with rank+1, so every element must come back as exactly n(n+1)/2
(small integers are exact in float32); a single wrong element on any rank marks the size incorrect.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import sys
import time
from typing import Any

import torch
import torch.distributed as dist

PREFIX = "RLAUNCH_ALLREDUCE "
ELEMENT_BYTES = 4  # float32


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cuda also means ROCm GPUs")
    p.add_argument("--min-bytes", type=int, default=1024)
    p.add_argument("--max-bytes", type=int, default=64 * 2**20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    return p.parse_args(argv)


def emit(record: dict[str, Any]) -> None:
    print(PREFIX + json.dumps(record), flush=True)


def sizes(min_bytes: int, max_bytes: int) -> list[int]:
    """Doubling sizes, each rounded down to whole float32 elements (at least one)."""
    out, size = [], max(min_bytes, ELEMENT_BYTES)
    while size <= max_bytes:
        out.append(size - size % ELEMENT_BYTES)
        size *= 2
    return out


def bus_bandwidth(algbw: float, world_size: int) -> float:
    return algbw * 2 * (world_size - 1) / world_size


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def check_sum(nbytes: int, device: torch.device) -> bool:
    rank, world = dist.get_rank(), dist.get_world_size()
    buf = torch.full((nbytes // ELEMENT_BYTES,), float(rank + 1), dtype=torch.float32, device=device)
    dist.all_reduce(buf)
    local_ok = bool(torch.all(buf == world * (world + 1) / 2))
    flag = torch.tensor([1 if local_ok else 0], dtype=torch.int32, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def time_one_size(nbytes: int, warmup: int, iters: int, device: torch.device) -> float:
    """Mean seconds per all-reduce on the slowest rank. Zeros keep the values finite however many iterations."""
    buf = torch.zeros(nbytes // ELEMENT_BYTES, dtype=torch.float32, device=device)
    for _ in range(warmup):
        dist.all_reduce(buf)
    sync(device)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    sync(device)
    elapsed = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed.item())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device, backend = torch.device("cuda", local_rank), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    timeout = datetime.timedelta(seconds=float(os.environ.get("RLAUNCH_PG_TIMEOUT", "600")))
    print(f"allreduce: starting (local rank {os.environ.get('LOCAL_RANK', '0')})", flush=True)  # see probe.py
    dist.init_process_group(backend=backend, timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    for nbytes in sizes(args.min_bytes, args.max_bytes):
        correct = check_sum(nbytes, device)
        seconds = time_one_size(nbytes, args.warmup, max(args.iters, 1), device)
        algbw = nbytes / seconds / 1e9 if seconds > 0 else 0.0
        if rank == 0:
            emit(
                {
                    "bytes": nbytes,
                    "time_us": seconds * 1e6,
                    "algbw_gbps": algbw,
                    "busbw_gbps": bus_bandwidth(algbw, world),
                    "correct": correct,
                }
            )
    if rank == 0:
        emit({"done": True, "world_size": world, "backend": backend})
    dist.barrier()
    dist.destroy_process_group()
    gc.freeze()  # no cycle search at exit over every object torch made (probe.py says what it costs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
