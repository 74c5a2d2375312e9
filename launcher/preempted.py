"""Which run a preemption stop belongs to, and what the next `up` resumes from (docs/preemption.md): read from the
run records only, so that lifecycle.up can ask without importing the stop itself (launcher/preempt.py)."""

from __future__ import annotations

import contextlib
from typing import Any

from cluster.inventory import Inventory
from cluster.slurm import allocation_job_id
from launcher import records
from launcher.goodput import checkpoint_step
from launcher.states import is_active

__all__ = ["allocation_job_id", "resume_point", "run_of_job"]


def run_of_job(job_id: str | None) -> str | None:
    """Inside a Slurm job (ops/slurm/rlaunch-batch's trap): the active run that this job's `up` started, so that
    two jobs of one user sharing a home never stop each other's run; None (the latest run) outside Slurm or when no
    run names the job (an `up` over SSH from inside an allocation)."""
    if not job_id:
        return None
    for rid in reversed(records.list_run_ids()):
        with contextlib.suppress(OSError, ValueError, records.BadRunId):
            state = records.RunRecord.open(rid).read_state()
            if str(state.get("slurm_job_id")) == job_id and is_active(state.get("state")):
                return rid
    return None


def resume_point(inv: Inventory) -> dict[str, Any] | None:
    """When this cluster's latest run was stopped for preemption (`rlaunch stop --save`, a Slurm notice), what a
    fresh `up` of the same job resumes from: {"run", "checkpoint", "step", "lost_steps"}; else None. Only the
    latest run counts: a run started after it (from scratch, by choice) ends the chain."""
    if not inv.job.checkpoint_dir:
        return None
    latest: tuple[float, dict[str, Any]] | None = None
    for rid in records.list_run_ids():
        with contextlib.suppress(OSError, ValueError, records.BadRunId):
            state = records.RunRecord.open(rid).read_state()
            if state.get("cluster") == inv.cluster and (
                latest is None or state.get("started_at", 0) > latest[0]
            ):
                latest = (float(state.get("started_at", 0)), {**state, "run_id": rid})
    if latest is None:
        return None
    state = latest[1]
    found = state.get("preemption") or {}
    checkpoint = found.get("checkpoint")
    root = inv.job.checkpoint_dir.rstrip("/") + "/"
    if is_active(state.get("state")) or not checkpoint or not str(checkpoint).startswith(root):
        return None
    return {
        "run": state["run_id"],
        "checkpoint": checkpoint,
        "step": checkpoint_step(checkpoint),
        "lost_steps": found.get("lost_steps"),
    }
