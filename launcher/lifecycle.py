"""The verbs behind `up`, `down`, `status` and `logs`: run records + plans + the Runner, with restarts.

Each function returns plain data (Outcome, dicts) for the CLI to render; printing of streamed lines goes through
the `on_line` callback so the same code serves the terminal, tests and validation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cluster.inventory import Inventory
from cluster.transport import Transport, make_transport
from launcher import attempts, hostlock, ledger, records, restart_policy, spares
from launcher import plan as planning
from launcher.errors import Infra
from launcher.guardctl import GuardClient, GuardReply, GuardTarget
from launcher.node import protocol
from launcher.node.protocol import script_argv
from launcher.run import (
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    LaunchError,
    LaunchRefused,
    LineSink,
    Outcome,
    Runner,
    node_script,
    show_specs,
    targets_of_plan,
    teardown_shield,
)
from launcher.states import FROM_GUARD, RunState, is_active

TARGETS_FILE = "targets.json"  # typed node targets of the run's current attempt (guardctl.GuardTarget)


def save_targets(record: records.RunRecord, targets: list[GuardTarget], attempt: int = 0) -> None:
    """The current attempt's node targets (what down/status/follow talk to), and each attempt's (what `logs`
    reads every line from)."""
    data = json.dumps([t.to_json() for t in targets], indent=1)
    records.write_atomic(record.root / f"targets-{attempt}.json", data)
    records.write_atomic(record.root / TARGETS_FILE, data)


def targets_by_attempt(record: records.RunRecord) -> list[list[GuardTarget]]:
    """Every attempt's node targets, in order (runs recorded before per-attempt targets: the current ones)."""
    numbered = [p for p in record.root.glob("targets-*.json") if p.stem.rsplit("-", 1)[1].isdigit()]
    paths = sorted(numbered, key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    return [_read_targets(record, path) for path in paths] or [targets_of(record)]


def targets_of(record: records.RunRecord) -> list[GuardTarget]:
    """The node targets the run record holds; a missing or tampered list is an error, never a guess."""
    path = record.root / TARGETS_FILE
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
) -> tuple[str, Outcome]:
    """Launch the inventory's job; with restarts per `restart:`. Returns (run id, outcome)."""
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
    from launcher import preempt

    preempted = preempt.resume_point(inv)
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
            records.write_atomic(record.root / "inventory.json", inv.model_dump_json(indent=1))
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
                slurm_job_id=preempt.allocation_job_id(head_env) if inv.transport == "slurm" else None,
            )
    except hostlock.HostBusy as exc:
        raise LaunchRefused(str(exc)) from None
    own_transport = transport is None
    transport = transport or make_transport(inv)
    try:
        if doctor:
            say(f"doctor: fast checks on {len(plan.nodes)} nodes")
            failed = preflight_doctor(inv, plan, transport)
            if failed:
                record.set_state(RunState.FAILED, reason="doctor preflight", ended_at=time.time())
                raise LaunchError(
                    "doctor preflight failed, nothing was started:\n"
                    + "\n".join(f"  {line}" for line in failed)
                    + "\n  (see `rlaunch doctor`; skip with --no-doctor)",
                    EXIT_INFRA,
                )
        if inv.keep_runs is not None:
            _collect_old_runs(inv, transport, run_id, say)
        if inv.sync is not None:
            _sync(inv, plan, transport, say)
        if preempted:
            say(
                f"resuming from {resume_from}: run {preempted['run']} was stopped for preemption at step "
                f"{preempted['step']} ({preempted['lost_steps'] or 0} step(s) lost)"
            )
        return run_id, _attempts(
            inv,
            plan,
            sources,
            head_env,
            record,
            transport,
            detach,
            on_line,
            on_event,
            say,
            resume_from=resume_from,
        )
    finally:
        if not detach:
            attempts.settle(record)
        record.close()
        if own_transport:
            transport.close()


def _resolve_net(inv: Inventory, transport: Transport | None, say: Callable[[str], None]) -> Inventory:
    from launcher import netauto

    script = node_script("netfacts.py")
    if transport is not None:
        return netauto.resolve(inv, transport, script, say)
    with make_transport(inv) as own:
        return netauto.resolve(inv, own, script, say)


def _collect_old_runs(inv: Inventory, transport: Transport, run_id: str, say: Callable[[str], None]) -> None:
    """`keep_runs`: older finished runs' directories go from the nodes before this run adds one (launcher/fleet.py,
    launcher/node/gc.py). Hygiene never stops a launch: a node that fails it is only mentioned."""
    from launcher import fleet

    assert inv.keep_runs is not None
    done = fleet.gc_all(inv, keep=inv.keep_runs, protect=[run_id], transport=transport)
    removed = sum(len(g.removed) for g in done.values())
    freed = sum(g.freed_bytes for g in done.values())
    if removed:
        say(
            f"keep_runs {inv.keep_runs}: removed {removed} old run directories from the nodes ({freed / 1e6:.1f} MB)"
        )
    for host, g in sorted(done.items()):
        if g.errors:
            say(f"keep_runs: {host}: {g.errors[0]}")


def _sync(inv: Inventory, plan: planning.Plan, transport: Transport, say: Callable[[str], None]) -> None:
    """`sync:`: the project directory to every node before the job starts; a node that cannot take it stops the
    launch (its job would run without its code)."""
    from launcher import sync

    result = sync.push_all(inv, transport, plan.hosts)
    failed = {h: n.error for h, n in result.nodes.items() if n.error}
    if failed:
        raise LaunchError(
            "sync failed, nothing was started: " + "; ".join(f"{h}: {e}" for h, e in sorted(failed.items())),
            EXIT_INFRA,
        )
    sent = sum(n.sent_bytes for n in result.nodes.values())
    files = sum(n.sent_files for n in result.nodes.values())
    say(f"sync: {result.files} files ({result.total_bytes / 1e6:.1f} MB) → {result.dest}: sent {files} files, "
        f"{sent / 1e6:.2f} MB in all")  # fmt: skip


def _attempts(
    inv: Inventory,
    plan: planning.Plan,
    sources: dict[str, bytes],
    head_env: Mapping[str, str],
    record: records.RunRecord,
    transport: Transport,
    detach: bool,
    on_line: LineSink | None,
    on_event: Callable[[dict[str, Any]], None] | None,
    say: Callable[[str], None],
    *,
    first_attempt: int = 0,
    adopt: Mapping[str, int] | None = None,
    on_runner: Callable[[Runner], None] | None = None,
    resume_from: str | None = None,
) -> Outcome:
    """Start, watch, restart. `adopt` (the detached supervisor): the plan's guards already run; follow them from
    these byte offsets instead of starting anything for the first attempt."""
    attempt = first_attempt
    supervising = adopt is not None
    # A supervisor taking over mid-run: nodes left out of the current plan were excluded by an earlier restart.
    excluded: frozenset[str] = frozenset({n.host for n in inv.nodes} - set(plan.hosts) if adopt else ())
    # Progress lines with times (goodput and the loss curve), read like the hang rule reads them.
    tracker = attempts.ProgressTracker(record, inv.health.progress_regex)
    on_line = tracker.wrap(on_line)
    policy = restart_policy.Policy.from_config(inv.restart.model_dump())
    # A supervisor taking over mid-run: the attempts before it count for budgets and the breaker.
    history = [a for a in attempt_history(record) if a.attempt < attempt]
    while True:
        tracker.attempt = attempt
        ranks = record.read_state().get("ranks")
        runner = Runner(plan, transport, record, on_line=on_line, on_event=on_event, ranks=ranks)
        if on_runner is not None:
            on_runner(runner)
        if adopt is not None:
            for host, offset in adopt.items():
                if host in runner.nodes:
                    runner.nodes[host].offset = int(offset)
            adopt = None
        else:
            attempts.mark(
                record,
                attempt,
                "start",
                f"attempt {attempt} on {len(plan.nodes)} nodes",
                hosts=plan.hosts,
                resume_from=resume_from,
            )
            _launch(runner, plan, record, attempt, say)
        if detach and not supervising:
            return _leave_supervisor(record, say)
        try:
            runner.attach()
            outcome = runner.watch()
        except KeyboardInterrupt:
            with teardown_shield(say):  # a second SIGTERM from `timeout`/systemd must not cut this short
                say("interrupted: stopping the job on every node")
                runner.stop(reason="interrupted")
                runner.detach_followers()
                attempts.mark(
                    record, attempt, "end", f"attempt {attempt}: interrupted", code=EXIT_INTERRUPTED
                )
                record.set_state(RunState.STOPPED, reason="interrupted", ended_at=time.time())
            return Outcome(
                EXIT_INTERRUPTED, "interrupted: job stopped on every node", nodes=runner.outcome().nodes
            )
        finally:
            runner.detach_followers()
        if outcome.code != 0:
            runner.collect_artifacts()
        attempts.mark(record, attempt, "end", f"attempt {attempt}: {outcome.summary}", code=outcome.code)
        failed_node = (outcome.root_cause or {}).get("node")
        # `rlaunch stop` (docs/preemption.md): the job's exit answers the request, never a node's fault.
        stop_requested = bool(record.read_state().get("stop_requested"))
        cause = ledger.node_fault(outcome.root_cause) if outcome.code != 0 and not stop_requested else None
        if cause and failed_node:
            ledger.append([ledger.strike(failed_node, record.run_id, cause, outcome.root_cause or {})])
        # The latest complete checkpoint now: what a restart resumes from, and what the no-progress breaker
        # compares with the previous attempt's (launcher/restart_policy.py).
        checkpoint = (
            find_checkpoint(inv, plan, transport, avoid=failed_node)
            if outcome.code not in (0, EXIT_INTERRUPTED) and policy.max_restarts
            else None
        )
        result = restart_policy.AttemptResult(
            attempt, outcome.code, outcome.root_cause, outcome.nodes, checkpoint, tracker.max_step(attempt)
        )
        history.append(result)
        decision = policy.decide(
            history,
            restart_policy.storm_times(ledger.read(), inv.cluster),
            now=time.time(),
            stop_requested=stop_requested,
        )
        if decision.restart:
            history[-1] = dataclasses.replace(result, restarted=True)
        _save_outcome(record, attempt, outcome, history[-1], decision)
        left = policy.budget_left(history)
        if stop_requested and outcome.code != 0:
            # The job ended because it was asked to (saved and exited, or torn down at the deadline): a stop.
            code = restart_policy.exit_code_of(outcome.root_cause, outcome.nodes)
            summary = "stopped on request (rlaunch stop)" + (
                f"; the job exited with code {code}" if code else ""
            )
            record.set_state(
                RunState.STOPPED,
                reason="rlaunch stop",
                ended_at=time.time(),
                summary=summary,
                exit_code=EXIT_INTERRUPTED,
                restart_policy={**left, "stopped_by": decision.to_json()},
            )
            return dataclasses.replace(outcome, code=EXIT_INTERRUPTED, summary=summary)
        if not decision.restart:
            # EXIT_INTERRUPTED: stopped on request (`rlaunch down`), never a reason to restart.
            final = {0: RunState.SUCCEEDED, EXIT_INTERRUPTED: RunState.STOPPED}.get(
                outcome.code, RunState.FAILED
            )
            stopped = (
                decision.message
                if outcome.code not in (0, EXIT_INTERRUPTED) and policy.max_restarts
                else None
            )
            if stopped:
                say(stopped)
            record.set_state(
                final,
                ended_at=time.time(),
                summary=outcome.summary,
                exit_code=outcome.code,
                restart_policy={**left, "stopped_by": decision.to_json() if stopped else None},
            )
            return dataclasses.replace(outcome, stopped_by=stopped)
        record.update_state(restart_policy={**left, "stopped_by": None})
        ledger.append([ledger.restart(failed_node or "", inv.cluster, record.run_id, decision.kind or "")])
        attempt += 1
        # health.straggler.action restart-without: the straggler's fatal event names the node to leave out.
        straggler = (outcome.root_cause or {}).get("kind") == "straggler"
        say(f"{decision.message} in {inv.restart.backoff:g} s: {outcome.summary}")
        time.sleep(inv.restart.backoff)
        spare = None
        if cause and failed_node in plan.hosts and inv.spares:
            picked = spares.pick(
                inv,
                failed_node,
                transport,
                run_id=record.run_id,
                attempt=attempt,
                sources=sources,
                head_env=head_env,
                say=say,
                entries=ledger.read(),
            )
            if picked:
                inv, spare = picked
                say(f"spare {spare} replaces {failed_node} (node rank and world size unchanged)")
                replaced = record.read_state().get("replaced", [])
                replaced.append({"attempt": attempt, "node": failed_node, "spare": spare, "cause": cause})
                record.update_state(replaced=replaced)
        if (
            not spare
            and (inv.restart.exclude_failed_node or straggler)
            and failed_node
            and len(plan.nodes) > 1
        ):
            excluded = excluded | {failed_node}
        resume_from = checkpoint
        if resume_from:
            say(f"resuming from {resume_from}")
        elif inv.job.checkpoint_dir:
            say(f"no complete checkpoint under {inv.job.checkpoint_dir}: starting over")
        else:
            # The run directory is kept across attempts (plan.ATTEMPTS_DIR): a program's own relative checkpoint
            # (the DDP tutorial's snapshot.pt) is still there on the nodes that ran before.
            say(
                "no job.checkpoint_dir: restarting in the same run directories (the program's own files kept)"
            )
        plan = planning.build_plan(
            inv,
            run_id=record.run_id,
            attempt=attempt,
            sources=sources,
            head_env=head_env,
            resume_from=resume_from,
            exclude=excluded,
            detach=detach,
        )
        records.write_atomic(record.root / "plan.json", json.dumps(plan.to_json(), indent=1))
        record.update_state(hosts=sorted({*record.read_state().get("hosts", []), *plan.hosts}))


def _launch(
    runner: Runner, plan: planning.Plan, record: records.RunRecord, attempt: int, say: Callable[[str], None]
) -> None:
    say(f"preflight + push to {len(plan.nodes)} nodes")
    # Recorded before anything starts: a `down` or `status` from another terminal must reach a starting guard.
    save_targets(record, targets_of_plan(plan), attempt)
    try:
        runner.push()
        _check_job_paths(plan, runner.transport, say)
        say("starting")
        runner.start()
    except LaunchError as exc:
        attempts.mark(record, attempt, "end", f"attempt {attempt}: {exc}", code=exc.code)
        record.set_state(RunState.FAILED, reason=str(exc), ended_at=time.time())
        raise
    record.set_state(RunState.RUNNING, attempt=attempt, plan_run_id=plan.run_id)


def _check_job_paths(plan: planning.Plan, transport: Transport, say: Callable[[str], None]) -> None:
    """A llamafactory job's paths, checked on every node after the push (pushed files count) and before anything
    starts: a dataset_dir or adapter no node can open fails every rank minutes later (launcher/jobs/lfdata.py)."""
    if plan.job_kind != "llamafactory":
        return
    from launcher.jobs.lfdata import check_paths_on_nodes

    say(f"llamafactory: checking the yaml's paths on {len(plan.nodes)} nodes")
    code, lines = check_paths_on_nodes(plan, transport, node_script("lfpaths.py"))
    if lines:
        raise LaunchError(
            "llamafactory: paths the nodes cannot open, nothing was started:\n"
            + "\n".join(f"  {line}" for line in lines),
            code,
        )


def _leave_supervisor(record: records.RunRecord, say: Callable[[str], None]) -> Outcome:
    """`up --detach`: hand the started run to a daemonized supervisor (launcher/supervise.py) and return."""
    from launcher import supervise

    try:
        pid = supervise.spawn(record.root)
    except (RuntimeError, OSError, ValueError) as exc:
        # The job runs (its guards end it on a local failure); only the head's watch is missing.
        say(f"the job runs UNSUPERVISED: {exc}; start one with `rlaunch supervise {record.run_id}`")
        return Outcome(0, f"started run {record.run_id} (detached, unsupervised)")
    return Outcome(0, f"started run {record.run_id} (detached, supervisor pid {pid})")


def preflight_doctor(inv: Inventory, plan: planning.Plan, transport: Transport) -> list[str]:
    """The fast doctor subset against the planned master port; one line per failed check (empty: all good)."""
    from launcher.doctor import run_doctor

    probe = inv.model_copy(update={"master": inv.master.model_copy(update={"port": plan.master_port})})
    report = run_doctor(probe, transport, node_script("facts.py").encode(), fast=True)
    return [
        f"{c.name}"
        + (f" [{', '.join(c.nodes)}]" if c.nodes else "")
        + f": {c.message}"
        + (f" — fix: {c.fix}" if c.fix else "")
        for c in report.failed
        if c.severity == "error"
    ]


def _save_outcome(
    record: records.RunRecord,
    attempt: int,
    outcome: Outcome,
    result: restart_policy.AttemptResult,
    decision: restart_policy.Decision,
) -> None:
    data = {
        "attempt": attempt,
        "code": outcome.code,
        "summary": outcome.summary,
        "root_cause": outcome.root_cause,
        "nodes": outcome.nodes,
        "end_of_run_abort": outcome.end_of_run_abort,
        "checkpoint": result.checkpoint,
        "max_step": result.max_step,
        "restarted": result.restarted,
        "decision": decision.to_json(),
    }
    records.write_atomic(record.root / f"outcome-{attempt}.json", json.dumps(data, indent=1))


def attempt_history(record: records.RunRecord) -> list[restart_policy.AttemptResult]:
    """The recorded attempts (outcome-N.json), in attempt order; an unreadable one is left out."""
    out = []
    for path in record.root.glob("outcome-*.json"):
        try:
            out.append(restart_policy.AttemptResult.from_json(json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(out, key=lambda a: a.attempt)


def find_checkpoint(
    inv: Inventory, plan: planning.Plan, transport: Transport, avoid: str | None = None
) -> str | None:
    """The latest complete checkpoint under job.checkpoint_dir, as seen from the master node; from the next node
    when the master is `avoid` (the node that just failed): the checkpoint is on shared storage."""
    if not inv.job.checkpoint_dir:
        return None
    master = next((n for n in plan.nodes if n.host != avoid), plan.nodes[0])
    result = transport.run(
        master.host,
        script_argv(
            master.python, "-c", node_script("ckpt.py"), inv.job.checkpoint_dir, str(plan.world_size)
        ),
        timeout=60,
    )
    latest = (protocol.reply_of(result.stdout) or {}).get("latest")
    return latest if isinstance(latest, str) else None


# ---------------------------------------------------------------------------------------------------------
# down / status / logs


def open_run(run_id: str | None) -> tuple[records.RunRecord, Inventory, dict[str, Any]]:
    record = records.RunRecord.open(run_id)
    inv = Inventory.model_validate_json((record.root / "inventory.json").read_text())
    return record, inv, record.plan_json()


def down(run_id: str | None, *, grace: float | None = None) -> tuple[str, dict[str, GuardReply]]:
    """Stop the run's job on every node. A node counts as clean only when its guard answered and nothing of
    the job remains there."""
    record, inv, _ = open_run(run_id)
    grace = inv.health.grace if grace is None else grace
    from launcher import supervise

    # A detached run's supervisor stops the job as Ctrl-C would (and so never mistakes it for a failure to restart);
    # the guards' stop below then finds nothing left, or cleans up if the supervisor could not.
    supervise.stop(record.root, timeout=grace + 40)
    targets = targets_of(record)  # a restart may have replaced them meanwhile
    with make_transport(inv) as transport, teardown_shield():
        replies = GuardClient(transport).stop(targets, grace=grace)
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


def status(run_id: str | None, *, live: bool = True) -> dict[str, Any]:
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
        with make_transport(inv) as transport:
            guards = GuardClient(transport)
            for host, reply in guards.status(targets).items():
                out["nodes"][host] = reply.data if reply.ok else {"state": "unknown", "error": reply.error}
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
                    guards.stop(unfinished, grace=inv.health.grace)
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
    outcomes = sorted(record.root.glob("outcome-*.json"))
    if outcomes:
        out["outcome"] = json.loads(outcomes[-1].read_text())
    if (gp := attempts.goodput_of(record)) is not None:
        out["goodput"] = gp.to_json()
    out["progress"] = progress_summary(attempts.read_progress(record.root), inv, out)
    return out


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


def read_logs(
    run_id: str | None, node: str | None = None, grep: str | None = None, rank: int | None = None
) -> list[tuple[str, str]]:
    """Every line of the run, read from the nodes' own logs (each attempt's out.log): the head's record holds only
    what the followers forwarded. A node that cannot be reached falls back to the record's copy."""
    record, inv, plan_json = open_run(run_id)
    pattern = re.compile(grep) if grep else None
    history = targets_by_attempt(record)
    ran = list(dict.fromkeys(t.host for attempt in history for t in attempt))  # spares included
    hosts = [h for h in ran if node is None or h == node]
    firsts = {n["host"]: int(n["ranks"][0]) for n in plan_json["nodes"]}
    local: dict[str, str] = {h: "all" for h in hosts}
    if rank is not None:
        nproc = {n["host"]: int(n["nproc"]) for n in plan_json["nodes"]}
        local = {h: str(rank - firsts[h]) for h in hosts if h in firsts and 0 <= rank - firsts[h] < nproc[h]}
    python = {t.host: t.python for attempt in history for t in attempt}
    run_dirs = {h: [t.run_dir for attempt in history for t in attempt if t.host == h] for h in local}
    out: list[tuple[str, str]] = []
    with make_transport(inv) as transport:
        group = transport.run_all(
            list(local),
            lambda h: script_argv(
                python.get(h, "python3"),
                "-c",
                node_script("logcat.py"),
                local[h],
                grep or "",
                *run_dirs[h],
            ),
            timeout=120,
        )
    for host in local:
        result = group.results.get(host)
        if result is not None and result.ok:
            out += [(host, line) for line in result.stdout.splitlines()]
            continue
        path = record.log_path(host)
        for line in path.read_text(errors="replace").splitlines() if path.is_file() else []:
            if pattern is None or pattern.search(line):
                out.append((host, line))
    return out


def follow_logs(
    run_id: str | None,
    on_line: Callable[[str, str], None],
    *,
    node: str | None = None,
    grep: str | None = None,
) -> None:
    """Re-attach to a running job's logs, every line (no heartbeats, no teardown: watching only). Ends when the job
    ends. A live supervisor records what it needs itself: then nothing here is written to the record."""
    record, inv, _ = open_run(run_id)
    pattern = re.compile(grep) if grep else None
    from launcher import supervise

    recording = not supervise.supervisor_alive(record.read_state())
    offsets = record.read_state().get("offsets", {})
    targets = [t for t in targets_of(record) if node is None or t.host == node]
    done = threading.Event()
    remaining = {t.host for t in targets}
    lock = threading.Lock()

    def handle(host: str, rec: dict[str, Any]) -> None:
        if rec.get("k") == protocol.K_LINE:
            text = rec.get("text", "")
            if recording:
                offsets[host] = rec.get("off", offsets.get(host, 0))
                record.append_log(host, text)
            if pattern is None or pattern.search(text):
                on_line(host, text)
        elif rec.get("k") == protocol.K_EXIT:
            with lock:
                remaining.discard(host)
                if not remaining:
                    done.set()

    with make_transport(inv) as transport:
        guards = GuardClient(transport)
        procs = [guards.follow(t, handle, offset=offsets.get(t.host, 0)) for t in targets]
        try:
            while not done.wait(0.5):
                if all(p.poll() is not None for p in procs):
                    break
        finally:
            for p in procs:
                p.close()
            if recording:
                record.update_state(offsets=offsets)
            record.close()


__all__ = ["EXIT_INFRA", "LaunchError", "down", "follow_logs", "read_logs", "status", "up"]
