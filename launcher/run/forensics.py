"""What the runner does between declaring a failure and tearing the job down (the I/O side of health/).

- **Hang forensics.** After a hang or a stall, every rank's stack is dumped (launcher/node/stacks.py: py-spy, or
  /proc without it) on every node at once, bounded by ``health.stack_budget``; the stacks go into the run record
  (``stacks/<node>.txt``, ``stacks.json``) and the rank whose stack differs from the majority is named.
- **Flight recorder, where enabled.** At the same time the ranks' flight-recorder dumps are read on every node
  (launcher/node/frtrace.py: NCCL ranks are asked for a fresh dump through their dump pipe), summarised into
  ``fr.json``, and a rank that never entered the collective its peers wait in is named (launcher/health/flight.py)
  when the stacks do not single one out. A straggler warning gets the flight recorder's arrival lags as evidence.
- **Silent nodes.** Survivors of a cut link shout first ("Connection closed by peer"); the cut node says nothing.
  So before a cascade-only failure is named, every node gets ``PROBE_S`` to show it is alive: each guard's
  follower sends a record every second, so a node that stays silent while its peers report closed connections
  is the root cause ("node2 unreachable since ..."). The same holds for a node whose host froze.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from cluster.transport import Transport
from launcher import envrules, nodecall
from launcher.health import flight
from launcher.health.events import Event
from launcher.health.watch import PRECEDENCE_CASCADE, Watcher, precedence
from launcher.plan import Plan
from launcher.records import RunRecord, write_atomic

PROBE_S = 5.0  # how long every node has to be heard from before a cascade line may be named the root cause
STACK_KINDS = frozenset({"hang", "stall"})


class NodeLink(Protocol):
    """What forensics reads of one node's follow state (launcher/run/attempt.py NodeState)."""

    final: dict[str, Any] | None  # the guard's final state, once it ended
    lost: str | None  # why the link or the watcher gave up on the node
    last_heard: float | None  # when its follower last delivered anything


class AttemptView(Protocol):
    """The narrow view of one attempt that forensics works through (the Runner is one): its plan, transport and
    record, the watcher and each node's link, read and fed under `lock`, and `event` to report what it found."""

    plan: Plan
    transport: Transport
    record: RunRecord
    watcher: Watcher

    @property
    def nodes(self) -> Mapping[str, NodeLink]: ...

    @property
    def lock(self) -> threading.Lock: ...

    def event(self, event: dict[str, Any]) -> None: ...


class HangForensics:
    def __init__(self, runner: AttemptView) -> None:
        self.runner = runner
        self._probe_until: float | None = None
        self._probed = False
        self._dumped = False
        self.rank_pids: dict[str, dict[int, int]] = {}  # host → {pid: rank}, from the guards' procs records
        self.rank_starts: dict[str, dict[int, int]] = {}  # host → {pid: start time}, from the same records

    def note_procs(self, host: str, procs: list[dict[str, Any]]) -> None:
        self.rank_pids[host] = {int(p["pid"]): int(p["rank"]) for p in procs if p.get("rank") is not None}
        self.rank_starts[host] = {
            int(p["pid"]): int(p["start"])
            for p in procs
            if p.get("rank") is not None and isinstance(p.get("start"), int)
        }

    def before_teardown(self, failure: Event, now: float) -> bool:
        """Called by the watch loop with the current root cause; True to hold the teardown a little longer."""
        cascade = precedence(failure) == PRECEDENCE_CASCADE
        if not self._probed and cascade and self._probe_silent_nodes(failure, now):
            return True
        if not self._dumped and (failure.kind in STACK_KINDS or failure.rule == "unresponsive"):
            self._dumped = True
            self.dump_stacks()
        return False

    # ---- silent nodes ---------------------------------------------------------------------------

    def _probe_silent_nodes(self, failure: Event, now: float) -> bool:
        runner = self.runner
        if self._probe_until is None:
            self._probe_until = now + PROBE_S
        with runner.lock:
            live = {h: s for h, s in runner.nodes.items() if s.final is None and not s.lost}
            silent = {h: s.last_heard for h, s in live.items() if (s.last_heard or 0.0) < now - PROBE_S}
        if not silent or len(silent) == len(runner.nodes):
            # Everyone answered (the cascade is real) or no one did (the head's own link: not one node's fault).
            self._probed = not silent or now >= self._probe_until
            return not self._probed
        if now < self._probe_until:
            return True
        self._probed = True
        with runner.lock:
            for host, heard in sorted(silent.items(), key=lambda item: item[1] or 0.0):
                since = time.strftime("%H:%M:%S", time.localtime(heard)) if heard else "the start"
                why = f"{host} unreachable since {since}; peers lost their connections to it ({failure.text[:120]})"
                event = runner.watcher.observe_lost(heard or now, host, why)
                if event is not None:
                    runner.event(event.to_dict())
        return False

    # ---- stacks ---------------------------------------------------------------------------------

    def dump_stacks(self) -> None:
        runner = self.runner
        budget = float(runner.plan.health.get("stack_budget", 10.0))
        if budget <= 0:
            return
        with runner.lock:
            # A node not heard from lately would only eat the budget: its stacks cannot come back either.
            fresh = time.time() - max(PROBE_S, budget)
            hosts = [
                h
                for h, s in runner.nodes.items()
                if not s.lost and self.rank_pids.get(h) and (s.last_heard or 0.0) >= fresh
            ]
        if not hosts:
            return
        started = time.time()
        fr: dict[str, Any] = {}
        fr_thread = threading.Thread(target=lambda: fr.update(self.fetch_fr(hosts, budget)), daemon=True)
        fr_thread.start()
        replies = nodecall.call_all(
            runner.transport,
            hosts,
            lambda host: runner.plan.node(host).python,
            nodecall.with_modules(nodecall.node_script("stacks.py"), "stacks.py", ("protocol.py",)),
            [str(budget)],
            stdin_for=lambda host: json.dumps(
                [
                    {"pid": pid, "rank": rank, "start": self.rank_starts.get(host, {}).get(pid)}
                    for pid, rank in sorted(self.rank_pids[host].items())
                ]
            ).encode(),
            timeout=budget + 5,
        )
        dumps: list[tuple[str, int | None, str | None, str]] = []
        saved: dict[str, Any] = {}
        for host, answer in replies.items():
            reply = answer.data if answer.result.ok else None
            ranks = reply.get("ranks") if reply is not None else []
            ranks = ranks if isinstance(ranks, list) else []
            saved[host] = ranks if ranks else {"error": answer.why()}
            for entry in ranks:
                dumps.append((host, entry.get("rank"), entry.get("tool"), entry.get("text") or ""))
        # Record modes (0700 directories, 0600 files, atomic): stacks show the job's code and paths.
        for host, ranks in saved.items():
            if isinstance(ranks, list):
                text = "\n\n".join(f"=== rank {r.get('rank')} pid {r.get('pid')} ({r.get('tool')})\n{r.get('text')}"
                                   for r in sorted(ranks, key=lambda r: r.get("rank") or 0))  # fmt: skip
                write_atomic(runner.record.stacks_path(host), text + "\n")
        write_atomic(runner.record.stacks_json_path, json.dumps(saved, indent=1))
        fr_thread.join(timeout=max(0.0, started + budget + 5 - time.time()))
        with runner.lock:
            refined = runner.watcher.explain_hang(dumps)
            if fr:
                refined = (
                    self._explain_fr(dict(fr), named=refined is not None and refined.rank is not None)
                    or refined
                )
        took = time.time() - started
        tools = sorted({d[2] or "none" for d in dumps})
        text = f"stacks of {len(dumps)} rank(s) in {took:.1f}s ({', '.join(tools)}) saved to stacks/"
        if refined is not None:
            who = refined.node if refined.rank is None else f"{refined.node} rank {refined.rank}"
            text += f"; named {who}"
        runner.event({"kind": "info", "severity": "info", "text": text})

    # ---- flight recorder --------------------------------------------------------------------------

    def fr_targets(self, host: str) -> dict[str, Any] | None:
        """What node/frtrace.py needs on `host`, or None when the job's env leaves the flight recorder off."""
        env = self.runner.plan.node(host).env
        prefix = env.get("TORCH_FR_DUMP_TEMP_FILE") or env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
        if not envrules.flight_recorder_on(env) or not prefix:
            return None
        ranks = sorted(set(self.rank_pids.get(host, {}).values()) or set(self.runner.plan.node(host).ranks))
        return {"dump": prefix, "pipe": env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"), "ranks": ranks}

    def fetch_fr(self, hosts: list[str], budget: float) -> dict[str, Any]:
        """Every node's flight-recorder summaries ({host: [summary, ...] or {"error"}}), within `budget` seconds;
        empty when the recorder is off. Also written to the run record as ``fr.json``."""
        runner = self.runner
        targets = {h: t for h in hosts if (t := self.fr_targets(h)) is not None}
        if not targets:
            return {}
        replies = nodecall.call_all(
            runner.transport,
            list(targets),
            lambda host: runner.plan.node(host).python,
            nodecall.node_script("frtrace.py"),
            [str(max(1.0, budget - 2))],
            stdin_for=lambda host: json.dumps(targets[host]).encode(),
            timeout=budget + 3,
        )
        out: dict[str, Any] = {}
        for host, answer in replies.items():
            reply = answer.data if answer.result.ok else None
            ranks = reply.get("ranks") if reply is not None else None
            out[host] = ranks if isinstance(ranks, list) else {"error": answer.why()}
        if any(isinstance(r, list) and r for r in out.values()):
            write_atomic(runner.record.fr_path, json.dumps(out, indent=1))
        return out

    def _explain_fr(self, fr: dict[str, Any], *, named: bool) -> Event | None:
        """Add the flight recorder's word to the hang verdict; it names the rank only when the stacks did not.
        Called with the runner's lock held."""
        runner = self.runner
        culprit, sentence = flight.behind(fr)
        for note in flight.unreadable(fr):
            runner.event({"kind": "info", "severity": "warning", "text": note})
        if sentence is None:
            return None

        def change(event: Event) -> Event:
            if culprit is not None and not named:
                return replace(event, node=culprit[0], rank=culprit[1], text=f"{sentence}; {event.text}")
            return replace(event, text=f"{event.text}; {sentence}")

        return runner.watcher.refine(change)

    def fr_straggler_evidence(self, nodes: list[str]) -> None:
        """In the background (the watch loop must keep its heartbeat): read the flight recorder's timings and add
        each straggler's arrival lag as evidence, when the recorder is on and its dumps hold timings."""

        def work() -> None:
            with self.runner.lock:
                hosts = [h for h, s in self.runner.nodes.items() if not s.lost]
            fr = self.fetch_fr(hosts, 5.0)
            lags, count = flight.arrival_lag(fr)
            for node in nodes:
                evidence = flight.lag_evidence(node, lags, count)
                if evidence is not None:
                    # Shown under the straggler warning (kind "info" would stay in the record only).
                    self.runner.event(
                        {"kind": "evidence", "category": "straggler", "severity": "warning", "node": node,
                         "text": evidence}
                    )  # fmt: skip

        threading.Thread(target=work, name="fr-straggler", daemon=True).start()

    # ---- stragglers -----------------------------------------------------------------------------

    def report_stragglers(self, events: list[Event]) -> None:
        """A straggler warning is shown like any event; it also goes into the run's state (``rlaunch status``)
        and into ``metrics.prom`` in the run record (node_exporter textfile format: rlaunch_straggler{node})."""
        if not any(event.kind == "straggler" for event in events):
            return
        from prometheus_client import CollectorRegistry, Gauge, generate_latest

        runner = self.runner
        names = runner.watcher.stragglers
        runner.record.update_state(stragglers=names)
        self.fr_straggler_evidence([event.node for event in events if event.kind == "straggler"])
        registry = CollectorRegistry()
        gauge = Gauge("rlaunch_straggler", "1 if the node was named a straggler in this run", ["run", "node"],
                      registry=registry)  # fmt: skip
        for host in runner.nodes:
            gauge.labels(run=runner.record.run_id, node=host).set(1 if host in names else 0)
        # The textfile format of write_to_textfile, written atomically with the record's 0600 mode.
        write_atomic(runner.record.metrics_path, generate_latest(registry))
