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
    Endpoint,
    ExitCallback,
    LineCallback,
    LineProcess,
    RemoteProcess,
    Result,
    Transport,
    TransportError,
    timed_out,
)

# What a remote shell answers when the program does not exist, so both transports read the same.
NOT_FOUND_EXIT = 127
KILL_GRACE = 2.0


class LocalTransport(Transport):
    name = "local"

    def __init__(self, endpoints: dict[str, Endpoint], max_parallel: int = 64):
        super().__init__(endpoints, max_parallel)

    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        started = time.monotonic()
        try:
            self.check_host(host)
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
        out, err, over = communicate(proc, stdin, timeout, _kill_group)
        if over:
            return timed_out(host, argv, timeout, "process group killed", _text(out), _text(err), started)
        return Result(
            host, _exit_code(proc.returncode), _text(out), _text(err), seconds=time.monotonic() - started
        )

    def put(self, host: str, data: bytes, dest: str, *, timeout: float | None = 60.0) -> Result:
        """Write data to dest atomically (temp file + rename, mode 600); stdout is `sha256  dest` like SSH's."""
        self.check_host(host)
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

    def _start(
        self, host: str, argv: Sequence[str], on_line: LineCallback, on_exit: ExitCallback | None
    ) -> RemoteProcess:
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


class LocalProcess(LineProcess):
    close_wait = 5.0  # how long close() lets the reader see the end before it closes the pipes

    def __init__(
        self, host: str, proc: subprocess.Popen[bytes], on_line: LineCallback, on_exit: ExitCallback | None
    ):
        self.pid = proc.pid  # also its process group id (new session)
        self._proc = proc
        self._closed = False
        self._lock = threading.Lock()
        super().__init__(host, on_line, on_exit, f"rlaunch-local-{host}")

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
                    pending[name] = self._lines(name, pending[name] + chunk)
                if self._closed:
                    break
        finally:
            selector.close()
            self._flush(pending)
            if self._closed and self._proc.poll() is None:
                # Like a dropped SSH link: we no longer learn how it ends. Reap it quietly in the background.
                threading.Thread(target=self._proc.wait, daemon=True).start()
                self._ended(-1)
            else:
                self._ended(_exit_code(self._proc.wait()))

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

    def _end(self) -> None:
        """What close() does to the command after EOF on its stdin: nothing here, like a dropped SSH link (the
        node guard relies on it); an srun step is cancelled instead (SrunProcess)."""

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.close_stdin()
        self._end()
        self._done.wait(self.close_wait)
        for pipe in (self._proc.stdout, self._proc.stderr):
            with contextlib.suppress(OSError):
                if pipe:
                    pipe.close()  # its next write gets EPIPE, as after sshd closes the channel


def _exit_code(returncode: int) -> int:
    """Killed by signal N reads as 128+N, as a remote shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


def communicate(
    proc: subprocess.Popen[bytes],
    stdin: bytes | None,
    timeout: float | None,
    stop: Callable[[subprocess.Popen[bytes]], None],
) -> tuple[bytes, bytes, bool]:
    """A child's stdout and stderr once it ended: (out, err, timed_out). Past timeout, stop(proc) ends it (its
    process group, or srun's step) and what it wrote until then is kept: what both head-side child transports
    (local, srun) do, as SSH's _drain does for a channel."""
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        return out, err, False
    except subprocess.TimeoutExpired:
        stop(proc)
        out, err = proc.communicate()
        return out, err, True


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
