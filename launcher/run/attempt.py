"""Execute a Plan: preflight + push → start → follow and watch → teardown → (restart with resume).

Per node and per phase there is exactly one round trip over the node's persistent connection:
push (one exec: checks + atomic writes + sha256 verify), start (one exec: the guard daemonizes), follow (one
long-lived channel carrying log lines, process states and our heartbeats), stop (one exec). The node-side guard
owns the job's whole process tree, so teardown never depends on matching command lines.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import re
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster.transport import (
    First,
    GroupResult,
    RemoteProcess,
    Transport,
    TransportError,
    zip_hosts,
)
from launcher import nodecall
from launcher.errors import ExitCode, LaunchError
from launcher.errors import LaunchRefused as LaunchRefused  # up's errors live in errors.py; named here too
from launcher.guardctl import (
    GuardClient,
    GuardReply,
    GuardTarget,
    Heartbeats,
    heartbeat_interval,
    stop_over_channels,
)
from launcher.health.classify import parse_rank_prefix
from launcher.health.events import Event
from launcher.health.progress import Progress, Settings
from launcher.health.watch import PRECEDENCE_CASCADE, ProcSample, State, Watcher, precedence
from launcher.node import protocol
from launcher.plan import NodePlan, Plan
from launcher.records import RunRecord
from launcher.run.forensics import HangForensics
from launcher.run.signals import teardown_shield

EXIT_OK, EXIT_FAILED, EXIT_INFRA, EXIT_INTERRUPTED = (
    ExitCode.OK,
    ExitCode.FAILED,
    ExitCode.INFRA,
    ExitCode.INTERRUPTED,
)
MIN_FREE_MB = 64
PUSH_TIMEOUT_S = 120.0
# How long the head waits for a started guard's report, from its channel's opening: the node's own limit
# (guard.py START_REPLY_TIMEOUT_S, 60 s), whose error record should arrive first, plus slack.
START_REPORT_S = 75.0
FOLLOWER_END_S = 5.0  # how long collect waits for followers to end after their nodes' exit records
# torchrun's ChildFailedError table: "  rank      : 3 (local_rank: 1)" opens a failure entry, "[1]:" or "====" ends it.
SUMMARY_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)")
SUMMARY_END = re.compile(r"^\s*(=+|\[\d+\]:)\s*$")


def targets_of_plan(plan: Plan) -> list[GuardTarget]:
    return [GuardTarget(n.host, n.python, n.guard_dir) for n in plan.nodes]


@dataclass
class NodeState:
    host: str
    guard_pid: int | None = None
    follower: RemoteProcess | None = None
    offset: int = 0
    final: dict[str, Any] | None = None  # the guard's final state.json
    lost: str | None = None
    lost_reported: bool = False
    start_error: str | None = None
    last_heard: float | None = None  # when the follower last delivered anything (a probe of the link)
    procs: list[dict[str, Any]] | None = None  # the job's process tree from the last procs record
    followed_at: float | None = (
        None  # when its follower opened (a node not heard from yet is silent since then)
    )
    beat_error: str | None = None  # a heartbeat could not be written: the link is gone (`_check_links`)
    reopening: bool = False  # the link dropped and a follower is being opened again (`_reopen`)
    reopened: int = 0  # how often this attempt's follower of the node was opened again
    dropped_at: float | None = (
        None  # when its link last dropped: the time of its "lost" event if not reopened
    )


@dataclass
class Outcome:
    code: int
    summary: str
    root_cause: dict[str, Any] | None = None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    end_of_run_abort: bool = False
    # The restart policy's line when it ended the run (launcher/restart_policy.py).
    stopped_by: str | None = None


LineSink = Callable[[str, int | None, str], None]  # (host, global rank or None, text)


LOST_STOP_S = 10.0  # how long a node already lost gets to answer a stop (its guard also acts on its own)
# How long a follower of a guard this runner did not start (`adopt`, then `attach`) is asked again when it fails
# to open. Guards of a detached run wait for no heartbeat, so their supervisor may take DETACHED_ATTACH_RETRY_S: at
# 250 simulated nodes 10 s lost a node whose sshd answered a handshake late (turn 8).
ATTACH_RETRY_S = 10.0
DETACHED_ATTACH_RETRY_S = 120.0
MIN_ROUND_S = 0.1  # the watch loop's shortest round: how soon a fatal event is acted on, at worst
# A node whose link dropped this often in one attempt is lost, not opened again: a flapping link is a failing one.
MAX_REOPENS = 3


class Runner:
    def __init__(
        self,
        plan: Plan,
        transport: Transport,
        record: RunRecord,
        *,
        on_line: LineSink | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        ranks: str | None = None,
    ):
        self.plan = plan
        # What each node's follower forwards (launcher/node/edge.py): None = every line, as before.
        self.show = None if forward_everything() else show_specs(plan, ranks)
        self.transport = transport
        self.record = record
        self.on_line = on_line or (lambda host, rank, text: None)
        self.on_event = on_event or (lambda event: None)
        self.nodes = {n.host: NodeState(n.host) for n in plan.nodes}
        self.guards = GuardClient(transport)
        self.targets = {t.host: t for t in targets_of_plan(plan)}
        self.watcher = Watcher(
            {n.host: list(n.ranks) for n in plan.nodes},
            stall_timeout=float(plan.health["stall_timeout"]),
            startup_timeout=plan.health.get("startup_timeout"),
            progress=Progress(_progress_settings(plan.health)),
            straggler_action=str((plan.health.get("straggler") or {}).get("action", "warn")),
            expect_net=(plan.net or {}).get("transport"),
        )
        self.forensics = HangForensics(self)
        self._lock = threading.Lock()
        self._bad_records: dict[str, int] = {}  # per host: follower records _on_record raised on
        self._changed = threading.Event()
        self._summary_ranks: dict[str, int] = {}
        self._beats: Heartbeats | None = None
        # The last teardown's replies, per node, and when they came (the supervisor records them for `down`).
        self.teardown: tuple[float, dict[str, GuardReply]] | None = None
        self._stopping = threading.Event()  # set by stop(): a teardown has begun

    # --- phase 1: preflight + push ----------------------------------------------------------------------
    def push(self) -> GroupResult:
        """Check every node and write its files; raise LaunchError naming each failed node. Starts nothing."""
        argv_for, payload = self._push_call()
        group = self.transport.run_all(self.plan.hosts, argv_for, stdin_for=payload, timeout=PUSH_TIMEOUT_S)
        return self._pushed(group)

    def launch(self, between: Callable[[], None] | None = None) -> None:
        """Preflight + push, then `between` (checks that need the pushed files), then start: every node or none, each
        guard on the channel that then follows it (`start`).
        Attached guards (Slurm) do all three in the guards' own job step: the push is its first act on every
        node, and `between` runs while the nodes hold before starting (cluster/slurm.py `start_all`), so a
        launch costs one step whatever the node count instead of a push step and a guards' step."""
        between = between or (lambda: None)
        if not self.transport.guard_attached:
            self.push()
            between()
            self._start_following()
            return
        argv_for, payload = self._push_call()

        def check(group: GroupResult) -> None:
            self._pushed(group)
            between()

        self._start_attached(first=First(argv_for, check, stdin_for=payload, timeout=PUSH_TIMEOUT_S))

    def _push_call(self) -> tuple[Callable[[str], list[str]], Callable[[str], bytes]]:
        """push.py's argv and JSON payload per node."""
        code = nodecall.node_script("push.py")

        def argv_for(host: str) -> list[str]:
            node = self.plan.node(host)
            return nodecall.argv(node.python, code, node.run_dir, node.guard_dir)

        def payload(host: str) -> bytes:
            node = self.plan.node(host)
            check_port = self.plan.master_port if node.node_rank == 0 else None
            rest = json.dumps({"check_port": check_port, "min_free_mb": MIN_FREE_MB})
            files = b",".join(_push_entry(f.path, f.mode, f.attempt, f.sha256, f.content) for f in node.files)
            return b'{"files": [' + files + b"], " + rest[1:].encode()

        return argv_for, payload

    def _pushed(self, group: GroupResult) -> GroupResult:
        """The push's replies: raise LaunchError naming each node that failed it."""
        replies = {host: nodecall.read(result) for host, result in group.results.items()}
        failed = {host: _push_failure(self.plan.node(host), r) for host, r in replies.items()}
        failed = {h: why for h, why in failed.items() if why}
        if failed:
            kinds = {h: r.result.failure for h, r in replies.items() if h in failed and r.result.failure}
            raise LaunchError(_per_node("preflight failed, nothing was started", failed), failed, kinds)
        return GroupResult({host: reply.result for host, reply in replies.items()})

    # --- phase 2: start the guard everywhere, or nowhere ------------------------------------------------
    def start(self) -> None:
        """Start the guard on every node, or on none, each on the channel that then follows it: `guard.py
        start-follow` per node (`_start_following`), or under Slurm every attached guard in one step
        (`_start_attached`). The foreground run and the supervisor of `up --detach` both follow what they start."""
        if self.transport.guard_attached:
            self._start_attached()
        else:
            self._start_following()

    def _start_following(self, timeout: float = START_REPORT_S) -> None:
        """Start every guard with `start-follow`: it daemonizes as `start` does and its channel stays open as the
        node's follower, so a foreground run opens one channel per node, not a start channel and then a follower
        channel. At 250 simulated nodes on 2 cores the second channel was the step that failed: a node's sshd,
        which had just run its guard's start, did not answer the follower's channel open within the guard's
        first-beat window (BENCHMARKS.md, issue 23). Beats go out from the first channel on (each guard counts its
        first-beat window from its own start).

        Each node's start holds one of the fan-out's `max_parallel` slots until its guard reported (or `timeout`
        from its channel's opening), so no more guards start at once than when `start` was a command of its own:
        with every channel opened at once, 250 simulated nodes started 250 guards together and 182 of them did not
        report within the node's 60 s. A channel that could not open in time ran nothing (the command goes out
        only on an open channel), so it is asked again, with a doubling pause, while that node's `timeout` lasts."""
        beats = self.heartbeats().start()
        kinds: dict[str, str] = {}

        def fail(state: NodeState, why: str) -> None:
            with self._lock:
                state.start_error = state.start_error or why
            self._changed.set()

        def open_one(host: str) -> None:
            state = self.nodes[host]
            # From this node's own first ask, not the call's: a bounded fan-out reaches the last nodes late.
            if self._stopping.is_set():  # a teardown began (Ctrl-C): start nothing more
                return fail(state, "not started: the run was being stopped")
            try:
                channel = self.guards.follow(
                    self.targets[host],
                    self._on_record_safe,
                    start=True,
                    on_other=self._on_other,
                    show=self.show[host] if self.show is not None else None,
                    # From this node's own first ask, not the call's: a bounded fan-out reaches the last nodes late.
                    retry_until=time.monotonic() + timeout,
                    stop=self._stopping,
                )
            except TransportError as exc:
                if self._stopping.is_set():
                    return fail(state, "not started: the run was being stopped")
                if exc.kind:
                    kinds[host] = exc.kind
                return fail(state, exc.reason)
            opened = time.monotonic()
            with self._lock:
                state.follower = channel
                state.followed_at = time.time()
            beats.beat(host, channel)
            while state.guard_pid is None and not state.start_error:
                if channel.poll() is not None and state.guard_pid is None:
                    return fail(state, "its start ended before the guard reported (the node's log has why)")
                if time.monotonic() - opened > timeout:
                    return fail(state, f"the guard did not report within {timeout:.0f} s")
                time.sleep(0.1)

        zip_hosts(list(self.targets), open_one, self.transport.max_parallel)
        failed = {h: s.start_error or "no answer" for h, s in self.nodes.items() if s.guard_pid is None}
        if failed:
            self.stop(reason="a node failed to start")
            beats.stop()
            self.detach_followers()
            raise LaunchError(
                _per_node("start failed; every started node was stopped again", failed), failed, kinds
            )
        self._event({"kind": "info", "severity": "info", "text": f"started on {len(self.nodes)} nodes"})

    def _start_attached(self, timeout: float = 60.0, first: First | None = None) -> None:
        """Start each guard on its follower channel (`guard.py run`), all or none: under Slurm one step for
        every node, which runs `first` (the push) before the guards (`launch`)."""
        channels = self.guards.run_attached(
            self.targets.values(), self._on_record_safe, on_other=self._on_other, first=first
        )
        for host, channel in channels.items():  # one call: under Slurm one step for every node
            self.nodes[host].follower = channel
            self.nodes[host].followed_at = time.time()
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self._lock:
                pending = [h for h, s in self.nodes.items() if s.guard_pid is None and not s.start_error]
                for host in pending:
                    follower = self.nodes[host].follower
                    if follower is not None and follower.poll() is not None:
                        self.nodes[host].start_error = "the guard's step ended before it started"
                if not pending:
                    break
            self._changed.wait(0.1)
            self._changed.clear()
        failed = {
            h: s.start_error or "no answer in time" for h, s in self.nodes.items() if s.guard_pid is None
        }
        if failed:
            self.stop(reason="a node failed to start")
            self.detach_followers()
            raise LaunchError(_per_node("start failed; every started node was stopped again", failed), failed)
        self._event(
            {"kind": "info", "severity": "info", "text": f"started on {len(self.nodes)} nodes (attached)"}
        )

    # --- phase 3: follow, heartbeat, watch ------------------------------------------------------------
    def attach(self) -> None:
        """Open every node's follower, in parallel (bounded like every fan-out): one exec round trip per node,
        which at hundreds of nodes is seconds when done one after another (issue 23)."""
        todo = [
            n for n in self.plan.nodes if self.nodes[n.host].follower is None
        ]  # attached guards have theirs
        # Beats from the first follower on, not from the end of attach: at 250 simulated nodes (load 130) opening
        # every follower took 45 s, and guards whose follower opened early heard nothing for 15 s and tore their
        # jobs down ("no heartbeat ... while the head's connection stayed open"). `watch` stops the thread.
        self.heartbeats().start()
        zip_hosts(
            [n.host for n in todo], lambda h: self._attach(self.plan.node(h)), self.transport.max_parallel
        )

    def _attach(self, node: NodePlan, deadline: float | None = None, lost_as: str = "cannot follow") -> None:
        """Open one follower. A node too busy to open a channel in time (sshd answering late at 250 simulated
        nodes on 2 cores: "Timeout opening channel") is asked again for as long as its guard still waits for us
        (`attach_deadline`, or `deadline`); only then is it lost. The first beat goes out as soon as the follower
        opens."""
        state = self.nodes[node.host]
        if self._stopping.is_set():  # a teardown began: open no follower (it would outlive the stop)
            return
        try:
            follower = self.guards.follow(
                self.targets[node.host],
                self._on_record_safe,
                offset=state.offset,
                on_other=self._on_other,
                show=self.show[node.host] if self.show is not None else None,
                retry_until=self.attach_deadline() if deadline is None else deadline,
                stop=self._stopping,
            )
        except TransportError as exc:
            if self._stopping.is_set():
                return
            # Cut off between start and follow: a lost node for the watcher (teardown, verdict), never a crash.
            with self._lock:
                state.lost = state.lost or f"{lost_as}: {exc.reason}"
            self._changed.set()
            return
        state.follower = follower
        state.followed_at = time.time()
        self.heartbeats().beat(node.host, state.follower)

    def attach_deadline(self) -> float:
        """Until when (time.monotonic) a follower that failed to open is tried again. `attach` opens followers only
        for guards this runner did not start (a supervisor adopting a run, `adopt`): every guard it starts is
        followed on its start's own channel, asked again within START_REPORT_S (`_start_following`). A detached
        run's guards wait for no beat: DETACHED_ATTACH_RETRY_S from now; otherwise ATTACH_RETRY_S from now."""
        return time.monotonic() + (DETACHED_ATTACH_RETRY_S if self.plan.detach else ATTACH_RETRY_S)

    def reopen_deadline(self) -> float:
        """Until when (time.monotonic) a follower whose link dropped mid-run is opened again: a guard tears its job
        down heartbeat_timeout after the last beat it heard, which went out at most one beat interval before the
        drop, and a follower that opens must still deliver its beat one interval before that end. A detached
        run's guards wait for no beat (DETACHED_ATTACH_RETRY_S)."""
        if self.plan.detach:
            return time.monotonic() + DETACHED_ATTACH_RETRY_S
        timeout = float(self.plan.health.get("heartbeat_timeout") or 0)
        if timeout <= 0:
            return time.monotonic() + ATTACH_RETRY_S
        return time.monotonic() + max(0.0, timeout - 2 * heartbeat_interval(timeout))

    def _reopening(self) -> bool:
        return any(s.reopening for s in self.nodes.values())

    def _may_reopen(self, state: NodeState) -> bool:
        """A dropped link is opened again unless a teardown began, the guard lives in the follower's own step
        (Slurm: it ended with the channel), or the node's link keeps dropping (MAX_REOPENS)."""
        return (
            not self._stopping.is_set() and not self.transport.guard_attached and state.reopened < MAX_REOPENS
        )

    def _begin_reopen(self, host: str, dropped: RemoteProcess) -> None:
        """Under the runner's lock: the node is neither followed nor lost while `_reopen` runs."""
        state = self.nodes[host]
        state.follower = None  # no beats to a dead channel meanwhile
        state.beat_error = None
        state.reopening = True
        state.reopened += 1
        state.dropped_at = time.time()
        threading.Thread(
            target=self._reopen, args=(host, dropped), name=f"rlaunch-reopen-{host}", daemon=True
        ).start()

    def _reopen(self, host: str, dropped: RemoteProcess) -> None:
        """Open the follower of a node whose link dropped mid-run, from the byte offset already recorded (no line
        twice), while its guard still waits for a beat: a connection that one sshd session, a NAT or a client-side
        race (paramiko #1115, cluster/ssh.py `_send_eof`) ended is not a lost node. Only a node that cannot be
        reached again in that window is lost, with the reason."""
        with contextlib.suppress(Exception):
            dropped.close()  # the old channel's reader has ended; its resources go
        self._attach(
            self.plan.node(host),
            self.reopen_deadline(),
            "lost the connection to the node, and opening it again failed",
        )
        state = self.nodes[host]
        with self._lock:
            state.reopening = False
            if state.follower is not None and not state.lost:
                self._event(
                    {
                        "kind": "info",
                        "severity": "info",
                        "node": host,
                        "text": f"{host}: the connection dropped; its follower was opened again after "
                        f"{time.time() - (state.dropped_at or time.time()):.1f} s",
                    }
                )
        self._changed.set()

    def _on_follow(self, host: str, stream: str, line: str) -> None:
        """One raw line of a follower (what the transport delivers); records go to `_on_record`."""
        record = protocol.parse_record(line) if stream == "stdout" else None
        if record is None:
            self._on_other(host, stream, line)
        else:
            self._on_record_safe(host, record)

    def _on_record_safe(self, host: str, rec: dict[str, Any]) -> None:
        """`_on_record`, one record at a time: a record it cannot handle (a line of 4,300+ digits once ended the
        node's follower, so a healthy node was reported lost; issue 21) is skipped, counted and reported once
        per node."""
        try:
            self._on_record(host, rec)
        except Exception as exc:
            with self._lock:
                self._bad_records[host] = self._bad_records.get(host, 0) + 1
                first = self._bad_records[host] == 1
            if first:
                self._event(
                    {
                        "kind": "warning",
                        "severity": "warning",
                        "node": host,
                        "text": f"skipped a follower record it could not read ({type(exc).__name__}: "
                        f"{str(exc)[:200]}); later ones are only counted",
                    }
                )

    def _on_other(self, host: str, stream: str, line: str) -> None:
        self.record.append_log(host, f"[rlaunch follower] {line}")

    def _on_record(self, host: str, rec: dict[str, Any]) -> None:
        kind = rec.get("k")
        now = float(rec.get("t") or time.time())
        if (kind == "line" and "f" in rec) or kind == "activity":
            self._on_forwarded(host, kind, rec, now)
            self._changed.set()
            return
        with self._lock:
            self.nodes[host].last_heard = time.time()
            if kind == protocol.K_STARTED:
                self.nodes[host].guard_pid = int(rec["guard_pid"])
            elif kind == protocol.K_ERROR:
                self.nodes[host].start_error = str(rec.get("error"))
            elif kind == protocol.K_LINE:
                text = rec.get("text", "")
                self.nodes[host].offset = int(rec.get("off", self.nodes[host].offset))
                local, rest = parse_rank_prefix(text)
                rank = self.plan.rank_of(host, local) if local is not None else self._summary_rank(host, text)
                self.record.append_log(host, text)
                self.on_line(host, rank, rest if local is not None else text)
                event = self.watcher.observe_line(now, host, rank, rest)
                if event is not None:
                    self._event(event.to_dict())
            elif kind == protocol.K_PROCS:
                samples = [_proc_sample(p) for p in rec.get("procs", [])]
                self.nodes[host].procs = [p for p in rec.get("procs", []) if isinstance(p, dict)]
                self.forensics.note_procs(host, rec.get("procs", []))
                for event in self.watcher.observe_procs(now, host, samples):
                    self._event(event.to_dict())
            elif kind == protocol.K_KERNEL:
                text = rec.get("text", "")
                self.record.append_log(host, f"[kernel] {text}")
                event = self.watcher.observe_gpu(now, host, text)
                if event is not None:
                    self._event(event.to_dict())
            elif kind == protocol.K_GPU:
                self.record.append_gpu(host, rec)
            elif kind == protocol.K_EXIT:
                final = rec.get("state") or {}
                self.nodes[host].final = final
                if isinstance(final.get("edge"), dict):
                    self._edge_decision(host, final["edge"])
                self._observe_final(now, host, final)
        self._changed.set()

    def _on_forwarded(self, host: str, kind: str, rec: dict[str, Any], now: float) -> None:
        """What a filtering follower sends: lines it classified ("f": the rule that matched, or None for a healthy
        line the terminal shows) and activity summaries. Healthy lines are not classified again here."""
        if kind == "activity":
            with self._lock:
                self.nodes[host].last_heard = time.time()  # a sign of life like any record (the live view)
                self.nodes[host].offset = max(self.nodes[host].offset, int(rec.get("off") or 0))
                for key, when in (rec.get("progress") or {}).items():
                    rank = None if key == "-" else self.plan.rank_of(host, int(key))
                    self.watcher.observe_activity(float(when), host, rank, lines=0)
            return
        text = str(rec.get("text", ""))
        local, rest = parse_rank_prefix(text)  # outside the lock: the only per-line parsing on the head
        flag = rec.get("f") if isinstance(rec.get("f"), dict) else None
        if flag is not None and "lr" in flag:  # the follower's own reading of the prefix (older guards: ours)
            local = flag["lr"] if isinstance(flag["lr"], int) else None
        with self._lock:
            self.nodes[host].last_heard = time.time()
            self.nodes[host].offset = max(self.nodes[host].offset, int(rec.get("off") or 0))
            rank = self.plan.rank_of(host, local) if local is not None else self._summary_rank(host, text)
            self.record.append_log(host, text)
            if rec.get("f") is not None:
                rule = flag.get("rule") if flag is not None and isinstance(flag.get("rule"), str) else None
                event = self.watcher.observe_line(now, host, rank, rest, rule=rule)
            else:
                self.watcher.observe_activity(now, host, rank, text=rest)
                event = None
        if not rec.get("ctx"):
            self.on_line(host, rank, rest if local is not None else text)
        if event is not None:
            self._event(event.to_dict())

    def _edge_decision(self, host: str, edge: dict[str, Any]) -> None:
        """The node's guard ended its node by the node-local rules (launcher/node/edge.py): say so, and feed the
        finding to the watcher like the head's own observation, so the cross-node root cause stays right."""
        local = edge.get("local_rank")
        rank = self.plan.rank_of(host, int(local)) if isinstance(local, int) else None
        when = float(edge.get("time") or time.time())
        self._event(
            {"kind": "info", "severity": "info", "node": host, "text": f"guard: {edge.get('reason')}"}
        )
        if edge.get("kind") == "line":
            event = self.watcher.observe_line(when, host, rank, str(edge.get("text", "")))
        elif edge.get("kind") in ("stopped", "stall"):
            event = self.watcher.observe_confirmed(  # the guard confirmed it already; no second sample needed
                Event(when, host, rank, str(edge["kind"]), None, "fatal", str(edge.get("text", "")))
            )
        else:
            event = None
        if event is not None:
            self._event(event.to_dict())

    def _summary_rank(self, host: str, text: str) -> int | None:
        """Attribute torchrun's failure summary ("rank : 3 (local_rank: 1)", "exitcode : -9", "traceback :
        Signal 9 ...") to the rank it describes: those lines carry no [defaultN]: prefix."""
        if m := SUMMARY_RANK.match(text):
            self._summary_ranks[host] = int(m.group(1))
        elif SUMMARY_END.match(text):
            self._summary_ranks.pop(host, None)
        return self._summary_ranks.get(host)

    def _event(self, event: dict[str, Any]) -> None:
        event.setdefault("time", time.time())
        self.record.append_event(event)
        self.on_event(event)

    # --- seams for the helpers that work beside the watch loop (forensics.py, the supervisor) -------------
    @property
    def lock(self) -> threading.Lock:
        """Held while the watcher and the nodes' follow state change; a helper that reads or feeds them takes it."""
        return self._lock

    def event(self, event: dict[str, Any]) -> None:
        """Record and report one event, as the runner's own are (events.jsonl, then on_event)."""
        self._event(event)

    def adopt(self, offsets: Mapping[str, int]) -> None:
        """Guards that already run (a supervisor taking over): follow each node from the byte offset the record
        already holds, so no line is recorded twice. Hosts not in this attempt's plan are ignored."""
        with self._lock:
            for host, offset in offsets.items():
                if host in self.nodes:
                    self.nodes[host].offset = int(offset)

    def offsets(self) -> dict[str, int]:
        """Each node's byte offset of what the record holds now (what a re-attaching supervisor resumes from)."""
        with self._lock:
            return {h: s.offset for h, s in self.nodes.items()}

    def watch(self, *, poll: float = 0.2) -> Outcome:
        """Block until every node finished or the first fatal event; tear down on failure. Heartbeats go out from
        their own thread meanwhile (guardctl.Heartbeats), whatever holds this loop."""
        beats = self.heartbeats().start()
        try:
            return self._watch(poll)
        finally:
            beats.stop()

    def heartbeats(self) -> Heartbeats:
        """The beats to every follower still streaming (not finished, not lost); read without the runner's lock:
        each field is one attribute read, and a beat to a node that just finished is harmless."""
        if self._beats is None:
            self._beats = Heartbeats(
                lambda: [
                    (h, s.follower)
                    for h, s in self.nodes.items()
                    if s.follower is not None and s.final is None and not s.lost
                ],
                heartbeat_interval(float(self.plan.health["heartbeat_timeout"])),
                self._beat_failed,
            )
        return self._beats

    def _beat_failed(self, host: str, why: str) -> None:
        state = self.nodes[host]
        state.beat_error = state.beat_error or why  # the link is gone; _check_links reopens or reports it
        self._changed.set()

    def _watch(self, poll: float) -> Outcome:
        round_began = 0.0
        while True:
            # Every record wakes this loop and each round walks every node: at most one round per MIN_ROUND_S, or
            # a thousand busy nodes would keep a core on the walk alone (bench/headsim.py, issue 23).
            time.sleep(max(0.0, round_began + MIN_ROUND_S - time.monotonic()))
            round_began = time.monotonic()
            now = time.time()
            with self._lock:
                progressed = self.watcher.tick_progress(now)
                for event in self.watcher.tick(now) + progressed:
                    self._event(event.to_dict())
                self._check_links(now)
                done = all(s.final is not None or s.lost for s in self.nodes.values())
                failure = self.watcher.first_failure
            self.forensics.report_stragglers(progressed)
            if failure is not None and self.watcher.worth_holding(failure, now):
                failure = None
            # A cascade's cause may be a node whose link dropped: wait until it is reopened or lost.
            if failure is not None and precedence(failure) == PRECEDENCE_CASCADE and self._reopening():
                failure = None
            if failure is not None and self.forensics.before_teardown(failure, now):
                failure = None  # hold teardown while every node gets its bounded chance to answer
            if failure is None and self.watcher.should_stop and self.watcher.stop_reason == "end-of-run":
                self.stop(reason="end-of-run", watcher_reason="end-of-run")
                self._await_exit_records(timeout=3.0)
                return self.outcome()
            if failure is not None:
                self._event({"kind": "info", "severity": "info", "text": f"tearing down: {failure.text}"})
                self.stop(reason=f"first failure on {failure.node}")
                self._await_exit_records(timeout=3.0)
                return self.outcome()
            if done:
                return self.outcome()
            self._changed.wait(poll)
            self._changed.clear()

    def _await_exit_records(self, timeout: float) -> None:
        """Let the followers deliver the nodes' last lines and exit records: they refine the root cause."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self._lock:
                if all(s.final is not None or s.lost for s in self.nodes.values()):
                    return
            self._changed.wait(0.1)
            self._changed.clear()

    def _check_links(self, now: float) -> None:
        for host, state in self.nodes.items():
            if state.final is not None:
                continue
            exited = state.follower.poll() if state.follower is not None else None
            # A channel a beat cannot be written to is a dropped link, whether or not its reader noticed yet.
            code = -1 if exited is None and state.beat_error and state.follower is not None else exited
            if state.follower is not None and code is not None and not state.lost:
                # The follower only exits after the exit record; give that record a moment to arrive.
                if exited is not None:
                    state.follower.wait(timeout=1.0)
                if state.final is None:
                    if code == -1 and self._may_reopen(state):
                        self._begin_reopen(host, state.follower)
                        continue
                    state.lost = (
                        state.beat_error or "lost the connection to the node"
                        if code == -1
                        else f"log follower exited {code}"
                    )
            if state.lost and not state.lost_reported:
                state.lost_reported = True
                # A link that dropped and could not be opened again was lost when it dropped (the root cause
                # precedes the cascade it set off; `_reopen`).
                event = self.watcher.observe_lost(state.dropped_at or now, host, state.lost)
                if event is not None:
                    self._event(event.to_dict())

    # --- phase 4: teardown ------------------------------------------------------------------------------
    def _observe_final(self, now: float, host: str, final: dict[str, Any]) -> None:
        """A node's final state. A guard that died without a final word (SIGKILL, OOM) says nothing about how
        the job ended, and its job may still run: that is a lost node, never a clean exit (issue 12)."""
        state, code, sig = final.get("state"), final.get("exit_code"), final.get("signal")
        if state in (protocol.GUARD_LOST, None):
            why = final.get("reason") or "the guard ended without a final state"
            event = self.watcher.observe_lost(now, host, f"guard died: {why}")
        elif state == protocol.LOST_LAUNCHER:
            event = self.watcher.observe_lost(
                now, host, f"the guard lost our heartbeat: {final.get('reason')}"
            )
        else:
            if state == protocol.STOPPED and not self.watcher.should_stop:
                # Stopped by someone else (`rlaunch down` from another shell): deliberate, not a failure.
                self.watcher.request_stop(now, "requested")
            if state == protocol.FAILED and code is None and sig is None:
                code = 1  # the guard failed without the job's exit status (a guard error): never a clean exit
            event = self.watcher.observe_exit(now, host, code, sig)
        if event is not None:
            self._event(event.to_dict())

    def stop(self, reason: str = "stopped", watcher_reason: str = "requested") -> dict[str, GuardReply]:
        self._stopping.set()  # no follower is opened from now on (`_attach` retries stop)
        with self._lock:
            self.watcher.request_stop(time.time(), watcher_reason)
        grace = float(self.plan.health.get("grace", 5))
        lost = self.lost_hosts()
        live = [t for h, t in self.targets.items() if h not in lost]
        gone = [t for h, t in self.targets.items() if h in lost]
        with teardown_shield():
            # The stop word on every open follower channel (protocol.STOP_WORD: the follower SIGTERMs its guard):
            # no new process on the nodes, one write per node (under Slurm one write for a whole step). A node whose
            # exit record then shows nothing of the job left is stopped and clean without another call; the stop
            # verb goes only to the others (no channel, not ended in time, a guard that died, processes left). At
            # 250 simulated nodes the stop verb alone was 250 Python starts on the nodes: `down` took 30 s (issue 23).
            open_ = {h: self.nodes[h].follower for h in (t.host for t in live) if not self._ended(h)}
            stop_over_channels({h: c for h, c in open_.items() if c}, self._ended, grace + 15)
            replies: dict[str, GuardReply] = {}
            for t in live:
                final = self.nodes[t.host].final
                if _stopped_clean(final):
                    replies[t.host] = GuardReply(t.host, final, None, protocol.EXIT_OK, via="channel")
            live = [t for t in live if t.host not in replies]
            # A node already lost (cut off, frozen) is asked too, in parallel, but only briefly: waiting the full
            # stop timeout for it would hold `up` for half a minute, and its guard ends the job by itself once
            # our heartbeat stops reaching it.
            late: dict[str, GuardReply] = {}
            asked = threading.Thread(
                target=lambda: late.update(self.guards.stop(gone, grace=grace, timeout=grace + LOST_STOP_S)),
                daemon=True,
            )
            if gone:
                asked.start()
            replies.update(self.guards.stop(live, grace=grace))
            if gone:
                asked.join()
            replies.update(late)
        for host, reply in replies.items():
            if reply.data and reply.state and self.nodes[host].final is None:
                self.nodes[host].final = reply.data
                with self._lock:
                    self._observe_final(time.time(), host, reply.data)
        self.teardown = (time.time(), dict(replies))
        clean = [h for h, r in replies.items() if r.ok and r.exit_code == 0]
        self._event(
            {
                "kind": "info",
                "severity": "info",
                "text": f"teardown ({reason}): "
                f"{len(clean)} nodes clean, {len(replies) - len(clean)} unreachable or unclean",
            }
        )
        return replies

    def live_view(self) -> dict[str, dict[str, Any]]:
        """What `status` would ask each node, as this runner knows it from the follower records (records.py:
        "The supervisor's live view"): the guard's state, whether it runs, the job's processes and how many of
        them are ranks, when the node was last heard, and why it ended or was lost."""
        with self._lock:
            view = {}
            for host, s in self.nodes.items():
                final = s.final
                procs = s.procs or []
                node: dict[str, Any] = {
                    "run_dir": self.targets[host].run_dir,
                    "guard_pid": s.guard_pid,
                    "last_heard": s.last_heard,
                    "followed_at": s.followed_at,
                    "descendants": [{k: p.get(k) for k in ("pid", "ppid", "state", "cmd")} for p in procs],
                    "ranks_alive": sum(
                        1 for p in procs if p.get("rank") is not None and p.get("state") not in ("Z", "X")
                    ),
                }
                if final is not None:
                    node.update(
                        followed=True,
                        state=final.get("state"),
                        alive=False,
                        descendants=[],
                        ranks_alive=0,
                        reason=final.get("reason"),
                        exit_code=final.get("exit_code"),
                    )
                elif s.lost or s.follower is None:
                    # Not followed (yet, or any more): `status` asks this node itself.
                    why = (
                        s.lost
                        or s.start_error
                        or (
                            "the connection dropped: opening its follower again"
                            if s.reopening
                            else "not followed yet"
                        )
                    )
                    # The direct path's word for a node that did not answer (lifecycle.status).
                    node.update(
                        {"followed": False, "state": "unknown", "alive": None, "reason": why, "error": why}
                    )
                else:
                    node.update(followed=True, state=protocol.RUNNING, alive=True, reason=None)
                view[host] = node
            return view

    def _ended(self, host: str) -> bool:
        return self.nodes[host].final is not None

    def lost_hosts(self) -> set[str]:
        """Nodes the link or the watcher gave up on: cut off, frozen, or whose guard died."""
        with self._lock:
            named = {e.node for e in self.watcher.events if e.kind == "lost"}
            return {h for h, s in self.nodes.items() if s.lost} | (named & set(self.nodes))

    def collect_artifacts(self, max_bytes: int = 8 << 20) -> list[str]:
        """Copy flight-recorder dumps and torchrun error files of a failed run into the run record (not from lost
        nodes: they would only hold the verdict back for the transport's timeout)."""
        code = nodecall.node_script("collect.py")
        lost = self.lost_hosts()
        hosts = [h for h in self.plan.hosts if h not in lost]
        self._followers_end(hosts, FOLLOWER_END_S)
        replies = nodecall.call_all(
            self.transport,
            hosts,
            lambda host: self.plan.node(host).python,
            code,
            lambda host: [self.plan.node(host).guard_dir, str(max_bytes)],
            timeout=60,
        )
        saved: list[str] = []
        for host, reply in replies.items():
            files = reply.data if reply.result.ok else None
            if files is None:
                continue
            for rel, data in files.items():
                # The reply is a node's word: a path that is absolute, climbs out with `..`, or resolves outside
                # this run's record (a symlink) would let a node write anywhere the launcher can.
                target = self.record.artifact_path(host, rel)
                if target is None or not isinstance(data, str):
                    self._event(
                        {"kind": "info", "severity": "warning", "text": f"{host}: refused artifact {rel!r}"}
                    )
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    target.write_bytes(base64.b64decode(data, validate=True))
                except ValueError:
                    continue
                saved.append(f"{host}/{rel}")
        if saved:
            self._event(
                {
                    "kind": "info",
                    "severity": "info",
                    "text": f"collected {len(saved)} diagnostics: {saved[:5]}",
                }
            )
        return saved

    def _followers_end(self, hosts: list[str], timeout: float) -> None:
        """Wait (bounded) for these nodes' followers to end: their exit records come just before. Under Slurm a
        node whose guard has ended takes the next call in the guards' own step instead of a new one."""
        deadline = time.monotonic() + timeout
        for host in hosts:
            follower = self.nodes[host].follower
            if follower is not None:
                follower.wait(max(0.0, deadline - time.monotonic()))

    def detach_followers(self) -> None:
        """Close every follower, in parallel: a close waits (bounded) for its channel to end. The beats stop
        first (attach starts them; an interrupt during attach never reaches `watch`, which stops them too)."""
        if self._beats is not None:
            self._beats.stop()

        def close(host: str) -> None:
            follower = self.nodes[host].follower
            if follower is not None:
                follower.close()
                follower.wait(timeout=5)

        zip_hosts(list(self.nodes), close, self.transport.max_parallel)

    def outcome(self) -> Outcome:
        verdict = self.watcher.verdict()
        nodes = {
            host: {
                "state": (s.final or {}).get("state", "lost" if s.lost else "unknown"),
                "exit_code": (s.final or {}).get("exit_code"),
                "signal": (s.final or {}).get("signal"),
                "seconds": _duration(s.final),
                "lost": s.lost,
            }
            for host, s in self.nodes.items()
        }
        root = verdict.root_cause.to_dict() if verdict.root_cause is not None else None
        # The watcher's verdict decides: it forgives end-of-run aborts and the stop of nodes left waiting after one.
        if verdict.ok:
            code = EXIT_OK
        elif root is None and verdict.state is State.STOPPED:
            code = EXIT_INTERRUPTED  # stopped on request: no failure, nothing to restart
        elif root and root.get("kind") == "lost":
            code = EXIT_INFRA
        else:
            code = EXIT_FAILED
        return Outcome(code, verdict.summary, root, nodes, bool(verdict.end_of_run_aborts))


def _proc_sample(p: dict[str, Any]) -> ProcSample:
    """A guard procs record → ProcSample; rank, cpu and io are present for ranks only (newer guards)."""
    rank, cpu, io = p.get("rank"), p.get("cpu"), p.get("io")
    return ProcSample(
        int(p["pid"]),
        str(p.get("state", "?")),
        int(rank) if rank is not None else None,
        float(cpu) if cpu is not None else None,
        float(io) if io is not None else None,
        # The rank's GPU reading, in the procs records that carry a fresh sample (guard GpuWatch.annotate).
        p["gpu"] if isinstance(p.get("gpu"), dict) else None,
    )


def _progress_settings(health: dict[str, Any]) -> Settings:
    return Settings(
        hang_floor=float(health.get("hang_floor", 30.0)),
        hang_factor=float(health.get("hang_factor", 10.0)),
        progress_regex=health.get("progress_regex"),
    )


def forward_everything() -> bool:
    """RLAUNCH_FORWARD_ALL=1: every line crosses SSH and is classified on the head (the pre-edge path; bench/)."""
    return os.environ.get("RLAUNCH_FORWARD_ALL") == "1"


def show_specs(plan: Plan, ranks: str | None) -> dict[str, str]:
    """`--ranks` → each node's follower `--show`: which local ranks' healthy lines reach the terminal.

    None (default): the first node's local rank 0, as torchrun and DeepSpeed users expect of a large job (every
    flagged line of every rank is shown anyway). "all"; global ranks "0,3"; "node02:*" or "node02:1" (local ranks of
    one node, as torchrun's --local-ranks-filter counts them); items combine with commas."""
    wanted: dict[str, set[int] | str] = {n.host: set() for n in plan.nodes}
    if ranks is None:
        wanted[plan.nodes[0].host] = {0}
    for item in (ranks or "").split(","):
        item = item.strip()
        if not item:
            continue
        if item == "all":
            wanted = dict.fromkeys(wanted, "all")
            break
        host, sep, local = item.rpartition(":")
        if sep:
            if host not in wanted:
                raise ValueError(f"--ranks {item}: no node '{host}' in this run")
            if local == "*":
                wanted[host] = "all"
            elif local.isdigit() and wanted[host] != "all":
                wanted[host].add(int(local))  # type: ignore[union-attr]
            else:
                raise ValueError(f"--ranks {item}: expected NODE:* or NODE:LOCAL_RANK")
        elif item.isdigit() and int(item) < plan.world_size:
            node = next(n for n in plan.nodes if int(item) in n.ranks)
            if wanted[node.host] != "all":
                wanted[node.host].add(int(item) - node.first_rank)  # type: ignore[union-attr]
        else:
            raise ValueError(
                f"--ranks {item}: expected all, a global rank below {plan.world_size}, or NODE:*"
            )
    return {
        host: spec if isinstance(spec, str) else (",".join(map(str, sorted(spec))) or "none")
        for host, spec in wanted.items()
    }


def _stopped_clean(final: dict[str, Any] | None) -> bool:
    """A node's exit record (the follower's K_EXIT) that answers for it as the stop verb would: its guard wrote a
    final state itself (not one a dead guard was given) and nothing of the job is left (the follower's
    `remaining`, read after the guard exited; an older follower that does not say is asked)."""
    if not isinstance(final, dict) or final.get("remaining") != []:
        return False
    return final.get("state") in protocol.TERMINAL_STATES and final.get("state") != protocol.GUARD_LOST


def _duration(final: dict[str, Any] | None) -> float | None:
    if not final or not final.get("started_at") or not final.get("ended_at"):
        return None
    return round(float(final["ended_at"]) - float(final["started_at"]), 1)


PUSH_COMPRESS_MIN = 4096  # bytes: smaller files go as they are


@functools.lru_cache(maxsize=256)
def _push_entry(path: str, mode: int, attempt: bool, sha256: str, content: bytes) -> bytes:
    """One file of push.py's payload, as JSON bytes: encoded once per content, not once per node.

    Every node's push carries the same guard bundle and job files (about 500 kB, most of it the health rules), and
    encoding them per node was ~3 ms of the head's CPU per node; a file that zlib shrinks goes as `zdata` (about a
    quarter of the bytes to encrypt, send and parse on each node). push.py checks the written file's sha256 either
    way. The LRU keeps the shared files: every node asks for them, while each node's own (its env) are asked once."""
    entry: dict[str, object] = {"path": path, "mode": mode, "sha256": sha256}
    packed = zlib.compress(content, 6) if len(content) >= PUSH_COMPRESS_MIN else content
    if len(packed) < 0.9 * len(content):
        entry["zdata"] = base64.b64encode(packed).decode()
    else:
        entry["data"] = base64.b64encode(content).decode()
    if attempt:
        entry["attempt"] = True
    return json.dumps(entry).encode()


def _push_failure(node: NodePlan, reply: nodecall.NodeReply) -> str | None:
    result, info = reply.result, reply.data
    if result.error:
        return result.error
    if result.exit_code == 127:
        return f"python '{node.python}' not found (set `python:` in the inventory)"
    if info is None:
        return result.why()
    return None if info.get("ok") else str(info.get("error"))


def _per_node(title: str, failed: dict[str, str]) -> str:
    return title + ":\n" + "\n".join(f"  {host}: {why}" for host, why in sorted(failed.items()))
