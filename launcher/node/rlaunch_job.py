"""The job's side of `rlaunch stop --save` and of a Slurm preemption notice (docs/preemption.md).

rlaunch pushes this file into every node's run directory, beside the job's script, so a script there imports it
without rlaunch installed on the node (Python puts the script's own directory first on sys.path)::

    from rlaunch_job import should_stop, REQUEUE_EXIT_CODE

    for step in range(start, steps):
        train_one_step()
        if should_stop():                # every rank, at the same point of every step
            save_checkpoint()            # the save your script already makes (rank 0, or every rank's shard)
            raise SystemExit(REQUEUE_EXIT_CODE)

HF Trainer scripts add `trainer.add_callback(StopCallback())`; LLaMA-Factory jobs get it from rlaunch's entry
wrapper (rlaunch_lf.py) without any change to the yaml.

A stop request reaches a rank two ways: the file `$RLAUNCH_STOP_FILE` that `rlaunch stop` writes on every node
(the truth, checked by `should_stop`), and the signal `$RLAUNCH_STOP_SIGNAL` (default SIGUSR1) that the node's
guard sends to each job process that catches it. Importing this module installs a handler that only sets a flag,
when the signal still has its default action (terminate) and this is the main thread: a rank that imported the
helper then notices at once, and a job with its own SIGUSR1 handler (PyTorch Lightning's SLURM requeue) keeps it.

Ranks see the request at different moments (each checks its own node's file, and only between steps), so
`should_stop()` all-reduces the flag (MAX) over the default process group when one is initialised: every rank then
returns the same answer at the same step, and the save is made once, agreed, instead of by the ranks that happened
to look first. The all-reduce is one integer per call (on NCCL/RCCL a device tensor, so one small sync per step);
`every=N` checks every N-th call only (all ranks must pass the same N). Standard library only, plus the job's own
torch (and transformers, for StopCallback) when it already uses them.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from typing import Any

STOP_FILE_ENV, STOP_SIGNAL_ENV = "RLAUNCH_STOP_FILE", "RLAUNCH_STOP_SIGNAL"
# "Save done, start me again": EX_TEMPFAIL from sysexits.h, what schedulers and wrappers read as "try again".
REQUEUE_EXIT_CODE = 75

_calls = 0
_signalled = False


def _on_signal(_signum: int, _frame: object) -> None:
    global _signalled
    _signalled = True


def install_handler() -> bool:
    """Catch the job's stop signal (module docstring); False when another handler is there or not possible."""
    name = os.environ.get(STOP_SIGNAL_ENV, "SIGUSR1")
    signum = getattr(signal, name, None) if name.startswith("SIGUSR") else None
    if signum is None or threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signum) is not signal.SIG_DFL:
        return False
    signal.signal(signum, _on_signal)
    return True


def stop_requested(path: str | None = None) -> bool:
    """This node's own view: has a stop been asked for? (No collective: ranks may disagree.)"""
    path = path or os.environ.get(STOP_FILE_ENV)
    return _signalled or (bool(path) and os.path.exists(path))


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


def requeue_exit() -> None:
    """Every rank: wait for the others (a rank that exits first would make torchrun kill one still saving), then
    exit with REQUEUE_EXIT_CODE.

    The interpreter's exit runs full garbage collections over every object torch, transformers and DeepSpeed
    created (measured: 24-28 s of a 2-core machine at load 14 for a bare process with them imported, 8 s after
    gc.freeze(); a LLaMA-Factory rank's save was durable 5 s after the notice, the rank gone 32 s after it).
    The save is done and the process is leaving, so the objects are frozen first: `gc.freeze()` moves them to the
    permanent generation, which later collections ignore (Python docs, gc.freeze; bpo-31558). Everything else of
    a normal exit still runs: `finally` blocks, atexit handlers (a logger's last upload), joins of non-daemon
    threads, refcount finalisers."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()
    raise SystemExit(REQUEUE_EXIT_CODE)


def _trainer_of(callback: Any) -> Any:
    """The Trainer whose callback handler holds `callback`: the frame that called the event. HF's callback events
    get the model, optimizer and dataloaders but not the trainer (transformers trainer_callback.py
    CallbackHandler.call_event, 5.x), and the save in an evaluation loop needs its `_save_checkpoint`."""
    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        handler = getattr(candidate, "callback_handler", None)
        if callback in getattr(handler, "callbacks", ()) and hasattr(candidate, "_save_checkpoint"):
            return candidate
        frame = frame.f_back
    return None


def StopCallback(every: int = 1) -> Any:
    """A transformers TrainerCallback: at the end of each optimizer step (and each evaluation step inside
    training) all ranks agree on the stop flag; when set, the trainer saves one checkpoint through its own path
    (`control.should_save` → Trainer._save_checkpoint, the periodic save's code) and every rank exits with
    REQUEUE_EXIT_CODE once all have saved. A request seen before the first step exits without a save (nothing
    was trained since the checkpoint this attempt started from)."""
    from transformers import TrainerCallback

    class _Stop(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.training = False
            self.stopping = False
            self.trainer: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.training = True
            self.trainer = _trainer_of(self)
            if should_stop():
                print(f"rlaunch: stop requested before step {state.global_step + 1}: exiting to be requeued")
                requeue_exit()

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.training = False

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if not self.stopping and should_stop(every):
                self.stopping = True
                control.should_save = True
                control.should_evaluate = False  # Trainer evaluates before it saves: save first
                control.should_training_stop = True
            return control

        def on_prediction_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.training and not self.stopping and self.trainer is not None and should_stop(every):
                # Evaluation inside training runs after an optimizer step: the weights are that step's.
                self.stopping = True
                self.trainer._save_checkpoint(self.trainer.model_wrapped, None)
                self.on_save(args, state, control)

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.stopping:
                print(
                    f"rlaunch: stop requested: saved checkpoint-{state.global_step}, exiting to be requeued"
                )
                requeue_exit()

    return _Stop()


install_handler()
