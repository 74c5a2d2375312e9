"""After the run's record exists: doctor's preflight, `keep_runs`, `sync:`, then the run loop (launcher/run/loop.py).

One home for what a foreground `up` (launcher/lifecycle.py) and the supervisor of `up --detach` (launcher/supervise.py,
which launches itself and follows what it starts) both do before and while the first attempt runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from cluster.inventory import Inventory
from cluster.transport import Transport
from launcher import nodecall, records
from launcher import plan as planning
from launcher.errors import LaunchError
from launcher.run.attempt import LineSink, Outcome
from launcher.run.loop import RunContext, execute
from launcher.states import RunState


def launch(
    inv: Inventory,
    plan: planning.Plan,
    record: records.RunRecord,
    transport: Transport,
    sources: Mapping[str, bytes],
    head_env: Mapping[str, str],
    *,
    detach: bool,
    doctor: bool,
    say: Callable[[str], None],
    on_line: LineSink | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    on_attempt: Callable[[int], None] | None = None,
    on_runner: Callable[[Any], None] | None = None,
    preempted: Mapping[str, Any] | None = None,
) -> Outcome:
    """Everything after the run's record exists: doctor's preflight, `keep_runs`, `sync:`, then the run loop.
    A foreground `up` runs it; so does the supervisor of `up --detach` (`detach`), which follows what it starts."""
    if doctor:
        say(f"doctor: fast checks on {len(plan.nodes)} nodes")
        failed = preflight_doctor(inv, plan, transport)
        if failed:
            record.set_state(RunState.FAILED, reason="doctor preflight", ended_at=time.time())
            raise LaunchError(
                "doctor preflight failed, nothing was started:\n"
                + "\n".join(f"  {line}" for line in failed)
                + "\n  (see `rlaunch doctor`; skip with --no-doctor)"
            )
    if inv.keep_runs is not None:
        _collect_old_runs(inv, transport, record.run_id, say)
    if inv.sync is not None:
        _sync(inv, plan, transport, say)
    resume_from = preempted["checkpoint"] if preempted else None
    if preempted:
        say(
            f"resuming from {resume_from}: run {preempted['run']} was stopped for preemption at step "
            f"{preempted['step']} ({preempted['lost_steps'] or 0} step(s) lost)"
        )
    ctx = RunContext(
        inv,
        plan,
        record,
        transport,
        sources,
        head_env,
        detach,
        on_line,
        on_event,
        say,
        on_attempt=on_attempt,
        on_runner=on_runner,
        resume_from=resume_from,
    )
    return execute(ctx)


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
            "sync failed, nothing was started: " + "; ".join(f"{h}: {e}" for h, e in sorted(failed.items()))
        )
    sent = sum(n.sent_bytes for n in result.nodes.values())
    files = sum(n.sent_files for n in result.nodes.values())
    say(f"sync: {result.files} files ({result.total_bytes / 1e6:.1f} MB) → {result.dest}: sent {files} files, "
        f"{sent / 1e6:.2f} MB in all")  # fmt: skip


def preflight_doctor(inv: Inventory, plan: planning.Plan, transport: Transport) -> list[str]:
    """The fast doctor subset against the planned master port; one line per failed check (empty: all good)."""
    from launcher.doctor import run_doctor

    probe = inv.model_copy(update={"master": inv.master.model_copy(update={"port": plan.master_port})})
    report = run_doctor(probe, transport, nodecall.node_script("facts.py").encode(), fast=True)
    return [
        f"{c.name}"
        + (f" [{', '.join(c.nodes)}]" if c.nodes else "")
        + f": {c.message}"
        + (f" — fix: {c.fix}" if c.fix else "")
        for c in report.failed
        if c.severity == "error"
    ]
