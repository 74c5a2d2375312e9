"""The job adapter interface: one module per job kind turns the job spec into a per-node command and files.

Adapters are pure: everything they need from the head node's disk arrives in `NodeContext.sources`
(head-node path → bytes), loaded beforehand by `launcher.plan.load_sources`.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from cluster.inventory import Inventory, JobSpec, NodeSpec
from launcher.rocm import BF16_ARCHS


class JobConfigError(ValueError):
    """The user's job config (LLaMA-Factory yaml, DeepSpeed json) cannot work: bad input, exit 2.

    `file` is the head-node path the user wrote and `line` the 1-based line of `field` in it, when known; the plan
    turns this into a one-line PlanError naming them (file:line: field: message).
    """

    def __init__(
        self, message: str, file: str | None = None, field: str | None = None, line: int | None = None
    ):
        super().__init__(message)
        self.message = message
        self.file = file
        self.field = field
        self.line = line


@dataclass(frozen=True)
class FileSpec:
    """A file to push, relative to the node's run directory."""

    path: str
    content: bytes
    mode: int = 0o644
    secret: bool = False  # holds env or secrets: pushed 0600, shown redacted
    attempt: bool = False  # pushed into the attempt's own folder (the guard's files), not the run directory

    @property
    def sha256(self) -> str:
        return _sha256(self.content)


@functools.lru_cache(maxsize=128)
def _sha256(content: bytes) -> str:
    """Every node's push carries the same guard and job files: hashed once per content, not once per node (about
    0.2-0.3 of the head's ~2.3 ms start-up CPU per node at 1,000 head-only nodes, bench/headsim.py). A bytes
    object keeps its own hash, so a repeated lookup costs an identity check."""
    return hashlib.sha256(content).hexdigest()


@dataclass(frozen=True)
class NodeContext:
    node: NodeSpec
    node_rank: int
    nnodes: int
    nproc: int
    world_size: int
    master_addr: str
    master_port: int
    # The node's run directory (remote path): the job's working directory, the same for every attempt.
    run_dir: str
    python: str
    collective_timeout: float | None
    arch: str | None  # gfx arch from the profile, None when unknown or CPU
    dataloader_workers: int
    sources: dict[str, bytes] = field(default_factory=dict)
    resume_from: str | None = None  # remote path of the checkpoint to resume from (restart)
    attempt_dir: str = ""  # this attempt's own folder under run_dir (torchrun's logs and error files)

    @property
    def bf16(self) -> bool:
        return self.arch in BF16_ARCHS

    def remote(self, name: str) -> str:
        return f"{self.run_dir}/{name}"


@dataclass
class JobRender:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: list[FileSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class JobAdapter(Protocol):
    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender: ...


def torchrun_argv(ctx: NodeContext, entry: list[str]) -> list[str]:
    """A static-rendezvous torchrun command: every node gets the same master and its own node rank.

    Static rendezvous, no in-place restarts: rlaunch relaunches the whole job with resume instead (in-place
    `--max-restarts` with c10d was flaky here). `--tee 3` prefixes each worker line with its local rank.
    """
    return [
        ctx.python,
        "-m",
        "torch.distributed.run",
        f"--nnodes={ctx.nnodes}",
        f"--node-rank={ctx.node_rank}",
        f"--nproc-per-node={ctx.nproc}",
        f"--master-addr={ctx.master_addr}",
        f"--master-port={ctx.master_port}",
        "--max-restarts=0",
        "--tee=3",
        f"--log-dir={ctx.attempt_dir or ctx.run_dir}/torchrun-logs",
        *entry,
    ]


def script_entry(job: JobSpec, ctx: NodeContext) -> tuple[list[str], list[FileSpec]]:
    """The user's script (pushed next to the job) or module, as torchrun's trailing arguments."""
    if job.module:
        return ["-m", job.module, *job.args], []
    assert job.script is not None
    name = job.script.rsplit("/", 1)[-1]
    content = ctx.sources[job.script]
    return [ctx.remote(name), *job.args], [FileSpec(name, content)]


def extra_files(job: JobSpec, ctx: NodeContext) -> list[FileSpec]:
    return [FileSpec(p.rsplit("/", 1)[-1], ctx.sources[p]) for p in job.files]


def adapter_for(kind: str) -> JobAdapter:
    if kind == "torchrun":
        from launcher.jobs.torchrun import TorchrunJob

        return TorchrunJob()
    if kind == "command":
        from launcher.jobs.command import CommandJob

        return CommandJob()
    if kind == "deepspeed":
        from launcher.jobs.deepspeed import DeepSpeedJob

        return DeepSpeedJob()
    if kind == "llamafactory":
        from launcher.jobs.llamafactory import LlamaFactoryJob

        return LlamaFactoryJob()
    raise ValueError(f"unknown job kind {kind!r}")
