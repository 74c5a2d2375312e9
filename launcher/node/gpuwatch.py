"""GPU health seen from the node, for the follower: the kernel log's amdgpu lines, OOM-killer lines about the job,
and amd-smi / rocm-smi samples (gpuact.py parses them). Standard library only (pushed beside guard.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
import time

if __package__:  # imported by the head or tests as launcher.node.*
    from launcher.node import gpuact, protocol
    from launcher.node import procs as proctab
else:  # imported by guard.py run as a script from the run directory, beside this file
    import procs as proctab  # type: ignore[no-redef]
    import protocol  # type: ignore[no-redef]

    try:
        import gpuact  # type: ignore[no-redef]
    except ImportError:  # a run directory pushed by an older rlaunch: no GPU activity, the CPU/IO rule alone
        gpuact = None  # type: ignore[assignment]


class GpuWatch:
    """GPU health seen from the node, for the launcher's watcher: new amdgpu lines of the kernel log (GPU resets,
    ring timeouts, RAS/ACA and page faults appear there, not in the job's output), the kernel OOM killer's lines
    about this job's processes, per-GPU activity every ACTIVITY_EVERY_S (reported with each rank's usage, for the
    hang rule: gpuact.py) and every SNAPSHOT_EVERY_S the tool's whole output, kept in the run record. All optional:
    a node without the tools or without permission to read the kernel log (kernel.dmesg_restrict) reports nothing.

    At most one tool process runs at a time, and it never blocks the follower: it is started, then collected on a
    later pass (its output goes to a file, so a large output cannot fill a pipe), killed after TOOL_TIMEOUT_S."""

    SNAPSHOT_EVERY_S = 30.0
    ACTIVITY_EVERY_S = 5.0
    TOOL_TIMEOUT_S = 8.0
    TOOLS = (
        ("amd-smi", ["amd-smi", "metric", "--json"]),
        ("rocm-smi", ["rocm-smi", "--showuse", "--showmemuse", "--showpower", "--json"]),
    )

    def __init__(self) -> None:
        self.kmsg_fd: int | None = None
        self.kmsg_buf = b""
        path = os.environ.get("RLAUNCH_KMSG", "/dev/kmsg")  # tests point this at a file
        try:
            self.kmsg_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.kmsg_fd, 0, os.SEEK_END)  # only what happens from now on
        except OSError:
            self.kmsg_fd = None
        found = ((name, protocol.find_tool(name), argv) for name, argv in self.TOOLS)
        self.tool = next(((name, [exe, *argv[1:]]) for name, exe, argv in found if exe), None)
        now = time.time()
        self.next_sample = now  # at once: the GPUs idle while the job imports give each its idle power
        self.next_snapshot = now + 5.0
        self.proc: subprocess.Popen | None = None
        self.proc_out = None
        self.proc_started = 0.0
        self.killed = False  # the running tool overran TOOL_TIMEOUT_S and was sent SIGKILL
        self.readings: dict = {}  # GPU index -> {"gfx", "umc", "w"} of the latest sample
        self.idle_w: dict = {}  # GPU index -> lowest power seen: the baseline "near idle" is measured against
        self.fresh = False  # a sample arrived that no procs record carried yet

    def kernel_lines(self, pids: frozenset = frozenset()) -> list:
        """New kernel log lines worth forwarding: amdgpu/amdkfd ones, and OOM-killer and stuck-task lines naming one
        of `pids`."""
        if self.kmsg_fd is None:
            return []
        out = []
        while True:
            try:
                chunk = os.read(self.kmsg_fd, 8192)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # /dev/kmsg: records were overwritten while we slept; go on
                    continue
                self.kmsg_fd = None
                break
            if not chunk:
                break
            self.kmsg_buf += chunk
        *records, self.kmsg_buf = self.kmsg_buf.split(b"\n")
        for record in records:
            text = record.decode("utf-8", "replace")
            text = (
                text.split(";", 1)[1] if ";" in text[:64] else text
            )  # /dev/kmsg: "pri,seq,ts,flags;message"
            if "amdgpu" in text or "amdkfd" in text:
                out.append(text[: protocol.MAX_LINE_BYTES])
            elif (
                pids
                and gpuact is not None
                and (gpuact.oom_pid(text) in pids or gpuact.stuck_pid(text) in pids)
            ):
                out.append(
                    text[: protocol.MAX_LINE_BYTES]
                )  # another job's OOM kill or stuck task is not our business
        return out

    def poll(self, now: float) -> dict | None:
        """Drive the tool: collect a finished sample, start the next when due. Returns a snapshot record (the tool's
        whole output, for the run record) every SNAPSHOT_EVERY_S, else None."""
        if self.tool is None:
            return None
        name, argv = self.tool
        record = None
        if self.proc is not None:
            rc = self.proc.poll()
            if rc is None and (self.killed or now - self.proc_started < self.TOOL_TIMEOUT_S):
                return None  # still running, or killed but not gone yet (stuck in the driver): never a second one
            if rc is None:
                # Killed, not waited for: a tool stuck in an ioctl (D state) would block the follower. It is
                # reaped on a later pass, and no other tool starts before it is gone.
                self.proc.kill()
                self.killed = True
                self.readings = {}
                if now >= self.next_snapshot:
                    self.next_snapshot = now + self.SNAPSHOT_EVERY_S
                    return {"tool": name, "error": f"no answer within {self.TOOL_TIMEOUT_S:.0f} s"}
                return None
            if self.killed:
                self.killed = False
            else:
                self.proc_out.seek(0)
                text = self.proc_out.read(1 << 20).decode("utf-8", "replace")
                record = {"tool": name, "rc": rc, "text": text[:65536]}
                self.take(gpuact.parse(name, text) if gpuact is not None and rc == 0 else {})
            self.proc_out.close()
            self.proc, self.proc_out = None, None
            self.next_sample = max(self.next_sample, now)
            if record is not None and now >= self.next_snapshot:
                self.next_snapshot = now + self.SNAPSHOT_EVERY_S
            else:
                record = None
        if self.proc is None and now >= self.next_sample:
            self.next_sample = now + self.ACTIVITY_EVERY_S
            self.proc_out = tempfile.TemporaryFile()  # noqa: SIM115 - kept open until a later pass collects it
            try:
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=self.proc_out, stderr=subprocess.DEVNULL
                )
                self.proc_started = now
            except OSError as e:
                self.proc_out.close()
                self.proc_out = None
                if now >= self.next_snapshot:
                    self.next_snapshot = now + self.SNAPSHOT_EVERY_S
                    record = {"tool": name, "error": str(e)}
        return record

    def take(self, readings: dict) -> None:
        self.readings = readings
        self.fresh = bool(readings)
        for index, reading in readings.items():
            watts = reading.get("w")
            if watts is not None and watts > 0:  # 0 W is a die that reports no power, not an idle one
                self.idle_w[index] = min(watts, self.idle_w.get(index, watts))

    def annotate(self, procs: list, described: list) -> None:
        """Add the fresh sample of each rank's GPU to its procs entry: {"id", "gfx", "umc", "w", "idle_w"}. Each
        sample is carried once, so the head counts it once."""
        if not self.fresh:
            return
        self.fresh = False
        for i, entry in enumerate(described):
            st = procs[i]
            if entry.get("rank") is None:
                continue
            index = proctab.gpu_index_of(st)
            reading = self.readings.get(index)
            if reading is not None:
                entry["gpu"] = dict(reading, id=index, idle_w=self.idle_w.get(index))

    def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1.0)  # one stuck in the driver dies when the driver lets it
            self.proc = None
        if self.proc_out is not None:
            self.proc_out.close()
            self.proc_out = None
