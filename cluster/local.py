"""Local transport: every "node" is this machine, told apart by its own run directory.

Same contract as SSH: argv is run without a shell, failures to start land in the Result, and `start()` puts the
command in a new session (start_new_session=True) so that `close()` behaves like a dropped SSH link: the command
sees EOF on stdin and EPIPE on its next write, and nothing is signalled. That is what the node guard relies on.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from hashlib import sha256
from typing import IO

from cluster.transport import (
    TIMEOUT,
    Endpoint,
    LineCallback,
    RemoteProcess,
    Result,
    Transport,
    TransportError,
)

# What a remote shell answers when the program does not exist, so both transports read the same.
NOT_FOUND_EXIT = 127
KILL_GRACE = 2.0


class LocalTransport(Transport):
    name = "local"

    def __init__(self, endpoints: dict[str, Endpoint], max_parallel: int = 64):
        super().__init__(endpoints, max_parallel)

    def _check(self, host: str) -> None:
        if host not in self.endpoints:
            raise TransportError(host, f"unknown node {host!r}: not in the inventory")

    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        started = time.monotonic()
        try:
            self._check(host)
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, so a timeout can kill all of it
            )
        except TransportError as exc:
            return Result(host, None, error=exc.reason, failure=exc.kind)
        except (FileNotFoundError, PermissionError) as exc:
            code = NOT_FOUND_EXIT if isinstance(exc, FileNotFoundError) else 126
            return Result(
                host, code, stderr=f"{argv[0]}: {exc.strerror}\n", seconds=time.monotonic() - started
            )
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            return Result(
                host,
                None,
                _text(out),
                _text(err),
                error=f"timed out after {timeout:g}s running {argv[0]} on {host} (process group killed)",
                failure=TIMEOUT,
                seconds=time.monotonic() - started,
            )
        return Result(
            host, _exit_code(proc.returncode), _text(out), _text(err), seconds=time.monotonic() - started
        )

    def put(self, host: str, data: bytes, dest: str, *, timeout: float | None = 60.0) -> Result:
        """Write data to dest atomically (temp file + rename, mode 600); stdout is `sha256  dest` like SSH's."""
        self._check(host)
        directory = os.path.dirname(os.path.abspath(dest))
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(dest)}.tmp.")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, dest)
        except OSError as exc:
            return Result(host, 1, stderr=f"{dest}: {exc.strerror}\n")
        return Result(host, 0, stdout=f"{sha256(data).hexdigest()}  {dest}\n")

    def start(
        self,
        host: str,
        argv: Sequence[str],
        on_line: LineCallback,
        *,
        on_exit: Callable[[int], None] | None = None,
    ) -> RemoteProcess:
        self._check(host)
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(host, f"cannot start {argv[0]} on {host}: {exc.strerror}") from None
        return LocalProcess(host, proc, on_line, on_exit)


class LocalProcess(RemoteProcess):
    def __init__(
        self,
        host: str,
        proc: subprocess.Popen[bytes],
        on_line: LineCallback,
        on_exit: Callable[[int], None] | None,
    ):
        self.host = host
        self.pid = proc.pid  # also its process group id (new session)
        self._proc = proc
        self._on_line = on_line
        self._on_exit = on_exit
        self._code: int | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read, name=f"rlaunch-local-{host}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        selector = selectors.DefaultSelector()
        assert self._proc.stdout and self._proc.stderr
        streams: dict[IO[bytes], str] = {self._proc.stdout: "stdout", self._proc.stderr: "stderr"}
        pending = {"stdout": b"", "stderr": b""}
        for pipe in streams:
            selector.register(pipe, selectors.EVENT_READ)
        try:
            while selector.get_map():
                for key, _ in selector.select(timeout=0.5):
                    pipe = key.fileobj
                    try:
                        chunk = os.read(key.fd, 65536)
                    except OSError:
                        chunk = b""
                    name = streams[pipe]  # type: ignore[index]
                    if not chunk:
                        selector.unregister(pipe)
                        continue
                    *lines, pending[name] = (pending[name] + chunk).split(b"\n")
                    for line in lines:
                        self._deliver(name, line)
                if self._closed:
                    break
        finally:
            selector.close()
            for name, rest in pending.items():
                if rest:
                    self._deliver(name, rest)
            if self._closed and self._proc.poll() is None:
                # Like a dropped SSH link: we no longer learn how it ends. Reap it quietly in the background.
                threading.Thread(target=self._proc.wait, daemon=True).start()
                self._code = -1
            else:
                self._code = _exit_code(self._proc.wait())
            self._done.set()
            if self._on_exit:
                self._on_exit(self._code)

    def _deliver(self, stream: str, line: bytes) -> None:
        with contextlib.suppress(
            Exception
        ):  # a failing callback must not kill the reader (and hide the exit)
            self._on_line(stream, line.rstrip(b"\r").decode(errors="replace"))

    def write(self, data: bytes) -> None:
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise TransportError(self.host, f"cannot write to the command on {self.host}: {exc}") from None

    def try_write(self, data: bytes) -> bool:
        """Only when the pipe has room (poll says writable): on Linux a write of at most PIPE_BUF bytes to a
        writable pipe completes at once (pipe(7)), so a node whose follower stopped reading never blocks us."""
        if len(data) > select.PIPE_BUF:
            self.write(data)
            return True
        try:
            assert self._proc.stdin is not None
            fd = self._proc.stdin.fileno()
            _, writable, _ = select.select([], [fd], [], 0)
            if not writable:
                return False
            os.write(fd, data)
            return True
        except (OSError, ValueError) as exc:
            raise TransportError(self.host, f"cannot write to the command on {self.host}: {exc}") from None

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self._proc.stdin is not None
            self._proc.stdin.close()

    def poll(self) -> int | None:
        return self._code if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int | None:
        self._done.wait(timeout)
        return self.poll()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.close_stdin()
        self._done.wait(5.0)
        for pipe in (self._proc.stdout, self._proc.stderr):
            with contextlib.suppress(OSError):
                if pipe:
                    pipe.close()  # its next write gets EPIPE, as after sshd closes the channel


def _exit_code(returncode: int) -> int:
    """Killed by signal N reads as 128+N, as a remote shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 15)
    try:
        proc.wait(KILL_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)


def _text(data: bytes | None) -> str:
    return (data or b"").decode(errors="replace")
