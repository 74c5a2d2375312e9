"""CLI verbs for detached runs: `attach` (watch as if in the foreground) and `supervise` (restore supervision)."""

from __future__ import annotations

import click

from launcher.cli.app import _status, guarded, main, next_commands
from launcher.cli.run import _event_printer, _line_printer
from launcher.errors import Infra, JobFailed
from launcher.states import is_active


@main.command()
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Stream log lines as JSON lines.")
@click.option("--from-start", is_flag=True, help="Replay the recorded lines first.")
@guarded
def attach(run_id: str | None, as_json: bool, from_start: bool) -> None:
    """Show a detached run's live stream as a foreground `up` would. Ctrl-C detaches; the run goes on.

    \b
    A run whose supervisor is gone (head rebooted, process killed) gets a new one first.
    Exit: 0 succeeded or still running when detached · 1 failed or stopped · 2 bad input · 3 no supervisor
    """
    from launcher import records, supervise

    record = records.RunRecord.open(run_id)
    pid, started = supervise.ensure(record.root)
    if started:
        _status(f"run {record.run_id} was unsupervised: started supervisor pid {pid}")
    try:
        state = supervise.tail_record(
            record.root, _line_printer(as_json), None if as_json else _event_printer, from_start=from_start
        )
    except KeyboardInterrupt:
        _status(f"detached from run {record.run_id}; it goes on")
        _status(next_commands(record.run_id, active=True))
        return
    if is_active(state.get("state")):
        _status(
            f"run {record.run_id}: its supervisor is gone; `rlaunch supervise {record.run_id}` restores it"
        )
        raise Infra("")
    _status(
        f"run {record.run_id}: {state.get('state')}"
        + (f" — {state['summary']}" if state.get("summary") else "")
    )
    _status(next_commands(record.run_id))
    if state.get("state") != "succeeded":
        raise JobFailed("")


@main.command()
@click.argument("run_id", required=False)
@guarded
def supervise(run_id: str | None) -> None:
    """Start a supervisor for a detached run whose supervisor is gone; it re-attaches to the node guards.

    \b
    Exit: 0 supervised (or already ended) · 2 bad input · 3 the supervisor did not start
    """
    from launcher import records
    from launcher import supervise as sup

    record = records.RunRecord.open(run_id)
    try:
        pid, started = sup.ensure(record.root)
    except RuntimeError as exc:
        click.echo(f"rlaunch: {exc}", err=True)
        raise Infra("") from None
    if pid is None:
        _status(f"run {record.run_id} is not an active detached run: nothing to supervise")
    elif started:
        _status(
            f"run {record.run_id}: supervisor pid {pid} started (log: {record.root / sup.SUPERVISOR_LOG})"
        )
    else:
        _status(f"run {record.run_id} is already supervised (pid {pid})")
    if pid is not None:
        _status(next_commands(record.run_id, active=True))
