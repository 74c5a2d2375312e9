"""A job that finishes training, then has one rank abort while rank 0 is still saving (issue 7's note:
"terminate called without an active exception" after training in 2 of 13 ZeRO-3 LoRA runs).

With the argument `race`, rank 0 says "training complete" only after the final barrier and the last rank aborts at
once, as gloo ranks do now and then at interpreter exit in plain scripts (examples/train.py): which of the two lines
the head reads first is left to chance (issue 12 item 7)."""

import os
import sys
import time

import torch.distributed as dist

race = sys.argv[1:] == ["race"]
dist.init_process_group("gloo")
rank = dist.get_rank()
dist.barrier()
if rank == 0 and not race:
    print("***** train metrics *****", flush=True)
    print("  train_runtime            = 0:00:01.23", flush=True)
dist.barrier()
if rank == 0 and race:
    print("training complete", flush=True)
if rank == dist.get_world_size() - 1:
    time.sleep(0 if race else 0.5)
    print("terminate called without an active exception", file=sys.stderr, flush=True)
    os.abort()
time.sleep(3)  # rank 0 "saving the model"
if rank == 0:
    print("model saved", flush=True)
