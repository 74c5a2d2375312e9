"""`job.kind: command` — an arbitrary argv run once per node with the plan's environment (no torchrun)."""

from __future__ import annotations

from cluster.inventory import Inventory, JobSpec
from launcher.jobs.base import JobRender, NodeContext, extra_files


class CommandJob:
    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender:
        assert job.command is not None
        return JobRender(argv=[*job.command, *job.args], files=extra_files(job, ctx))
