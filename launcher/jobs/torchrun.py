"""`job.kind: torchrun` — the user's script or module under torchrun, one torchrun per node."""

from __future__ import annotations

from cluster.inventory import Inventory, JobSpec
from launcher.jobs.base import JobRender, NodeContext, extra_files, script_entry, torchrun_argv


class TorchrunJob:
    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender:
        entry, files = script_entry(job, ctx)
        return JobRender(argv=torchrun_argv(ctx, entry), files=files + extra_files(job, ctx))
