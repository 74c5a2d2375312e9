"""The follower every channel to a guard runs (`guard.py follow`, and `run` after its start): streams out.log's
lines, the job's process list, kernel and GPU records and the final state as protocol records, one JSON a line, and
reads the head's words (heartbeat, stop) from its stdin. Standard library only (pushed beside guard.py).
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import sys
import threading
import time

if __package__:  # imported by the head or tests as launcher.node.*
    from launcher.node import gpuwatch, protocol
    from launcher.node import procs as proctab
    from launcher.node import rundir as rd
    from launcher.node.teelines import TeeJoin
else:  # imported by guard.py run as a script from the run directory, beside this file
    import gpuwatch  # type: ignore[no-redef]
    import procs as proctab  # type: ignore[no-redef]
    import protocol  # type: ignore[no-redef]
    import rundir as rd  # type: ignore[no-redef]
    from teelines import TeeJoin  # type: ignore[no-redef]

PROCS_EVERY_S = 1.0
# The guard rewrites procs.json after each walk (daemon.RECORD_EVERY_S, 1 s); an older one is a guard that stopped
# walking (stopped itself, or starved of CPU): the follower then walks /proc itself.
SNAPSHOT_MAX_AGE_S = 5.0
STATE_WAIT_S = 10.0


class LogTail:
    """Turns the growing out.log into ("line", offset-after-line, text) records, torchrun's cut lines joined
    (teelines.py): every record carries the offset after the out.log line that completed it."""

    def __init__(self, path: str, offset: int) -> None:
        self.path = path
        self.offset = offset  # bytes consumed so far (emitted or skipped)
        self.pending = b""
        self.skipping = False  # inside an over-long line whose head was already emitted
        self.file = None
        self.join = TeeJoin()

    def read(self, final: bool = False) -> list:
        if self.file is None:
            try:
                self.file = os.fdopen(
                    rd.open_nofollow(self.path, os.O_RDONLY), "rb"
                )  # kept open while following
            except FileNotFoundError:
                return []
            self.file.seek(self.offset)
        out = []
        while True:
            chunk = self.file.read(65536)
            if not chunk:
                break
            out.extend(self.split(chunk))
        if final and self.pending:
            out.extend(self.emit(self.pending, len(self.pending)))
            self.pending = b""
        out.extend((self.offset, text) for text in (self.join.flush() if final else self.join.bars()))
        return out

    def emit(self, raw: bytes, consumed: int) -> list:
        self.offset += consumed
        text = raw[: protocol.MAX_LINE_BYTES].rstrip(b"\r").decode("utf-8", "replace")
        return [(self.offset, line) for line in self.join.feed(text)]

    def split(self, chunk: bytes) -> list:
        out = []
        data = self.pending + chunk
        self.pending = b""
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            line = data[start:nl]
            if self.skipping:
                self.offset += nl + 1 - start
                self.skipping = False
            else:
                out.extend(self.emit(line, nl + 1 - start))
            start = nl + 1
        rest = data[start:]
        if self.skipping:
            self.offset += len(rest)
        elif len(rest) > protocol.MAX_LINE_BYTES:
            out.extend(self.emit(rest, len(rest)))
            self.skipping = True
        else:
            self.pending = rest
        return out


def make_forwarder(rundir: str, show: str | None):
    """edge.Forwarder for `follow --show SPEC`; None (every line forwarded, as before) without --show or rules."""
    if show is None:
        return None
    try:
        module = rd.edge_module(rundir)
        rules = None if module is None else module.load_rules(rundir)
        return None if rules is None else module.Forwarder(rules, show)
    except Exception as exc:
        rd.log(f"forwarding every line: {type(exc).__name__}: {exc}")
        return None


def cmd_follow(rundir: str, offset: int, show: str | None = None) -> int:
    heartbeat = rd.path_in(rundir, "heartbeat")
    rd.touch(heartbeat)
    deadline = time.time() + STATE_WAIT_S
    pid, start, _ = rd.guard_identity(rundir)
    while pid is None and time.time() < deadline:
        time.sleep(0.1)
        pid, start, _ = rd.guard_identity(rundir)
    try:
        if pid is None:
            emit(
                {"k": protocol.K_EXIT, "t": time.time(), "state": {"state": None, "reason": "no state.json"}}
            )
            return protocol.EXIT_FAILED
        follow_loop(
            rundir, pid, start, LogTail(rd.path_in(rundir, "out.log"), offset), make_forwarder(rundir, show)
        )
    except BrokenPipeError:
        # The launcher went away: exit quietly, and keep Python from complaining while flushing at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return protocol.EXIT_OK


def emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def follow_loop(rundir: str, pid: int, start: int | None, tail: LogTail, fwd: object = None) -> None:
    gpu = gpuwatch.GpuWatch()
    try:
        _follow(rundir, pid, start, tail, fwd, gpu)
    finally:
        gpu.close()  # a tool still running is ours: nothing is left behind


def _follow(
    rundir: str, pid: int, start: int | None, tail: LogTail, fwd: object, gpu: gpuwatch.GpuWatch
) -> None:
    try:
        stdin_fd: int | None = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        stdin_fd = None
    if stdin_fd is not None:
        # Its own thread: a head slow to read our records (stdout full) must not keep its heartbeats unread.
        threading.Thread(target=read_head_words, args=(rundir, stdin_fd, pid, start), daemon=True).start()
    next_procs = 0.0
    bad_lines = 0
    while True:
        finished = not proctab.is_alive(pid, start)
        for off, text in tail.read(final=finished):
            if fwd is None:
                emit({"k": protocol.K_LINE, "t": time.time(), "off": off, "text": text})
            else:
                try:
                    records = fwd.line(time.time(), off, text)
                except Exception as exc:  # one line the rules cannot read: forward it whole, unclassified
                    bad_lines += 1
                    if bad_lines == 1:
                        rd.log(
                            f"follower: a line the edge rules could not read was forwarded as is: {exc!r:.200}"
                        )
                    records = [{"k": protocol.K_LINE, "t": time.time(), "off": off, "text": text}]
                for record in records:
                    emit(record)
        if fwd is not None and (finished or time.time() >= next_procs):
            summary = fwd.summary(time.time())
            if summary is not None:
                emit(summary)
        if finished:
            _, _, state = rd.guard_identity(rundir)
            state = dict(state or {})
            if state.get("state") == protocol.RUNNING:
                state.update(state=protocol.GUARD_LOST, reason="guard died without writing a final state")
            # What is left of the job once its guard is gone, as the stop verb would find it (guard.py
            # kill_recorded): the head takes a node whose exit record shows nothing left as stopped and clean
            # without asking it again (launcher/run/attempt.py `Runner.stop`; `down` at 250 nodes, issue 23).
            state["remaining"] = [st["pid"] for st in rd.left_of_job(rundir)]
            emit({"k": protocol.K_EXIT, "t": time.time(), "state": state})
            return
        now = time.time()
        if now >= next_procs:
            records = rd.read_records(rundir)
            procs = rd.read_procs(rundir, (pid, start), SNAPSHOT_MAX_AGE_S)
            if procs is None:  # no fresh snapshot of the guard's walk (an older guard): walk /proc here
                procs = proctab.job_processes([pid], records)
            snapshot = gpu.poll(now)
            described = proctab.describe_with_usage(procs)
            gpu.annotate(procs, described)
            emit({"k": protocol.K_PROCS, "t": now, "procs": described})
            next_procs = now + PROCS_EVERY_S
            # Every process of the job ever seen (the pids file) and those seen now: an OOM-killed rank is gone by
            # the time its kernel line is read.
            pids = frozenset([r[0] for r in records] + [st["pid"] for st in procs])
            for text in gpu.kernel_lines(pids):
                emit({"k": protocol.K_KERNEL, "t": now, "text": text})
            if snapshot is not None:
                emit({"k": protocol.K_GPU, "t": now, **snapshot})
        time.sleep(0.2)


def read_head_words(rundir: str, fd: int, pid: int, start: int | None) -> None:
    """The head's words on the follower's stdin (protocol.py): a heartbeat touches RUNDIR/heartbeat, stop
    signals the guard. At EOF a follower that carried heartbeats touches RUNDIR/head_closed, so the guard says
    which sign it judged the head lost by (daemon.Guard.head_lost)."""
    heartbeat = rd.path_in(rundir, "heartbeat")
    beaten = False  # only a follower that carried heartbeats speaks for the head when its stdin closes
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError as e:
            if e.errno == errno.EAGAIN:  # a non-blocking stdin: wait for it instead of spinning
                select.select([fd], [], [], 1.0)
                continue
            chunk = b"" if e.errno != errno.EINTR else b"\n"
        if not chunk:
            if beaten:
                rd.touch(rd.path_in(rundir, rd.HEAD_CLOSED))
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            word = line.strip().decode("ascii", "replace")
            if word == protocol.HEARTBEAT:
                rd.touch(heartbeat)
                beaten = True
            elif word == protocol.STOP_WORD:
                proctab.signal_same(pid, start, signal.SIGTERM)
        buf = buf[-4096:]  # a head that never sends a newline cannot grow this
