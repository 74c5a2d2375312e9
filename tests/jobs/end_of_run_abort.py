"""A job that finishes training, then has one rank abort while rank 0 is still saving (issue 7's note:
"terminate called without an active exception" after training in 2 of 13 ZeRO-3 LoRA runs)."""

import os
import sys
import time

import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
dist.barrier()
if rank == 0:
    print("***** train metrics *****", flush=True)
    print("  train_runtime            = 0:00:01.23", flush=True)
dist.barrier()
if rank == dist.get_world_size() - 1:
    time.sleep(0.5)
    print("terminate called without an active exception", file=sys.stderr, flush=True)
    os.abort()
time.sleep(3)  # rank 0 "saving the model"
if rank == 0:
    print("model saved", flush=True)
