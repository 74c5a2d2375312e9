"""Inventory + job → Plan: exactly what every node will receive and run. Pure (no I/O) except `load_sources`.

`rlaunch plan` prints a Plan; `rlaunch up` executes the same value. Every mapping from what the user wrote to
what really works on ROCm is listed in `notes`, every risk in `warnings`.
"""

from __future__ import annotations

import functools
import json
import shlex
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from cluster.inventory import Inventory, InventoryError
from launcher import envrules
from launcher.jobs.base import FileSpec, JobConfigError, NodeContext, adapter_for
from launcher.node import protocol
from launcher.rocm import PROFILE_ARCH

REDACTED = "***"


def bundle_key(name: str) -> str:
    """The key in `sources` of a file of the guard's bundle (launcher/node/protocol.py GUARD_BUNDLE)."""
    return f"<rlaunch>/{name}"


GUARD = bundle_key(protocol.GUARD_FILE)  # key of the node guard in `sources`
PROTOCOL = bundle_key(
    protocol.PROTOCOL_FILE
)  # the head↔guard contract, pushed beside the guard (it imports it)
# The bundle's other files (edge health, GPU activity, the guard's own modules) are pushed when `sources` has them:
# a plan built from a bundle of an older shape (tests' minimal sources) still starts.
REQUIRED_BUNDLE = (protocol.GUARD_FILE, protocol.PROTOCOL_FILE)
JOB_HELPER = bundle_key(
    "rlaunch_job.py"
)  # `from rlaunch_job import should_stop` beside the job (docs/preemption.md)
STOP_FILE = "stop-save.json"  # launcher/node/stopreq.py STOP_FILE, in each attempt's guard directory
AUTO_PORT_BASE, AUTO_PORT_SPAN = 29500, 1000
# Each attempt's guard files (job.json, env.sh, out.log, state.json, torchrun's error files, flight-recorder dumps)
# live in their own subfolder of the node's run directory; the run directory itself (the job's working directory,
# where its files are pushed) is the same for every attempt of a run, so a program's own relative checkpoints
# (the pytorch/examples DDP tutorial's `snapshot.pt`) survive a restart on the same node, as with torchrun's own
# restarts (issue 20).
ATTEMPTS_DIR = protocol.ATTEMPTS_DIR


def attempt_dir(run_dir: str, attempt: int) -> str:
    """Where attempt `attempt`'s guard files go: <run_dir>/.rlaunch/attempt-N."""
    return f"{run_dir}/{ATTEMPTS_DIR}/attempt-{attempt}"


class PlanError(InventoryError):
    """The inventory is valid YAML and schema, but cannot be turned into a working plan."""


@dataclass(frozen=True)
class NodePlan:
    host: str
    address: str
    node_rank: int
    nproc: int
    gpus: tuple[int, ...]
    first_rank: int
    run_dir: str  # the job's working directory on the node: the same for every attempt of the run
    python: str
    argv: list[str]
    env: dict[str, str]
    files: list[FileSpec]
    secret_names: frozenset[str] = frozenset()
    attempt_dir: str = ""  # this attempt's guard files (the guard's RUNDIR); "" means run_dir (older records)

    @property
    def guard_dir(self) -> str:
        return self.attempt_dir or self.run_dir

    @property
    def ranks(self) -> range:
        return range(self.first_rank, self.first_rank + self.nproc)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def redacted_env(self) -> dict[str, str]:
        return {k: (REDACTED if k in self.secret_names else v) for k, v in self.env.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "address": self.address,
            "node_rank": self.node_rank,
            "nproc": self.nproc,
            "gpus": list(self.gpus),
            "ranks": [self.ranks.start, self.ranks.stop - 1],
            "run_dir": self.run_dir,
            "attempt_dir": self.guard_dir,
            "python": self.python,
            "env": self.redacted_env(),
            "command": self.command,
            "argv": self.argv,
            "files": [
                {
                    "path": f.path,
                    "sha256": f.sha256,
                    "mode": oct(f.mode),
                    "bytes": len(f.content),
                    **({"in": "attempt_dir"} if f.attempt else {}),
                }
                for f in self.files
            ],
        }


@dataclass(frozen=True)
class Plan:
    run_id: str
    cluster: str
    job_kind: str
    master_addr: str
    master_port: int
    world_size: int
    nodes: list[NodePlan]
    transport: str
    workdir: str
    detach: bool
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    collective_timeout: float | None = None
    health: dict[str, float] = field(default_factory=dict)
    restart: dict[str, Any] = field(default_factory=dict)
    spares: list[str] = field(default_factory=list)  # stand-by hosts (inventory `spares:`), not started
    attempt: int = 0
    net: dict[str, Any] = field(default_factory=dict)  # inventory `net:` (the watcher's expect_net)

    def node(self, host: str) -> NodePlan:
        """By host, in O(1): the head looks a node up for every record it handles (issue 23: a walk of the list
        made following cost O(N) per record)."""
        index = self.__dict__.get("_by_host")
        if index is None or len(index) != len(self.nodes):
            index = {n.host: n for n in self.nodes}
            object.__setattr__(self, "_by_host", index)  # a cache on a frozen dataclass, not a field
        return index[host]

    @property
    def hosts(self) -> list[str]:
        return [n.host for n in self.nodes]

    def rank_of(self, host: str, local_rank: int) -> int:
        return self.node(host).first_rank + local_rank

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "cluster": self.cluster,
            "job_kind": self.job_kind,
            "transport": self.transport,
            "master_addr": self.master_addr,
            "master_port": self.master_port,
            "world_size": self.world_size,
            "nnodes": len(self.nodes),
            "collective_timeout": self.collective_timeout,
            "health": self.health,
            "restart": self.restart,
            "spares": self.spares,
            "attempt": self.attempt,
            "net": self.net,
            "warnings": self.warnings,
            "notes": self.notes,
            "nodes": [n.to_json() for n in self.nodes],
        }


def auto_port(run_id: str) -> int:
    """`master.port: auto`: a port derived from the run id, so every node agrees without talking to each other.

    Preflight checks it is free on the master node; a stable function of the run id keeps the plan pure.
    """
    return AUTO_PORT_BASE + zlib.crc32(run_id.encode()) % AUTO_PORT_SPAN


def build_plan(
    inv: Inventory,
    *,
    run_id: str,
    sources: Mapping[str, bytes],
    head_env: Mapping[str, str],
    detach: bool = False,
    resume_from: str | None = None,
    exclude: frozenset[str] = frozenset(),
    attempt: int = 0,
) -> Plan:
    """`run_id` is the run's id (the record's); attempt k > 0 of it is planned as run `<run_id>-r<k>` (its own
    master port when `auto`, its own guard files) in the same per-node run directories."""
    base_run_id = run_id
    run_id = run_id if attempt == 0 else f"{run_id}-r{attempt}"
    nodes = [n for n in inv.nodes if n.host not in exclude]
    if not nodes:
        raise PlanError("every node is excluded", file=inv.source, field="nodes")
    master = inv.master_node if inv.master_node.host not in exclude else nodes[0]
    master_addr = master.address or master.host
    master_port = auto_port(run_id) if inv.master.port == "auto" else int(inv.master.port)
    arch = PROFILE_ARCH.get(inv.profile) if inv.profile else None
    warnings: list[str] = []
    notes: list[str] = []

    secrets = _secret_values(inv, head_env)
    profile_env = _profile_env(inv, sources)

    nprocs = [inv.job.nproc_per_node or (len(n.gpus) or 1) for n in nodes]
    if inv.job.kind != "command" and len(set(nprocs)) > 1:
        # torchrun's static rendezvous needs the same local world size everywhere.
        detail = ", ".join(f"{n.host}={p}" for n, p in zip(nodes, nprocs, strict=True))
        raise PlanError(
            f"nodes would run different numbers of ranks ({detail}); set job.nproc_per_node",
            file=inv.source,
            field="job.nproc_per_node",
        )
    world_size = sum(nprocs)
    adapter = adapter_for(inv.job.kind)

    node_plans: list[NodePlan] = []
    collective_timeout: float | None = None
    first_rank = 0
    for node_rank, (node, nproc) in enumerate(zip(nodes, nprocs, strict=True)):
        user_env = {**profile_env, **inv.env, **node.env}
        rules = envrules.apply_rules(
            user_env, gpus=node.gpus, nproc=nproc, job_timeout=inv.job.timeout, job_kind=inv.job.kind
        )
        if rules.errors:
            raise PlanError(rules.errors[0], file=inv.source, field=f"env (node '{node.host}')")
        collective_timeout = rules.collective_timeout
        run_dir = f"{inv.workdir.rstrip('/')}/{base_run_id}/{node.host}"
        guard_dir = attempt_dir(run_dir, attempt)
        python = inv.python_for(node)
        ctx = NodeContext(
            node=node,
            node_rank=node_rank,
            nnodes=len(nodes),
            nproc=nproc,
            world_size=world_size,
            master_addr=master_addr,
            master_port=master_port,
            run_dir=run_dir,
            attempt_dir=guard_dir,
            python=python,
            collective_timeout=collective_timeout,
            arch=arch,
            dataloader_workers=envrules.dataloader_workers(inv.job.dataloader_workers, node.cpus, nproc),
            sources=dict(sources),
            resume_from=resume_from,
        )
        try:
            render = adapter.render(inv.job, inv, ctx)
        except JobConfigError as exc:  # the user's yaml/json: bad input (exit 2), one line naming the file
            raise PlanError(
                exc.message, file=exc.file or inv.source, line=exc.line, field=exc.field
            ) from None
        net_env, net_note = _net_env(inv, user_env)
        if net_note is not None:
            rules.notes.append(net_note)
        fr_env, fr_note = envrules.flight_recorder_env(rules.env, guard_dir)
        if fr_note is not None:
            rules.notes.append(fr_note)
        env = {
            **rules.env,
            **net_env,
            **render.env,
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": str(master_port),
            "NNODES": str(len(nodes)),
            "NODE_RANK": str(node_rank),
            "NPROC_PER_NODE": str(nproc),
            "RLAUNCH_RUN_ID": run_id,
            "RLAUNCH_RUN_DIR": run_dir,
            "RLAUNCH_DATALOADER_WORKERS": str(ctx.dataloader_workers),
            # Flight-recorder dumps land in the run directory, where `rlaunch` collects them after a failure.
            **fr_env,
            **_checkpoint_env(inv.job.checkpoint_dir, resume_from),
            # `rlaunch stop --save` (docs/preemption.md): per attempt, so a request never outlives its attempt.
            "RLAUNCH_STOP_FILE": f"{guard_dir}/{STOP_FILE}",
            "RLAUNCH_STOP_SIGNAL": inv.job.stop_signal,
            **({"RLAUNCH_SYNC_DIR": inv.sync_dir} if inv.sync else {}),
            **secrets,
        }
        files = [
            *render.files,
            FileSpec("env.sh", _env_sh(env), mode=0o600, secret=True, attempt=True),
            FileSpec(
                "job.json",
                _job_json(render.argv, env, run_dir, inv, detach, node.host, base_run_id),
                mode=0o600,
                secret=True,
                attempt=True,
            ),
            *(
                FileSpec(
                    name,
                    sources[bundle_key(name)],
                    mode=0o755 if name == protocol.GUARD_FILE else 0o644,
                    attempt=True,
                )
                for name in protocol.GUARD_BUNDLE
                if name in REQUIRED_BUNDLE or bundle_key(name) in sources
            ),
            *([FileSpec("rlaunch_job.py", sources[JOB_HELPER], mode=0o644)] if JOB_HELPER in sources else []),
        ]
        _check_unique(files, node.host, inv)
        node_plans.append(
            NodePlan(
                host=node.host,
                address=node.address or node.host,
                node_rank=node_rank,
                nproc=nproc,
                gpus=node.gpus,
                first_rank=first_rank,
                run_dir=run_dir,
                python=python,
                argv=render.argv,
                env=env,
                files=files,
                secret_names=frozenset(secrets),
                attempt_dir=guard_dir,
            )
        )
        first_rank += nproc
        for text in (*rules.warnings, *render.warnings):
            if text not in warnings:
                warnings.append(text)
        for text in (*rules.notes, *render.notes):
            if text not in notes:
                notes.append(text)

    if inv.net.socket_ifname == "auto":
        notes.append(
            "net: auto → NCCL_SOCKET_IFNAME per node, the interface that routes to the master (found at `up`)"
        )
    if inv.master.port == "auto":
        notes.append(f"master.port auto → {master_port} (derived from the run id; checked free at preflight)")
    if inv.health.stall_timeout >= (collective_timeout or float("inf")):
        warnings.append(
            f"health.stall_timeout ({inv.health.stall_timeout:g} s) is not shorter than the collective timeout: "
            "hangs will be reported by PyTorch's watchdog before rlaunch sees them"
        )
    if inv.spares:
        notes.append(
            f"spares {', '.join(s.host for s in inv.spares)} stand by: after a node's failure the first one that "
            "passes doctor's fast checks takes its node rank (world size and checkpoint layout unchanged)"
        )
    moved = _moved_ranks_warning(inv)
    if moved:
        warnings.append(moved)
    if detach:
        notes.append(
            "detached: nodes do not require the launcher's heartbeat; stop the job with `rlaunch down`"
        )

    return Plan(
        run_id=run_id,
        cluster=inv.cluster,
        job_kind=inv.job.kind,
        master_addr=master_addr,
        master_port=master_port,
        world_size=world_size,
        nodes=node_plans,
        transport=inv.transport,
        workdir=inv.workdir,
        detach=detach,
        warnings=warnings,
        notes=notes,
        collective_timeout=collective_timeout,
        health=inv.health.model_dump(),
        restart=inv.restart.model_dump(),
        spares=[s.host for s in inv.spares],
        attempt=attempt,
        net=inv.net.model_dump(),
    )


def _moved_ranks_warning(inv: Inventory) -> str | None:
    """A restart keeps each host's run directory (ATTEMPTS_DIR), so a program that resumes from its own relative
    files (snapshot.pt) finds them again on the same node; a spare or exclude_failed_node gives a failed node's
    ranks to a node whose run directory never saw those files (issue 20). job.checkpoint_dir (shared storage,
    RLAUNCH_RESUME_FROM) is the way to resume across nodes."""
    if inv.restart.max_restarts <= 0 or inv.job.checkpoint_dir:
        return None
    how = [
        *(["spares"] if inv.spares else []),
        *(["restart.exclude_failed_node"] if inv.restart.exclude_failed_node and len(inv.nodes) > 1 else []),
    ]
    if not how:
        return None
    return (
        f"restart.max_restarts is {inv.restart.max_restarts} and {' and '.join(how)} can move a failed node's ranks "
        "to another node, but no job.checkpoint_dir is set: a restarted rank there does not see the files the "
        "program saved in its run directory (a relative snapshot or checkpoint) and starts over; save checkpoints "
        "under job.checkpoint_dir on storage every node shares (rlaunch passes RLAUNCH_CKPT_DIR / RLAUNCH_RESUME_FROM)"
    )


def _net_env(inv: Inventory, user_env: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """`net.transport: ib`: RCCL's INIT lines on, so the watcher sees which transport each rank chose
    (launcher/health/netinit.py). NCCL_DEBUG_SUBSYS=INIT keeps INFO to the init messages; WARN lines print
    whatever the subsystem mask (NCCL src/debug.cc: WARN is logged with NCCL_ALL)."""
    if inv.net.transport != "ib":
        return {}, None
    level = user_env.get("NCCL_DEBUG", "").upper()
    if level in ("INFO", "TRACE"):
        return {}, None
    if level and level != "WARN":
        return (
            {},
            f"net.transport ib: NCCL_DEBUG={level} hides RCCL's INIT lines, so a fall-back to sockets is not seen",
        )
    env = {"NCCL_DEBUG": "INFO"}
    if "NCCL_DEBUG_SUBSYS" not in user_env:
        env["NCCL_DEBUG_SUBSYS"] = "INIT"
    note = (
        "net.transport ib → NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT: each rank's RCCL names its transport at init; "
        "a rank on NET/Socket ends the run, naming its node"
    )
    return env, note


def _checkpoint_env(checkpoint_dir: str | None, resume_from: str | None) -> dict[str, str]:
    """The resume contract for user scripts: save under RLAUNCH_CKPT_DIR, load RLAUNCH_RESUME_FROM when set."""
    env = {"RLAUNCH_CKPT_DIR": checkpoint_dir} if checkpoint_dir else {}
    if resume_from:
        env["RLAUNCH_RESUME_FROM"] = resume_from
    return env


def _secret_values(inv: Inventory, head_env: Mapping[str, str]) -> dict[str, str]:
    missing = [name for name in inv.secrets if name not in head_env]
    if missing:
        raise PlanError(
            f"secret {missing[0]} is not set in this shell's environment (export it before running rlaunch)",
            file=inv.source,
            field="secrets",
        )
    return {name: head_env[name] for name in inv.secrets}


def _profile_env(inv: Inventory, sources: Mapping[str, bytes]) -> dict[str, str]:
    if not inv.profile:
        return {}
    text = sources.get(f"<templates>/env_{inv.profile}.env", b"").decode()
    env: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and "=" in line:
            name, value = line.split("=", 1)
            env[name.strip()] = value.strip()
    return env


def _env_sh(env: Mapping[str, str]) -> bytes:
    """A sourceable env file for people debugging on the node; every value shell-quoted."""
    lines = ["# written by rlaunch: source this file to reproduce the job's environment"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    return ("\n".join(lines) + "\n").encode()


def _job_json(
    argv: list[str],
    env: Mapping[str, str],
    run_dir: str,
    inv: Inventory,
    detach: bool,
    host: str,
    run_id: str,
) -> bytes:
    spec = {
        "argv": argv,
        "env": dict(env),
        "cwd": run_dir,  # the same for every attempt (ATTEMPTS_DIR)
        # The node's one-run-at-a-time lock (guard.take_node_lock) and the run it names.
        "node_lock": f"{inv.workdir.rstrip('/')}/.node-{host}.lock",
        "run_id": run_id,
        "heartbeat_timeout": 0 if detach else inv.health.heartbeat_timeout,
        # Until the first beat (start-up at hundreds of nodes): never shorter than heartbeat_timeout.
        "first_heartbeat_timeout": 0
        if detach
        else protocol.first_beat_window(inv.health.heartbeat_timeout, inv.health.first_heartbeat_timeout),
        "grace": inv.health.grace,
        "poll_interval": 0.2,
        # The guard's own node-local health rules (edge.py); head_timeout: how fresh a head's heartbeat must be
        # for the guard to defer to the head.
        "edge": {"stall_timeout": inv.health.stall_timeout, "head_timeout": inv.health.heartbeat_timeout},
    }
    return json.dumps(spec, indent=1, sort_keys=True).encode()


def _check_unique(files: list[FileSpec], host: str, inv: Inventory) -> None:
    """Two files with one name in the node's run directory: the later job.files entry of that name is the culprit."""
    seen: set[str] = set()
    for f in files:
        if f.path in seen:
            index = max(
                (i for i, p in enumerate(inv.job.files) if p.rsplit("/", 1)[-1] == f.path), default=None
            )
            where = ("job", "files", index) if index is not None else ("job", "files")
            raise PlanError(
                f"two files would be pushed as '{f.path}' on node '{host}'",
                file=inv.source,
                line=inv.line_of(*where),
                field="job.files" if index is None else f"job.files[{index}]",
            )
        seen.add(f.path)


# ---------------------------------------------------------------------------------------------------------
# The one impure helper: read what the adapters need from the head node's disk.


@functools.cache
def rules_index() -> bytes | None:
    """launcher/health/rules.py's INDEX_FILE: the package's rules.py loaded from its file as a node loads it (by
    edge.load_rules), and what that load derived, so that no node derives it again (0.15 CPU-seconds per guard and
    follower). Once per process; None if the table does not load that way (the nodes then derive it themselves)."""
    from launcher.node import edge

    module = edge.load_rules(str(resources.files("launcher.health")))
    return None if module is None else module.index_bytes()


def load_sources(inv: Inventory) -> dict[str, bytes]:
    """Head-node files the plan embeds: the node guard, profile env, the job's script/config/extra files."""
    sources: dict[str, bytes] = {
        bundle_key(name): resources.files(
            "launcher.health" if name in protocol.HEALTH_FILES else "launcher.node"
        )
        .joinpath(name)
        .read_bytes()
        for name in protocol.GUARD_BUNDLE
        if name != protocol.RULES_INDEX_FILE
    }
    index = rules_index()
    if index is not None:
        sources[bundle_key(protocol.RULES_INDEX_FILE)] = index
    sources[JOB_HELPER] = resources.files("launcher.node").joinpath("rlaunch_job.py").read_bytes()
    if inv.profile:
        name = f"env_{inv.profile}.env"
        sources[f"<templates>/{name}"] = resources.files("launcher.templates").joinpath(name).read_bytes()
    job = inv.job
    wanted: list[tuple[str, tuple[str | int, ...], str | None]] = [
        ("job.script", ("job", "script"), job.script),
        ("job.config", ("job", "config"), job.config),
    ]
    wanted += [(f"job.files[{i}]", ("job", "files", i), p) for i, p in enumerate(job.files)]
    if job.deepspeed and job.deepspeed not in ("zero3", "zero3_offload", "none"):
        wanted.append(("job.deepspeed", ("job", "deepspeed"), job.deepspeed))
    for field_name, loc, path in wanted:
        if not path:
            continue
        full = inv.resolve(path)
        try:
            sources[path] = full.read_bytes()
        except FileNotFoundError:
            raise PlanError(
                f"file not found: {full}", file=inv.source, line=inv.line_of(*loc), field=field_name
            ) from None
        except OSError as exc:
            raise PlanError(
                f"cannot read {full}: {exc.strerror}",
                file=inv.source,
                line=inv.line_of(*loc),
                field=field_name,
            ) from None
    if job.kind == "llamafactory":
        from launcher.jobs.llamafactory import head_sources

        sources.update(head_sources(inv))
    for name in ("ds_z3.json", "ds_z3_offload.json", "llamafactory_lora_sft.yaml"):
        res = resources.files("launcher.templates").joinpath(name)
        if res.is_file():
            sources[f"<templates>/{name}"] = res.read_bytes()
    return sources
