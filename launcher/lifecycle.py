"""The verbs behind `up`, `down`, `status` and `logs`: run records + plans, handed to the run loop (launcher/run/).

Each function returns plain data (Outcome, dicts) for the CLI to render; printing of streamed lines goes through
the `on_line` callback so the same code serves the terminal, tests and validation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster.inventory import Inventory
from cluster.transport import Transport, TransportError, make_transport, zip_hosts
from launcher import attempts, hostlock, ledger, nodecall, records, spares
from launcher import plan as planning
from launcher.errors import Infra, LaunchError, LaunchRefused, RlaunchError
from launcher.guardctl import GuardClient, GuardReply, GuardTarget
from launcher.node import protocol
from launcher.records import open_run
from launcher.run.signals import teardown_shield
from launcher.states import FROM_GUARD, RunState, is_active

if TYPE_CHECKING:
    from launcher.run.attempt import LineSink, Outcome

# `up` alone needs the run loop (launcher/run/: the attempt, the watcher and its rule table): it imports it itself,
# so that `status`, `down` and `logs` start without building the health rules (tests/test_contract.py).


def targets_by_attempt(record: records.RunRecord) -> list[list[GuardTarget]]:
    """Every attempt's node targets, in order (runs recorded before per-attempt targets: the current ones)."""
    return [_read_targets(record, path) for path in record.targets_paths()] or [targets_of(record)]


def targets_of(record: records.RunRecord) -> list[GuardTarget]:
    """The node targets the run record holds; a missing or tampered list is an error, never a guess."""
    path = record.targets_path()
    try:
        return _read_targets(record, path)
    except FileNotFoundError:
        raise Infra(
            f"run {record.run_id} has no node targets ({path}): it was started by an older rlaunch or never "
            "started; stop its processes with that version"
        ) from None


def _read_targets(record: records.RunRecord, path: Path) -> list[GuardTarget]:
    try:
        raw = json.loads(path.read_text())
        if not isinstance(raw, list):
            raise ValueError("not a list")
        return [GuardTarget.from_json(item) for item in raw]
    except ValueError as exc:
        raise Infra(f"run {record.run_id}: unusable node targets in {path}: {exc}") from None


# ---------------------------------------------------------------------------------------------------------
# up


def check_lock(inv: Inventory, base: Any = None) -> str | None:
    """A running job on any of the same nodes (by this head's records) blocks `up`; returns its id."""
    hosts = {n.host for n in inv.nodes}
    for run_id in reversed(records.list_run_ids(base)):
        rec = records.RunRecord.open(run_id, base)
        try:
            state = rec.read_state()
        except (OSError, ValueError):
            continue
        if not is_active(state.get("state")):
            continue
        # By host, not by cluster name: two inventories naming the same hosts share the nodes.
        if not hosts & set(state.get("hosts", [])):
            continue
        pid = state.get("launcher_pid")
        if not state.get("detached") and pid and not _pid_alive(int(pid)):
            rec.set_state(RunState.ABANDONED, reason="launcher died without cleaning up its record")
            continue
        if state.get("detached"):
            # Nobody settles a detached run's record but `status`: ask its guards before refusing.
            with contextlib.suppress(Infra, OSError, ValueError):
                if not is_active(status(run_id).get("state")):
                    continue
        return run_id
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def up(
    inv: Inventory,
    *,
    detach: bool = False,
    on_line: LineSink | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    head_env: Mapping[str, str] | None = None,
    force: bool = False,
    run_id: str | None = None,
    transport: Transport | None = None,
    doctor: bool = False,
    ranks: str | None = None,
    on_attempt: Callable[[int], None] | None = None,
) -> tuple[str, Outcome]:
    """Launch the inventory's job; with restarts per `restart:` (launcher/run/loop.py). Returns (run id, outcome).
    `on_attempt` hears each attempt's number before its first line (validation splits the output by it)."""
    from launcher.run.attempt import show_specs

    say = on_status or (lambda text: None)
    head_env = os.environ if head_env is None else head_env
    if detach and (transport.guard_attached if transport else inv.transport == "slurm"):
        raise LaunchRefused(
            "--detach is not possible with transport slurm: the job lives in the launcher's srun steps "
            "(submit `rlaunch up` itself with sbatch instead)",
        )
    # A node at health.max_strikes is swapped for a spare here, or nothing starts (exit 3, naming the node).
    inv, struck = spares.admit(inv, ledger.read())
    for host, spare in struck.items():
        say(f"{host} is at health.max_strikes: spare {spare} takes its place")
    # `net: auto`: each node's NCCL_SOCKET_IFNAME is the interface that routes to the master (docs/network.md).
    if inv.net.socket_ifname == "auto":
        inv = _resolve_net(inv, transport, say)
    run_id = run_id or records.new_run_id()
    sources = planning.load_sources(inv)
    # The cluster's latest run was stopped for preemption (`rlaunch stop --save`, a Slurm requeue): resume its save.
    from launcher import preempted as requeue

    preempted = requeue.resume_point(inv)
    resume_from = preempted["checkpoint"] if preempted else None
    plan = planning.build_plan(
        inv, run_id=run_id, sources=sources, head_env=head_env, detach=detach, resume_from=resume_from
    )
    try:
        show_specs(plan, ranks)
    except ValueError as exc:
        raise LaunchRefused(str(exc)) from None
    try:
        # From the check until our record says "starting", no other `up` on this head may check (launcher/hostlock.py).
        with hostlock.hold(plan.hosts):
            if not force and (busy := check_lock(inv)):
                raise LaunchRefused(
                    f"run {busy} is still running on these nodes; stop it with `rlaunch down {busy}` (or use --force)",
                )
            record = records.RunRecord.create(run_id, plan.to_json())
            records.write_atomic(record.inventory_path, inv.model_dump_json(indent=1))
            record.set_state(
                RunState.STARTING,
                cluster=inv.cluster,
                hosts=plan.hosts,
                detached=detach,
                launcher_pid=os.getpid(),
                attempt=0,
                started_at=time.time(),
                ranks=ranks,
                replaced=[
                    {"attempt": 0, "node": h, "spare": s, "cause": "max_strikes"} for h, s in struck.items()
                ],
                resumed_after_preemption=preempted,
                slurm_job_id=requeue.allocation_job_id(head_env) if inv.transport == "slurm" else None,
            )
    except hostlock.HostBusy as exc:
        raise LaunchRefused(str(exc)) from None
    if detach:
        # The supervisor launches and follows on one connection per node (an injected `transport` is only this
        # process's, for `net: auto` above); this process reports how the launch went.
        from launcher import supervise

        try:
            return run_id, supervise.launch(record, doctor=doctor, say=say)
        except supervise.SupervisorLost as exc:
            with contextlib.suppress(RlaunchError, OSError, ValueError):
                down(run_id)  # whatever it had started
            record.set_state(RunState.FAILED, reason=str(exc), ended_at=time.time())
            raise LaunchError(f"{exc} (the run was stopped on every node)") from None
        finally:
            record.close()
    own_transport = transport is None
    transport = transport or make_transport(inv)
    from launcher.run.launch import launch

    try:
        outcome = launch(
            inv,
            plan,
            record,
            transport,
            sources,
            head_env,
            detach=False,
            doctor=doctor,
            say=say,
            on_line=on_line,
            on_event=on_event,
            on_attempt=on_attempt,
            preempted=preempted,
        )
        return run_id, outcome
    finally:
        attempts.settle(record)
        record.close()
        if own_transport:
            transport.close()


def _resolve_net(inv: Inventory, transport: Transport | None, say: Callable[[str], None]) -> Inventory:
    from launcher import netauto

    script = nodecall.node_script("netfacts.py")
    if transport is not None:
        return netauto.resolve(inv, transport, script, say)
    with make_transport(inv) as own:
        return netauto.resolve(inv, own, script, say)


# ---------------------------------------------------------------------------------------------------------
# down / status / logs


def down(run_id: str | None, *, grace: float | None = None) -> tuple[str, dict[str, GuardReply]]:
    """Stop the run's job on every node. A node counts as clean only when its guard answered and nothing of
    the job remains there."""
    record, inv, _ = open_run(run_id)
    grace = inv.health.grace if grace is None else grace
    from launcher import supervise

    # A detached run's supervisor stops the job as Ctrl-C would (and so never mistakes it for a failure to restart),
    # through the connections it holds, and records each node's stop reply (records.py: teardown.json). Nodes it
    # confirmed clean are not asked again; the guards' stop below goes only to the others (unreachable, unclean,
    # not asked), or to every node when there was no supervisor or it recorded nothing.
    writer = supervise.recorded_supervisor(record.read_state())
    since = time.time()
    stopped = supervise.stop(record.root, timeout=grace + 40)
    targets = targets_of(record)  # a restart may have replaced them meanwhile
    confirmed = _confirmed_clean(record, targets, writer, since) if stopped else {}
    rest = [t for t in targets if t.host not in confirmed]
    replies: dict[str, GuardReply] = dict(confirmed)
    if rest:
        with make_transport(inv) as transport, teardown_shield():
            replies.update(GuardClient(transport).stop(rest, grace=grace))
    unreachable = sorted(h for h, r in replies.items() if not r.ok)
    unclean = sorted(h for h, r in replies.items() if r.ok and (r.data or {}).get("remaining"))
    if unreachable or unclean:
        why = "; ".join(
            part
            for part in (
                f"unreachable: {', '.join(unreachable)}" if unreachable else "",
                f"processes remain on: {', '.join(unclean)}" if unclean else "",
            )
            if part
        )
        record.set_state(RunState.STOP_FAILED, ended_at=time.time(), reason=why)
    elif is_active(record.read_state().get("state")):
        record.set_state(RunState.STOPPED, ended_at=time.time(), reason="rlaunch down")
    return record.run_id, replies


def _confirmed_clean(
    record: records.RunRecord, targets: list[GuardTarget], writer: tuple[int, int] | None, since: float
) -> dict[str, GuardReply]:
    """The nodes whose guard answered the supervisor's teardown (after `since`) with nothing left, for these very
    targets (same host and guard directory): their replies, marked as the supervisor's."""
    if writer is None:
        return {}
    try:
        teardown = records.read_teardown(record, writer, since)
    except (OSError, records.ViewRefused):
        return {}
    out = {}
    for target in targets:
        node = teardown["nodes"].get(target.host)
        if not isinstance(node, dict) or node.get("run_dir") != target.run_dir:
            continue
        final = node.get("final")
        clean = node.get("ok") is True and node.get("exit_code") == 0 and node.get("remaining") == []
        if clean and isinstance(final, dict):
            out[target.host] = GuardReply(target.host, final, None, 0, via="supervisor")
    return out


def settle(node_states: dict[str, str | None]) -> tuple[RunState, str] | None:
    """The run's state from its nodes' guard states, with why; None while it still runs.

    A node whose guard died ends the run at once: its job processes are unguarded, so the run is torn down
    everywhere (nothing left behind) rather than left "running" until a timeout. Each node's final word means
    what launcher/states.py's FROM_GUARD says; the run succeeded only where every node's means success."""
    lost = sorted(h for h, s in node_states.items() if s == protocol.GUARD_LOST)
    if lost:
        return RunState.FAILED, f"the guard died on {', '.join(lost)}; the job was stopped on every node"
    states = list(node_states.values())
    if not states or not all(s in protocol.TERMINAL_STATES for s in states):
        return None
    meaning = {h: FROM_GUARD[s] for h, s in node_states.items() if s is not None}
    if all(m is RunState.SUCCEEDED for m in meaning.values()):
        return RunState.SUCCEEDED, "every node succeeded"
    failed = sorted(h for h, m in meaning.items() if m is not RunState.SUCCEEDED)
    return RunState.FAILED, f"ended {', '.join(f'{h}: {node_states[h]}' for h in failed)}"


def status(run_id: str | None, *, live: bool = True, probe: bool = False) -> dict[str, Any]:
    """The run's state and, while it is active, each node's. A live supervisor's view (records.py: live.json)
    answers for every node it follows, without touching any node; the nodes it does not follow, and every node
    when there is no fresh view or `probe` is set, are asked directly (one `guard.py status` each). "view" says
    which: {"source": "supervisor", "age_s", "asked": [nodes asked directly]} or {"source": "nodes", "why"}."""
    record, inv, _ = open_run(run_id)
    state = record.read_state()
    out: dict[str, Any] = {"run_id": record.run_id, **state, "nodes": {}}
    supervised = False
    if state.get("detached") and is_active(state.get("state")):
        from launcher import supervise

        supervised = supervise.supervisor_alive(state)
        out["supervised"] = supervised
    if live and is_active(state.get("state")):
        targets = targets_of(record)
        ask = targets
        if probe:
            out["view"] = {"source": "nodes", "why": "--probe"}
        elif not supervised:
            out["view"] = {"source": "nodes", "why": "no live supervisor"}
        else:
            ask = _from_live_view(record, state, targets, out)
        # No transport (not even paramiko's import) when the supervisor answered for every node.
        with contextlib.ExitStack() as stack:
            guards = functools.cache(lambda: GuardClient(stack.enter_context(make_transport(inv))))
            if ask:
                for host, reply in guards().status(ask).items():
                    out["nodes"][host] = (
                        reply.data if reply.ok else {"state": "unknown", "error": reply.error}
                    )
            out["nodes"] = {t.host: out["nodes"][t.host] for t in targets if t.host in out["nodes"]}
            # A live supervisor settles its run itself (verdict, restart); without one, status does.
            settled = None if supervised else settle({h: n.get("state") for h, n in out["nodes"].items()})
            if settled is not None:
                # Nodes still running (and a dead guard's orphans) are stopped before the nodes count as free.
                unfinished = [
                    t
                    for t in targets
                    if out["nodes"][t.host].get("state")
                    not in protocol.TERMINAL_STATES - {protocol.GUARD_LOST}
                ]
                if unfinished:
                    guards().stop(unfinished, grace=inv.health.grace)
                final, why = settled[0].value, settled[1]
                # Nobody watched the end (an unsupervised detached run): keep the guards' own reasons, edge
                # decisions first (launcher/node/edge.py), as the record's summary.
                reasons = sorted(
                    ((0 if n.get("edge") else 1), f"{h}: {n.get('reason')}")
                    for h, n in out["nodes"].items()
                    if n.get("state") != protocol.SUCCEEDED and n.get("reason")
                )
                summary = "; ".join(text for _, text in reasons) or why
                record.set_state(settled[0], reason=why, summary=summary, ended_at=time.time())
                out.update(state=final, reason=why, summary=summary)
    if (latest := latest_outcome(record)) is not None:
        out["outcome"] = latest
    if (gp := attempts.goodput_of(record)) is not None:
        out["goodput"] = gp.to_json()
    out["progress"] = progress_summary(attempts.read_progress(record.root), inv, out)
    return out


def _from_live_view(
    record: records.RunRecord, state: Mapping[str, Any], targets: list[GuardTarget], out: dict[str, Any]
) -> list[GuardTarget]:
    """Fill out["nodes"] from the live supervisor's view for the nodes it follows in this attempt (same host,
    same guard directory) and heard from lately (records.NODE_SILENT_S); return the targets still to ask. No usable view: every target, and out["view"] says
    why (records.py: "The supervisor's live view")."""
    from launcher import supervise

    try:
        view = records.read_live(record, supervise.recorded_supervisor(dict(state)))
    except FileNotFoundError:
        out["view"] = {"source": "nodes", "why": "the supervisor has not shared a live view yet"}
        return targets
    except records.ViewRefused as exc:
        out["view"] = {"source": "nodes", "why": str(exc)}
        return targets
    if state.get("plan_run_id") and view.get("plan_run_id") != state.get("plan_run_id"):
        out["view"] = {"source": "nodes", "why": "the live view is of another attempt"}
        return targets
    now = time.time()
    ask = []
    for target in targets:
        node = view["nodes"].get(target.host)
        if (
            not isinstance(node, dict)
            or node.get("followed") is not True
            or node.get("run_dir") != target.run_dir
        ):
            ask.append(target)
            continue
        heard = node.get("last_heard")
        age = round(now - heard, 1) if type(heard) in (int, float) else None
        # Silent since its last record, or since its follower opened when nothing came yet.
        since = max((t for t in (heard, node.get("followed_at")) if type(t) in (int, float)), default=None)
        if node.get("state") == protocol.RUNNING and (since is None or now - since > records.NODE_SILENT_S):
            ask.append(target)  # followed but silent: hung or cut off behind a connection that looks open
            continue
        out["nodes"][target.host] = {**node, "last_heard_age_s": age}
    out["view"] = {
        "source": "supervisor",
        "age_s": view["age_s"],
        "pid": view.get("writer_pid"),
        "asked": [t.host for t in ask],
    }
    return ask


def latest_outcome(record: records.RunRecord) -> dict[str, Any] | None:
    """The last attempt's outcome-N.json, by attempt number (RunRecord.outcome_paths; sorted as text, attempt 10
    came before attempt 2)."""
    paths = record.outcome_paths()
    if not paths:
        return None
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(paths[-1].read_text())
        return data if isinstance(data, dict) else None
    return None


# Job arguments that name the run's total steps, as the example and the common trainers spell them.
TOTAL_ARGS = ("--steps", "--max-steps", "--max_steps", "--total-steps", "--num-steps", "--train-steps")
RATE_WINDOW_S = 60.0  # steps/s over the last minute of progress (the guard forwards lines in batches)


def total_steps(inv: Inventory, entries: list[dict[str, Any]]) -> int | None:
    """The run's total steps: from progress records that carry one (tqdm's `N/M`), else from the job's arguments."""
    for entry in reversed(entries):
        if isinstance(entry.get("total"), int) and entry["total"] > 0:
            return int(entry["total"])
    args = list(inv.job.args)
    for i, arg in enumerate(args):
        name, _, value = arg.partition("=")
        if name in TOTAL_ARGS:
            value = value or (args[i + 1] if i + 1 < len(args) else "")
            if value.isdigit() and int(value) > 0:
                return int(value)
    return None


def progress_summary(
    entries: list[dict[str, Any]], inv: Inventory, state: Mapping[str, Any], now: float | None = None
) -> dict[str, Any]:
    """Where the run is, from the run record's progress records (launcher/attempts.py writes them as the job's
    progress lines arrive; launcher/goodput.py parses the lines): the current attempt's step, the last loss,
    steps/s over the last minute, the ETA when the total is known, attempt and restarts."""
    now = time.time() if now is None else now
    attempt = int(state.get("attempt") or 0)
    out: dict[str, Any] = {
        "attempt": attempt,
        "restarts": attempt,
        "step": None,
        "total": total_steps(inv, entries),
        "loss": None,
        "steps_per_s": None,
        "eta_s": None,
        "last_progress_age_s": None,
    }
    current = [e for e in entries if e.get("a", 0) == (max((e.get("a", 0) for e in entries), default=0))]
    stepped = [e for e in current if isinstance(e.get("step"), int)]
    losses = [e for e in current if isinstance(e.get("loss"), int | float)]
    if losses:
        out["loss"] = float(losses[-1]["loss"])
    if current:
        out["last_progress_age_s"] = round(max(0.0, now - float(current[-1]["t"])), 1)
    if stepped:
        last = stepped[-1]
        out["step"] = int(last["step"])
        recent = [e for e in stepped if float(last["t"]) - float(e["t"]) <= RATE_WINDOW_S]
        first = recent[0]
        span = float(last["t"]) - float(first["t"])
        if span > 0 and last["step"] > first["step"]:
            rate = (last["step"] - first["step"]) / span
            out["steps_per_s"] = round(rate, 3)
            if out["total"] and out["step"] < out["total"] and is_active(state.get("state")):
                out["eta_s"] = round((out["total"] - out["step"]) / rate, 1)
    return out


@dataclasses.dataclass
class LogRead:
    """What `rlaunch logs` read: the lines (node by node, attempt by attempt), where each node's reading stopped
    (run directory → byte offset in its out.log, for `logs -f` to go on from) and the nodes whose lines came from
    the head's copy instead (unreachable: only the lines the follower forwarded, no --since)."""

    lines: list[tuple[str, str]]
    ends: dict[str, dict[str, int]]
    from_record: list[str]


def read_logs(
    run_id: str | None, node: str | None = None, grep: str | None = None, rank: int | None = None
) -> list[tuple[str, str]]:
    """Every line of the run (see read_log_lines), as (node, text)."""
    return read_log_lines(run_id, node=node, grep=grep, rank=rank).lines


def read_log_lines(
    run_id: str | None,
    *,
    node: str | None = None,
    grep: str | None = None,
    rank: int | None = None,
    tail: int | None = None,
    since: float | None = None,
    ago: float | None = None,
    follow: bool = False,
) -> LogRead:
    """Every line of the run, read from the nodes' own logs (each attempt's out.log, by launcher/node/logcat.py):
    the head's record holds only what the followers forwarded. `tail` keeps each node's last N lines (cut on the
    node: only those cross the network); `ago`/`since` keep the lines written in the last `ago` seconds by the
    node's clock, or at/after the epoch time `since` (the guard's out.idx, to within about a second). A node
    that cannot be reached falls back to the record's copy (tail applied, since not: its lines carry no time)."""
    record, inv, plan_json = open_run(run_id)
    pattern = re.compile(grep) if grep else None
    history = targets_by_attempt(record)
    ran = list(dict.fromkeys(t.host for attempt in history for t in attempt))  # spares included
    hosts = [h for h in ran if node is None or h == node]
    firsts = {n["host"]: int(n["ranks"][0]) for n in plan_json["nodes"]}
    local: dict[str, str | list[int]] = {h: "all" for h in hosts}
    if rank is not None:
        nproc = {n["host"]: int(n["nproc"]) for n in plan_json["nodes"]}
        local = {h: [rank - firsts[h]] for h in hosts if h in firsts and 0 <= rank - firsts[h] < nproc[h]}
    python = {t.host: t.python for attempt in history for t in attempt}
    run_dirs = {h: [t.run_dir for attempt in history for t in attempt if t.host == h] for h in local}

    def options(host: str) -> str:
        opts = {"ranks": local[host], "grep": grep or "", "tail": tail, "since": since, "ago": ago}
        return json.dumps({**opts, "follow": follow})

    read = LogRead([], {}, [])
    with make_transport(inv) as transport:
        replies = nodecall.call_all(
            transport,
            list(local),
            lambda h: python.get(h, "python3"),
            nodecall.with_modules(nodecall.node_script("logcat.py"), "logcat.py", ("teelines.py",)),
            lambda h: [options(h), *run_dirs[h]],
            timeout=120,
        )
    for host in local:
        reply = replies.get(host)
        if reply is not None and reply.ok and isinstance(reply.get("end"), dict):
            lines = reply.result.stdout.splitlines()[:-1]  # the last line is the reply
            read.lines += [(host, line) for line in lines]
            read.ends[host] = {str(k): v for k, v in reply.get("end").items() if isinstance(v, int)}
            continue
        read.from_record.append(host)
        path = record.log_path(host)
        kept = [
            (host, line)
            for line in (path.read_text(errors="replace").splitlines() if path.is_file() else [])
            if pattern is None or pattern.search(line)
        ]
        read.lines += kept[-tail:] if tail else ([] if tail == 0 else kept)
    return read


# `logs --follow`: how long a node's channel is asked for again before the view goes on without it, and how
# often a dropped link is opened again (the runner's own bounds are launcher/run/attempt.py's ATTACH_RETRY_S and
# MAX_REOPENS; a viewer holds no guard up, so it may wait longer).
FOLLOW_RETRY_S = 30.0
FOLLOW_REOPENS = 3


def follow_logs(
    run_id: str | None,
    on_line: Callable[[str, str], None],
    *,
    node: str | None = None,
    grep: str | None = None,
    rank: int | None = None,
    after: Mapping[str, Mapping[str, int]] | None = None,
) -> None:
    """Re-attach to a running job's logs, every line (no heartbeats, no teardown: watching only). Ends when the job
    ends. A live supervisor records what it needs itself: then nothing here is written to the record. `after`
    (read_log_lines' ends): per node and run directory, the offset already shown; only later lines are shown."""
    from launcher.health.classify import parse_prefixes

    record, inv, plan_json = open_run(run_id)
    pattern = re.compile(grep) if grep else None
    from launcher import supervise

    state = record.read_state()
    # Someone else records this run while its supervisor or its foreground `up` lives: then only watch.
    foreground = not state.get("detached") and state.get("launcher_pid")
    recording = not supervise.supervisor_alive(state) and not (foreground and _pid_alive(int(foreground)))
    offsets = state.get("offsets", {})
    targets = [t for t in targets_of(record) if node is None or t.host == node]
    firsts = {n["host"]: int(n["ranks"][0]) for n in plan_json["nodes"]}
    shown = {t.host: int((after or {}).get(t.host, {}).get(t.run_dir, 0)) for t in targets}
    done = threading.Event()
    remaining = {t.host for t in targets}
    lock = threading.Lock()

    def wanted(host: str, text: str) -> bool:
        if pattern is not None and not pattern.search(text):
            return False
        if rank is None:
            return True
        local = parse_prefixes(text).local_rank
        return local is not None and host in firsts and firsts[host] + local == rank

    def leave(host: str) -> None:
        """The view is done with this node (its job ended, or it cannot be reached); the last one ends the view."""
        with lock:
            remaining.discard(host)
            if not remaining:
                done.set()

    def handle(host: str, rec: dict[str, Any]) -> None:
        if rec.get("k") == protocol.K_LINE:
            text = rec.get("text", "")
            off = rec.get("off", 0)
            if isinstance(off, int):
                reached[host] = max(reached.get(host, 0), off)
            if recording and (not isinstance(off, int) or off > recorded[host]):
                offsets[host] = off if isinstance(off, int) else offsets.get(host, 0)
                record.append_log(host, text)
            if (not isinstance(off, int) or off > shown[host]) and wanted(host, text):
                on_line(host, text)
        elif rec.get("k") == protocol.K_EXIT:
            leave(host)

    by_host = {t.host: t for t in targets}

    # Shown from where `logs` stopped (`after`), else from the first line ("every line": a supervisor's recorded offset
    # is its own progress, not the viewer's; starting there lost a line printed before the view opened, CI at 87a8722).
    # Recording keeps the record's copy whole: read from its own offset if that is earlier, append only past it.
    recorded = {h: int(offsets.get(h, 0)) for h in by_host}
    reached = {h: min(shown[h], recorded[h]) if recording else shown[h] for h in by_host}
    reopened = dict.fromkeys(by_host, 0)

    def start(host: str) -> Any:
        # A node too busy to open a channel at once is asked again (GuardClient.follow); one that stays
        # unreachable is left out of the view rather than ending it for every node.
        try:
            return guards.follow(
                by_host[host], handle, offset=reached[host], retry_until=time.monotonic() + FOLLOW_RETRY_S
            )
        except TransportError:
            leave(host)
            return None

    with make_transport(inv) as transport:
        guards = GuardClient(transport)
        # One exec round trip per node: opened side by side, as the runner does (issue 23).
        procs = dict(zip_hosts(list(by_host), start, transport.max_parallel))
        try:
            ended: set[str] = set()
            while not done.wait(0.5):
                for host, proc in list(procs.items()):
                    with lock:
                        waiting = host in remaining
                    if proc is None or proc.poll() is None or not waiting:
                        continue
                    # A link that dropped before its guard's exit record (given one tick to arrive) is opened again
                    # from the last line shown, no line twice, as the runner reopens its followers (MAX_REOPENS).
                    if host not in ended:
                        ended.add(host)
                    elif reopened[host] < FOLLOW_REOPENS:
                        ended.discard(host)
                        reopened[host] += 1
                        with contextlib.suppress(Exception):  # the dropped channel's resources go first
                            proc.close()
                        procs[host] = start(host)
                    else:
                        leave(host)
        finally:
            zip_hosts(
                [h for h, p in procs.items() if p is not None],
                lambda h: procs[h].close(),
                transport.max_parallel,
            )
            if recording:
                record.update_state(offsets=offsets)
            record.close()


__all__ = [
    "LaunchError",
    "LogRead",
    "down",
    "follow_logs",
    "read_log_lines",
    "read_logs",
    "status",
    "up",
]
