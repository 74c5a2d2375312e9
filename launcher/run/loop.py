"""The run loop: attempt after attempt of one run until the restart policy says stop.

`execute(ctx)` is the one loop a foreground `up` (launcher/lifecycle.py), the detached supervisor
(launcher/supervise.py) and validation's kill-and-resume (launcher/validate/runner.py, through `up`) go through:
start an attempt (launcher/run/attempt.py), watch it, and after a failure strike the node in the ledger, find the
latest complete checkpoint, ask the restart policy (launcher/restart_policy.py), swap in a spare or leave the
failed node out, and build the next attempt's plan resuming from that checkpoint. Everything a run needs is one
`RunContext` (torch elastic's agent keeps its whole run in one `WorkerSpec` and branches on state alone:
torch/distributed/elastic/agent/server/api.py); `on_attempt` tells a caller where one attempt's output ends.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.inventory import Inventory
from cluster.transport import Transport
from launcher import attempts, ledger, nodecall, records, restart_policy, spares
from launcher import plan as planning
from launcher.errors import ExitCode
from launcher.guardctl import GuardTarget
from launcher.run.attempt import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    LaunchError,
    LaunchRefused,
    LineSink,
    Outcome,
    Runner,
    targets_of_plan,
)
from launcher.run.signals import teardown_shield
from launcher.states import RunState


@dataclass
class RunContext:
    """One run, as the loop needs it. `adopt` (the detached supervisor): the plan's guards already run; follow them
    from these byte offsets instead of starting anything for attempt `first_attempt`. `detach` without `adopt`: the
    supervisor of `up --detach` (launcher/supervise.py), which launches the detached guards itself and follows them
    (since turn 18 nothing launches a detached run and hands it over: the CLI of `up --detach` opens no connection)."""

    inv: Inventory
    plan: planning.Plan
    record: records.RunRecord
    transport: Transport
    sources: Mapping[str, bytes]
    head_env: Mapping[str, str]
    detach: bool = False
    on_line: LineSink | None = None
    on_event: Callable[[dict[str, Any]], None] | None = None
    say: Callable[[str], None] = lambda text: None
    first_attempt: int = 0
    adopt: Mapping[str, int] | None = None
    on_runner: Callable[[Runner], None] | None = None  # each attempt's Runner, once made
    on_attempt: Callable[[int], None] | None = None  # each attempt's number, before it starts or is adopted
    resume_from: str | None = (
        None  # the first attempt's checkpoint (a save made for preemption, docs/preemption.md)
    )


def save_targets(record: records.RunRecord, targets: list[GuardTarget], attempt: int = 0) -> None:
    """The current attempt's node targets (what down/status/follow talk to), and each attempt's (what `logs`
    reads every line from)."""
    data = json.dumps([t.to_json() for t in targets], indent=1)
    records.write_atomic(record.targets_path(attempt), data)
    records.write_atomic(record.targets_path(), data)


def execute(ctx: RunContext) -> Outcome:
    """Start, watch, restart: the run's outcome once no restart follows."""
    try:
        return _attempts(ctx)
    except KeyboardInterrupt:
        # Between attempts (the back-off, finding the checkpoint, the next plan): the last attempt's teardown has
        # finished and the next one has started nothing, so only the record is left to close.
        ctx.record.set_state(RunState.STOPPED, reason="interrupted", ended_at=time.time())
        return Outcome(EXIT_INTERRUPTED, "interrupted between attempts: nothing was running")


def _attempts(ctx: RunContext) -> Outcome:
    inv, plan, record, transport, say = ctx.inv, ctx.plan, ctx.record, ctx.transport, ctx.say
    attempt = ctx.first_attempt
    adopt = ctx.adopt
    # A supervisor taking over mid-run: nodes left out of the current plan were excluded by an earlier restart.
    excluded: frozenset[str] = frozenset({n.host for n in inv.nodes} - set(plan.hosts) if adopt else ())
    resume_from = ctx.resume_from
    # Progress lines with times (goodput and the loss curve), read like the hang rule reads them.
    tracker = attempts.ProgressTracker(record, inv.health.progress_regex)
    on_line = tracker.wrap(ctx.on_line)
    policy = restart_policy.Policy.from_config(inv.restart.model_dump())
    # A supervisor taking over mid-run: the attempts before it count for budgets and the breaker.
    history = [a for a in attempt_history(record) if a.attempt < attempt]
    while True:
        tracker.attempt = attempt
        if ctx.on_attempt is not None:
            ctx.on_attempt(attempt)
        ranks = record.read_state().get("ranks")
        runner = Runner(plan, transport, record, on_line=on_line, on_event=ctx.on_event, ranks=ranks)
        if ctx.on_runner is not None:
            ctx.on_runner(runner)
        # From the first start sent, a signal takes the teardown path: one that came between the guards' start and
        # the watch loop once left the job running on every node (the launcher exited 130; turn 8).
        try:
            if adopt is not None:
                runner.adopt(adopt)
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
                # A run followed from here on starts each guard on its follower's channel (Runner.start).
                _launch(runner, plan, record, attempt, say)
            runner.attach()
            outcome = runner.watch()
            if outcome.code != EXIT_OK:
                # Before the followers close: under Slurm it runs in the guards' own step (no step of its own).
                runner.collect_artifacts()
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
        attempts.mark(record, attempt, "end", f"attempt {attempt}: {outcome.summary}", code=outcome.code)
        failed_node = (outcome.root_cause or {}).get("node")
        # `rlaunch stop` (docs/preemption.md): the job's exit answers the request, never a node's fault.
        stop_requested = bool(record.read_state().get("stop_requested"))
        cause = (
            ledger.node_fault(outcome.root_cause) if outcome.code != EXIT_OK and not stop_requested else None
        )
        if cause and failed_node:
            ledger.append([ledger.strike(failed_node, record.run_id, cause, outcome.root_cause or {})])
        # The latest complete checkpoint now: what a restart resumes from, and what the no-progress breaker
        # compares with the previous attempt's (launcher/restart_policy.py).
        checkpoint = (
            find_checkpoint(inv, plan, transport, avoid=failed_node)
            if outcome.code not in (EXIT_OK, EXIT_INTERRUPTED) and policy.max_restarts
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
        if stop_requested and outcome.code != EXIT_OK:
            return _stopped_on_request(record, outcome, decision, left)
        if not decision.restart:
            return _finish(record, outcome, decision, left, say, restarts_allowed=bool(policy.max_restarts))
        record.update_state(restart_policy={**left, "stopped_by": None})
        ledger.append([ledger.restart(failed_node or "", inv.cluster, record.run_id, decision.kind or "")])
        attempt += 1
        # health.straggler.action restart-without: the straggler's fatal event names the node to leave out.
        straggler = (outcome.root_cause or {}).get("kind") == "straggler"
        say(f"{decision.message} in {inv.restart.backoff:g} s: {outcome.summary}")
        time.sleep(inv.restart.backoff)
        spare = None
        if cause and failed_node in plan.hosts and inv.spares:
            inv, spare = _swap_in_spare(ctx, inv, failed_node, attempt, cause)
        if (
            not spare
            and (inv.restart.exclude_failed_node or straggler)
            and failed_node
            and len(plan.nodes) > 1
        ):
            excluded = excluded | {failed_node}
        resume_from = checkpoint
        _say_resume(inv, resume_from, say)
        plan = planning.build_plan(
            inv,
            run_id=record.run_id,
            attempt=attempt,
            sources=ctx.sources,
            head_env=ctx.head_env,
            resume_from=resume_from,
            exclude=excluded,
            detach=ctx.detach,
        )
        records.write_atomic(record.plan_path, json.dumps(plan.to_json(), indent=1))
        record.update_state(hosts=sorted({*record.read_state().get("hosts", []), *plan.hosts}))


def _finish(
    record: records.RunRecord,
    outcome: Outcome,
    decision: restart_policy.Decision,
    left: dict[str, Any],
    say: Callable[[str], None],
    *,
    restarts_allowed: bool,
) -> Outcome:
    """No restart follows: the run's final state, and the policy's line when it was the policy that ended it."""
    # EXIT_INTERRUPTED: stopped on request (`rlaunch down`), never a reason to restart.
    final = {EXIT_OK: RunState.SUCCEEDED, EXIT_INTERRUPTED: RunState.STOPPED}.get(
        outcome.code, RunState.FAILED
    )
    stopped = (
        decision.message if outcome.code not in (EXIT_OK, EXIT_INTERRUPTED) and restarts_allowed else None
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


def _stopped_on_request(
    record: records.RunRecord, outcome: Outcome, decision: restart_policy.Decision, left: dict[str, Any]
) -> Outcome:
    """The job ended because `rlaunch stop` asked it to (saved and exited 75, or torn down at the deadline): the
    run is stopped, never restarted; launcher/preempt.py checks and records the save."""
    code = restart_policy.exit_code_of(outcome.root_cause, outcome.nodes)
    summary = "stopped on request (rlaunch stop)" + (f"; the job exited with code {code}" if code else "")
    record.set_state(
        RunState.STOPPED,
        reason="rlaunch stop",
        ended_at=time.time(),
        summary=summary,
        exit_code=EXIT_INTERRUPTED,
        restart_policy={**left, "stopped_by": decision.to_json()},
    )
    return dataclasses.replace(outcome, code=EXIT_INTERRUPTED, summary=summary)


def _swap_in_spare(
    ctx: RunContext, inv: Inventory, failed_node: str, attempt: int, cause: str
) -> tuple[Inventory, str | None]:
    """The first healthy spare takes the failed node's place (launcher/spares.py); recorded in state.json."""
    record = ctx.record
    picked = spares.pick(
        inv,
        failed_node,
        ctx.transport,
        run_id=record.run_id,
        attempt=attempt,
        sources=ctx.sources,
        head_env=ctx.head_env,
        say=ctx.say,
        entries=ledger.read(),
    )
    if not picked:
        return inv, None
    inv, spare = picked
    ctx.say(f"spare {spare} replaces {failed_node} (node rank and world size unchanged)")
    replaced = record.read_state().get("replaced", [])
    replaced.append({"attempt": attempt, "node": failed_node, "spare": spare, "cause": cause})
    record.update_state(replaced=replaced)
    return inv, spare


def _say_resume(inv: Inventory, resume_from: str | None, say: Callable[[str], None]) -> None:
    if resume_from:
        say(f"resuming from {resume_from}")
    elif inv.job.checkpoint_dir:
        say(f"no complete checkpoint under {inv.job.checkpoint_dir}: starting over")
    else:
        # The run directory is kept across attempts (plan.ATTEMPTS_DIR): a program's own relative checkpoint
        # (the DDP tutorial's snapshot.pt) is still there on the nodes that ran before.
        say("no job.checkpoint_dir: restarting in the same run directories (the program's own files kept)")


def _launch(
    runner: Runner,
    plan: planning.Plan,
    record: records.RunRecord,
    attempt: int,
    say: Callable[[str], None],
) -> None:
    say(f"preflight + push to {len(plan.nodes)} nodes")
    # Recorded before anything starts: a `down` or `status` from another terminal must reach a starting guard.
    save_targets(record, targets_of_plan(plan), attempt)

    def between() -> None:
        _check_job_paths(plan, runner.transport, say)
        say("starting")

    try:
        # Each guard starts on its follower's channel (start-follow); under Slurm push, checks and guards share one
        # job step.
        runner.launch(between)
    except LaunchError as exc:
        attempts.mark(record, attempt, "end", f"attempt {attempt}: {exc}", code=exc.code)
        record.set_state(RunState.FAILED, reason=str(exc), ended_at=time.time())
        raise
    record.set_state(RunState.RUNNING, attempt=attempt, plan_run_id=plan.run_id)


def _check_job_paths(plan: planning.Plan, transport: Transport, say: Callable[[str], None]) -> None:
    """A llamafactory job's paths, checked on every node after the push (pushed files count) and before anything
    starts: a dataset_dir or adapter no node can open fails every rank minutes later (launcher/jobs/lfpaths.py)."""
    if plan.job_kind != "llamafactory":
        return
    from launcher.jobs.lfpaths import check_paths_on_nodes

    say(f"llamafactory: checking the yaml's paths on {len(plan.nodes)} nodes")
    code, lines = check_paths_on_nodes(plan, transport, nodecall.node_script("lfpaths.py"))
    if lines:
        # The yaml must change (a relative path, a dataset name dataset_info.json lacks): bad input; a path missing
        # on a node, or a node that did not answer: infrastructure.
        error = LaunchRefused if code == ExitCode.BAD_INPUT else LaunchError
        raise error(
            "llamafactory: paths the nodes cannot open, nothing was started:\n"
            + "\n".join(f"  {line}" for line in lines)
        )


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
    records.write_atomic(record.outcome_path(attempt), json.dumps(data, indent=1))


def attempt_history(record: records.RunRecord) -> list[restart_policy.AttemptResult]:
    """The recorded attempts (outcome-N.json), in attempt order; an unreadable one is left out."""
    out = []
    for path in record.outcome_paths():
        try:
            out.append(restart_policy.AttemptResult.from_json(json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(out, key=lambda a: a.attempt)


# Node modules ckpt.py imports, sent with it (each becomes a module of that name before ckpt.py runs): push.py's
# path rule, the one rule for every directory the job's files come from (docs/security.md).
CKPT_MODULES = ("push.py",)


def find_checkpoint(
    inv: Inventory, plan: planning.Plan, transport: Transport, avoid: str | None = None
) -> str | None:
    """The latest complete checkpoint under job.checkpoint_dir, as seen from the master node; from the next node
    when the master is `avoid` (the node that just failed): the checkpoint is on shared storage."""
    if not inv.job.checkpoint_dir:
        return None
    master = next((n for n in plan.nodes if n.host != avoid), plan.nodes[0])
    reply = nodecall.call(
        transport,
        master.host,
        master.python,
        nodecall.with_modules(nodecall.node_script("ckpt.py"), "ckpt.py", CKPT_MODULES),
        inv.job.checkpoint_dir,
        str(plan.world_size),
        timeout=60,
    )
    latest = reply.get("latest")
    return latest if isinstance(latest, str) else None
