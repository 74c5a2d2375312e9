"""The cluster inventory: one `cluster.yaml` describing nodes, SSH settings and the job.

Loading never raises anything but `InventoryError`, which carries file, line and field so the CLI can print
one clear line (exit code 2). Node lists may also come from a DeepSpeed/MPI hostfile or a Slurm allocation.
"""

from __future__ import annotations

import difflib
import os
import pwd
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import hostlist
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from cluster import yamlpos

JOB_KINDS = ("torchrun", "deepspeed", "llamafactory", "command")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Host names as DNS/SSH know them, plus IPv6 literals; anything else could smuggle options into ssh/scp.
HOST_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]*$")
# Caps on sizes taken from input (docs/security.md): far above any real node, far below a MemoryError.
MAX_GPUS = 1024  # GPU ids per node, and the largest id
MAX_NODES = 16384
MAX_HOSTFILE_BYTES = 4 << 20


class InventoryError(Exception):
    """A problem in the user's input, located as precisely as we can."""

    def __init__(
        self, message: str, file: str | None = None, line: int | None = None, field: str | None = None
    ):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.field = field

    def __str__(self) -> str:
        where = self.file or "<inventory>"
        if self.line:
            where += f":{self.line}"
        what = f" {self.field}:" if self.field else ""
        return f"{where}:{what} {self.message}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


EnvValue = str | int | float | bool


def _env_str(value: EnvValue) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _check_env(env: Mapping[str, EnvValue] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in (env or {}).items():
        if not ENV_NAME.match(str(name)):
            raise ValueError(f"'{name}' is not a valid environment variable name")
        if value is None:
            raise ValueError(f"'{name}' has no value (write \"\" for an empty string)")
        out[str(name)] = _env_str(value)
    return out


def parse_gpus(value: Any) -> tuple[int, ...]:
    """A count (8), a list ([0, 1, 2, 3]) or a range string ("0-3", "0,2,4-5"); 0 means a CPU-only node."""
    if isinstance(value, bool):
        raise ValueError('expected a GPU count, a list of GPU ids or a range like "0-3"')
    if isinstance(value, int):
        if value < 0:
            raise ValueError("GPU count cannot be negative")
        if value > MAX_GPUS:
            raise ValueError(f"GPU count {value} is above the limit of {MAX_GPUS} per node")
        return tuple(range(value))
    if isinstance(value, list):
        if len(value) > MAX_GPUS or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_GPUS for v in value
        ):
            raise ValueError(f"GPU list must hold at most {MAX_GPUS} ids, each from 0 to {MAX_GPUS - 1}")
        ids = tuple(value)
    elif isinstance(value, str):
        ids_list: list[int] = []
        for part in value.replace(" ", "").split(","):
            m = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", part)
            if not m:
                raise ValueError(f'cannot parse GPU range \'{value}\' (write e.g. "0-3" or "0,2,4-5")')
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if hi < lo:
                raise ValueError(f"GPU range '{part}' runs backwards")
            if hi >= MAX_GPUS or len(ids_list) + hi - lo >= MAX_GPUS:
                raise ValueError(
                    f"GPU range '{part}' goes past the limit of {MAX_GPUS} ids (0-{MAX_GPUS - 1})"
                )
            ids_list.extend(range(lo, hi + 1))
        ids = tuple(ids_list)
    else:
        raise ValueError('expected a GPU count, a list of GPU ids or a range like "0-3"')
    if len(set(ids)) != len(ids):
        raise ValueError(f"GPU ids {list(ids)} repeat")
    return ids


def default_workdir(ssh: SSHConfig | None) -> str:
    """$RLAUNCH_WORKDIR, else a per-user directory: a shared, predictable /tmp/rlaunch let any local user plant
    the guard.py we then run (docs/security.md). The node's push refuses it if someone else owns it."""
    if os.environ.get("RLAUNCH_WORKDIR"):
        return os.environ["RLAUNCH_WORKDIR"]
    user = ssh.user if ssh is not None and ssh.user else None
    if user is None:
        try:
            user = pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            user = str(os.geteuid())
    return f"/var/tmp/rlaunch-{user}"


class SSHConfig(_Strict):
    user: str | None = None
    port: int = Field(22, ge=1, le=65535)
    identity_file: str | None = None
    known_hosts: str = "~/.ssh/known_hosts"
    # "strict" rejects unknown and changed keys (OpenSSH StrictHostKeyChecking=yes); "accept-new" stores
    # first-seen keys but still rejects changed ones.
    host_key_policy: Literal["strict", "accept-new"] = "strict"
    connect_timeout: float = Field(10.0, gt=0, le=600)
    # OpenSSH's ConnectionAttempts, for a node that accepted but whose SSH handshake or authentication timed out.
    connection_attempts: int = Field(2, ge=1, le=10)
    keepalive: float = Field(5.0, gt=0, le=600)
    max_parallel: int = Field(64, ge=1, le=1024)


class NodeSpec(_Strict):
    host: str
    address: str | None = None
    gpus: tuple[int, ...] = ()
    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = None
    identity_file: str | None = None
    python: str | None = None
    cpus: int | None = Field(None, ge=1)  # physical cores; caps dataloader workers per rank
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("host", "address")
    @classmethod
    def _host(cls, v: str | None) -> str | None:
        if v is not None and not HOST_NAME.match(v):
            raise ValueError(f"'{v}' is not a valid host name or address")
        return v

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpus(cls, v: Any) -> tuple[int, ...]:
        return parse_gpus(v)

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, v: Any) -> dict[str, str]:
        return _check_env(v)


class Master(_Strict):
    node: str | None = None
    port: int | Literal["auto"] = 29500

    @field_validator("port")
    @classmethod
    def _port(cls, v: int | str) -> int | str:
        if isinstance(v, int) and not 1 <= v <= 65535:
            raise ValueError(f"port {v} is out of range 1-65535")
        return v


class JobSpec(_Strict):
    kind: Literal["torchrun", "deepspeed", "llamafactory", "command"] = "torchrun"
    script: str | None = None
    module: str | None = None
    config: str | None = None  # llamafactory yaml (head-node path)
    command: list[str] | None = None  # kind=command: argv run once per node
    args: list[str] = Field(default_factory=list)
    nproc_per_node: int | None = Field(None, ge=1, le=256)
    # The collective (process-group) timeout in seconds; NCCL_TIMEOUT in `env` is mapped here.
    timeout: float | None = Field(None, gt=0)
    deepspeed: str | None = None  # "zero3", "zero3_offload" or a head-node path to a json
    files: list[str] = Field(default_factory=list)  # extra head-node files pushed next to the job
    checkpoint_dir: str | None = None
    dataloader_workers: int | None = Field(None, ge=0)
    pretokenize: bool = False  # llamafactory: tokenize once before training (launcher/jobs/lf_pretokenize.py)
    # `rlaunch stop --save` / a preemption notice: the signal the node guard sends to the ranks that catch it, besides
    # the stop file (docs/preemption.md). Never SIGTERM/SIGINT/SIGHUP/SIGQUIT: torchrun kills its workers on those.
    stop_signal: Literal["SIGUSR1", "SIGUSR2", "none"] = "SIGUSR1"

    @field_validator("args", "command", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        if isinstance(v, str):
            raise ValueError('expected a list, e.g. [--steps, "100"]')
        if isinstance(v, list):
            return [_env_str(x) if isinstance(x, int | float | bool) else x for x in v]
        return v

    @model_validator(mode="after")
    def _entry(self) -> JobSpec:
        if self.kind in ("torchrun", "deepspeed"):
            if bool(self.script) == bool(self.module):
                raise ValueError(f"job.kind {self.kind} needs exactly one of `script` or `module`")
        elif self.kind == "llamafactory":
            if not self.config:
                raise ValueError("job.kind llamafactory needs `config` (the LLaMA-Factory yaml)")
        elif self.kind == "command" and not self.command:
            raise ValueError("job.kind command needs `command` (a list: [python, -c, ...])")
        if self.pretokenize and self.kind != "llamafactory":
            raise ValueError(
                "job.pretokenize runs LLaMA-Factory's preprocessing: it needs job.kind llamafactory"
            )
        return self


class Straggler(_Strict):
    action: Literal["warn", "restart-without"] = "warn"


class Health(_Strict):
    stall_timeout: float = Field(600.0, gt=0)  # no output from a rank for this long = hung
    # Silence allowed before the job's first line (imports, model loading): default stall_timeout.
    startup_timeout: float | None = Field(None, gt=0)
    heartbeat_timeout: float = Field(15.0, gt=0)  # launcher silent this long = node guard tears down
    # Before the head's first beat reaches it (start-up: every guard started, then every follower opened, which at
    # hundreds of nodes takes longer than heartbeat_timeout), a guard waits this long instead (at least
    # heartbeat_timeout). The cost: a head that dies between start and follow leaves the job up to this long, so it
    # is unset (= heartbeat_timeout) unless asked for: set it (120 s) for runs of hundreds of nodes (docs/scale.md).
    first_heartbeat_timeout: float | None = Field(None, gt=0, le=3600)
    grace: float = Field(5.0, ge=0, le=300)  # SIGTERM → SIGKILL
    # A node with this many strikes (node-caused failures, $RLAUNCH_HOME/nodes.jsonl) within strike_window
    # seconds is replaced by a spare at `up`, or `up` refuses: unset = never.
    max_strikes: int | None = Field(None, ge=1, le=1000)
    strike_window: float = Field(7 * 86400.0, gt=0)
    # Hang = no progress for max(hang_factor × learned step interval, hang_floor) with every rank idle (docs/design.md).
    hang_floor: float = Field(30.0, gt=0)
    hang_factor: float = Field(10.0, gt=0)
    progress_regex: str | None = None  # extra progress-line pattern; group 1, if any, is the step number
    stack_budget: float = Field(10.0, ge=0, le=120)  # seconds for dumping every rank's stack before teardown
    straggler: Straggler = Field(default_factory=Straggler)

    @field_validator("progress_regex")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"not a valid regular expression: {e}") from None
        return v


class RestartBudgets(_Strict):
    """Restarts per root-cause kind (launcher/restart_policy.py `kind_of`; docs/restarts.md)."""

    code: int = Field(1, ge=0, le=100)  # config, version, OOM, divergence, a crash of the job's own code
    # A lost node, a GPU fault, a rank killed by a signal (a spare, when listed, takes the node's place).
    node: int = Field(3, ge=0, le=100)
    network: int = Field(2, ge=0, le=100)  # network, comm errors, collective timeouts, rendezvous
    hang: int = Field(1, ge=0, le=100)  # hangs and stalls
    other: int = Field(1, ge=0, le=100)  # no root cause named


class RestartStorm(_Strict):
    """No restart once this cluster (any run, node ledger) restarted `restarts` times within `window` seconds."""

    restarts: int = Field(5, ge=1, le=1000)
    window: float = Field(1800.0, gt=0)


def _exit_codes(v: Any) -> Any:
    if isinstance(v, list) and not all(isinstance(c, int) and not isinstance(c, bool) for c in v):
        raise ValueError("expected a list of exit codes (integers), e.g. [75]")
    if isinstance(v, list) and not all(0 <= c <= 255 for c in v):
        raise ValueError("exit codes run from 0 to 255")
    return v


class Restart(_Strict):
    max_restarts: int = Field(0, ge=0, le=100)
    backoff: float = Field(5.0, ge=0)
    exclude_failed_node: bool = False
    budgets: RestartBudgets = Field(default_factory=RestartBudgets)
    # Attempts in a row that got no further than the previous attempt's latest checkpoint (or step): 0 = off.
    no_progress: int = Field(3, ge=0, le=100)
    on_exit_codes: tuple[int, ...] = ()  # the job asks to be restarted with these (counted against no budget)
    never_on: tuple[int, ...] = ()  # the run ends at once on these
    storm: RestartStorm = Field(default_factory=RestartStorm)

    @field_validator("on_exit_codes", "never_on", mode="before")
    @classmethod
    def _codes(cls, v: Any) -> Any:
        return _exit_codes(v)

    @model_validator(mode="after")
    def _disjoint(self) -> Restart:
        both = sorted(set(self.on_exit_codes) & set(self.never_on))
        if both:
            raise ValueError(
                f"exit code(s) {', '.join(map(str, both))} are in both restart.on_exit_codes and restart.never_on"
            )
        return self


class Net(_Strict):
    """The fabric the job should use (docs/network.md). `net: auto` is short for `net: {socket_ifname: auto}`."""

    # ib: RDMA expected (RCCL's NET/IB, InfiniBand or RoCE): doctor requires an ACTIVE RDMA port on every node,
    # and a rank whose RCCL init says NET/Socket ends the run at once, naming its node. socket: TCP on purpose.
    transport: Literal["auto", "ib", "socket"] = "auto"
    # auto: NCCL_SOCKET_IFNAME per node, the interface that routes to the master (found at `up`).
    socket_ifname: Literal["auto"] | None = None


class Sync(_Strict):
    """The local project directory pushed to every node's `<workdir>/sync/<cluster>/` (launcher/sync.py)."""

    src: str = "."  # head-node directory, relative to the inventory's
    exclude: tuple[str, ...] = ()  # gitignore-style patterns left out (besides .git/)
    gitignore: bool = True  # also leave out what src/.gitignore ignores


class Inventory(_Strict):
    cluster: str = "cluster"
    ssh: SSHConfig = Field(default_factory=SSHConfig)
    nodes: tuple[NodeSpec, ...]
    spares: tuple[NodeSpec, ...] = ()  # stand-by nodes: one takes a failed node's place (and node rank)
    master: Master = Field(default_factory=Master)
    workdir: str = Field(default_factory=lambda data: default_workdir(data.get("ssh")))
    python: str = "python3"
    transport: Literal["ssh", "local", "slurm"] = "ssh"  # slurm: srun steps in the current allocation
    # GPU family: loads templates/env_<profile>.env as defaults and decides bf16 support.
    profile: Literal["mi300x", "mi250", "rx7900", "cpu"] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    # Finished runs whose directories stay under `workdir` on each node; older ones are removed at the next `up`
    # (`rlaunch gc` by hand). Running runs are never removed. null: keep everything.
    keep_runs: int | None = Field(5, ge=1, le=10000)
    sync: Sync | None = None  # push a directory (SkyPilot's `workdir`); the job finds it as RLAUNCH_SYNC_DIR
    job: JobSpec
    health: Health = Field(default_factory=Health)
    restart: Restart = Field(default_factory=Restart)
    net: Net = Field(default_factory=Net)
    # Where the inventory came from: relative job paths are resolved against it.
    base_dir: str = "."
    source: str = "<inventory>"

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, v: Any) -> dict[str, str]:
        return _check_env(v)

    @field_validator("net", mode="before")
    @classmethod
    def _net(cls, v: Any) -> Any:
        if v == "auto":
            return {"socket_ifname": "auto"}
        if isinstance(v, str):
            raise ValueError(f"expected `auto` or a mapping like {{transport: ib}}, not '{v}'")
        return v

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not ENV_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid environment variable name")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Inventory:
        if not self.nodes:
            raise ValueError(
                _at("nodes", "no nodes: list at least one under `nodes:` (or use --hostfile / --from-slurm)")
            )
        seen: set[str] = set()
        for i, node in enumerate(self.nodes):
            if node.host in seen:
                raise ValueError(_at(f"nodes.{i}.host", f"duplicate host '{node.host}' in nodes"))
            seen.add(node.host)
        if self.master.node is not None and self.master.node not in seen:
            raise ValueError(
                _at(
                    "master.node",
                    f"master.node '{self.master.node}' is not in nodes ({', '.join(sorted(seen))})",
                )
            )
        for i, spare in enumerate(self.spares):
            if spare.host in seen:
                raise ValueError(
                    _at(f"spares.{i}.host", f"duplicate host '{spare.host}' in nodes and spares")
                )
            seen.add(spare.host)
        if self.net.socket_ifname == "auto":
            for where, env in (
                ("env", self.env),
                *((f"nodes.{i}.env", n.env) for i, n in enumerate(self.nodes)),
            ):
                if "NCCL_SOCKET_IFNAME" in env:
                    raise ValueError(
                        _at(
                            f"{where}.NCCL_SOCKET_IFNAME",
                            "NCCL_SOCKET_IFNAME is set here and `net: auto` sets it per node: keep one of them",
                        )
                    )
        nproc = self.job.nproc_per_node
        if nproc is not None:
            for node in (*self.nodes, *self.spares):
                if node.gpus and nproc > len(node.gpus):
                    raise ValueError(
                        _at(
                            "job.nproc_per_node",
                            f"job.nproc_per_node {nproc} exceeds the {len(node.gpus)} GPUs of node '{node.host}'",
                        )
                    )
        return self

    @property
    def master_node(self) -> NodeSpec:
        name = self.master.node or self.nodes[0].host
        return next(n for n in self.nodes if n.host == name)

    @property
    def sync_dir(self) -> str:
        """Where `sync:` puts the tree on every node: stable across runs, one per cluster name (made path-safe)."""
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.cluster).lstrip(".") or "cluster"
        return f"{self.workdir.rstrip('/')}/sync/{name}"

    def python_for(self, node: NodeSpec) -> str:
        """The node's interpreter. On the local transport a relative path (`../.venv/bin/python`) is the head's
        own path, taken from the inventory's directory like every other relative path in the file."""
        python = node.python or self.python
        if self.transport == "local" and "/" in python and not python.startswith(("/", "~")):
            return os.path.normpath(os.path.join(self.base_dir, python))
        return python

    # The line of every value in the inventory file (cluster/yamlpos.py), for errors found after loading (the plan's
    # job.files checks): a private attribute, so it is neither a key nor part of the dumped inventory.
    _lines: yamlpos.Located | None = PrivateAttr(default=None)

    def line_of(self, *loc: str | int) -> int | None:
        """The 1-based line of a key path such as ("job", "files", 2) in the inventory file, when loaded from one."""
        return self._lines.line_of(loc) if self._lines is not None else None

    def resolve(self, path: str) -> Path:
        """A head-node path from the inventory, relative to the inventory's directory."""
        p = Path(os.path.expanduser(path))
        return p if p.is_absolute() else Path(self.base_dir) / p


def _at(field: str, message: str) -> str:
    """Tag a cross-field error with the field it is about, so the loader can give its line."""
    return f"@{field} {message}"


# ---------------------------------------------------------------------------------------------------------
# Alternative node sources


def parse_hostfile(text: str, source: str = "<hostfile>") -> list[dict[str, Any]]:
    """DeepSpeed/MPI hostfile: `host slots=N` per line, `#` comments."""
    nodes: list[dict[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"(\S+)\s+slots\s*=\s*(\d{1,9})", line)
        if not m:
            raise InventoryError(
                f"expected 'HOST slots=N', got {raw.strip()!r}", file=source, line=number, field="slots"
            )
        if int(m.group(2)) > MAX_GPUS:
            raise InventoryError(
                f"slots={m.group(2)} is above the limit of {MAX_GPUS}",
                file=source,
                line=number,
                field="slots",
            )
        if len(nodes) >= MAX_NODES:
            raise InventoryError(f"more than {MAX_NODES} hosts", file=source, line=number)
        nodes.append({"host": m.group(1), "gpus": int(m.group(2))})
    if not nodes:
        raise InventoryError("hostfile lists no hosts", file=source)
    return nodes


def nodes_from_slurm(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """Nodes of the current Slurm allocation (SLURM_JOB_NODELIST, SLURM_GPUS_ON_NODE)."""
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if not nodelist:
        raise InventoryError(
            "--from-slurm: SLURM_JOB_NODELIST is not set (run inside an allocation: salloc/sbatch)",
            field="SLURM_JOB_NODELIST",
        )
    if not nodelist.isascii() or not nodelist.isprintable() or len(nodelist) > 65536:
        raise InventoryError("is not a printable ASCII host list", field="SLURM_JOB_NODELIST")
    if _hostlist_size(nodelist) > MAX_NODES:
        raise InventoryError(f"names more than {MAX_NODES} hosts", field="SLURM_JOB_NODELIST")
    try:
        hosts = hostlist.expand_hostlist(nodelist)
    except hostlist.BadHostlist as exc:
        raise InventoryError(f"cannot expand {nodelist!r}: {exc}", field="SLURM_JOB_NODELIST") from None
    gpus_raw = environ.get("SLURM_GPUS_ON_NODE", "0")
    try:
        gpus = int(gpus_raw) if len(gpus_raw) <= 9 else MAX_GPUS + 1
        if gpus > MAX_GPUS:
            raise InventoryError(
                f"SLURM_GPUS_ON_NODE={gpus_raw[:20]!r} is above the limit of {MAX_GPUS}",
                field="SLURM_GPUS_ON_NODE",
            )
    except ValueError:
        raise InventoryError(
            f"SLURM_GPUS_ON_NODE={gpus_raw!r} is not a number", field="SLURM_GPUS_ON_NODE"
        ) from None
    return [{"host": h, "gpus": gpus} for h in hosts]


def _hostlist_size(nodelist: str) -> int:
    """An upper bound on how many names a Slurm host list expands to, without expanding it."""
    total = 0
    for term in re.split(r",(?![^\[]*\])", nodelist):
        size = 1
        for group in re.findall(r"\[([^\]]*)\]", term):
            width = 0
            for part in group.split(","):
                lo, _, hi = part.partition("-")
                if lo.isdigit() and hi.isdigit() and len(lo) <= 9 and len(hi) <= 9:
                    width += max(0, int(hi) - int(lo)) + 1
                else:
                    width += 1 if not hi else MAX_NODES + 1
            size *= width
            if size > MAX_NODES:
                return size
        total += size
    return total


# ---------------------------------------------------------------------------------------------------------
# Loading


# Names whose values are credentials: never accepted on the command line (argv shows in `ps`, /proc/PID/cmdline
# and shell history); they belong under `secrets:`, read from the head's environment (docs/security.md).
SECRET_LIKE = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|API_?KEY|ACCESS_KEY|PRIVATE_KEY)", re.IGNORECASE
)


@dataclass(frozen=True)
class Overrides:
    """What `rlaunch up/plan` take from the command line, as torchrun's flags and `sky launch --env` allow.

    Applied once, to the inventory's input mapping before validation (`load_inventory`), so every verb, the plan
    and the run record (which restarts reuse) see the same inventory and errors name the same fields."""

    env: tuple[tuple[str, str], ...] = ()  # --env K=V, in order; later wins
    nproc_per_node: int | None = None  # --nproc-per-node N
    args: tuple[str, ...] | None = None  # `-- ARGS...`: replaces job.args

    def __bool__(self) -> bool:
        return bool(self.env) or self.nproc_per_node is not None or self.args is not None

    @classmethod
    def parse_env(cls, items: Sequence[str]) -> tuple[tuple[str, str], ...]:
        """`K=V` strings → pairs; a malformed one is bad input naming it."""
        out: list[tuple[str, str]] = []
        for item in items:
            name, sep, value = item.partition("=")
            if not sep or not ENV_NAME.match(name):
                raise InventoryError(f"expected NAME=VALUE, got {item!r}", field="--env")
            out.append((name, value))
        return tuple(out)

    def describe(self) -> list[str]:
        """One line per override, values of --env shown (they are not secrets: those are refused)."""
        lines = [f"--env {k}={v}" for k, v in self.env]
        if self.nproc_per_node is not None:
            lines.append(f"--nproc-per-node {self.nproc_per_node}")
        if self.args is not None:
            lines.append("-- " + " ".join(shlex.quote(a) for a in self.args) + "  (replaces job.args)")
        return lines


def apply_overrides(data: dict[str, Any], overrides: Overrides, source: str) -> dict[str, Any]:
    """The inventory mapping with the command line's overrides applied (a copy)."""
    if not overrides:
        return data
    data = dict(data)
    secrets = data.get("secrets") or []
    for name, _ in overrides.env:
        if (isinstance(secrets, list) and name in secrets) or SECRET_LIKE.search(name):
            raise InventoryError(
                f"{name} looks like a secret: a value on the command line shows in `ps` and shell history; "
                f"list it under `secrets:` and export it in this shell instead",
                file=source,
                field="--env",
            )
    if overrides.env:
        env = data.get("env") or {}
        if not isinstance(env, dict):
            raise InventoryError("expected a mapping to add --env to", file=source, field="env")
        data["env"] = {**env, **dict(overrides.env)}
    if overrides.nproc_per_node is not None or overrides.args is not None:
        job = data.get("job")
        if not isinstance(job, dict):
            raise InventoryError("is required (the job the overrides apply to)", file=source, field="job")
        job = dict(job)
        if overrides.nproc_per_node is not None:
            job["nproc_per_node"] = overrides.nproc_per_node
        if overrides.args is not None:
            job["args"] = list(overrides.args)
        data["job"] = job
    return data


def load_inventory(
    path: str | Path,
    *,
    hostfile: str | Path | None = None,
    from_slurm: Mapping[str, str] | None = None,
    overrides: Overrides | None = None,
) -> Inventory:
    path = Path(path)
    source = str(path)
    try:
        located = yamlpos.load_file(path)
    except FileNotFoundError:
        raise InventoryError("file not found (create one with `rlaunch init`)", file=source) from None
    except IsADirectoryError:
        raise InventoryError("is a directory, expected a cluster.yaml file", file=source) from None
    except PermissionError:
        raise InventoryError("permission denied", file=source) from None
    except UnicodeDecodeError:
        raise InventoryError("not a text file", file=source) from None
    except yamlpos.YamlError as exc:
        raise InventoryError(str(exc), file=source, line=exc.line) from None
    if not isinstance(located.value, dict):
        raise InventoryError("expected a mapping of settings at the top level", file=source, line=1)
    data = dict(located.value)
    if hostfile is not None:
        hf = Path(hostfile)
        try:
            with hf.open("rb") as handle:
                raw = handle.read(MAX_HOSTFILE_BYTES + 1)
        except OSError as exc:
            raise InventoryError(f"cannot read hostfile: {exc.strerror}", file=str(hf)) from None
        if len(raw) > MAX_HOSTFILE_BYTES or b"\0" in raw:
            raise InventoryError("not a hostfile (binary or larger than 4 MiB)", file=str(hf))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InventoryError("not a text file (not UTF-8)", file=str(hf)) from None
        data["nodes"] = parse_hostfile(text, str(hf))
    elif from_slurm is not None:
        data["nodes"] = nodes_from_slurm(from_slurm)
    if overrides:
        data = apply_overrides(data, overrides, source)
    return from_mapping(data, source=source, lines=located, base_dir=str(path.resolve().parent))


def from_mapping(
    data: dict[str, Any],
    *,
    source: str = "<inventory>",
    lines: yamlpos.Located | None = None,
    base_dir: str = ".",
) -> Inventory:
    for reserved in ("base_dir", "source"):
        if reserved in data:
            line = lines.line_of((reserved,)) if lines else None
            raise InventoryError("is set by rlaunch itself", file=source, line=line, field=reserved)
    try:
        inv = Inventory.model_validate({**data, "base_dir": base_dir, "source": source})
    except ValidationError as exc:
        raise _explain(exc, data, source, lines) from None
    inv._lines = lines
    return inv


def local_only(inventory: Inventory | None = None) -> Inventory:
    """This machine as the only node, on the local transport (the Slurm prolog form of `doctor --local` and
    `validate --local`): the inventory's node that is this host (else its first), reached at 127.0.0.1, with no
    master pinned; without an inventory, this host with the Python running rlaunch and a job that does nothing."""
    import socket
    import sys

    me = socket.gethostname()
    if inventory is None:
        return from_mapping(
            {
                "cluster": "local",
                "nodes": [{"host": me, "address": "127.0.0.1"}],
                "python": sys.executable,
                "transport": "local",
                "job": {"kind": "command", "command": ["true"]},
            }
        )
    mine = [n for n in inventory.nodes if n.host in (me, me.split(".")[0])] or [inventory.nodes[0]]
    return inventory.model_copy(
        update={
            "nodes": (mine[0].model_copy(update={"address": "127.0.0.1"}),),
            "transport": "local",
            "master": inventory.master.model_copy(update={"node": None}),
        }
    )


def _explain(
    exc: ValidationError, data: dict[str, Any], source: str, lines: yamlpos.Located | None
) -> InventoryError:
    """Turn pydantic's first error into one located, human sentence."""
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    if msg.startswith("@") and " " in msg:  # a cross-field check that knows which field it is about
        where, msg = msg[1:].split(" ", 1)
        loc = loc + tuple(int(p) if p.isdigit() else p for p in where.split("."))
    # pydantic appends union member names ("int", "literal['auto']") to locs; drop what the data doesn't have.
    loc = _data_loc(loc, data)
    line = lines.line_of(loc) if lines else None
    field = ".".join(str(p) for p in loc) or None
    kind = err["type"]
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        known = sorted(parent.model_fields) if parent else []
        known = [k for k in known if k not in ("base_dir", "source")]
        guess = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"; did you mean '{guess[0]}'?" if guess else f"; known keys: {', '.join(known)}"
        msg = f"unknown key '{loc[-1]}'{hint}"
    elif kind == "missing":
        msg = "is required"
    elif kind == "literal_error":
        msg = f"got {err.get('input')!r}; {msg.lower()}"
    if field and field.startswith("nodes.") and isinstance(data.get("nodes"), list):
        idx = loc[1]
        if isinstance(idx, int) and idx < len(data["nodes"]) and isinstance(data["nodes"][idx], dict):
            host = data["nodes"][idx].get("host")
            if host:
                field = f"{field} (node '{host}')"
    return InventoryError(msg, file=source, line=line, field=field)


def _data_loc(loc: tuple[Any, ...], data: Any) -> tuple[Any, ...]:
    out: list[Any] = []
    cur = data
    for part in loc:
        if (isinstance(cur, dict) and part in cur) or (
            isinstance(cur, list) and isinstance(part, int) and part < len(cur)
        ):
            cur = cur[part]
        elif isinstance(cur, dict):
            out.append(part)  # a missing or extra key: keep it, it is the subject of the error
            break
        else:
            break
        out.append(part)
    return tuple(out)


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] = Inventory
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        inner = getattr(ann, "__args__", (ann,))
        sub = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if sub is None:
            return None
        model = sub
    return model
