"""Slurm transport: reach the nodes of the current allocation with `srun`: one job step for all nodes at once.

Fan-out (`run_all`: every guard verb, clean-up, probes; `start_all`: the push and every attached guard) is ONE
step, `srun --nodes=N --ntasks-per-node=1 --nodelist=... --label` running a small stdlib dispatcher (DISPATCH) on
every node, which finds its own entry by SLURMD_NODENAME in one bundle (per node argv and stdin, lzma-compressed
JSON) and either runs it and prints the result as tagged chunks (`run`) or, in the guards' step (`guard`), runs
the push, holds until the head has checked every node's push, then runs the guard's follower stream as its child
(demultiplexed by the task label back into per-node processes) and, once it ended, serves the head's requests
on the step's stdin (collect) until the step closes: a `run_all` to those nodes takes no step of its own. The
bundle reaches the nodes with `sbcast` (it fans out through slurmd's tree like srun) when the step covers the
whole allocation, else on the step's stdin (srun forwards it to every task, `--input=all` being srun's default).
So a run costs one step per attempt plus keep_runs' clean-up, at 4 nodes or 1,000 (docs/scale.md): the per-node
path (`one_step=False`) made one step per command per node, thousands of step-creation RPCs against slurmctld
per run and a share of MaxStepCount (40,000 per job, slurm.conf(5)). A command on one node still becomes

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

import base64
import contextlib
import hashlib
import json
import lzma
import os
import re
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from cluster.local import LocalProcess, communicate
from cluster.transport import (
    TIMEOUT,
    ArgvFor,
    Endpoint,
    ExitCallback,
    First,
    GroupResult,
    HostArgv,
    HostLineCallback,
    LineCallback,
    RemoteProcess,
    Result,
    StdinFor,
    Transport,
    TransportError,
    timed_out,
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


# The node side of one-step fan-out: run with the node's python (`-I`: stdlib only, nothing from the cwd), one
# task per node. argv: MODE ("run" | "guard") [BUNDLE_PATH]. Without a path the bundle comes first on stdin as
# "RLB1 <length>\n<bytes>", read to the byte (in guard mode the rest of stdin belongs to the head's words).
# Results are one JSON object in base64 chunks of CHUNK chars on stdout, one line each: srun's I/O moves at most
# 1 KiB per message, and `--label` keeps the lines of each task whole.
#   run:   the entry's argv with its stdin, output captured, then "RLR <host> <i> <n> <chunk>".
#   guard: "RLH <host>" (who this task is). With a "pre" entry (the push): run it, answer "RLP <host> ...", then
#          serve the head's requests until "RLGO" (start) or "RLNO" (start nothing). Then the entry's argv (the
#          guard's `run`) as a child that has this task's stdin and stdout; when it ends, "RLX <host> <code>" and
#          serve requests again (collect) until stdin ends, then exit with the child's code.
#   A request is "RLC <id> <length>\n" and that many bytes of base64 bundle on the step's stdin (srun gives it to
#   every task); a task with an entry in it runs it and answers "RLQ <id> <host> ...". Other lines on stdin (a
#   heartbeat or stop word meant for a guard still running elsewhere) are not the dispatcher's.
DISPATCH = r"""
import base64, errno, json, lzma, os, subprocess, sys
def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            break
        data += chunk
    return data
def read_line(limit=200):
    # One byte at a time: what follows the line may be the guard's (a heartbeat), never ours to take.
    line = b""
    while not line.endswith(b"\n") and len(line) < limit:
        c = os.read(0, 1)
        if not c:
            return line or None
        line += c
    return line
def bundle():
    if len(sys.argv) > 2:
        try:
            with open(sys.argv[2], "rb") as f:
                return f.read()
        finally:
            try:
                os.unlink(sys.argv[2])  # node-local: nothing left behind
            except OSError:
                pass
    words = (read_line(64) or b"").split()
    if len(words) != 2 or words[0] != b"RLB1" or not words[1].isdigit():
        raise ValueError("no bundle on stdin")
    return read_exact(int(words[1]))
def say(tag, result):
    text = base64.b64encode(json.dumps(result).encode()).decode()
    size = int(os.environ.get("RLAUNCH_CHUNK", "700"))
    parts = [text[i:i + size] for i in range(0, len(text), size)] or [""]
    out = sys.stdout
    for i, part in enumerate(parts):
        out.write("%s %d %d %s\n" % (tag, i, len(parts), part))
    out.flush()
def run_entry(entry, blobs):
    argv = entry["argv"]
    blob = entry.get("stdin")
    stdin = base64.b64decode(blobs[blob]) if blob else None
    try:
        done = subprocess.run(argv, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        code, out, err = done.returncode, done.stdout, done.stderr
        if code < 0:
            code = 128 - code
    except OSError as exc:
        code, out, err = (127 if exc.errno == errno.ENOENT else 126), b"", ("%s: %s\n" % (argv[0], exc.strerror)).encode()
    return {"rc": code, "out": out.decode("utf-8", "replace"), "err": err.decode("utf-8", "replace")}
def serve(held):
    while True:
        line = read_line()
        if line is None:
            return None
        words = line.split()
        if held and words in ([b"RLGO"], [b"RLNO"]):
            return words[0]
        if len(words) == 3 and words[0] == b"RLC" and words[1].isdigit() and words[2].isdigit():
            payload = read_exact(int(words[2]))
            try:
                req = json.loads(lzma.decompress(base64.b64decode(payload)))
                entry = req["nodes"].get(host)
            except Exception as exc:
                say("RLQ %s %s" % (words[1].decode(), host), {"error": "cannot read the request: %s" % exc})
                continue
            if entry is not None:
                say("RLQ %s %s" % (words[1].decode(), host), run_entry(entry, req["blobs"]))
host = os.environ.get("SLURMD_NODENAME", "")
mode = sys.argv[1]
tag = "RLR %s" % host
try:
    data = json.loads(lzma.decompress(bundle()))
except Exception as exc:
    say(tag, {"error": "cannot read the step's bundle: %s" % exc})
    sys.exit(3)
me = data["nodes"].get(host)
if me is None:
    say(tag, {"error": "node %r has no entry in the step's bundle" % host})
    sys.exit(3)
if mode == "run":
    say(tag, run_entry(me, data["blobs"]))
    sys.exit(0)
sys.stdout.write("RLH %s\n" % host)
sys.stdout.flush()
if "pre" in me:
    say("RLP %s" % host, run_entry(me["pre"], data["blobs"]))
    if serve(True) != b"RLGO":
        sys.exit(0)
argv = me["argv"]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write("%s: %s\n" % (argv[0], exc.strerror))
        sys.stderr.flush()
        os._exit(127 if exc.errno == errno.ENOENT else 126)
while True:
    try:
        status = os.waitpid(pid, 0)[1]
        break
    except InterruptedError:
        continue
code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
sys.stdout.write("RLX %s %d\n" % (host, code))
sys.stdout.flush()
serve(False)
sys.exit(code)
"""
BUNDLE_MAGIC = "RLB1"
BUNDLE_DIR = "/tmp"  # node-local on every node; where sbcast leaves the bundle (the dispatcher removes it)
LABEL = re.compile(r"^\s*(\d+): ?(.*)$", re.S)
RESULT_CHUNK = re.compile(r"^RLR (\S+) (\d+) (\d+) (\S*)$")
PREP_CHUNK = re.compile(r"^RLP (\S+) (\d+) (\d+) (\S*)$")  # guard mode: the "pre" entry's result (the push)
REPLY_CHUNK = re.compile(r"^RLQ (\d+) (\S+) (\d+) (\d+) (\S*)$")  # a request's result, by request id
ENDED = re.compile(r"^RLX (\S+) (-?\d+)$")  # guard mode: the node's command ended with this code
HELLO = re.compile(r"^RLH (\S+)$")
# srun's report naming the node whose task ended badly: "srun: error: sn2: task 1: Exited with exit code 3".
TASK_ON_NODE = re.compile(
    r"^srun: (?:error|warning): (?P<host>\S+): tasks? (?P<tasks>[\d,\-]+): (?P<why>.+)$"
)
EXITED_WITH = re.compile(r"Exited with exit code (\d+)")
DEDUP_S = 0.25  # identical words written to one step's stdin within this long reach every task once
STEPS_ENV = "RLAUNCH_SLURM_STEPS"  # "per-node": today's one step per command per node (bench/slurm_steps.py)


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
        sbcast: str = "sbcast",
        python: str = "python3",
        one_step: bool | None = None,
    ):
        super().__init__(endpoints, max_parallel)
        # The environment srun runs with (and, through --export=ALL, the remote command's base environment).
        self.environ = dict(os.environ if environ is None else environ)
        self.job_id = job_id or allocation_job_id(self.environ)
        self.srun = srun
        self.sbcast = sbcast
        self.python = python  # runs DISPATCH on the nodes (the inventory's `python:`)
        self.one_step = self.environ.get(STEPS_ENV) != "per-node" if one_step is None else one_step
        self._allocation: list[str] | None = None
        self._step: SrunStep | None = None  # the guards' step, open until its views are closed

    # ------------------------------------------------------------------------------------------------ argv
    def srun_argv(self, host: str, argv: Sequence[str]) -> list[str]:
        """The srun command line that runs argv as a one-task step on host. Raises TransportError."""
        self.check_host(host)
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

    def step_argv(self, hosts: Sequence[str], mode: str, bundle_path: str | None) -> list[str]:
        """One step, one task on each of hosts, running DISPATCH. Raises TransportError (like srun_argv)."""
        for host in hosts:
            self.srun_argv(host, ["true"])  # the same checks: known node, inside an allocation
        return [
            self.srun,
            f"--jobid={self.job_id}",
            f"--nodes={len(hosts)}",
            f"--ntasks={len(hosts)}",
            "--ntasks-per-node=1",
            f"--nodelist={','.join(hosts)}",
            "--overlap",
            "--export=ALL",
            "--quiet",
            "--label",  # "N: " before each line of task N: lines of different nodes never interleave
            "--kill-on-bad-exit=0",  # one node's failure is its own: the others' tasks go on
            "--",
            self.python,
            "-I",
            "-c",
            DISPATCH,
            mode,
            *([bundle_path] if bundle_path else []),
        ]

    # ---------------------------------------------------------------------------------------------- commands
    def run_all(
        self,
        hosts: Iterable[str],
        argv_for: ArgvFor,
        *,
        stdin_for: StdinFor | None = None,
        timeout: float | None = 60.0,
    ) -> GroupResult:
        """One job step for every host (see the module's docstring); one Result per host, as per-node runs give.
        While the guards' step is open and every asked host's task in it is free (held before the start, or its
        guard ended), no step at all: the request goes on that step's stdin (the checks after the push, collect).
        A step srun refuses as a whole (a node outside the allocation) falls back to one step per node, so each
        node still gets its own answer and the bad one its own line."""
        hosts = list(dict.fromkeys(hosts))
        if not self.one_step or not hosts:
            return super().run_all(hosts, argv_for, stdin_for=stdin_for, timeout=timeout)
        bundle = bundle_of(hosts, argv_for, stdin_for)
        step = self._step
        if step is not None and step.free(hosts):
            return GroupResult(step.request(hosts, bundle, timeout))
        if len(hosts) <= 1:
            return super().run_all(hosts, argv_for, stdin_for=stdin_for, timeout=timeout)
        started = time.monotonic()
        try:
            run = StepRun(self, hosts, "run", bundle, timeout)
            results = run.results()
        except TransportError as exc:
            return GroupResult({h: Result(h, None, error=exc.reason, failure=exc.kind) for h in hosts})
        if run.refused_whole:
            return super().run_all(hosts, argv_for, stdin_for=stdin_for, timeout=timeout)
        seconds = time.monotonic() - started
        return GroupResult(
            {
                h: replace(results[h], seconds=seconds) if h in results else run.missing(h, seconds)
                for h in hosts
            }
        )

    def start_all(
        self,
        hosts: Iterable[str],
        argv_for: HostArgv,
        on_line: HostLineCallback,
        *,
        first: First | None = None,
    ) -> dict[str, RemoteProcess]:
        """Every host's long-lived command in ONE step (guard mode); host → that task's process view. The
        step's stdin reaches every task: a word written to any view (a heartbeat, stop) is sent once for all.
        `first` (the push) is that step's first act on every node: each task runs it and holds; only when
        `first.check` passes does the head say "RLGO" and the guards start, else "RLNO" and nothing starts. The
        step stays open until every view is closed, so what runs after the guards (collect) needs no step."""
        hosts = list(dict.fromkeys(hosts))
        if not self.one_step or len(hosts) <= 1:
            return super().start_all(hosts, argv_for, on_line, first=first)
        bundle = bundle_of(hosts, argv_for, None)
        nodes: dict[str, dict[str, object]] = bundle["nodes"]  # type: ignore[assignment]
        if first is not None:
            pre = bundle_of(hosts, first.argv_for, first.stdin_for, bundle["blobs"])  # type: ignore[arg-type]
            for host, entry in pre["nodes"].items():  # type: ignore[union-attr]
                nodes[host]["pre"] = entry
        step = SrunStep.launch(self, hosts, bundle, on_line)
        self._step = step
        if first is not None:
            try:
                first.check(GroupResult(step.prepared(first.timeout)))
            except BaseException:
                step.abort()
                raise
            step.go()
        return {h: StepTask(step, h) for h in hosts}

    def allocation_nodes(self) -> list[str]:
        """The allocation's node names (SLURM_JOB_NODELIST, expanded by `scontrol show hostnames`: no RPC)."""
        if self._allocation is None:
            listed = self.environ.get("SLURM_JOB_NODELIST") or self.environ.get("SLURM_NODELIST") or ""
            names: list[str] = []
            if listed:
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    done = subprocess.run(
                        ["scontrol", "show", "hostnames", listed],
                        env=self.environ,
                        capture_output=True,
                        text=True,
                        timeout=30,
                    )
                    if done.returncode == 0:
                        names = done.stdout.split()
            self._allocation = names
        return self._allocation

    def broadcast(self, hosts: Sequence[str], blob: bytes) -> str | None:
        """sbcast the bundle to every node's BUNDLE_DIR when the step covers the whole allocation (sbcast writes
        on all of the job's nodes, and only the step's tasks remove it again): its path there, else None (the
        bundle then goes on the step's stdin). Raises TransportError when sbcast fails."""
        if not hosts or sorted(hosts) != sorted(self.allocation_nodes()):
            return None
        fd, local = tempfile.mkstemp(prefix="rlaunch-bundle-")  # 0600: the bundle holds the run's environment
        dest = f"{BUNDLE_DIR}/rlaunch-bundle-{secrets.token_hex(8)}"
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            done = subprocess.run(
                [self.sbcast, f"--jobid={self.job_id}", "--force", local, dest],
                env=self.environ,
                capture_output=True,
                text=True,
                timeout=120,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise TransportError(hosts[0], f"sbcast of the step's bundle failed: {exc}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(local)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise TransportError(hosts[0], f"sbcast of the step's bundle failed: {why}")
        return dest

    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        started = time.monotonic()
        try:
            proc = self._popen(host, argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        except TransportError as exc:
            return Result(host, None, error=exc.reason, failure=exc.kind)
        out, err, over = communicate(proc, stdin, timeout, end_step)
        if over:
            cancelled = without_step_status(_text(err))
            return timed_out(host, argv, timeout, "srun step cancelled", _text(out), cancelled, started)
        return read_result(host, proc.returncode, _text(out), _text(err), time.monotonic() - started)

    def _start(
        self, host: str, argv: Sequence[str], on_line: LineCallback, on_exit: ExitCallback | None
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

    close_wait = STOP_GRACE

    def _deliver(self, stream: str, line: bytes) -> None:
        text = line.rstrip(b"\r").decode(errors="replace")
        if stream == "stderr" and (TASK_STATUS.match(text) or STEP_CANCELLED.match(text)):
            return  # srun's account of the step ending, not the command's output
        super()._deliver(stream, line)

    def _end(self) -> None:
        end_step(self._proc)


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


def pack(bundle: Mapping[str, object]) -> bytes:
    """The bundle as the dispatcher reads it. lzma, not zlib: per node payloads are near copies of each other
    (the same guard files, another rank), and lzma's dictionary spans them where zlib's 32 KiB window does not."""
    return lzma.compress(json.dumps(bundle, separators=(",", ":")).encode(), preset=1)


def result_of(host: str, parts: Mapping[int, str], count: int | None) -> Result | None:
    """A task's result from its base64 chunks (None while a chunk is missing or the whole does not decode)."""
    if count is None or len(parts) != count:
        return None
    try:
        data = json.loads(base64.b64decode("".join(parts[i] for i in range(count))))
    except (ValueError, KeyError):
        return None
    if not isinstance(data, dict):
        return None
    if "error" in data:
        return Result(host, None, error=f"srun on {host}: {data['error']}")
    try:
        code = int(data.get("rc", 1))
    except (TypeError, ValueError):
        return None
    return Result(host, code, str(data.get("out", "")), str(data.get("err", "")))


def bundle_of(
    hosts: Sequence[str], argv_for: ArgvFor, stdin_for: StdinFor | None, blobs: dict[str, str] | None = None
) -> dict[str, object]:
    """Every host's entry (argv, and the key of its stdin in `blobs`: identical inputs travel once)."""
    blobs = {} if blobs is None else blobs
    nodes: dict[str, dict[str, object]] = {}
    for host in hosts:
        argv = list(argv_for(host) if callable(argv_for) else argv_for)
        data = stdin_for(host) if stdin_for else None
        key = None
        if data is not None:
            key = hashlib.sha256(data).hexdigest()[:24]
            blobs.setdefault(key, base64.b64encode(data).decode())
        nodes[host] = {"argv": argv, "stdin": key}
    return {"nodes": nodes, "blobs": blobs}


def _step_popen(
    transport: SlurmTransport, hosts: Sequence[str], mode: str, blob: bytes
) -> tuple[subprocess.Popen[bytes], bytes]:
    """Start the step; returns srun and what must go first on its stdin (the bundle, unless sbcast took it)."""
    path = transport.broadcast(hosts, blob)
    command = transport.step_argv(hosts, mode, path)
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=transport.environ,
            start_new_session=True,  # as in _popen: a Ctrl-C on our terminal must not reach srun
        )
    except OSError as exc:
        raise TransportError(
            hosts[0], f"cannot run {transport.srun} on this head node: {exc.strerror} (install slurm-client)"
        ) from None
    first = b"" if path else f"{BUNDLE_MAGIC} {len(blob)}\n".encode() + blob
    return proc, first


class StepRun:
    """One `run` step: every node's command to completion, results read back from the tagged chunks."""

    def __init__(
        self,
        transport: SlurmTransport,
        hosts: Sequence[str],
        mode: str,
        bundle: Mapping[str, object],
        timeout: float | None,
    ):
        self.hosts = list(hosts)
        self.timed_out = False
        self.refused_whole = False
        proc, first = _step_popen(transport, hosts, mode, pack(bundle))
        try:
            out, err = proc.communicate(first, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            end_step(proc)
            out, err = proc.communicate()
        self.timeout = timeout
        self.returncode = proc.returncode
        self.chunks: dict[str, dict[int, str]] = {}
        self.counts: dict[str, int] = {}
        for line in _text(out).splitlines():
            m = LABEL.match(line)
            chunk = RESULT_CHUNK.match(m.group(2)) if m else None
            if chunk:
                host, i, n, part = chunk.groups()
                self.chunks.setdefault(host, {})[int(i)] = part
                self.counts[host] = int(n)
        self.node_errors: dict[str, str] = {}
        self.failure: str | None = None
        for line in _text(err).splitlines():
            if m := TASK_ON_NODE.match(line):
                self.node_errors.setdefault(m.group("host"), m.group("why").strip())
            elif self.failure is None and (m := SRUN_FAILURE.match(line)):
                self.failure = m.group("why").strip()
        if not self.chunks and self.failure and any(w in self.failure for w in NOT_IN_ALLOCATION):
            self.refused_whole = True

    def results(self) -> dict[str, Result]:
        out: dict[str, Result] = {}
        for host, parts in self.chunks.items():
            if host in self.hosts and (result := result_of(host, parts, self.counts.get(host))) is not None:
                out[host] = result
        return out

    def missing(self, host: str, seconds: float) -> Result:
        """The Result of a node whose task gave no result."""
        if self.timed_out:
            return Result(
                host,
                None,
                error=f"timed out after {self.timeout:g}s on {host} (srun step cancelled)",
                failure=TIMEOUT,
                seconds=seconds,
            )
        why = (
            self.node_errors.get(host)
            or self.failure
            or f"no answer from its task (srun exit {self.returncode})"
        )
        return Result(host, None, error=f"srun on {host}: {why}", seconds=seconds)


class SrunStep(SrunProcess):
    """The one step that carries every node's long-lived command (guard mode). Its lines arrive labelled by
    task; each task says first which node it is ("RLH host"), and from then on its lines go to that node's
    callback, less the dispatcher's own: the push's result (RLP), a request's result (RLQ), the end of the
    node's command with its code (RLX). srun's own lines about a task ending ("srun: error: sn2: task 1: Exited
    with exit code 3") say the same for a task that ended without a word."""

    @classmethod
    def launch(
        cls,
        transport: SlurmTransport,
        hosts: Sequence[str],
        bundle: Mapping[str, object],
        on_line: HostLineCallback,
    ) -> SrunStep:
        proc, first = _step_popen(transport, hosts, "guard", pack(bundle))
        step = cls(hosts, on_line, proc)
        if first:
            step.write(first)
        return step

    def __init__(self, hosts: Sequence[str], on_line: HostLineCallback, proc: subprocess.Popen[bytes]):
        # Set before the reader thread starts (LocalProcess.__init__): a task's first line may come at once.
        self.hosts = list(hosts)
        self.host_lines = on_line
        self.task_host: dict[str, str] = {}
        self.early: dict[str, list[tuple[str, str]]] = {}  # lines of a task before it said who it is
        self.task_codes: dict[str, int] = {}
        self.gone: set[str] = set()  # hosts whose task srun says has ended
        self.phase: dict[str, str] = {}  # host → "held" (push done, waiting for RLGO) | "running" | "ended"
        self.prep: dict[str, dict[int, str]] = {}
        self.prep_counts: dict[str, int] = {}
        self.replies: dict[int, dict[str, tuple[dict[int, str], int]]] = {}
        self.node_errors: dict[str, str] = {}
        self.failure: str | None = None
        self.released: set[str] = set()
        self._next_request = 0
        self._closing = False
        self._last_word: tuple[bytes, float] = (b"", 0.0)
        self._word_lock = threading.Lock()
        self.changed = threading.Condition()
        name = "+".join(self.hosts[:3]) + ("+..." if len(self.hosts) > 3 else "")
        super().__init__(name, proc, lambda stream, text: None, None)

    def _deliver(self, stream: str, line: bytes) -> None:
        text = line.rstrip(b"\r").decode(errors="replace")
        m = LABEL.match(text)
        if m is None:
            if stream == "stderr" and (task := TASK_ON_NODE.match(text)):
                code = EXITED_WITH.search(task.group("why"))
                with self.changed:
                    host = task.group("host")
                    self.task_codes.setdefault(host, int(code.group(1)) if code else -1)
                    self.node_errors.setdefault(host, task.group("why").strip())
                    self.gone.add(host)
                    self.changed.notify_all()
            elif stream == "stderr" and self.failure is None and (fail := SRUN_FAILURE.match(text)):
                with self.changed:
                    self.failure = fail.group("why").strip()
                    self.changed.notify_all()
            return  # srun's own words (STEP CANCELLED, task status): not a node's output
        task, rest = m.group(1), m.group(2)
        host = self.task_host.get(task)
        if host is None:
            hello = HELLO.match(rest) if stream == "stdout" else None
            if hello and hello.group(1) in self.hosts:
                self.task_host[task] = hello.group(1)
                for early_stream, early_text in self.early.pop(task, []):
                    self._to_host(hello.group(1), early_stream, early_text)
            else:
                self.early.setdefault(task, []).append((stream, rest))
            return
        if stream == "stdout" and rest.startswith("RL") and self._own_word(host, rest):
            return
        self._to_host(host, stream, rest)

    def _own_word(self, host: str, text: str) -> bool:
        """The dispatcher's words on a task's stdout: recorded here, never a node's output."""
        with self.changed:
            if (m := PREP_CHUNK.match(text)) and m.group(1) == host:
                self.prep.setdefault(host, {})[int(m.group(2))] = m.group(4)
                self.prep_counts[host] = int(m.group(3))
                if len(self.prep[host]) == self.prep_counts[host]:
                    self.phase[host] = "held"
            elif (m := REPLY_CHUNK.match(text)) and m.group(2) == host:
                request = self.replies.get(int(m.group(1)))
                if request is not None:
                    parts, _ = request.get(host, ({}, 0))
                    parts[int(m.group(3))] = m.group(5)
                    request[host] = (parts, int(m.group(4)))
            elif (m := ENDED.match(text)) and m.group(1) == host:
                self.task_codes[host] = int(m.group(2))
                self.phase[host] = "ended"
            else:
                return False
            self.changed.notify_all()
            return True

    def _to_host(self, host: str, stream: str, text: str) -> None:
        with contextlib.suppress(Exception):  # a failing callback must not kill the reader
            self.host_lines(host, stream, text)

    # --------------------------------------------------------------------------- the push, then the start
    def _wait(self, done: Callable[[], bool], timeout: float | None) -> bool:
        """Wait (bounded) until done() or the step has ended; True when done()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.changed:
            while not done():
                if super().poll() is not None or self._closing:
                    return done()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.changed.wait(0.1 if left is None else min(0.1, left))
            return True

    def _missing(self, host: str, timeout: float | None) -> Result:
        if host in self.node_errors or self.failure or super().poll() is not None:
            why = self.node_errors.get(host) or self.failure or "no answer from its task (the step ended)"
            return Result(host, None, error=f"srun on {host}: {why}")
        return Result(
            host,
            None,
            error=f"timed out after {timeout:g}s on {host} (no answer in its step)",
            failure=TIMEOUT,
        )

    def prepared(self, timeout: float | None) -> dict[str, Result]:
        """Every node's result of the "pre" entry (the push): what arrived within timeout, the rest as errors."""
        self._wait(lambda: all(h in self.phase or h in self.gone for h in self.hosts), timeout)
        with self.changed:
            return {
                h: result_of(h, self.prep.get(h, {}), self.prep_counts.get(h)) or self._missing(h, timeout)
                for h in self.hosts
            }

    def go(self) -> None:
        """Start every held node's command: one line on the step's stdin reaches every task."""
        with self._word_lock:
            self.write(b"RLGO\n")
        with self.changed:
            for host in self.hosts:
                if self.phase.get(host) == "held":
                    self.phase[host] = "running"

    def abort(self) -> None:
        """Start nothing: every held task ends (RLNO), then the step."""
        with self._word_lock, contextlib.suppress(TransportError):
            self.write(b"RLNO\n")
        self.close()

    # --------------------------------------------------------------------------------- requests in the step
    def free(self, hosts: Sequence[str]) -> bool:
        """Every host has a task in this open step that is free to take a request: held before the start, or
        its command ended (its view's poll() says so; the run loop waits for that before it collects)."""
        if self._closing or super().poll() is not None or not set(hosts) <= set(self.hosts):
            return False
        with self.changed:
            return all(self.phase.get(h) in ("held", "ended") and h not in self.gone for h in hosts)

    def request(
        self, hosts: Sequence[str], bundle: Mapping[str, object], timeout: float | None
    ) -> dict[str, Result]:
        """Run every host's entry of bundle in its task of this step: one write on the step's stdin."""
        payload = base64.b64encode(pack(bundle)) + b"\n"
        with self.changed:
            self._next_request += 1
            rid = self._next_request
            self.replies[rid] = {}
        started = time.monotonic()
        try:
            with self._word_lock:
                self.write(f"RLC {rid} {len(payload)}\n".encode() + payload)
        except TransportError as exc:
            return {h: Result(h, None, error=exc.reason, failure=exc.kind) for h in hosts}

        def complete(h: str) -> bool:
            parts, count = self.replies[rid].get(h, ({}, -1))
            return len(parts) == count or h in self.gone

        self._wait(lambda: all(complete(h) for h in hosts), timeout)
        seconds = time.monotonic() - started
        out: dict[str, Result] = {}
        with self.changed:
            answers = self.replies.pop(rid)
            for h in hosts:
                parts, count = answers.get(h, ({}, None))
                result = result_of(h, parts, count)
                out[h] = replace(result or self._missing(h, timeout), seconds=seconds)
        return out

    # ------------------------------------------------------------------------------------------ the words
    def write_word(self, data: bytes, *, block: bool) -> bool:
        """Write to the step's stdin once for all tasks: the same words from every node's view within DEDUP_S
        (one heartbeat round, one stop) are one write, which srun forwards to every task."""
        with self._word_lock:
            now = time.monotonic()
            if data == self._last_word[0] and now - self._last_word[1] < DEDUP_S:
                return True
            sent = True
            if block:
                self.write(data)
            else:
                sent = self.try_write(data)
            if sent:
                self._last_word = (data, now)
            return sent

    def task_code(self, host: str) -> int | None:
        """The node's command's exit code: the dispatcher's word on it, srun's, or the step's own once ended."""
        if host in self.task_codes:
            return self.task_codes[host]
        code = super().poll()
        if code is None:
            return None
        return 0 if code == 0 else code

    def release(self, host: str) -> None:
        """A view closed; the step ends when every view is closed (the run loop closes them all at the end)."""
        self.released.add(host)
        if self.released >= set(self.hosts):
            self.close()

    def close(self) -> None:
        """End the step: EOF on its stdin ends every task whose command has ended (and tells a guard still
        running that the head is gone); srun then exits by itself. Only a step still there STOP_GRACE later is
        cancelled (SIGTERM to srun)."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        with self.changed:
            self.changed.notify_all()
        self.close_stdin()
        if self._done.wait(STOP_GRACE):
            with self._lock:
                self._closed = True
            return
        super().close()


class StepTask(RemoteProcess):
    """One node's share of a SrunStep: what the run loop holds as that node's follower."""

    def __init__(self, step: SrunStep, host: str):
        self.step = step
        self.host = host

    def write(self, data: bytes) -> None:
        self.step.write_word(data, block=True)

    def try_write(self, data: bytes) -> bool:
        return self.step.write_word(data, block=False)

    def close_stdin(self) -> None:
        """The stdin is every node's: it closes with the step (release), not with one node."""

    def poll(self) -> int | None:
        return self.step.task_code(self.host)

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            with self.step.changed:
                self.step.changed.wait(0.1 if left is None else min(0.1, left))
        return code

    def close(self) -> None:
        self.step.release(self.host)
