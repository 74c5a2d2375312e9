"""rlaunch's entry for `job.kind: llamafactory` (launcher/jobs/llamafactory.py): torchrun runs this file from the
node's run directory instead of `-m llamafactory.launcher`, with the same arguments (the pushed yaml, then any
`key=value` overrides).

It does what `python -m llamafactory.launcher` does (`run_exp()` from llamafactory.train.tuner, hiyouga/LLaMA-Factory
src/llamafactory/launcher.py, v0.9.5) and passes one callback, rlaunch_job.StopCallback, through run_exp's own
`callbacks` argument (tuner.py: `run_exp(args=None, callbacks=None)`, extended with LLaMA-Factory's callbacks):
a stop request (`rlaunch stop --save`, a Slurm preemption notice) then makes every rank save one checkpoint at the
next optimizer step and exit 75 to be requeued. The user's yaml is not touched (docs/preemption.md).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # rlaunch_job.py beside this file


if __name__ == "__main__":
    import rlaunch_job  # the job's helper (found on the path above)
    from llamafactory.train.tuner import (
        run_exp,  # the node's LLaMA-Factory, as `-m llamafactory.launcher` uses
    )

    run_exp(callbacks=[rlaunch_job.StopCallback()])
