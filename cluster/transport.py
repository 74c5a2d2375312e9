"""The one small interface every way of reaching a node implements (SSH, local processes, srun).

A transport runs an argv on a named node (never a shell string: implementations quote), either to completion
(`run`) or as a long-lived process whose output lines arrive through a callback (`start`). Fan-out over many
nodes returns a `GroupResult` split into succeeded and failed, as Fabric's Group does.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from cluster.inventory import Inventory


PUT_SCRIPT = (
    '[ -d "$2" ] || mkdir -p "$2"; umask 077; t="$1.tmp.$$"; cat > "$t" && mv -f "$t" "$1" && sha256sum "$1"'
)


# Why a transport could not run a command at all (TransportError.kind, Result.failure): what a caller acts on,
# so that nobody has to read it out of the message (which names the node and says what to fix).
UNREACHABLE = "unreachable"  # refused, no route, DNS, a handshake or link that broke, srun could not place it
AUTH = "auth"  # the node answered but refused our credentials (or the identity file is missing)
HOST_KEY = "host-key"  # the node's host key is unknown, changed, or cannot be checked
TIMEOUT = "timeout"  # connecting, or the command itself, took longer than allowed
FAILURE_KINDS = (UNREACHABLE, AUTH, HOST_KEY, TIMEOUT)


class TransportError(Exception):
    """The node could not be reached or the command could not be started (not: the command failed)."""

    def __init__(self, host: str, reason: str, kind: str = UNREACHABLE):
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason
        self.kind = kind


@dataclass(frozen=True)
class Endpoint:
    """Everything needed to reach one node."""

    host: str  # the name used in logs and the inventory
    address: str  # what we connect to
    port: int = 22
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str = "~/.ssh/known_hosts"
    host_key_policy: str = "strict"
    connect_timeout: float = 10.0
    connection_attempts: int = 1
    keepalive: float = 5.0

    @classmethod
    def all_from(cls, inv: Inventory) -> dict[str, Endpoint]:
        out: dict[str, Endpoint] = {}
        for node in (*inv.nodes, *inv.spares):  # a spare may be swapped in on a restart
            out[node.host] = cls(
                host=node.host,
                address=node.address or node.host,
                port=node.port or inv.ssh.port,
                user=node.user or inv.ssh.user,
                identity_file=_expand(node.identity_file or inv.ssh.identity_file),
                known_hosts=_expand(inv.ssh.known_hosts) or "",
                host_key_policy=inv.ssh.host_key_policy,
                connect_timeout=inv.ssh.connect_timeout,
                connection_attempts=inv.ssh.connection_attempts,
                keepalive=inv.ssh.keepalive,
            )
        return out


def _expand(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None


@dataclass(frozen=True)
class Result:
    """One command on one node. `error` is set when the transport failed (unreachable, auth, timeout)."""

    host: str
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    seconds: float = 0.0
    failure: str | None = None  # one of FAILURE_KINDS whenever `error` is set (UNREACHABLE unless told)

    def __post_init__(self) -> None:
        if self.error is not None and self.failure is None:
            object.__setattr__(self, "failure", UNREACHABLE)  # frozen dataclass
        if self.failure is not None and self.failure not in FAILURE_KINDS:
            raise ValueError(f"unknown transport failure kind {self.failure!r}")

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_code == 0

    def why(self) -> str:
        """One line saying why this failed, for messages that name the node."""
        if self.error:
            return self.error
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return f"exit {self.exit_code}" + (f": {tail[-1]}" if tail else "")


@dataclass
class GroupResult:
    results: dict[str, Result] = field(default_factory=dict)

    @property
    def succeeded(self) -> dict[str, Result]:
        return {h: r for h, r in self.results.items() if r.ok}

    @property
    def failed(self) -> dict[str, Result]:
        return {h: r for h, r in self.results.items() if not r.ok}

    @property
    def ok(self) -> bool:
        return not self.failed


LineCallback = Callable[[str, str], None]  # (stream name "stdout"/"stderr", line without newline)
HostLineCallback = Callable[[str, str, str], None]  # (host, stream name, line without newline)
ExitCallback = Callable[[int], None]  # a long-lived command's exit code (-1: the link died without one)
# What a fan-out runs on each host: host → its argv (HostArgv) or one argv for all; host → its stdin (None: none).
HostArgv = Callable[[str], Sequence[str]]
ArgvFor = HostArgv | Sequence[str]
StdinFor = Callable[[str], bytes | None]


class RemoteProcess(ABC):
    """A long-lived command on a node (log follower, heartbeat channel)."""

    host: str

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Send bytes to the process's stdin. Raises TransportError when the link is gone."""

    def try_write(self, data: bytes) -> bool:
        """Send a small message (a heartbeat) without blocking: False when the link cannot take it now (the SSH
        channel's window or the pipe is full); the caller skips this beat instead of waiting. Raises TransportError
        when the link is gone. Transports whose `write` cannot block may keep this default."""
        self.write(data)
        return True

    @abstractmethod
    def close_stdin(self) -> None: ...

    @abstractmethod
    def poll(self) -> int | None:
        """Exit code if the process (or the link to it) has ended; -1 when the link died without one."""

    @abstractmethod
    def wait(self, timeout: float | None = None) -> int | None: ...

    @abstractmethod
    def close(self) -> None:
        """Drop the link (the remote side sees EOF / hang-up). Idempotent."""


class LineProcess(RemoteProcess):
    """A RemoteProcess whose output a reader thread cuts into lines: the half every transport's long-lived command
    shares (a local pipe, an SSH channel, an srun step). The subclass sets up its handle, then calls this
    __init__, which starts `_read`; `_read` hands what it reads to `_lines`, and ends with `_flush` and `_ended`."""

    def __init__(self, host: str, on_line: LineCallback, on_exit: ExitCallback | None, thread_name: str):
        self.host = host
        self._on_line = on_line
        self._on_exit = on_exit
        self._code: int | None = None
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read, name=thread_name, daemon=True)
        self._reader.start()

    @abstractmethod
    def _read(self) -> None:
        """Read the handle until it ends (in the reader thread), then `_flush` and `_ended`."""

    def _lines(self, stream: str, buf: bytes) -> bytes:
        """Deliver every complete line of buf; returns the unfinished rest, to be continued by the next read."""
        *lines, rest = buf.split(b"\n")
        for line in lines:
            self._deliver(stream, line)
        return rest

    def _flush(self, pending: dict[str, bytes]) -> None:
        """A last line without its newline is still a line."""
        for stream, rest in pending.items():
            if rest:
                self._deliver(stream, rest)

    def _deliver(self, stream: str, line: bytes) -> None:
        with contextlib.suppress(
            Exception
        ):  # a failing callback must not kill the reader (and hide the exit)
            self._on_line(stream, line.rstrip(b"\r").decode(errors="replace"))

    def _ended(self, code: int) -> None:
        self._code = code
        self._done.set()
        if self._on_exit:
            self._on_exit(code)

    def poll(self) -> int | None:
        return self._code if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int | None:
        self._done.wait(timeout)
        return self.poll()


def timed_out(
    host: str, argv: Sequence[str], timeout: float | None, how: str, out: str, err: str, started: float
) -> Result:
    """The Result of a command that ran past its timeout, in the wording every transport gives; `how` says what
    ended it (the process group killed, the channel closed, the srun step cancelled). What it wrote is kept."""
    return Result(
        host,
        None,
        out,
        err,
        error=f"timed out after {timeout:g}s running {argv[0]} on {host} ({how})",
        failure=TIMEOUT,
        seconds=time.monotonic() - started,
    )


@dataclass(frozen=True)
class First:
    """What `Transport.start_all` runs on every host before the long-lived commands, and the check of its results
    (a raise starts nothing): argv and stdin per host as run_all takes them."""

    argv_for: HostArgv
    check: Callable[[GroupResult], None]
    stdin_for: StdinFor | None = None
    timeout: float | None = 60.0


class Transport(ABC):
    """Reach the nodes named by an inventory. Implementations must be safe to call from many threads."""

    name: str = "abstract"
    # True when processes must stay inside the session that started them (a scheduler tracks and ends them with
    # it, as Slurm does with a step's processes): the node guard then runs attached to its follower channel.
    guard_attached: bool = False

    def __init__(self, endpoints: dict[str, Endpoint], max_parallel: int = 64):
        self.endpoints = endpoints
        self.max_parallel = max_parallel

    @abstractmethod
    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        """Run argv to completion. Never raises for remote failures: they land in the Result."""

    def check_host(self, host: str) -> None:
        """Raise TransportError for a node the inventory does not name (every transport checks this first)."""
        if host not in self.endpoints:
            raise TransportError(host, f"unknown node {host!r}: not in the inventory")

    def start(
        self,
        host: str,
        argv: Sequence[str],
        on_line: LineCallback,
        *,
        on_exit: ExitCallback | None = None,
    ) -> RemoteProcess:
        """Start argv and deliver its output lines to on_line from a background thread, its exit code to on_exit.
        Raises TransportError when the node is unknown or the command cannot be started there."""
        self.check_host(host)
        return self._start(host, argv, on_line, on_exit)

    @abstractmethod
    def _start(
        self, host: str, argv: Sequence[str], on_line: LineCallback, on_exit: ExitCallback | None
    ) -> RemoteProcess:
        """`start` on a node known to the inventory: what each transport does its own way."""

    def start_all(
        self,
        hosts: Iterable[str],
        argv_for: HostArgv,
        on_line: HostLineCallback,
        *,
        first: First | None = None,
    ) -> dict[str, RemoteProcess]:
        """Start argv_for(host) on every host: host → its long-lived process, whose lines reach on_line(host, ...).

        The run loop starts every attached guard with this one call. Here: one `start` per host, in parallel
        (bounded); a transport that can start them all at once overrides it (Slurm: one job step for every node,
        cluster/slurm.py). All or nothing: when one cannot start, those already started are closed and its
        TransportError is raised. `first` (the push): run on every host to completion before anything starts,
        its results handed to `first.check`, which raises to start nothing (here: one run_all; Slurm: the same
        step's first act, so the push costs no step of its own)."""
        hosts = list(hosts)
        if first is not None:
            first.check(self.run_all(hosts, first.argv_for, stdin_for=first.stdin_for, timeout=first.timeout))

        def one(host: str) -> RemoteProcess | TransportError:
            try:
                return self.start(host, argv_for(host), lambda stream, line: on_line(host, stream, line))
            except TransportError as exc:
                return exc

        started = dict(zip_hosts(hosts, one, self.max_parallel))
        failed = [v for v in started.values() if isinstance(v, TransportError)]
        if failed:
            for proc in started.values():
                if isinstance(proc, RemoteProcess):
                    proc.close()
            raise failed[0]
        return started  # type: ignore[return-value]

    def put(self, host: str, data: bytes, dest: str, *, timeout: float | None = 60.0) -> Result:
        """Write data to dest on host atomically (temp file + rename, mode 600); stdout is `sha256  dest`.

        One exec with the bytes on stdin; transports with a cheaper path (local files) override it."""
        directory = posixpath.dirname(dest) or "."
        return self.run(host, ["sh", "-c", PUT_SCRIPT, "put", dest, directory], stdin=data, timeout=timeout)

    def connect(self, host: str) -> None:  # noqa: B027 - optional hook
        """Open (and keep) the connection to host; raises TransportError. No-op for connectionless transports."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release every connection."""

    def run_all(
        self,
        hosts: Iterable[str],
        argv_for: ArgvFor,
        *,
        stdin_for: StdinFor | None = None,
        timeout: float | None = 60.0,
    ) -> GroupResult:
        """Run on many nodes in parallel (bounded); one Result per host."""

        def one(host: str) -> Result:
            argv = argv_for(host) if callable(argv_for) else argv_for
            stdin = stdin_for(host) if stdin_for else None
            return self.run(host, argv, stdin=stdin, timeout=timeout)

        return GroupResult(dict(zip_hosts(hosts, one, self.max_parallel)))

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


T = TypeVar("T")


def zip_hosts(hosts: Iterable[str], fn: Callable[[str], T], max_parallel: int) -> list[tuple[str, T]]:
    """Apply fn to every host with at most max_parallel in flight; keeps input order."""
    hosts = list(hosts)
    if len(hosts) <= 1:
        return [(h, fn(h)) for h in hosts]
    with ThreadPoolExecutor(
        max_workers=min(max_parallel, len(hosts)), thread_name_prefix="rlaunch-io"
    ) as pool:
        return list(zip(hosts, pool.map(fn, hosts), strict=True))


def make_transport(inv: Inventory, kind: str | None = None) -> Transport:
    """The transport an inventory asks for (`transport: ssh|local|slurm`)."""
    kind = kind or inv.transport
    endpoints = Endpoint.all_from(inv)
    if kind == "local":
        from cluster.local import LocalTransport

        return LocalTransport(endpoints, max_parallel=inv.ssh.max_parallel)
    if kind == "ssh":
        from cluster.ssh import SSHTransport

        return SSHTransport(endpoints, max_parallel=inv.ssh.max_parallel)
    if kind == "slurm":
        from cluster.slurm import SlurmTransport

        return SlurmTransport(endpoints, max_parallel=inv.ssh.max_parallel, python=inv.python)
    raise ValueError(f"unknown transport {kind!r}")
