"""The watcher: a small explicit state machine the runner feeds with what it sees. No I/O, no clock:
every call carries the time, so tests replay a run from plain data.

States (torch.distributed.elastic's worker states are the model: agent/server/api.py)::

    STARTING ─first output─► RUNNING ─all nodes exit 0─► SUCCEEDED
        │                      │
        └──first fatal event───┴─► STOPPING (runner tears down) ─all nodes exited─► FAILED
        └──request_stop()──────┴─► STOPPING ─all nodes exited─► STOPPED (FAILED if a fatal event came first)

Root cause (``first_failure``). torchrun's rule is "the earliest error file is the root cause", but
the events we see carry reporting delays (SSH, heartbeats, clocks of different hosts) and survivors
shout quickly: gloo peers of a killed rank print "Connection closed by peer" within 0.7–2.8 s,
sometimes before the runner learns of the kill itself. So events get a precedence:

    2  specific: a classified line of a cause (OOM, GPU fault, RCCL system error, …), a death by a
       signal that nobody sends during a normal teardown (SIGKILL, SIGSEGV, SIGABRT, …), a process
       seen stopped (state T), a node lost;
    1  a stall (nobody printed for stall_timeout; the culprit is only guessed);
    0  cascade: what survivors print or do because a peer failed (closed/reset connections, remote
       errors, collective timeouts, ChildFailedError, a plain non-zero exit, SIGTERM from a launcher).

The root cause is the earliest event of the highest precedence among the fatal events that happened
within ``cascade_window`` seconds of the earliest fatal event. Outside that window, time wins.

A rank that failed as a victim stays a victim: once a rank (or, for a node-level exit, its node) printed a
cascade line, its later crash — the "terminate called without an active exception" and SIGABRT with which a
gloo rank often leaves after a peer vanished — is part of the cascade, not a cause of its own. Without this the
survivor's abort, which can be read before the killed rank's own report, was named the root cause.

Lines of different nodes reach the head through different followers that poll every 0.2 s, so their times
are only comparable within ``clock_slack``: a post-training abort read just before another node's completion
line is still an end-of-run abort, and the runner holds teardown that long for such a line (``worth_holding``).
"""

from __future__ import annotations

import re
import signal as signals
import time as clock
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from launcher.health.events import Event, State
from launcher.health.netinit import transport_of_line
from launcher.health.progress import Progress
from launcher.health.pyexc import Tracebacks
from launcher.health.rules import (
    OOM_EVIDENCE_RULES,
    RULES_BY_NAME,
    WARNING_LEVEL_PREFIX,
    Match,
    at_level,
    classify,
    is_completion_marker,
    is_progress,
)
from launcher.health.stacks import explain, where
from launcher.node import protocol
from launcher.node.gpuact import oom_detail, oom_pid

TERMINAL = frozenset({State.SUCCEEDED, State.FAILED, State.STOPPED})

# Signals a launcher or we send on purpose while tearing a job down: a rank dying of one of these
# is a consequence, not a cause.
TEARDOWN_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP"})

PRECEDENCE_SPECIFIC, PRECEDENCE_STALL, PRECEDENCE_CASCADE = 2, 1, 0
NET_SOCKET_RULE = "rccl-net-socket"  # not in the rule table: it depends on the inventory's net.transport
# A node whose connection attempts to the master's TCPStore keep failing with a routing errno. c10d's client retries
# every failure until its timeout (torchrun's default: 900 s; socket.cpp logs "The client socket has failed to connect
# to <addr> (errno: 101 - Network is unreachable)" per address and TCPStore.cpp "... - retrying (try=N ...)", both at
# W level, torch 2.13.0 in the .venv), so a node cut off from the master used to sit through the whole stall limit.
# ECONNREFUSED is the master not listening yet and stays a retry; ENETUNREACH (101) / EHOSTUNREACH (113) say no route
# leads there, which no retry mends within a job's start: after UNREACHABLE_AFTER_S of them it is a network failure.
# Not in the rule table: a run of retry lines over time, not one line.
STORE_UNREACHABLE_RULE = "store-unreachable"
STORE_CONNECT_RULES = frozenset({"store-connect-attempt", "store-connect-retry"})
_UNREACHABLE_ERRNO = re.compile(r"errno: (?:101|113)\b|Network is unreachable|No route to host")
UNREACHABLE_AFTER_S = 10.0

# The stops the watcher asked for itself or on request, with the words a line printed while they run is shown with.
DELIBERATE_STOPS = {
    "requested": "while stopping on request",
    "end-of-run": "while stopping after the run completed",
}
# Failures reported only by a line of a kind that a cleanly finishing torchrun also prints (exit-barrier and store
# errors after the master's agent left): teardown waits up to ``confirm_s`` for that node's exit code.
HOLD_CATEGORIES = frozenset({"rendezvous", "network"})
# A line its emitter logged at warning level (rules.WARNING_LEVEL_PREFIX: c10's "W<mmdd> <time>" prefix). A store or
# network line at that level is c10d noting a lost connection, as every agent does in its exit barrier after the
# master's agent left: a real failure follows as an error line and a non-zero exit.
_WARNING_LEVEL = WARNING_LEVEL_PREFIX

# A rank that died of an uncaught Python exception exits with status 1 (CPython); torchrun says so in its wrapper
# line "failed (exitcode: 1) local_rank: N", its failure table "exitcode  : 1 (pid: ...)", the deepspeed launcher
# in "exits with return code = 1"; a job without torchrun simply exits 1. Then that rank's own exception, read from
# its traceback (pyexc.py), is the root cause (issue 20), named "uncaught-exception".
EXIT_STATUS_1 = re.compile(r"exit ?code\s*:?\s*1\b|exits with return code = 1\b")
LOCAL_RANK = re.compile(r"local_rank:\s*(\d{1,6})\b")
UNCAUGHT = "uncaught-exception"


@dataclass(frozen=True)
class ProcSample:
    """One process as the node probe saw it (state letter as in /proc/PID/stat: R, S, D, T, Z…)."""

    pid: int
    state: str
    rank: int | None = None
    cpu: float | None = None  # cumulative CPU seconds (utime + stime), for progress.py
    io: float | None = None  # cumulative bytes read + written (any file or socket)
    gpu: dict | None = (
        None  # a fresh reading of the rank's GPU {"id", "gfx", "umc", "w", "idle_w"}, if sampled
    )


@dataclass(frozen=True)
class Verdict:
    ok: bool
    state: State
    root_cause: Event | None
    summary: str
    exit_codes: dict[str, int | None]
    end_of_run_aborts: tuple[Event, ...] = ()
    warnings: int = 0


def signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


def decode_exit(code: int | None, signal: str | int | None) -> tuple[int | None, str | None]:
    """Normalise the ways an exit is reported: Popen's -N, a shell's 128+N, or an explicit signal."""
    if isinstance(signal, int):
        return code, signal_name(signal)
    if signal is not None:
        return code, signal
    if code is not None and code < 0:
        return code, signal_name(-code)
    if code is not None and 128 < code <= 128 + 64:
        return code, signal_name(code - 128)
    return code, None


def format_time(t: float) -> str:
    """A readable moment: local wall-clock time for epoch seconds ("14:03:07"), else seconds since the start
    (tests and replays feed run-relative times)."""
    if t >= 1e9:
        return clock.strftime("%H:%M:%S", clock.localtime(t))
    return f"t+{t:.0f}s"


def format_duration(seconds: float) -> str:
    """ "45 s", "3 min 20 s", "2 h 5 min" """
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def match_of_rule(rule: str, text: str) -> Match | None:
    """The match a node's follower reported for `text` (its rule id, protocol.py "f"), without classifying again:
    the follower ran the same table (rules.py is pushed with the guard). Its two markers that are no rule's
    (completion, net-init) match nothing; an id this table lacks (a guard of another rlaunch) is classified here."""
    if rule in (protocol.F_COMPLETION, protocol.F_NET_INIT):
        return None
    found = RULES_BY_NAME.get(rule)
    if found is None:
        return classify(text)
    return at_level(
        Match(found.name, found.category, found.severity, found.hint, found.cascade, found.waiting), text
    )


def precedence(event: Event) -> int:
    if event.kind == "stall":
        return PRECEDENCE_STALL
    if event.kind in ("stopped", "lost", "hang"):
        return PRECEDENCE_SPECIFIC
    if event.kind == "exit":
        killed_by_cause = event.signal is not None and event.signal not in TEARDOWN_SIGNALS
        return PRECEDENCE_SPECIFIC if killed_by_cause else PRECEDENCE_CASCADE
    rule = RULES_BY_NAME.get(event.rule or "")
    return PRECEDENCE_CASCADE if rule is not None and rule.cascade else PRECEDENCE_SPECIFIC


@dataclass
class Watcher:
    """Feed it everything the runner sees; ask ``state``, ``first_failure`` and ``verdict()``.

    ``ranks`` maps node name to its global ranks. ``cascade_window`` is how long after the
    earliest fatal event a more specific one may still be named the root cause.
    ``stop_confirm_s`` is how long a process must stay in state T before it counts as stopped.
    """

    ranks: dict[str, list[int]]
    stall_timeout: float
    startup_timeout: float | None = (
        None  # silence allowed before the first progress line (default: stall_timeout)
    )
    cascade_window: float = 15.0
    stop_confirm_s: float = 1.0
    confirm_s: float = 3.0  # how long a fatal *line* waits for its node's exit code before it counts
    clock_slack: float = (
        1.0  # how far apart in time lines read by different nodes' followers may be reordered
    )
    state: State = State.STARTING
    events: list[Event] = field(default_factory=list)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    completed_at: float | None = None
    stop_reason: str | None = None
    _started_at: float | None = None
    _last_output: dict[tuple[str, int | None], float] = field(default_factory=dict)
    _stall_reported: bool = False
    _stopped_since: dict[tuple[str, int], float] = field(default_factory=dict)
    _stopped_reported: set[tuple[str, int]] = field(default_factory=set)
    _end_of_run_nodes: set[str] = field(default_factory=set)
    _line_numbers: dict[tuple[str, int | None], int] = field(default_factory=dict)
    # Per node: the latest evidence that memory ran out (time, what said so). A SIGKILL near it is an OOM kill.
    _oom_evidence: dict[str, tuple[float, str]] = field(default_factory=dict)
    _teardown_at: float | None = None
    _end_of_run_since: float | None = None
    # After an end-of-run abort on one node the others' torchrun waits in its exit barrier (up to 300 s) for an
    # agent that is gone: outputs are complete, so such nodes are stopped after this long and the run succeeds.
    end_of_run_grace: float = 20.0
    # Cadence and per-rank activity for hang and straggler detection (progress.py).
    progress: Progress = field(default_factory=Progress)
    straggler_action: str = "warn"  # warn | restart-without
    # `net.transport` of the inventory: "ib" makes a rank whose RCCL chose TCP sockets a fatal config error
    # (launcher/health/netinit.py), seconds after start instead of a job at a tenth of its speed.
    expect_net: str | None = None
    _net_socket_nodes: set[str] = field(default_factory=set)
    # Per node: when its first store connection attempt failed for want of a route, and the nodes already reported
    # (STORE_UNREACHABLE_RULE).
    _unreachable_since: dict[str, float] = field(default_factory=dict)
    _unreachable_reported: set[str] = field(default_factory=set)
    unreachable_after: float = UNREACHABLE_AFTER_S
    _hang_reported: bool = False
    _stragglers: set[str] = field(default_factory=set)
    # (node, pid) -> rank of every rank process seen in the guards' procs records: a kernel OOM-killer line names
    # the killed process by pid, and the process is gone by then.
    _pid_ranks: dict[tuple[str, int], int] = field(default_factory=dict)
    _oom_killed: dict[tuple[str, int], int] = field(default_factory=dict)  # (node, pid) -> index in events
    # Each rank's traceback lines (pyexc.py): its own exception becomes the root cause when it exits with status 1.
    tracebacks: Tracebacks = field(default_factory=Tracebacks)
    _news: list[Event] = field(
        default_factory=list
    )  # events found while recording another, returned by tick()

    # ---- inputs -------------------------------------------------------------------------------

    def start(self, time: float) -> None:
        """The moment the job was launched: stall detection counts from here until output appears."""
        if self._started_at is None:
            self._started_at = time

    def observe_line(
        self, time: float, node: str, rank: int | None, text: str, *, rule: str | None = None
    ) -> Event | None:
        """One line of output. Records activity; returns the event if a rule flags the line. `rule`: the rule id
        the node's follower already matched (launcher/node/edge.py Forwarder): the line is not classified again."""
        self.start(time)
        key = (node, rank)
        self.tracebacks.feed(time, key, text)
        match = classify(text) if rule is None else match_of_rule(rule, text)
        if is_progress(text, match):  # stack frames and retry loops' "still waiting" do not count
            self._last_output[key] = time
            self._stall_reported = False
            self.progress.observe_line(time, text)
        self._line_numbers[key] = self._line_numbers.get(key, 0) + 1
        if self.state is State.STARTING:
            self.state = State.RUNNING
        if is_completion_marker(text) and self.completed_at is None:
            self.completed_at = time
            self._forgive_recent_end_of_run_aborts()
        if match is None:
            return self._net_socket(time, node, rank, text, self._line_numbers[key])
        event = Event(time, node, rank, "line", match.category, match.severity, text.strip(),
                      line=self._line_numbers[key], rule=match.rule)  # fmt: skip
        if match.rule == "end-of-run-abort" and self._after_completion(time):
            # Training already reported completion: a thread torn down at exit, not a failed run.
            self._end_of_run_nodes.add(node)
        if match.rule in OOM_EVIDENCE_RULES:
            self.observe_oom_kill(time, node, f"the job's output: {text.strip()[:120]}")
        recorded = self._record(self._blame_oom(self._forgive_end_of_run(event)))
        no_route = _UNREACHABLE_ERRNO.search(text) if match.rule in STORE_CONNECT_RULES else None
        if no_route is not None:
            return (
                self._store_unreachable(time, node, rank, text, no_route, self._line_numbers[key]) or recorded
            )
        return recorded

    def observe_activity(
        self,
        time: float,
        node: str,
        rank: int | None,
        *,
        lines: int = 1,
        progress: bool = True,
        text: str | None = None,
    ) -> None:
        """Lines the node's guard already classified as healthy (launcher/node/edge.py's Forwarder): activity for
        the stall clock and line numbers, without classifying them again on the head. A forwarded line's `text`
        still teaches the step cadence (progress.py): without it no hang was ever found behind edge forwarding."""
        self.start(time)
        key = (node, rank)
        if text is not None:
            self.tracebacks.feed(
                time, key, text
            )  # a traceback's frames arrive as context of its flagged line
        if progress:
            self._last_output[key] = max(time, self._last_output.get(key, time))
            self._stall_reported = False
            if text is not None and is_progress(text, None):
                self.progress.observe_line(time, text)
        self._line_numbers[key] = self._line_numbers.get(key, 0) + lines
        if self.state is State.STARTING:
            self.state = State.RUNNING

    def observe_exit(
        self,
        time: float,
        node: str,
        code: int | None,
        signal: str | int | None = None,
        rank: int | None = None,
    ) -> Event | None:
        """A rank (rank given) or the node's launcher (rank None) exited."""
        self.start(time)
        code, signal_text = decode_exit(code, signal)
        if rank is None:
            self.exit_codes[node] = code
        if (code in (0, None)) and signal_text is None:
            if rank is None and code == 0:
                self._forgive_lines_of_clean_exit(node, time)
            self._settle(time)
            return None
        how = f"killed by {signal_text}" if signal_text else f"exited with code {code}"
        event = Event(time, node, rank, "exit", "crash", "fatal", how, code=code, signal=signal_text)
        # Exits after the teardown began are its doing (our SIGTERM, then SIGKILL after the grace); a death that
        # happened before, even if reported late, is still a cause.
        ours = self._teardown_at is not None and time >= self._teardown_at
        expected = ours or self.stop_reason == "requested" or signal_text in TEARDOWN_SIGNALS
        if self.state is State.STOPPING and expected:
            # We (or torchrun, after a failure) asked for this exit.
            event = replace(event, severity="info", text=f"{how} while stopping")
        event = self._blame_oom(self._forgive_end_of_run(event))
        if (
            event.kind == "exit"
            and event.text.startswith("end-of-run abort")
            and self._end_of_run_since is None
        ):
            self._end_of_run_since = time
        recorded = self._record(event)
        self._settle(time)
        return recorded

    def observe_procs(self, time: float, node: str, procs: Iterable[ProcSample | tuple]) -> list[Event]:
        """A snapshot of the node's job processes. A process must be seen stopped (state T) twice,
        at least ``stop_confirm_s`` apart, before it counts: a debugger or a brief SIGSTOP is not a hang."""
        self.start(time)
        found: list[Event] = []
        samples = [sample if isinstance(sample, ProcSample) else ProcSample(*sample) for sample in procs]
        self.progress.observe_heard(time, node)
        self._observe_usage(time, node, samples)
        for proc in samples:
            if proc.rank is not None:
                self._pid_ranks[(node, proc.pid)] = proc.rank
        for proc in samples:
            key = (node, proc.pid)
            if proc.state not in ("T", "t"):
                self._stopped_since.pop(key, None)
                continue
            since = self._stopped_since.setdefault(key, time)
            if key in self._stopped_reported or time - since < self.stop_confirm_s:
                continue
            self._stopped_reported.add(key)
            text = (
                f"process {proc.pid} stopped (state {proc.state}: SIGSTOP or a debugger) since {format_time(since)},"
                f" seen stopped for {format_duration(time - since)}"
            )
            event = self._record(Event(since, node, proc.rank, "stopped", None, "fatal", text))
            if event is not None:
                found.append(event)
        return found

    def observe_oom_kill(self, time: float, node: str, source: str) -> None:
        """Evidence that memory ran out on ``node``: the kernel's OOM-killer line, the job cgroup's memory.events
        oom_kill counter going up, or the job's own OOM output. A SIGKILL on that node within ``cascade_window``
        (before or after) is then reported as an OOM kill; without such evidence it stays "killed by SIGKILL"."""
        self._oom_evidence[node] = (time, source)
        for i, event in enumerate(self.events):
            if event.node == node and abs(event.time - time) <= self.cascade_window:
                self.events[i] = self._blame_oom(event)

    def observe_lost(self, time: float, node: str, why: str) -> Event | None:
        """The link or heartbeat to a node is gone."""
        self.start(time)
        return self._record(Event(time, node, None, "lost", "network", "fatal", f"node lost: {why}"))

    def observe_gpu(self, time: float, node: str, text: str) -> Event | None:
        """A GPU-state line from the node (kernel log, amd-smi); classified like any line. The guard forwards the
        kernel OOM killer's lines only for the job's own processes: one that names a rank's pid becomes that rank's
        root cause ("rank 3 (node2) killed by the kernel OOM killer: anon-rss 31451456kB")."""
        self.start(time)
        match = classify(text)
        if match is None:
            return None
        if match.rule in OOM_EVIDENCE_RULES:
            killed = self._oom_kill_of_rank(time, node, text)
            if killed is not False:
                return killed
            self.observe_oom_kill(time, node, f"the kernel log: {text.strip()[:120]}")
        return self._record(
            Event(time, node, None, "gpu", match.category, match.severity, text.strip(), rule=match.rule)
        )

    def _oom_kill_of_rank(self, time: float, node: str, text: str) -> Event | bool | None:
        """The OOM kill of a known rank process as an event (None when it only adds to one already recorded: the
        kernel prints "oom-kill:...pid=N" and then "Killed process N ... anon-rss"); False if no rank is named."""
        pid = oom_pid(text)
        rank = self._pid_ranks.get((node, pid)) if pid is not None else None
        if pid is None or rank is None:
            return False
        detail = oom_detail(text)
        said = f"rank {rank} ({node}) killed by the kernel OOM killer: {detail} (pid {pid})"
        self.observe_oom_kill(time, node, f"the kernel log: {said}")
        known = self._oom_killed.get((node, pid))
        if known is not None:
            if detail.startswith("anon-rss") and "anon-rss" not in self.events[known].text:
                self.events[known] = replace(self.events[known], text=said)
            return None
        # Kind "line" with the OOM rule, not "gpu": host memory ran out, which is no fault of the node's GPUs.
        event = Event(time, node, rank, "line", "oom", "fatal", said, rule="host-oom-killer")
        self._oom_killed[(node, pid)] = len(self.events)
        return self._record(event)

    def request_stop(self, time: float, reason: str = "requested") -> None:
        """The user (or the runner) asked to stop: exits from now on are expected."""
        if self._teardown_at is None:
            self._teardown_at = time
        if self.state not in TERMINAL and self.state is not State.STOPPING:
            self.state = State.STOPPING
            self.stop_reason = reason

    def tick(self, now: float) -> list[Event]:
        """Time passes. A stall is the whole job silent for ``stall_timeout``: with HF Trainer only
        the main process prints, so one quiet rank proves nothing. The quietest node is named. Also returns the
        events found while another was recorded (a rank's uncaught exception, named when its exit is seen)."""
        news, self._news = self._news, []
        return news + self._tick(now)

    def _tick(self, now: float) -> list[Event]:
        self.start(now)
        if (
            self._end_of_run_since is not None
            and self.state in (State.STARTING, State.RUNNING)
            and now - self._end_of_run_since >= self.end_of_run_grace
        ):
            self.request_stop(now, "end-of-run")
            text = (
                "training completed and a node ended with an end-of-run abort: stopping nodes still waiting"
            )
            return [self._record(Event(now, "", None, "info", None, "info", text))]
        if self.state in TERMINAL or self.state is State.STOPPING or self._stall_reported:
            return []
        assert self._started_at is not None
        last_any = max(self._last_output.values(), default=self._started_at)
        # Before the first line of progress the job is starting up (imports, model loading): its own allowance.
        limit = self.stall_timeout if self._last_output else (self.startup_timeout or self.stall_timeout)
        if now - last_any < limit:
            return []
        self._stall_reported = True
        quietest, since = self._quietest_node()
        silent_for = now - last_any
        text = (
            f"no output from any rank for {format_duration(silent_for)}"
            f" (quietest: {quietest}, its last output at {format_time(since)})"
        )
        event = self._record(Event(now, quietest, None, "stall", None, "fatal", text))
        return [event] if event is not None else []

    # ---- progress: hangs and stragglers (progress.py) -----------------------------------------

    def _observe_usage(self, time: float, node: str, samples: list[ProcSample]) -> None:
        # A rank's children (dataloader workers) inherit its RANK: a rank's activity is the sum over its processes,
        # and they inherit its GPU visibility too, so any of them carries the rank's GPU reading.
        totals: dict[int, tuple[float, float]] = {}
        gpus: dict[int, dict] = {}
        for proc in samples:
            if proc.rank is not None and proc.cpu is not None:
                cpu, io = totals.get(proc.rank, (0.0, 0.0))
                totals[proc.rank] = (cpu + proc.cpu, io + (proc.io or 0.0))
                if proc.gpu is not None:
                    gpus.setdefault(proc.rank, proc.gpu)
        for rank, (cpu, io) in totals.items():
            self.progress.observe_rank(time, node, rank, cpu, io, gpus.get(rank))

    def tick_progress(self, now: float) -> list[Event]:
        """Time passes, for the cadence rules: a hang (no progress for max(k × step interval, floor) with every
        rank quiescent) is fatal; a straggler is a warning, or fatal with ``straggler_action: restart-without``."""
        if self.state is not State.RUNNING or self.completed_at is not None:
            return []
        found: list[Event] = []
        hung = None if self._hang_reported else self.progress.hung(now)
        if hung is not None:
            self._hang_reported = True
            silent, threshold = hung
            interval = self.progress.interval or 0.0
            unheard = self.progress.unheard_nodes(now)
            if unheard:
                # The others wait for a node that says nothing at all: that node is the cause, not a hang of all.
                node = unheard[0]
                since = self.progress.heard[node]
                text = (
                    f"{node} unresponsive: nothing heard from its node guard since {format_time(since)} "
                    f"({format_duration(now - since)}) while the other nodes' ranks wait idle; no progress for "
                    f"{silent:.0f}s (host frozen, or its link stalled without breaking)"
                )
                found.append(
                    self._record(Event(since, node, None, "lost", None, "fatal", text, rule="unresponsive"))
                )
            else:
                quietest, _ = self._quietest_node()
                text = (
                    f"no progress for {silent:.0f}s (step interval {interval:.2f}s, limit {threshold:.0f}s) "
                    f"and every rank idle for {self.progress.settings.quiet_window:.0f}s (no CPU, no I/O)"
                )
                found.append(self._record(Event(now, quietest, None, "hang", "hang", "fatal", text)))
        for node, evidence in self.progress.stragglers(now).items():
            if node in self._stragglers:
                continue
            self._stragglers.add(node)
            severity = "fatal" if self.straggler_action == "restart-without" else "warning"
            found.append(self._record(Event(now, node, None, "straggler", "straggler", severity, evidence)))
        return found

    @property
    def stragglers(self) -> list[str]:
        return sorted(self._stragglers)

    def explain_hang(self, dumps: list[tuple[str, int | None, str | None, str]]) -> Event | None:
        """Stacks of every rank, dumped after a hang or stall was declared: (node, rank, tool, text) each. The
        rank whose stack differs from the majority becomes the named root cause."""
        culprit, sentence = explain([where(*dump) for dump in dumps])
        return self.refine(
            lambda event: replace(
                event,
                node=culprit.node if culprit is not None else event.node,
                rank=culprit.rank if culprit is not None else event.rank,
                text=f"{sentence}; {event.text}",
            )
        )

    def refine(self, change: Callable[[Event], Event]) -> Event | None:
        """Evidence gathered after a hang or stall was declared (stacks, the flight recorder: launcher/run/
        forensics.py): `change` rewrites the fatal hang or stall event where it stands, so the verdict's root cause
        names what the evidence names. Returns the rewritten event, or None when no hang or stall was declared."""
        for i, event in enumerate(self.events):
            if event.kind in ("hang", "stall") and event.is_fatal:
                self.events[i] = change(event)
                return self.events[i]
        return None

    def observe_confirmed(self, event: Event) -> Event:
        """A fatal finding another party already confirmed (a node guard's edge rules ended its node:
        launcher/node/edge.py): recorded like the watcher's own, without waiting for a second sample."""
        return self._record(event)

    # ---- outputs ------------------------------------------------------------------------------

    @property
    def should_stop(self) -> bool:
        """The runner should tear the job down now."""
        return self.state is State.STOPPING

    @property
    def first_failure(self) -> Event | None:
        """The root cause: see the module docstring for the precedence rule."""
        fatal = [event for event in self.events if event.is_fatal]
        if not fatal:
            return None
        earliest = min(event.time for event in fatal)
        window = [event for event in fatal if event.time <= earliest + self.cascade_window]
        return min(window, key=lambda event: (-self._precedence(event, fatal), event.time))

    def worth_holding(self, failure: Event, now: float) -> bool:
        """Whether the runner should hold teardown a moment before acting on ``failure``.

        A post-training abort may be forgiven by a completion line that another node's follower has not
        delivered yet (``clock_slack``). A line of a kind that a cleanly finishing torchrun also prints (exit
        barrier and store errors) waits for its node's exit code: an exit 0 forgives it. Specific causes (OOM,
        GPU fault, a signal) never wait, and the hold ends as soon as that node exits non-zero. A cascade line waits
        the same while for the cause it is a consequence of."""
        if failure.kind != "line":
            return False
        if self._peer_left_cleanly(failure) or self._logged_as_warning(failure):
            # The store's host already exited 0: this node's line is its agent losing that store at the end of a
            # clean run. Its own exit code decides, however late it comes under load (bounded by the grace).
            return failure.node not in self.exit_codes and now - failure.time < self.end_of_run_grace
        if failure.rule == "end-of-run-abort":
            return now - failure.time < self.clock_slack
        if precedence(failure) == PRECEDENCE_CASCADE:
            # A survivor's line ("Connection closed by peer") often outruns the failed rank's own report (its
            # torchrun's "failed (exitcode: 1)", which names the rank's exception): wait briefly for the cause.
            return now - failure.time < self.confirm_s - 0.5
        if failure.category not in HOLD_CATEGORIES or now - failure.time >= self.confirm_s - 0.5:
            return False
        return not any(e.kind == "exit" and e.node == failure.node and e.is_fatal for e in self.events)

    def verdict(self) -> Verdict:
        root = self.first_failure
        aborts = tuple(event for event in self.events if event.text.startswith("end-of-run abort"))
        warnings = sum(1 for event in self.events if event.severity == "warning")
        if root is not None:
            summary = describe(root)
        elif self.state is State.SUCCEEDED:
            summary = "succeeded" + (f" ({len(aborts)} end-of-run abort(s) ignored)" if aborts else "")
        elif self.state is State.STOPPED:
            summary = "stopped on request"
        else:
            summary = f"{self.state.value}, no failure so far"
        ok = self.state is State.SUCCEEDED and root is None
        return Verdict(ok, self.state, root, summary, dict(self.exit_codes), aborts, warnings)

    # ---- internals ----------------------------------------------------------------------------

    def _precedence(self, event: Event, fatal: list[Event]) -> int:
        """``precedence(event)``, except that a crash of a rank (or node) that already failed as a victim is part
        of the cascade (see the module docstring)."""
        level = precedence(event)
        if level != PRECEDENCE_SPECIFIC or event.category != "crash":
            return level
        for earlier in fatal:
            same = earlier.node == event.node and (event.rank is None or earlier.rank == event.rank)
            victim = (
                earlier.kind == "line" and precedence(earlier) == PRECEDENCE_CASCADE
            )  # a line, not an exit code
            if same and victim and earlier.time <= event.time:
                return PRECEDENCE_CASCADE
        return level

    def _after_completion(self, time: float) -> bool:
        return self.completed_at is not None and time >= self.completed_at - self.clock_slack

    def _forgive_end_of_run(self, event: Event) -> Event:
        """After training reported completion, the abort on a node and the crash reports that follow
        it (the rank's SIGABRT, torchrun's ChildFailedError and exit 1) are warnings, not failures."""
        forgiven = (
            event.is_fatal
            and event.category == "crash"
            and event.node in self._end_of_run_nodes
            and self._after_completion(event.time)
        )
        if not forgiven:
            return event
        return replace(event, severity="warning", text=f"end-of-run abort: {event.text}")

    def _forgive_recent_end_of_run_aborts(self) -> None:
        """The completion line arrived just after another node's abort had been read (``clock_slack``):
        forgive that abort and what followed it, and take back the stop it caused if nothing else is fatal."""
        for event in self.events:
            if event.rule == "end-of-run-abort" and event.is_fatal and self._after_completion(event.time):
                self._end_of_run_nodes.add(event.node)
        self.events = [self._forgive_end_of_run(event) for event in self.events]
        if self.stop_reason == "failure" and not any(e.is_fatal for e in self.events):
            self.state = State.RUNNING
            self.stop_reason = None

    def _blame_oom(self, event: Event) -> Event:
        """A death by SIGKILL (the rank's exit, or torchrun's "exitcode: -9" / "Signal 9 (SIGKILL)") becomes an
        OOM kill when memory evidence exists for its node close enough in time; otherwise it is left alone."""
        evidence = self._oom_evidence.get(event.node)
        sigkill = (event.kind == "exit" and event.signal == "SIGKILL") or event.rule == "rank-sigkill"
        if evidence is None or not sigkill or event.category == "oom":
            return event
        when, source = evidence
        if abs(event.time - when) > self.cascade_window:
            return event
        return replace(event, category="oom", text=f"{event.text} — out of memory, per {source}")

    def _forgive_lines_of_clean_exit(self, node: str, time: float) -> None:
        """A node whose launcher exits 0 shortly after a fatal-looking line was not failing: torchrun's agents
        log "Error waiting on exit barrier ... DistNetworkError" when the master's agent leaves first, and
        exit 0 all the same. Such lines become warnings (the runner holds teardown for `confirm_s` after a
        line-only failure to give the exit a chance to arrive)."""
        changed = False
        for i, event in enumerate(self.events):
            if (
                event.node == node
                and event.kind == "line"
                and event.is_fatal
                and (
                    time - event.time <= self.confirm_s
                    or self._peer_left_cleanly(event)
                    or self._logged_as_warning(event)
                )
            ):
                self.events[i] = replace(
                    event, severity="warning", text=f"followed by a clean exit: {event.text}"
                )
                changed = True
        if changed and self.stop_reason == "failure" and not any(e.is_fatal for e in self.events):
            self.state = State.RUNNING
            self.stop_reason = None

    @staticmethod
    def _logged_as_warning(event: Event) -> bool:
        """A store or network line (HOLD_CATEGORIES) its emitter logged at warning level (_WARNING_LEVEL): its node's
        own exit code decides, however late it arrives (bounded by end_of_run_grace), as after a clean peer."""
        return (
            event.kind == "line"
            and event.category in HOLD_CATEGORIES
            and bool(_WARNING_LEVEL.match(event.text))
        )

    def _peer_left_cleanly(self, event: Event) -> bool:
        """A store or rendezvous line (HOLD_CATEGORIES) of a node after the run finished elsewhere: another node's
        launcher exited 0, or training printed its completion line. torchrun's agents close the c10d store when
        the master's agent leaves its exit barrier (torch/distributed/elastic/agent/server/api.py `_exit_barrier`,
        torch 2.13 in the .venv), so the others then log a store error and exit 0 themselves. That node's own exit
        code decides, never how late it arrives: a fixed ``confirm_s`` failed good runs on a loaded machine. A
        peer that exited 0 finished every collective with this node, so a real fault here still shows as a
        non-zero exit, which counts."""
        if event.kind != "line" or event.category not in HOLD_CATEGORIES:
            return False
        peer_exited_0 = any(code == 0 for node, code in self.exit_codes.items() if node != event.node)
        return peer_exited_0 or self._after_completion(event.time)

    def _net_socket(self, time: float, node: str, rank: int | None, text: str, line: int) -> Event | None:
        """With net.transport ib, a node's first RCCL INIT line that says NET/Socket: a fatal config error."""
        if self.expect_net != "ib" or node in self._net_socket_nodes or transport_of_line(text) != "socket":
            return None
        self._net_socket_nodes.add(node)
        who = f"rank {rank} on {node}" if rank is not None else node
        why = (
            f"RCCL on {who} uses TCP sockets (NET/Socket), but net.transport is ib: RDMA is not working there "
            f"({text.strip()[:200]})"
        )
        event = Event(time, node, rank, "line", "config", "fatal", why, line=line, rule=NET_SOCKET_RULE)
        return self._record(event)

    def _store_unreachable(
        self, time: float, node: str, rank: int | None, text: str, errno: re.Match[str], line: int
    ) -> Event | None:
        """A node's store connection attempts have failed for want of a route (`errno`, this line's) for
        `unreachable_after` seconds: a fatal network failure of that node (see STORE_UNREACHABLE_RULE), once."""
        since = self._unreachable_since.setdefault(node, time)
        if node in self._unreachable_reported or time - since < self.unreachable_after:
            return None
        self._unreachable_reported.add(node)
        no_route = "113" in errno.group(0) or "No route" in errno.group(0)
        errno_text = "No route to host" if no_route else "Network is unreachable"
        why = (
            f"cannot reach the master's store: {errno_text} for {time - since:.0f} s of retries; a route or "
            f"link between {node} and the master is down (its own line: {text.strip()[:160]})"
        )
        event = Event(
            time, node, rank, "line", "network", "fatal", why, line=line, rule=STORE_UNREACHABLE_RULE
        )
        return self._record(event)

    def _record(self, event: Event) -> Event:
        if event.is_fatal and self.state is State.STOPPING and self.stop_reason in DELIBERATE_STOPS:
            # A deliberate stop (`rlaunch down`, Ctrl-C, or the end-of-run teardown of nodes still waiting in the
            # exit barrier after training completed): what the ranks and agents print while dying of it (torchrun's
            # SignalException, a rank's "got signal: 15", an agent losing the store its peer's agent held: make
            # test, turn 8) is its consequence, not a failure to report or restart.
            event = replace(
                event, severity="info", text=f"{DELIBERATE_STOPS[self.stop_reason]}: {event.text}"
            )
        self.events.append(event)
        if event.is_fatal and self.state not in TERMINAL and self.state is not State.STOPPING:
            self.state = State.STOPPING
            self.stop_reason = "failure"
        if event.is_fatal and event.category == "crash" and event.rule != UNCAUGHT and self._exited_1(event):
            self._name_uncaught_exception(event)
        return event

    def _exited_1(self, event: Event) -> bool:
        if event.kind == "exit":
            return event.code == 1 and event.signal is None
        return event.kind == "line" and EXIT_STATUS_1.search(event.text) is not None

    def _name_uncaught_exception(self, exit_event: Event) -> None:
        """A rank exited with status 1: its own last exception (or, when the exit names no rank, the node's
        earliest recent one) is recorded as a specific cause. An exception that a rule calls cascade (a gloo
        "Connection closed by peer" raised in a survivor) stays cascade, and one a specific rule already flagged
        as fatal (an OOM) is its own event already."""
        node, rank = exit_event.node, exit_event.rank
        if rank is None and (m := LOCAL_RANK.search(exit_event.text)):
            local = int(m.group(1))
            ranks = self.ranks.get(node, [])
            rank = ranks[local] if local < len(ranks) else None
        candidates = self.tracebacks.recent(node, rank, exit_event.time)
        if not candidates and rank is not None:
            candidates = self.tracebacks.recent(node, None, exit_event.time)
        chosen = None
        for who, exc in candidates:
            match = classify(exc.line)
            if match is None or not (match.cascade or match.severity == "fatal"):
                chosen = (who, exc)
                break
        for who, _ in candidates:
            self.tracebacks.forget(node, who)  # each exception is judged once
        if chosen is None:
            return
        who, exc = chosen
        event = Event(exc.time, node, who, "line", "crash", "fatal", exc.describe(), rule=UNCAUGHT)
        event = self._forgive_end_of_run(event)
        self._news.append(self._record(event))

    def _settle(self, time: float) -> None:
        """Move to a terminal state once every node's launcher has exited."""
        # Counting first: a walk of every node per exit made the end of a run O(N²) (500,000 steps at 1,000
        # head-only nodes, bench/headsim.py); the walk (a set comparison) runs only once the counts match.
        if self.state in TERMINAL or len(self.exit_codes) < len(self.ranks):
            return
        if not self.ranks.keys() <= self.exit_codes.keys():
            return
        if self.first_failure is not None:
            self.state = State.FAILED
        elif self.state is State.STOPPING and self.stop_reason == "requested":
            self.state = State.STOPPED
        elif self.state is State.STOPPING and self.stop_reason == "end-of-run":
            self.state = State.SUCCEEDED
        else:
            self.state = State.SUCCEEDED

    def _quietest_node(self) -> tuple[str, float]:
        assert self._started_at is not None
        last_by_node = {node: self._started_at for node in self.ranks}
        for (node, _rank), when in self._last_output.items():
            last_by_node[node] = max(when, last_by_node.get(node, when))
        node = min(last_by_node, key=lambda name: (last_by_node[name], name))
        return node, last_by_node[node]


def describe(event: Event) -> str:
    """ "node2 rank 3: crash — exited with signal SIGKILL" """
    who = event.node if event.rank is None else f"{event.node} rank {event.rank}"
    if event.rule == UNCAUGHT:  # "node2 rank 3: IndexError: index out of range in self (x.py:123)"
        return f"{who}: {event.text}"
    what = event.category or event.kind
    text = event.text if len(event.text) <= 200 else event.text[:197] + "..."
    return f"{who}: {what} — {text}"
