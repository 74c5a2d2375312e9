"""Slurm transport: reach the nodes of the current allocation with `srun`, one job step per command.

Every command becomes

    srun --jobid=$SLURM_JOB_ID --nodes=1 --ntasks=1 --nodelist=NODE --overlap --export=ALL --quiet -- ARGV

`--overlap` lets the long-lived follower steps, the guard's start step and teardown steps share the node's
resources instead of queueing behind each other (srun(1), Slurm >= 20.11). Without `--exact`, a 22.05 step gets
every non-GRES resource of the node and, by default, every GRES the job holds there (srun(1) `--exact`,
`--gres`), so the job's ranks are not squeezed onto one CPU. srun forwards its stdin to the task (checked against
Slurm 22.05 in tests/test_slurm_transport.py: the push payload arrives whole, heartbeat lines arrive one by one),
and SIGTERM to srun cancels the step, which kills every process slurmstepd tracks in it.

Same contract as the SSH and local transports: argv is never a shell string, failures to reach a node (srun's
own errors: unknown node, no allocation, step not created, timeouts) land in `Result.error` as one line naming
the node, and the remote command's exit code is the task's (srun returns it; a signal N reads as 128+N).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from cluster.local import LocalProcess
from cluster.transport import (
    TIMEOUT,
    Endpoint,
    LineCallback,
    RemoteProcess,
    Result,
    Transport,
    TransportError,
)

NOT_FOUND_EXIT = 127  # what a remote shell answers for a missing program, as the other transports report it
NOT_EXECUTABLE_EXIT = 126
STOP_GRACE = 5.0  # srun → SIGTERM (cancels the step) → this long → SIGKILL srun itself

# srun's report about a task, not the task's own output: "srun: error: node1: task 0: Exited with exit code 3",
# "srun: error: node1: task 0: Killed", and slurmstepd's "*** STEP 12.3 ON node1 CANCELLED AT ... ***".
TASK_STATUS = re.compile(r"^srun: (error|warning): \S+: tasks? [\d,\-]+: ")
STEP_CANCELLED = re.compile(r"^slurmstepd(-\S+)?: error: \*\*\* (STEP|JOB) .* \*\*\*$")
# slurmstepd could not exec the program; srun then returns 2 whatever the errno was.
EXECVE_FAILED = re.compile(r"^slurmstepd(-\S+)?: error: execve\(\): (?P<prog>.*?): (?P<why>.+)$")
# srun failing before or instead of running the task (src/srun/libsrun messages in Slurm 22.05).
SRUN_FAILURE = re.compile(r"^srun: (fatal|error): (?!\S+: tasks? [\d,\-]+: )(?P<why>.+)$")
# What srun says when --nodelist names a node outside the allocation (or no node at all).
NOT_IN_ALLOCATION = ("Requested node configuration is not available", "Invalid node name")


def allocation_job_id(environ: Mapping[str, str]) -> str | None:
    """The job id of the allocation we run in: sbatch/salloc export SLURM_JOB_ID (older ones SLURM_JOBID)."""
    return environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID") or None


class SlurmTransport(Transport):
    guard_attached = True  # a daemonized guard would escape (linuxproc) or be killed with (cgroup) its step
    name = "slurm"

    def __init__(
        self,
        endpoints: dict[str, Endpoint],
        max_parallel: int = 64,
        *,
        job_id: str | None = None,
        environ: Mapping[str, str] | None = None,
        srun: str = "srun",
    ):
        super().__init__(endpoints, max_parallel)
        # The environment srun runs with (and, through --export=ALL, the remote command's base environment).
        self.environ = dict(os.environ if environ is None else environ)
        self.job_id = job_id or allocation_job_id(self.environ)
        self.srun = srun

    # ------------------------------------------------------------------------------------------------ argv
    def srun_argv(self, host: str, argv: Sequence[str]) -> list[str]:
        """The srun command line that runs argv as a one-task step on host. Raises TransportError."""
        if host not in self.endpoints:
            raise TransportError(host, f"unknown node {host!r}: not in the inventory")
        if not self.job_id:
            raise TransportError(
                host,
                "not inside a Slurm allocation (SLURM_JOB_ID is not set): run rlaunch from an sbatch script or "
                "after salloc, or export SLURM_JOB_ID=<job id>",
            )
        return [
            self.srun,
            f"--jobid={self.job_id}",
            "--nodes=1",
            "--ntasks=1",
            # The Slurm node name: `--from-slurm` puts exactly those names in the inventory.
            f"--nodelist={host}",
            "--overlap",
            "--export=ALL",
            "--quiet",
            "--",
            *argv,
        ]

    # ---------------------------------------------------------------------------------------------- commands
    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        started = time.monotonic()
        try:
            proc = self._popen(host, argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        except TransportError as exc:
            return Result(host, None, error=exc.reason, failure=exc.kind)
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            end_step(proc)
            out, err = proc.communicate()
            return Result(
                host,
                None,
                _text(out),
                without_step_status(_text(err)),
                error=f"timed out after {timeout:g}s running {argv[0]} on {host} (srun step cancelled)",
                failure=TIMEOUT,
                seconds=time.monotonic() - started,
            )
        return read_result(host, proc.returncode, _text(out), _text(err), time.monotonic() - started)

    def start(
        self,
        host: str,
        argv: Sequence[str],
        on_line: LineCallback,
        *,
        on_exit: Callable[[int], None] | None = None,
    ) -> RemoteProcess:
        proc = self._popen(host, argv, stdin=subprocess.PIPE)
        return SrunProcess(host, proc, on_line, on_exit)

    def _popen(self, host: str, argv: Sequence[str], *, stdin: int) -> subprocess.Popen[bytes]:
        command = self.srun_argv(host, argv)
        try:
            return subprocess.Popen(
                command,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.environ,
                # Its own process group: a Ctrl-C on the launcher's terminal must not reach srun (two SIGINTs
                # within a second kill the step); the runner decides when steps end.
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(
                host,
                f"cannot run {self.srun} for {host} on this head node: {exc.strerror} (install slurm-client)",
            ) from None


class SrunProcess(LocalProcess):
    """A long-lived step. Unlike a dropped SSH link, close() ends the step: srun cancels it on SIGTERM and
    slurmstepd kills what it tracks there, so a follower never outlives its launcher."""

    def _deliver(self, stream: str, line: bytes) -> None:
        text = line.rstrip(b"\r").decode(errors="replace")
        if stream == "stderr" and (TASK_STATUS.match(text) or STEP_CANCELLED.match(text)):
            return  # srun's account of the step ending, not the command's output
        super()._deliver(stream, line)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.close_stdin()
        end_step(self._proc)
        self._done.wait(STOP_GRACE)
        for pipe in (self._proc.stdout, self._proc.stderr):
            with contextlib.suppress(OSError):
                if pipe:
                    pipe.close()


def end_step(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> None:
    """SIGTERM srun (it cancels the step: slurmstepd kills the task), then SIGKILL srun if it lingers.
    Only srun's own process group, which we created."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(grace)


def read_result(host: str, returncode: int, out: str, err: str, seconds: float) -> Result:
    """Turn srun's exit code and stderr into the Result the other transports would give."""
    kept: list[str] = []
    failure: str | None = None
    missing: re.Match[str] | None = None
    for line in err.splitlines():
        if TASK_STATUS.match(line) or STEP_CANCELLED.match(line):
            continue
        if m := EXECVE_FAILED.match(line):
            missing = m
            continue
        if failure is None and (m := SRUN_FAILURE.match(line)):
            failure = m.group("why").strip()
        kept.append(line)
    stderr = "\n".join(kept) + ("\n" if kept else "")
    if missing is not None:
        why = missing.group("why")
        code = NOT_FOUND_EXIT if "No such file" in why else NOT_EXECUTABLE_EXIT
        return Result(host, code, out, stderr + f"{missing.group('prog')}: {why}\n", seconds=seconds)
    if failure is not None and returncode != 0:
        if any(words in failure for words in NOT_IN_ALLOCATION):
            failure += f" (is {host} a node of this allocation? see SLURM_JOB_NODELIST)"
        return Result(host, None, out, stderr, error=f"srun on {host}: {failure}", seconds=seconds)
    code = 128 - returncode if returncode < 0 else returncode  # srun itself killed by a signal
    return Result(host, code, out, stderr, seconds=seconds)


def without_step_status(err: str) -> str:
    """stderr less srun's lines about the task ending (the cancellation we caused is in Result.error)."""
    kept = [line for line in err.splitlines() if not (TASK_STATUS.match(line) or STEP_CANCELLED.match(line))]
    return "\n".join(kept) + ("\n" if kept else "")


def _text(data: bytes | None) -> str:
    return (data or b"").decode(errors="replace")
