"""`rlaunch stop RUN --save`: a save agreed by every rank, checked, recorded, and under Slurm a requeue whose next
`up` resumes from that save (docs/preemption.md).

The head's part only. On each node the request is a file in the attempt's guard directory (launcher/node/stopreq.py,
raised here through the transport); the guard sends the job's stop signal to the ranks that catch it and tears
the job down at the deadline; the job reads the request through launcher/node/rlaunch_job.py (should_stop, the HF
StopCallback) and exits 75 after its save. The run loop (lifecycle._attempts) never restarts a stopped run.

Why the checkpoint rule is the resume rule's (launcher/node/ckpt.py, run through lifecycle.find_checkpoint): "saved"
must mean "the next attempt can start from it"; a save that did not finish (a missing shard, no
trainer_state.json, no RNG state) is not one, whatever the job printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from typing import Any

from cluster.slurm import allocation_job_id
from cluster.transport import make_transport
from launcher import attempts, records
from launcher.errors import BadInput, Infra
from launcher.goodput import checkpoint_step
from launcher.preempted import run_of_job
from launcher.states import is_active

STOP_SCRIPT = "stopreq.py"
SCONTROL_TIMEOUT_S = 30.0
# After the deadline the guards tear down themselves (SIGTERM, SIGKILL after health.grace); this much more, and
# the head runs `down` on what is left (a guard that could not be reached, say).
SETTLE_MARGIN_S = 30.0


def stop(
    run_id: str | None,
    *,
    deadline: float = 120.0,
    requeue: bool | None = None,
    poll: float = 0.5,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Ask every rank to save and exit, wait for that (the deadline, then the guards' teardown), check the save,
    record it in the run's state ("preemption"), and under Slurm requeue the job (`requeue`: None = when the run
    runs under Slurm and its job id is known). Returns the recorded result."""
    from launcher import lifecycle, nodecall, supervise
    from launcher.run.loop import find_checkpoint

    record, inv, plan_json = lifecycle.open_run(run_id or run_of_job(allocation_job_id(os.environ)))
    state = record.read_state()
    if not is_active(state.get("state")):
        raise BadInput(f"run {record.run_id} is {state.get('state')}: nothing to stop")
    plan = supervise.watch_plan(plan_json)
    targets = lifecycle.targets_of(record)
    script = nodecall.node_script(STOP_SCRIPT)
    with make_transport(inv) as transport:
        before = find_checkpoint(inv, plan, transport)
        asked = time.time()
        record.update_state(stop_requested={"time": asked, "deadline": asked + deadline, "before": before})
        by_host = {t.host: t for t in targets}
        replies = nodecall.call_all(
            transport,
            list(by_host),
            lambda h: by_host[h].python,
            script,
            lambda h: (by_host[h].run_dir, str(asked + deadline), "rlaunch stop"),
            timeout=30,
        )
        unreached = {h: r.get("error") or r.why() for h, r in replies.items() if not (r.ok and r.get("ok"))}
        # A detached run whose supervisor died settles only when someone asks for its status.
        settle_here = bool(state.get("detached")) and not supervise.supervisor_alive(state)
        give_up = asked + deadline + inv.health.grace + SETTLE_MARGIN_S
        while is_active(record.read_state().get("state")) and time.time() < give_up:
            if settle_here:
                with contextlib.suppress(Infra, OSError, ValueError):
                    lifecycle.status(record.run_id)
            time.sleep(poll)
        forced = is_active(record.read_state().get("state"))
    if forced:
        lifecycle.down(record.run_id)
    with make_transport(inv) as transport:
        after = find_checkpoint(inv, plan, transport)
    ended = record.read_state().get("ended_at") or time.time()
    result = judge(
        run_id=record.run_id,
        before=before,
        after=after,
        asked=asked,
        deadline=deadline,
        ended=float(job_ended_at(record) or ended),
        forced=forced,
        max_step=last_step(record),
        has_checkpoint_dir=bool(inv.job.checkpoint_dir),
    )
    result["unreached"] = unreached
    job_id = state.get("slurm_job_id") or (
        allocation_job_id(os.environ) if inv.transport == "slurm" else None
    )
    want_requeue = bool(job_id) if requeue is None else requeue
    result["requeue"] = {"job_id": job_id, "asked": bool(want_requeue and job_id)} if want_requeue else None
    record.update_state(preemption=result, summary=result["summary"])
    if want_requeue and job_id:
        # Last: `scontrol requeue` ends this allocation, the batch script (and a `rlaunch stop` run from its trap)
        # with it; everything above is on disk by now. This process may be killed by the requeue before it records
        # scontrol's answer: "asked" without "ok" then means the answer was not seen (Slurm's Restarts count tells).
        if say is not None:
            say(f"run {record.run_id}: {result['summary']}; requeueing Slurm job {job_id}")
        result["requeue"] = requeue_job(str(job_id))
        record.update_state(preemption=result)
    return result


def judge(
    *,
    run_id: str,
    before: str | None,
    after: str | None,
    asked: float,
    deadline: float,
    ended: float,
    forced: bool,
    max_step: int | None,
    has_checkpoint_dir: bool,
) -> dict[str, Any]:
    """What the stop came to, in the words the run record and `status` show (pure). `ended`: when the job
    ended (job_ended_at); `forced`: rlaunch had to run `down` after the guards' own teardown."""
    saved = after is not None and after != before
    timed_out = forced or ended > asked + deadline
    step = checkpoint_step(after)
    # A save the job made on request is the step it stopped at (should_stop → save → exit 75): nothing lost;
    # otherwise the last step printed minus the checkpoint's.
    if saved and not timed_out:
        lost: int | None = 0
    else:
        lost = max(0, max_step - (step or 0)) if max_step is not None and after else max_step
    if saved and not timed_out:
        text = f"stopped for preemption at step {step}, saved ({after})"
    elif saved:
        text = (
            f"stopped for preemption at step {step}, saved ({after}); the job did not exit within the deadline "
            f"({deadline:g} s) and was torn down"
        )
    elif timed_out:
        latest = f"the latest complete checkpoint is {after}" if after else "no complete checkpoint"
        text = f"save did not finish within the deadline ({deadline:g} s): the job was torn down; {latest}"
    elif not has_checkpoint_dir:
        text = "stopped; no job.checkpoint_dir, so no save to check"
    else:
        text = f"stopped without a new checkpoint (latest complete: {after})"
    return {
        "run_id": run_id,
        "saved": saved,
        "checkpoint": after,
        "checkpoint_before": before,
        "step": step if saved else None,
        "lost_steps": lost,
        "timed_out": timed_out,
        "seconds": round(ended - asked, 2),
        "summary": text,
    }


def job_ended_at(record: records.RunRecord) -> float | None:
    """When the last attempt's job ended: the time of its first failure (a rank's exit after the save, or a
    guard's teardown at the deadline), which the run's own end time is not (it also counts the head's work after
    the exit: artifacts, the checkpoint check, another node's teardown)."""
    attempt = record.read_state().get("attempt", 0)
    try:
        data = json.loads(record.outcome_path(int(attempt)).read_text())
        when = (data.get("root_cause") or {}).get("time")
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return float(when) if isinstance(when, (int, float)) else None


def last_step(record: records.RunRecord) -> int | None:
    """The highest step the run's last attempt printed (progress.jsonl, launcher/attempts.py)."""
    progress = attempts.read_progress(record.root)
    if not progress:
        return None
    last = max(int(p.get("a", 0)) for p in progress)
    steps = [int(p["step"]) for p in progress if int(p.get("a", 0)) == last and p.get("step") is not None]
    return max(steps) if steps else None


def requeue_job(job_id: str) -> dict[str, Any]:
    """`scontrol requeue JOB` (scontrol(1)): the job goes back to pending with the same id and batch script."""
    try:
        proc = subprocess.run(
            ["scontrol", "requeue", job_id], capture_output=True, text=True, timeout=SCONTROL_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"job_id": job_id, "asked": True, "ok": False, "error": f"scontrol requeue: {exc}"}
    error = (proc.stderr or proc.stdout).strip().splitlines()[-1:] if proc.returncode else []
    return {"job_id": job_id, "asked": True, "ok": proc.returncode == 0, "error": error[0] if error else None}
