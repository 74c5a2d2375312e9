"""The job's side of `rlaunch stop --save` (docs/preemption.md): pushed into every node's run directory beside the
job's script, so a script there imports it without rlaunch installed on the node (Python puts the script's own
directory first on sys.path)::

    from rlaunch_job import should_stop, REQUEUE_EXIT_CODE

    for step in range(start, steps):
        train_one_step()
        if should_stop():                # every rank, at the same point of every step
            save_checkpoint()            # the save your script already makes (rank 0, or every rank's shard)
            raise SystemExit(REQUEUE_EXIT_CODE)

A stop request is a file, `$RLAUNCH_RUN_DIR/stop-request.json`, that `rlaunch stop` writes on every node. Ranks
see it at different moments (each checks its own node's file, and only between steps), so `should_stop()`
all-reduces the flag (MAX) over the default process group when one is initialised: every rank then returns the
same answer at the same step, and the save is made once, agreed, instead of by the ranks that happened to look
first. The all-reduce is one integer per call; `every=N` checks every N-th call only (all ranks must pass the same
N). Standard library only, plus the job's own torch when it is already imported.
"""

from __future__ import annotations

import os
import sys

STOP_FILE = "stop-request.json"
# "Save done, start me again": EX_TEMPFAIL from sysexits.h, what schedulers and wrappers read as "try again".
REQUEUE_EXIT_CODE = 75

_calls = 0


def stop_requested(run_dir: str | None = None) -> bool:
    """This node's own view: has `rlaunch stop` asked for a stop? (No collective: ranks may disagree.)"""
    run_dir = run_dir or os.environ.get("RLAUNCH_RUN_DIR")
    return bool(run_dir) and os.path.exists(os.path.join(run_dir, STOP_FILE))


def should_stop(every: int = 1) -> bool:
    """True on every rank once any rank saw the stop request (module docstring)."""
    global _calls
    _calls += 1
    if every > 1 and _calls % every:
        return False
    local = stop_requested()
    dist = sys.modules.get("torch.distributed")  # the job's torch, if it uses one; never imported here
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return local
    import torch

    flag = torch.tensor([1 if local else 0], dtype=torch.int32)
    if dist.get_backend() == "nccl":  # RCCL/NCCL reduce device tensors only
        flag = flag.to(torch.device("cuda", torch.cuda.current_device()))
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())
