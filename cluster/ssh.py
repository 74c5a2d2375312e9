"""SSH transport on paramiko: one persistent connection per node, reused for every command.

Why paramiko and not fabric: fabric's Connection hard-codes AutoAddPolicy and loads no known_hosts (docs/facts.md),
and we need neither its config layer nor its inline `export` handling. Why our own socket: paramiko never sets
TCP_NODELAY (~44 ms per exec on an open connection, ~2 ms with it; docs/facts.md), and a silent partition hangs a
session for minutes unless TCP keepalive, TCP_USER_TIMEOUT and SSH keepalives are all set.

Host keys follow OpenSSH's StrictHostKeyChecking: "strict" (= yes) refuses unknown keys, "accept-new" stores
first-seen keys in known_hosts; a changed key is refused under both (ssh_config(5)).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import logging
import math
import os
import select
import shlex
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

import paramiko

from cluster.transport import (
    AUTH,
    HOST_KEY,
    TIMEOUT,
    UNREACHABLE,
    Endpoint,
    ExitCallback,
    LineCallback,
    LineProcess,
    RemoteProcess,
    Result,
    Transport,
    TransportError,
    timed_out,
    zip_hosts,
)

_T = TypeVar("_T")

# Run by the node's sh with positional arguments only (never spliced user data): make the directory if needed,
# write a temp file next to the destination, rename it into place, print its sha256. Only cat, mv and sha256sum
# are separate programs: the push is on the launch path of every node.
INLINE_STDIN_LIMIT = 256 * 1024  # below paramiko's and sshd's 2 MiB channel window: sendall cannot block
REMOTE_SLACK_S = 2  # the node's timeout fires this long after ours gave up (we report, it kills)
KILL_AFTER_S = 5  # then SIGKILL what ignored its SIGTERM
READ_CHUNK = 65536
# paramiko's Channel.sendall re-slices what is left after every send (`s = s[sent:]`, paramiko/channel.py), and a
# send carries at most one packet (32 KiB): a 50 MB stdin was copied ~1,600 times, 40 GB of memcpy per node under
# the GIL (bench/sync.py at 64 nodes: under 1 MB/s in all). _feed hands paramiko one packet's worth at a time.
FEED_CHUNK = 32 * 1024
# paramiko's transport thread reads its socket with a 0.1 s timeout (`Transport._active_check_timeout`) only to
# notice its own close and to send keepalives: ten wake-ups a second per idle connection, measured at ~1 ms of
# head CPU per node per second (bench/ssh_reuse.py), the largest cost of following 250 nodes. Once a second is
# enough for keepalives (whole seconds, below); our close shuts the socket down first, which wakes the read at once.
IDLE_POLL_S = 1.0
# Back-off between connection attempts (ssh.connection_attempts), doubling from this: a node whose sshd answered
# late once (250 simulated nodes on 2 cores: "Error reading SSH protocol banner", "Authentication timeout.") is
# tried again after the crowd has thinned, not at once.
RETRY_PAUSE_S = 1.0
# What paramiko says when a step of the handshake ran out of time: it raises SSHException or
# AuthenticationException for these with no timeout type of their own (paramiko/transport.py
# `_check_banner` and `open_channel`, paramiko/auth_handler.py `wait_for_response`), so the text is the only sign.
_PARAMIKO_TIMEOUTS = (
    "Error reading SSH protocol banner",
    "Authentication timeout",
    "Timeout opening channel",
)


# SSHClient.connect's key exchange runs for `timeout` (Transport.start_client), which returns without an error when
# that time is up even though the exchange has not finished; the authentication that follows then raises "No
# existing session" (paramiko/transport.py `auth_publickey`: not active or no initial kex). Raised by connect, it
# means the negotiation ran out of time (a dead link makes start_client raise instead); elsewhere it is a dead link.
_NEGOTIATION_UNFINISHED = "No existing session"


def _paramiko_timed_out(exc: BaseException, connecting: bool = False) -> bool:
    signs = (*_PARAMIKO_TIMEOUTS, _NEGOTIATION_UNFINISHED) if connecting else _PARAMIKO_TIMEOUTS
    return any(sign in str(exc) for sign in signs)


class _HandshakeTimeout(TransportError):
    """The node accepted the TCP connection but its sshd did not finish the banner or the authentication in
    time: a busy node, tried again (ssh.connection_attempts). A node that does not answer the connect at all is
    not: the kernel has retried its SYNs for the whole connect_timeout already."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(host, reason, TIMEOUT)


# How long the reader thread waits for an EOF being sent before it answers the node's CHANNEL_CLOSE anyway
# (`_send_eof`): a bound, so that a send held up by a key exchange cannot stop the reader for good.
EOF_ORDER_WAIT_S = 2.0


def _eof_lock(chan: paramiko.Channel) -> threading.Lock | None:
    """The connection's EOF-order lock (`_QuietTransport.eof_order`); None for a channel of another transport."""
    return getattr(getattr(chan, "transport", None), "eof_order", None)


def _handle_close_after_eof(chan: paramiko.Channel, m: paramiko.Message) -> None:
    """paramiko's CHANNEL_CLOSE handler, run only once no EOF of ours is between being built and being sent."""
    lock = _eof_lock(chan)
    held = lock.acquire(timeout=EOF_ORDER_WAIT_S) if lock is not None else False
    try:
        paramiko.Channel._handle_close(chan, m)
    finally:
        if held:
            assert lock is not None
            lock.release()


class _QuietTransport(paramiko.Transport):
    """paramiko's Transport with fewer idle wake-ups (IDLE_POLL_S) and EOF before CLOSE on the wire (`_send_eof`);
    the hook is SSHClient.connect's `transport_factory` (paramiko 3.2+)."""

    _active_check_timeout = IDLE_POLL_S
    _channel_handler_table: ClassVar[dict[int, Callable[[paramiko.Channel, paramiko.Message], None]]] = {
        **paramiko.Transport._channel_handler_table,
        paramiko.common.MSG_CHANNEL_CLOSE: _handle_close_after_eof,
    }

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.eof_order = threading.Lock()


def _send_eof(chan: paramiko.Channel) -> None:
    """`chan.shutdown_write()`, never sent after our CLOSE.

    paramiko builds the EOF under the channel's lock but sends it after releasing it; a node's CHANNEL_CLOSE
    read in between makes the reader thread answer with CLOSE first, and OpenSSH then drops the whole connection
    ("ieof packet referred to nonexistent channel": every command and follower on that node is lost). paramiko
    issues #1115 and #1705, open since 2017; met here by 6 threads running `echo` on one node under load (CI,
    turn 8). One lock per connection, which the CLOSE handler above also takes, keeps EOF first."""
    lock = _eof_lock(chan)
    if lock is None:
        chan.shutdown_write()
        return
    with lock:
        chan.shutdown_write()


class SSHTransport(Transport):
    name = "ssh"

    def __init__(self, endpoints: dict[str, Endpoint], max_parallel: int = 64):
        super().__init__(endpoints, max_parallel)
        raise_fd_limit(FDS_PER_NODE * len(endpoints) + 256)
        cap_malloc_arenas()
        self._clients: dict[str, paramiko.SSHClient] = {}
        self._host_locks: dict[str, threading.Lock] = {h: threading.Lock() for h in endpoints}
        self._known_hosts_lock = threading.Lock()
        self._parsed_keys: dict[str, tuple[tuple[int, int, int], paramiko.HostKeys]] = {}
        self._identities: dict[str, tuple[tuple[int, int, int], paramiko.PKey]] = {}
        self._identities_lock = threading.Lock()
        # Connection attempts that timed out and were tried again (ssh.connection_attempts).
        self.retried_connects = 0

    # ------------------------------------------------------------------------------------------ connections
    def connect(self, host: str) -> None:
        self._client(host)

    def connect_all(self, hosts: Sequence[str] | None = None) -> dict[str, str]:
        """Connect to many nodes in parallel; returns host -> error line for those that failed."""

        def one(host: str) -> str | None:
            try:
                self._client(host)
                return None
            except TransportError as exc:
                return exc.reason

        results = zip_hosts(list(hosts or self.endpoints), one, self.max_parallel)
        return {h: err for h, err in results if err}

    def close(self) -> None:
        for host in list(self._clients):
            with self._lock_for(host):
                client = self._clients.pop(host, None)
            if client is not None:
                _close_client(client)

    def socket(self, host: str) -> socket.socket:
        """The TCP socket under host's connection (for diagnostics and tests)."""
        sock = self._client(host).get_transport().sock  # type: ignore[union-attr]
        assert isinstance(sock, socket.socket)
        return sock

    def _lock_for(self, host: str) -> threading.Lock:
        self.check_host(host)
        return self._host_locks[host]

    def _client(self, host: str) -> paramiko.SSHClient:
        with self._lock_for(host):
            client = self._clients.get(host)
            transport = client.get_transport() if client else None
            if client is not None and transport is not None and transport.is_active():
                return client
            if client is not None:
                client.close()  # the link died: reconnect once, here
            client = self._open_with_retries(self.endpoints[host])
            self._clients[host] = client
            return client

    def _open_with_retries(self, ep: Endpoint) -> paramiko.SSHClient:
        """`_open`, tried again while the handshake only ran out of time (`_HandshakeTimeout`), up to
        ep.connection_attempts tries with a doubling pause (OpenSSH's ConnectionAttempts, ssh_config(5)); silence
        to the connect, a refusal, a bad key or a changed host key fails at once."""
        pause = RETRY_PAUSE_S
        for attempt in range(1, max(1, ep.connection_attempts) + 1):
            try:
                return self._open(ep)
            except TransportError as exc:
                if not isinstance(exc, _HandshakeTimeout) or attempt >= ep.connection_attempts:
                    if attempt > 1:
                        raise TransportError(
                            ep.host, f"{exc.reason} ({attempt} attempts)", exc.kind
                        ) from None
                    raise
                self.retried_connects += 1
                time.sleep(pause)
                pause *= 2
        raise AssertionError("unreachable")  # the loop returns or raises

    def _open(self, ep: Endpoint) -> paramiko.SSHClient:
        where = f"{ep.host} ({ep.address}:{ep.port})"
        if ep.identity_file and not os.path.isfile(ep.identity_file):
            raise TransportError(
                ep.host,
                f"identity file {ep.identity_file} for {ep.host} not found: fix ssh.identity_file",
                AUTH,
            )
        if ep.host_key_policy == "accept-new" and not ep.known_hosts:
            # OpenSSH records first-seen keys in UserKnownHostsFile; with none, "accept-new" would trust every
            # key on every connection and remember nothing: no better than no checking at all.
            raise TransportError(
                ep.host,
                "ssh.host_key_policy accept-new needs a known_hosts file to remember keys in (set ssh.known_hosts)",
                HOST_KEY,
            )
        identity = self._identity(ep.identity_file) if ep.identity_file else None
        sock = _tcp_socket(ep)
        client = paramiko.SSHClient()
        # paramiko trusts the system file's keys for a node first and the user's only where it has none; both
        # land in the client's own table here, which is all paramiko's check reads.
        name = _known_hosts_name(ep)
        known: dict[str, paramiko.PKey] = {}
        if os.path.isfile(GLOBAL_KNOWN_HOSTS):
            # OpenSSH also trusts the system-wide file (GlobalKnownHostsFile); keys there are never written to.
            with contextlib.suppress(OSError, paramiko.SSHException):
                known = dict(self._host_keys(GLOBAL_KNOWN_HOSTS).lookup(name) or {})
        if not known and ep.known_hosts and os.path.exists(ep.known_hosts):
            try:
                known = dict(self._host_keys(ep.known_hosts).lookup(name) or {})
            except (OSError, paramiko.SSHException) as exc:
                sock.close()
                client.close()  # also ends its reader thread, which would log about the dead socket
                raise TransportError(
                    ep.host, f"cannot read known_hosts {ep.known_hosts}: {exc}", HOST_KEY
                ) from None
        for keytype, key in known.items():
            client.get_host_keys().add(name, keytype, key)
        if ep.host_key_policy == "accept-new":
            client.set_missing_host_key_policy(_AcceptNew(ep, self._known_hosts_lock))
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                ep.address,
                port=ep.port,
                username=ep.user or _local_user(),
                pkey=identity,
                key_filename=None if identity else ep.identity_file,
                # Only the configured key when one is given; paramiko's defaults (agent, ~/.ssh/id_*) otherwise.
                look_for_keys=ep.identity_file is None,
                allow_agent=ep.identity_file is None,
                sock=sock,
                timeout=ep.connect_timeout,
                banner_timeout=ep.connect_timeout,
                auth_timeout=ep.connect_timeout,
                channel_timeout=ep.connect_timeout,
                transport_factory=_QuietTransport,
            )
        except paramiko.BadHostKeyException as exc:
            sock.close()
            client.close()  # also ends its reader thread, which would log about the dead socket
            raise TransportError(
                ep.host,
                f"HOST KEY CHANGED for {where}: it now presents {exc.key.get_name()} {_fingerprint(exc.key)}, "
                f"not the key in {ep.known_hosts} - possible MITM attack; if the node was reinstalled, remove "
                f"the old key with `ssh-keygen -R {_known_hosts_name(ep)} -f {ep.known_hosts}`",
                HOST_KEY,
            ) from None
        except paramiko.AuthenticationException as exc:
            sock.close()
            client.close()  # also ends its reader thread, which would log about the dead socket
            if _paramiko_timed_out(exc):  # no answer in time is not a refused key
                raise _HandshakeTimeout(
                    ep.host,
                    f"authentication at {where} took longer than {ep.connect_timeout:g}s (a busy node or sshd): "
                    "raise ssh.connect_timeout or ssh.connection_attempts if the node is just slow",
                ) from None
            key = ep.identity_file or "paramiko's default keys"
            raise TransportError(
                ep.host,
                f"authentication failed for {ep.user or _local_user()}@{where} with {key} ({exc}): add the public key "
                "to the node's ~/.ssh/authorized_keys or fix ssh.identity_file / ssh.user",
                AUTH,
            ) from None
        except paramiko.SSHException as exc:
            sock.close()
            client.close()  # also ends its reader thread, which would log about the dead socket
            if "not found in known_hosts" in str(exc):
                raise TransportError(
                    ep.host,
                    f"unknown host key for {where}: add it with "
                    f"`ssh-keyscan -p {ep.port} {ep.address} >> {ep.known_hosts or '~/.ssh/known_hosts'}` "
                    "or set ssh.host_key_policy: accept-new",
                    HOST_KEY,
                ) from None
            if _paramiko_timed_out(exc, connecting=True):
                raise _HandshakeTimeout(
                    ep.host,
                    f"SSH handshake with {where} got no answer within {ep.connect_timeout:g}s ({exc}): a busy or "
                    "hung node; raise ssh.connect_timeout or ssh.connection_attempts if the node is just slow",
                ) from None
            raise TransportError(ep.host, f"SSH handshake with {where} failed: {exc}") from None
        except (OSError, EOFError) as exc:
            sock.close()
            client.close()  # also ends its reader thread, which would log about the dead socket
            # paramiko's EOFError has no text: say what it means rather than end the message on a colon.
            why = str(exc) or ("the node closed the connection" if isinstance(exc, EOFError) else repr(exc))
            raise TransportError(ep.host, f"connection to {where} failed during SSH setup: {why}") from None
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(max(1, round(ep.keepalive)))
        return client

    def _identity(self, path: str) -> paramiko.PKey | None:
        """ssh.identity_file's key, read once per transport while the file is unchanged: given the file name, paramiko
        parses it again for every connection, trying each key class in turn (three parses per connection for an
        ed25519 key, ~0.9 ms of a 4-6 ms handshake; bench/scale.py). None where it cannot be read here (a passphrase,
        an unknown format): paramiko then reads the file itself and says why it cannot."""
        try:
            return self._parsed_once(self._identities, self._identities_lock, path, paramiko.PKey.from_path)
        except (OSError, ValueError, paramiko.SSHException):
            return None

    def _host_keys(self, path: str) -> paramiko.HostKeys:
        """The file's keys, parsed once per transport while the file stays the same (inode, size, mtime).

        paramiko's `load_host_keys` parses the whole file for every connection: a known_hosts that names every
        node made connecting N nodes cost O(N²) key parses (~35 ms each connection at 250 nodes, bench/ssh_reuse.py).
        Keys accept-new adds change the file's stat, so the next connection reads it again."""
        return self._parsed_once(self._parsed_keys, self._known_hosts_lock, path, paramiko.HostKeys)

    @staticmethod
    def _parsed_once(
        cache: dict[str, tuple[tuple[int, int, int], _T]],
        lock: threading.Lock,
        path: str,
        parse: Callable[[str], _T],
    ) -> _T:
        """`parse(path)`, kept in `cache` while the file's inode, size and mtime stay the same."""
        st = os.stat(path)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with lock:
            cached = cache.get(path)
            if cached is None or cached[0] != stamp:
                cached = (stamp, parse(path))
                cache[path] = cached
            return cached[1]

    # ---------------------------------------------------------------------------------------------- commands
    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        command = shlex.join(argv)
        if timeout is not None:
            # Closing our channel does not end a quiet remote command (no pty, no SIGHUP): coreutils' timeout on
            # the node ends it (and its process group) shortly after we give up waiting. A daemon that calls
            # setsid (the guard) leaves that group and lives on, as it must.
            command = f"exec timeout -k {KILL_AFTER_S} {math.ceil(timeout) + REMOTE_SLACK_S} {command}"
        try:
            chan = self._exec(host, command, timeout)
        except TransportError as exc:
            return Result(host, None, error=exc.reason, failure=exc.kind, seconds=time.monotonic() - started)
        try:
            if stdin and len(stdin) > INLINE_STDIN_LIMIT:
                # Large input: feed it from a thread so that a remote writing lots of output cannot deadlock us.
                threading.Thread(target=_feed, args=(chan, stdin), daemon=True).start()
            else:
                if stdin:
                    chan.sendall(stdin)
                _send_eof(chan)
            out, err, over = _drain(chan, deadline)
            if over:
                return timed_out(host, argv, timeout, "channel closed", _text(out), _text(err), started)
            # paramiko reports -1 both for a dead link and for a remote killed by a signal (it ignores
            # exit-signal): only a dead transport makes it a transport error.
            code = chan.recv_exit_status()
            if code == -1 and not self._alive(host):
                error = f"connection to {host} lost while running {argv[0]} (node down or network partition)"
                return Result(
                    host, None, _text(out), _text(err), error=error, seconds=time.monotonic() - started
                )
            return Result(host, code, _text(out), _text(err), seconds=time.monotonic() - started)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            return Result(
                host, None, error=f"connection to {host} lost: {exc}", seconds=time.monotonic() - started
            )
        finally:
            chan.close()

    def _start(
        self, host: str, argv: Sequence[str], on_line: LineCallback, on_exit: ExitCallback | None
    ) -> RemoteProcess:
        chan = self._exec(host, shlex.join(argv), self.endpoints[host].connect_timeout)
        return SSHProcess(host, chan, on_line, on_exit)

    def _exec(self, host: str, command: str, timeout: float | None) -> paramiko.Channel:
        client = self._client(host)
        transport = client.get_transport()
        try:
            assert transport is not None
            chan = transport.open_session(timeout=timeout)
            chan.exec_command(command)
            return chan
        except (OSError, EOFError, paramiko.SSHException, AssertionError) as exc:
            raise TransportError(
                host,
                f"cannot start a command on {host}: {exc or type(exc).__name__}",
                TIMEOUT if _paramiko_timed_out(exc) else UNREACHABLE,
            ) from None

    def _alive(self, host: str) -> bool:
        client = self._clients.get(host)
        transport = client.get_transport() if client else None
        return bool(transport and transport.is_active())


FDS_PER_NODE = 6  # the socket, a follower channel's event pipe (paramiko Channel.fileno), a log file, slack


def raise_fd_limit(wanted: int) -> None:
    """Raise the soft RLIMIT_NOFILE towards the hard limit when a run needs more descriptors than it allows.

    Many systems still start sessions with a soft limit of 1024 (the select() era's default), and the head keeps
    a few descriptors per node open for the whole run: at ~250 nodes it would fail with EMFILE. Raising the soft
    limit up to the hard one is what the kernel's split is for (getrlimit(2); systemd's advice is the same:
    a program that needs many descriptors raises its own soft limit)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


MALLOC_ARENAS = 4  # glibc's M_ARENA_MAX for the head; MALLOC_ARENA_MAX in the environment wins


def cap_malloc_arenas() -> None:
    """Cap glibc's malloc arenas at MALLOC_ARENAS unless the user set MALLOC_ARENA_MAX.

    glibc gives a thread that finds the arenas busy an arena of its own, up to 8 per core, and keeps each one's
    high-water mark for the life of the process (mallopt(3) M_ARENA_MAX; sourceware.org/glibc/wiki/MallocInternals).
    The head runs a paramiko reader thread per node and a thread pool of up to ssh.max_parallel; most of their
    allocations happen one at a time under the GIL, so the extra arenas buy little speed and much resident memory
    (odoo/odoo#42306 caps its threaded Python server the same way). 128 simulated nodes' `up --detach` (turn 17, one
    run each, noisy): glibc's default 150-156 MiB; capped at 2, 107-108 MiB but one run of two 25 % slower (the
    crypto that runs without the GIL contends for two arenas); at 4, 109-110 MiB and no slower than the default. Called
    before the transport starts any thread; a no-op off glibc."""
    import ctypes

    if "MALLOC_ARENA_MAX" in os.environ:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return
        ctypes.CDLL(None).mallopt(-8, MALLOC_ARENAS)  # -8: M_ARENA_MAX in glibc's malloc.h


class SSHProcess(LineProcess):
    """A command on an exec channel; a reader thread turns its output into lines."""

    def __init__(
        self, host: str, chan: paramiko.Channel, on_line: LineCallback, on_exit: ExitCallback | None
    ):
        self._chan = chan
        self._send_lock = threading.Lock()
        self._unsent = b""  # the rest of a message try_write could only send in part
        super().__init__(host, on_line, on_exit, f"rlaunch-ssh-{host}")

    def _read(self) -> None:
        pending = {"stdout": b"", "stderr": b""}
        fd = self._chan.fileno()  # a pipe paramiko makes readable on data from either stream and on close
        try:
            while True:
                got = False
                while self._chan.recv_ready():
                    pending["stdout"] = self._lines("stdout", pending["stdout"] + self._chan.recv(READ_CHUNK))
                    got = True
                while self._chan.recv_stderr_ready():
                    pending["stderr"] = self._lines(
                        "stderr", pending["stderr"] + self._chan.recv_stderr(READ_CHUNK)
                    )
                    got = True
                if _finished(self._chan):
                    break
                if not got:
                    select.select([fd], [], [], 1.0)
        except (OSError, EOFError, paramiko.SSHException):
            pass
        finally:
            self._flush(pending)
            # paramiko ignores exit-signal: a remote killed by a signal, like a dropped link, reads as -1.
            code = self._chan.exit_status if self._chan.exit_status_ready() else -1
            self._ended(-1 if code is None or code < 0 else code)

    def write(self, data: bytes) -> None:
        try:
            self._chan.sendall(data)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(self.host, f"cannot write to the command on {self.host}: {exc}") from None

    def try_write(self, data: bytes) -> bool:
        """Only when the channel's send window has room (paramiko's `send_ready`): `sendall` would otherwise wait
        for the node to drain it, and a heartbeat that waits behind one slow node starves every other (issue 23).
        A short send keeps its rest for the next call, so a message is never cut in two."""
        with self._send_lock:
            try:
                if self._unsent:
                    if not self._chan.send_ready():
                        return False
                    self._unsent = self._unsent[self._chan.send(self._unsent) :]
                    if self._unsent:
                        return False
                if not self._chan.send_ready():
                    return False
                self._unsent = data[self._chan.send(data) :]
                return True
            except (OSError, EOFError, paramiko.SSHException) as exc:
                raise TransportError(
                    self.host, f"cannot write to the command on {self.host}: {exc}"
                ) from None

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            _send_eof(self._chan)

    def close(self) -> None:
        self._chan.close()  # sshd closes the command's pipes: EOF on stdin, EPIPE on its next write
        self._done.wait(5.0)


# paramiko logs banner tracebacks and "Socket exception: Bad file descriptor" from its reader thread; with no
# handler, Python's last-resort handler prints them on the user's terminal mid-`up`. Every failure we care about
# reaches us as an exception and becomes one line, so its log goes nowhere unless the user configures logging.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

GLOBAL_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"  # OpenSSH's default GlobalKnownHostsFile (ssh_config(5))


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """OpenSSH's StrictHostKeyChecking=accept-new: remember first-seen keys (changed keys never reach here)."""

    def __init__(self, ep: Endpoint, lock: threading.Lock):
        self.ep = ep
        self.lock = lock

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        if not self.ep.known_hosts:
            return
        line = f"{_known_hosts_name(self.ep)} {key.get_name()} {key.get_base64()}\n"
        with self.lock:
            # Like OpenSSH, write through a symlinked known_hosts (dotfiles managers link it) instead of replacing
            # the link with a regular file.
            path = os.path.realpath(self.ep.known_hosts)
            old = ""
            with contextlib.suppress(FileNotFoundError), open(path) as f:
                old = f.read()
            if old and not old.endswith("\n"):
                old += "\n"
            _atomic_write(path, old + line)


def _atomic_write(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".known_hosts.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _tcp_socket(ep: Endpoint) -> socket.socket:
    """Connect with the options paramiko does not set; one-line errors that say what to check."""
    where = f"{ep.host} ({ep.address}:{ep.port})"
    try:
        infos = socket.getaddrinfo(ep.address, ep.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise TransportError(
            ep.host,
            f"cannot resolve {ep.address!r} for {ep.host}: {exc.strerror}; fix nodes[].address in the inventory "
            "or the head node's DNS / /etc/hosts",
        ) from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        idle = max(1, round(ep.keepalive))
        for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", idle), ("TCP_KEEPCNT", 3)):
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
        if hasattr(socket, "TCP_USER_TIMEOUT"):
            # Unacknowledged data (our SSH keepalives included) for this long kills the socket: a dead link
            # surfaces within ~3 keepalive periods instead of after minutes of TCP retransmissions.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(idle * 3 * 1000))
        sock.settimeout(ep.connect_timeout)
        sock.connect(addr)
        return sock
    except ConnectionRefusedError:
        sock.close()
        raise TransportError(
            ep.host,
            f"connection refused by {where}: is sshd running there and is the port ({ep.port}) right?",
        ) from None
    except TimeoutError:
        sock.close()
        raise TransportError(
            ep.host,
            f"timed out after {ep.connect_timeout:g}s connecting to {where}: node down, wrong address or a "
            "firewall; raise ssh.connect_timeout if the network is just slow",
            TIMEOUT,
        ) from None
    except OSError as exc:
        sock.close()
        hint = ""
        if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            hint = ": node down, wrong address, or no route from the head node"
        raise TransportError(ep.host, f"cannot connect to {where}: {exc.strerror or exc}{hint}") from None


def _close_client(client: paramiko.SSHClient) -> None:
    """Shut the socket down before paramiko closes it: a shutdown wakes the transport thread's pending read at
    once (poll(2) reports the hang-up), where a bare close leaves it asleep until its IDLE_POLL_S timeout."""
    transport = client.get_transport()
    sock = getattr(transport, "sock", None)
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    client.close()


def _drain(chan: paramiko.Channel, deadline: float | None) -> tuple[bytes, bytes, bool]:
    """Read stdout and stderr together until the channel closes; (out, err, timed_out)."""
    out: list[bytes] = []
    err: list[bytes] = []
    fd = chan.fileno()
    while True:
        while chan.recv_ready():
            out.append(chan.recv(READ_CHUNK))
        while chan.recv_stderr_ready():
            err.append(chan.recv_stderr(READ_CHUNK))
        if _finished(chan):
            return b"".join(out), b"".join(err), False
        wait = 1.0 if deadline is None else deadline - time.monotonic()
        if wait <= 0:
            return b"".join(out), b"".join(err), True
        select.select([fd], [], [], min(wait, 1.0))


def _finished(chan: paramiko.Channel) -> bool:
    """Closed, or EOF and exit status seen, with nothing left to read (data always precedes EOF)."""
    ended = chan.closed or (chan.eof_received and chan.exit_status_ready())
    return ended and not (chan.recv_ready() or chan.recv_stderr_ready())


def _feed(chan: paramiko.Channel, data: bytes) -> None:
    """Send all of `data`, copying each byte once (FEED_CHUNK), then EOF."""
    view = memoryview(data)
    with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
        while view:
            sent = chan.send(view[:FEED_CHUNK].tobytes())
            if sent <= 0:
                return  # the channel closed under us: the remote's exit status says why
            view = view[sent:]
        _send_eof(chan)


def _text(data: bytes) -> str:
    return data.decode(errors="replace")


def _fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's form: SHA256:<unpadded base64>."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


def _known_hosts_name(ep: Endpoint) -> str:
    return ep.address if ep.port == 22 else f"[{ep.address}]:{ep.port}"


def _local_user() -> str:
    import getpass

    return getpass.getuser()
