"""CLI verbs that run jobs: up, down, status, logs (incl. `logs classify`)."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import click

from launcher.cli.app import (
    UserError,
    _status,
    guarded,
    inventory_options,
    load,
    main,
    next_commands,
    override_options,
    overrides_of,
)
from launcher.errors import ExitCode, Infra, JobFailed, raise_for
from launcher.states import is_active

# Distinct colours per node make interleaved logs readable; plain text when not a terminal.
_PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan", "bright_magenta")


def _line_printer(as_json: bool):
    from launcher.render import terminal_text

    colors: dict[str, str] = {}
    tty = sys.stdout.isatty()

    def emit(host: str, rank: int | None, text: str) -> None:
        if as_json:
            sys.stdout.write(json.dumps({"node": host, "rank": rank, "text": text}) + "\n")
        else:
            tag = f"{host}[{rank}]" if rank is not None else f"{host}[-]"
            if tty:
                color = colors.setdefault(host, _PALETTE[len(colors) % len(_PALETTE)])
                tag = click.style(tag, fg=color.replace("bright_", "") if "bright" in color else color)
            sys.stdout.write(f"{tag} {terminal_text(text)}\n")
        sys.stdout.flush()

    return emit


# Warnings the user cannot act on as such, kept in the run record (events.jsonl, the report) but not printed: c10d
# prints "The hostname of the client socket cannot be retrieved" once per node and start whenever getnameinfo
# fails, and the store connects all the same (launcher/health/rules.py store-hostname-unresolved); should the
# rendezvous then fail, its own fatal event is printed with that rule's hint beside it in the record.
QUIET_WARNINGS = frozenset({"store-hostname-unresolved"})


def _event_printer(event: dict[str, Any]) -> None:
    from launcher.render import terminal_text

    if event.get("severity") == "warning" and event.get("rule") in QUIET_WARNINGS:
        return
    if event.get("severity") in ("fatal", "warning") and event.get("kind") != "info":
        color = "red" if event["severity"] == "fatal" else "yellow"
        where = f"{event.get('node')}" + (f" rank {event['rank']}" if event.get("rank") is not None else "")
        click.echo(
            click.style(
                f"rlaunch: {event['severity']} {event.get('category') or event.get('kind')}", fg=color
            )
            + f" on {where}: {terminal_text(str(event.get('text', ''))[:300])}",
            err=True,
        )


@main.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@inventory_options
@click.option(
    "--detach",
    "-d",
    is_flag=True,
    help="Start, leave a supervisor (watch, verdict, restart) and return; see `attach`, `supervise`.",
)
@click.option("--force", is_flag=True, help="Start even if a run of this cluster is recorded as running.")
@click.option("--json", "as_json", is_flag=True, help="Stream log lines and the final summary as JSON lines.")
@click.option(
    "--quiet", "-q", is_flag=True, help="Do not stream log lines (events and the summary still print)."
)
@click.option("--doctor/--no-doctor", default=True, show_default=True, help="Run doctor's fast checks first.")
@click.option(
    "--prom",
    type=click.Path(dir_okay=False),
    help="At the end, write the run's goodput as a Prometheus textfile.",
)
@click.option(
    "--ranks",
    default=None,
    help="Whose healthy lines the terminal shows: all | global ranks 0,3 | node02:* | node02:1 "
    "(default: the first node's local rank 0; flagged lines of every rank always show; `logs` has every line).",
)
@override_options
@guarded
def up(
    inventory: str,
    hostfile: str | None,
    from_slurm: bool,
    detach: bool,
    force: bool,
    as_json: bool,
    quiet: bool,
    doctor: bool,
    prom: str | None,
    ranks: str | None,
    env_items: tuple[str, ...],
    nproc_per_node: int | None,
    job_args: tuple[str, ...],
) -> None:
    """Preflight every node, push config, start the job everywhere (or nowhere), stream logs, watch health.

    \b
    Overrides (also for `plan`): --env K=V (repeatable), --nproc-per-node N, `-- ARGS...` replaces job.args.
    Secrets never go on the command line: list them under `secrets:` and export them in this shell.
    Ctrl-C, SIGTERM, `rlaunch down` or a lost launcher (heartbeat) stop the job on every node.
    Exit: 0 succeeded · 1 job failed · 2 bad input · 3 infrastructure (unreachable node, lost link) · 130 interrupted
    """
    from launcher import lifecycle, records
    from launcher.run.signals import interrupt_once

    inv = load(inventory, hostfile, from_slurm, overrides_of(env_items, nproc_per_node, job_args))
    interrupt_once(_status)  # SIGTERM takes Ctrl-C's teardown path; a repeated signal never cuts it short
    printer = _line_printer(as_json)
    started = time.time()
    run_id = records.new_run_id()
    announced = detach  # a detached run's id comes with its next commands at the end

    def on_status(text: str) -> None:
        # The run id, once its record exists (a refused `up` has none): what to type in another terminal.
        nonlocal announced
        if not announced and (records.runs_dir() / run_id).is_dir():
            announced = True
            _status(f"run {run_id} · " + next_commands(run_id, active=True))
        _status(text)

    run_id, outcome = lifecycle.up(
        inv,
        detach=detach,
        force=force,
        on_line=(lambda h, r, t: None) if quiet else printer,
        on_event=None if as_json else _event_printer,
        on_status=on_status,
        doctor=doctor,
        ranks=ranks,
        run_id=run_id,
    )
    if detach:
        _status(outcome.summary)
        _status(next_commands(run_id, active=True))
        if as_json:
            click.echo(json.dumps({"run_id": run_id, "detached": True}))
        return
    goodput = _goodput(run_id, prom)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "run_id": run_id,
                    "code": outcome.code,
                    "summary": outcome.summary,
                    "root_cause": outcome.root_cause,
                    "nodes": outcome.nodes,
                    "goodput": goodput,
                }
            )
        )
    else:
        from launcher.render import summary_table

        rows = [
            {"node": h, **{k: ("" if v is None else v) for k, v in n.items()}}
            for h, n in outcome.nodes.items()
        ]
        summary_table(
            rows, ["node", "state", "exit_code", "signal", "seconds", "lost"], title=f"run {run_id}"
        )
        _status(finish_line(outcome.code == ExitCode.OK, time.time() - started, outcome.summary))
        if goodput:
            from launcher.cli.nodes import goodput_line

            _status(goodput_line(goodput))
        if outcome.end_of_run_abort:
            _status(
                "note: a rank aborted after training had completed (end-of-run abort); outputs are complete"
            )
        _status(next_commands(run_id))
        if outcome.stopped_by:  # which restart rule ended the run (docs/restarts.md): the last line
            _status(outcome.stopped_by)
    raise_for(outcome.code)  # a failed job: JobFailed; Ctrl-C or SIGTERM: Interrupted; a lost node: Infra


def finish_line(ok: bool, seconds: float, summary: str) -> str:
    """`succeeded in 14.7 s`, `FAILED in 9.1 s: node2: crash — …`: the summary without the verdict said twice (the
    watcher's summary of a good run is "succeeded", perhaps with a note in parentheses)."""
    verdict = "succeeded" if ok else "FAILED"
    rest = summary[len(verdict) :].strip() if summary.lower().startswith(verdict.lower()) else summary
    head = f"{verdict} in {seconds:.1f} s"
    if not rest:
        return head
    return f"{head} {rest}" if rest.startswith("(") else f"{head}: {rest}"


def _goodput(run_id: str, prom: str | None) -> dict[str, Any] | None:
    """The finished run's goodput (settled into its state by `up`), also as a textfile when asked."""
    from launcher import attempts, records

    record = records.RunRecord.open(run_id)
    gp = attempts.goodput_of(record)
    if gp is None:
        return None
    if prom:
        state = record.read_state()
        try:
            attempts.write_prometheus(Path(prom), run_id, str(state.get("cluster", "")), gp)
        except OSError as exc:  # the job's outcome decides the exit code, not the metrics file
            _status(f"--prom: cannot write {prom}: {exc.strerror or exc}")
    return gp.to_json()


@main.command()
@click.argument("run_id", required=False)
@click.option(
    "--grace", type=float, default=None, help="Seconds between SIGTERM and SIGKILL (default: health.grace)."
)
@click.option("--json", "as_json", is_flag=True)
@guarded
def down(run_id: str | None, grace: float | None, as_json: bool) -> None:
    """Stop a run (default: the latest) on every node; nothing is left behind.

    \b
    Exit: 0 stopped, nothing left · 2 bad input (an unknown run) · 3 a node unreachable or processes remain
    """
    from launcher import lifecycle

    rid, replies = lifecycle.down(run_id, grace=grace)
    unclean = {h: r.error or f"processes remain: {r.data.get('remaining')}" for h, r in replies.items()
               if not r.ok or (r.data or {}).get("remaining")}  # fmt: skip
    if as_json:
        click.echo(
            json.dumps(
                {
                    "run_id": rid,
                    "nodes": {
                        h: {"final": r.data, "error": unclean.get(h), "via": r.via}
                        for h, r in replies.items()
                    },
                }
            )
        )
    else:
        for host, reply in sorted(replies.items()):
            click.echo(f"{host}: {unclean.get(host) or reply.state or 'stopped'}")
        _status(f"run {rid} stopped" + (f"; not clean: {', '.join(sorted(unclean))}" if unclean else ""))
        _status(next_commands(rid))
    if unclean:
        raise Infra("")


def _seconds(text: str) -> float:
    value = text.strip().removesuffix("s").strip()
    try:
        seconds = float(value)
    except ValueError:
        raise click.BadParameter(f"expected seconds like 120 or 120s, not {text!r}") from None
    if seconds <= 0:
        raise click.BadParameter("the deadline must be positive")
    return seconds


@main.command()
@click.argument("run_id", required=False)
@click.option(
    "--save", is_flag=True, required=True, help="Ask every rank to save and exit (docs/preemption.md)."
)
@click.option(
    "--deadline", default="120s", show_default=True, help="Seconds to save before the normal teardown."
)
@click.option(
    "--requeue/--no-requeue",
    default=None,
    help="`scontrol requeue` the Slurm job after the save (default: when the run runs under Slurm).",
)
@click.option("--json", "as_json", is_flag=True)
@guarded
def stop(run_id: str | None, save: bool, deadline: str, requeue: bool | None, as_json: bool) -> None:
    """Stop a run (default: the latest; under Slurm, this job's) after a save: every rank saves once and exits 75,
    then the save is checked and recorded, and a Slurm job requeued (docs/preemption.md).

    \b
    Exit: 0 saved · 1 no new complete checkpoint (deadline missed, or nothing saved) · 2 bad input (an unknown or
    finished run) · 3 a node unreachable
    """
    from launcher import preempt

    result = preempt.stop(run_id, deadline=_seconds(deadline), requeue=requeue, say=_status)
    if as_json:
        click.echo(json.dumps(result))
    else:
        for host, why in sorted(result["unreached"].items()):
            _status(f"{host}: stop request not delivered: {why}")
        _status(f"run {result['run_id']}: {result['summary']} ({result['seconds']:.1f} s)")
        if result.get("requeue") and not result["requeue"].get("ok", True):
            _status(f"requeue failed: {result['requeue']['error']}")
    if not result["saved"]:
        raise JobFailed("")


STATUS_OK = ("running", "succeeded", "starting")


@main.command()
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object (with --watch: one per refresh).")
@click.option("--all", "all_runs", is_flag=True, help="List every recorded run.")
@click.option(
    "--watch", "-w", is_flag=True, help="Refresh until the run ends (Ctrl-C stops watching, not the run)."
)
@click.option("--interval", type=click.FloatRange(min=0.5), default=2.0, show_default=True,
              help="Seconds between refreshes with --watch.")  # fmt: skip
@click.option(
    "--probe",
    is_flag=True,
    help="Ask every node itself (one SSH exec each) instead of the detached run's supervisor.",
)
@guarded
def status(
    run_id: str | None, as_json: bool, all_runs: bool, watch: bool, interval: float, probe: bool
) -> None:
    """State of a run (default: the latest): step, loss, steps/s, ETA, attempt, goodput; per node, live.

    \b
    rlaunch status [RUN] [--watch] [--json]      rlaunch status --all
    rlaunch status RUN --probe                   ask the nodes, not the supervisor
    A detached run's live supervisor answers for the nodes it follows (its view is at most a few seconds
    old; the age is shown) without touching them; the rest, and every node when the view is missing or
    stale or with --probe, are asked directly. Exit: 0 running, starting or succeeded · 1 failed, stopped
    or abandoned · 2 bad input (unknown run) · 3 infrastructure (the run's node targets are missing or
    unusable). A node that does not answer shows as `unknown` in the table.
    """
    from launcher import lifecycle, records
    from launcher.render import summary_table

    if all_runs:
        rows = []
        for rid in records.list_run_ids():
            st = records.RunRecord.open(rid).read_state()
            rows.append(
                {
                    "run": rid,
                    "state": st.get("state"),
                    "cluster": st.get("cluster", ""),
                    "nodes": len(st.get("hosts", [])),
                    "summary": st.get("summary", ""),
                }
            )
        if as_json:
            click.echo(json.dumps(rows))
        else:
            summary_table(rows, ["run", "state", "cluster", "nodes", "summary"])
        return
    if watch and not as_json:
        info = _watch(run_id, interval, probe)
    else:
        while True:
            info = lifecycle.status(run_id, probe=probe)
            if as_json:
                click.echo(json.dumps(info, default=str), nl=True)
            if not (watch and is_active(info.get("state"))):
                break
            time.sleep(interval)
        if not as_json:
            from launcher.render import out

            out.print(_status_view(info))
    if info.get("state") not in STATUS_OK:
        raise JobFailed("")


def _watch(run_id: str | None, interval: float, probe: bool = False) -> dict[str, Any]:
    """rich's Live redraws the same view in place (no scrolling); it ends with the run or Ctrl-C."""
    from rich.live import Live

    from launcher import lifecycle
    from launcher.render import out

    info = lifecycle.status(run_id, probe=probe)
    try:
        with Live(_status_view(info), console=out, refresh_per_second=4, transient=False) as live:
            while is_active(info.get("state")):
                time.sleep(interval)
                info = lifecycle.status(run_id, probe=probe)
                live.update(_status_view(info))
    except KeyboardInterrupt:
        pass  # watching stops; the run goes on
    return info


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def progress_line(p: dict[str, Any]) -> str:
    """`step 120/300 · loss 2.31 · 4.2 steps/s · ETA 43s · attempt 1 (0 restarts)`."""
    parts = []
    if p.get("step") is not None:
        parts.append(f"step {p['step']}" + (f"/{p['total']}" if p.get("total") else ""))
    else:
        parts.append("no progress yet" + (f" (of {p['total']} steps)" if p.get("total") else ""))
    if p.get("loss") is not None:
        parts.append(f"loss {p['loss']:.4g}")
    if p.get("steps_per_s"):
        parts.append(f"{p['steps_per_s']:.3g} steps/s")
    if p.get("eta_s") is not None:
        parts.append(f"ETA {_duration(p['eta_s'])}")
    parts.append(f"attempt {p.get('attempt', 0) + 1} ({p.get('restarts', 0)} restarts)")
    return " · ".join(parts)


def _status_view(info: dict[str, Any]) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from launcher.render import terminal_text

    lines: list[Any] = [
        Text(
            terminal_text(
                f"run {info['run_id']}: {info.get('state')}"
                + (f" — {info['summary']}" if info.get("summary") else "")
            )
        )
    ]
    if info.get("progress"):
        lines.append(Text(progress_line(info["progress"])))
    for r in info.get("replaced", []):
        lines.append(Text(f"{r['spare']} replaced {r['node']} (attempt {r['attempt']}: {r['cause']})"))
    if info.get("goodput"):
        from launcher.cli.nodes import goodput_line

        lines.append(Text(goodput_line(info["goodput"])))
    if info.get("restart_policy"):
        from launcher.restart_policy import budget_line

        lines.append(Text(budget_line(info["restart_policy"])))
    if info.get("stragglers"):
        lines.append(
            Text(f"stragglers: {', '.join(info['stragglers'])} (slower per step than the other nodes)")
        )
    if info.get("supervised") is True:
        lines.append(
            Text(f"supervised by pid {info.get('supervisor_pid')} (log: {info.get('supervisor_log')})")
        )
    elif info.get("supervised") is False:
        lines.append(
            Text(
                f"UNSUPERVISED: supervisor pid {info.get('supervisor_pid')} is gone; the job runs on, ending itself "
                f"on a local failure; `rlaunch attach {info['run_id']}` or `rlaunch supervise {info['run_id']}` "
                "restores it"
            )
        )
    view = info.get("view") or {}
    if view.get("source") == "supervisor":
        asked = view.get("asked") or []
        lines.append(
            Text(
                f"nodes: the supervisor's live view, {view.get('age_s')} s old"
                + (f"; asked directly: {', '.join(asked)}" if asked else "")
                + " (--probe asks every node)",
                style="dim",
            )
        )
    elif view.get("why") and view.get("why") not in ("--probe", "no live supervisor"):
        lines.append(Text(terminal_text(f"nodes: asked directly ({view['why']})"), style="dim"))
    if info["nodes"]:
        columns = ["node", "state", "alive", "processes", "error"]
        rows = [
            {
                "node": h,
                "state": n.get("state"),
                "alive": n.get("alive", ""),
                "processes": len(n.get("descendants", []) or []),
                "error": n.get("error", ""),
            }
            for h, n in info["nodes"].items()
        ]
    elif info.get("outcome"):
        columns = ["node", "state", "exit_code", "signal", "seconds"]
        rows = [{"node": h, **n} for h, n in info["outcome"]["nodes"].items()]
    else:
        rows, columns = [], []
    if rows:
        table = Table(box=None, header_style="bold")
        for c in columns:
            table.add_column(c)
        for row in rows:
            table.add_row(
                *(Text("" if row.get(c) is None else terminal_text(str(row.get(c)))) for c in columns)
            )
        lines.append(table)
    active = is_active(info.get("state"))
    lines.append(Text(next_commands(info["run_id"], active), style="dim"))
    return Group(*lines)


@main.command(context_settings={"ignore_unknown_options": False})
@click.argument("run_id", required=False)
@click.argument("file", required=False)
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the job ends.")
@click.option("--node", help="Only this node.")
@click.option("--grep", help="Only lines matching this regular expression.")
@click.option("--rank", type=int, default=None, help="Only this global rank's lines (torchrun's prefixes).")
@click.option("--tail", "-n", "tail", type=click.IntRange(min=0), default=None,
              help="Only the last N lines of each node.")  # fmt: skip
@click.option("--since", metavar="WHEN", default=None,
              help="Only lines written since: a duration ago (90s, 10m, 2h, 1d, 1h30m) by each node's clock, "
                   "or a time (2026-12-01T19:00, local time unless it names its zone).")  # fmt: skip
@click.option(
    "--json", "as_json", is_flag=True, help="JSON lines (with `classify`: one object per flagged line)."
)
@guarded
def logs(
    run_id: str | None,
    file: str | None,
    follow: bool,
    node: str | None,
    grep: str | None,
    rank: int | None,
    tail: int | None,
    since: str | None,
    as_json: bool,
) -> None:
    """Show a run's logs (default: the latest): every line of every rank, read from the nodes; or classify a file.

    \b
    rlaunch logs [RUN] [-f] [--node N] [--rank R] [--grep RE] [--tail N] [--since 10m]
    rlaunch logs classify FILE [--json]     flag RCCL/HIP/NCCL/OOM/NaN lines (exit 1 if any is fatal)
    With -f the lines read first are followed by new ones as they come, none twice; a node busy or dropped is
    asked again (30 s) and followed on from its last line. --since is exact to about a second (the node's guard
    notes when out.log grows, once a second: the job's lines carry no time).
    Exit: 0 shown · 2 bad input (unknown run, bad --grep/--since) · 3 the run's node targets are unusable
    """
    if run_id == "classify":
        _classify(file, as_json)
        return
    if file:
        raise UserError(f"unexpected argument {file!r} (did you mean `rlaunch logs classify {file}`?)")
    from launcher import lifecycle
    from launcher.render import terminal_text

    if grep:
        try:
            re.compile(grep)
        except re.error as exc:
            raise UserError(f"--grep: invalid regular expression: {exc}") from None
    ago, at = parse_since(since) if since is not None else (None, None)
    read = lifecycle.read_log_lines(
        run_id, node=node, grep=grep, rank=rank, tail=tail, since=at, ago=ago, follow=follow
    )
    for host in read.from_record:
        _status(
            f"{host} did not answer: its lines are the head's copy (only what the follower forwarded"
            + ("; --since not applied" if since is not None else "")
            + ")"
        )
    for host, line in read.lines:
        click.echo(json.dumps({"node": host, "text": line}) if as_json else f"{host}| {terminal_text(line)}")
    if follow:
        lifecycle.follow_logs(
            run_id,
            lambda h, t: click.echo(
                json.dumps({"node": h, "text": t}) if as_json else f"{h}| {terminal_text(t)}"
            ),
            node=node,
            grep=grep,
            rank=rank,
            after=read.ends,
        )


SINCE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SINCE_DURATION = re.compile(r"(?:(\d{1,9})([smhd]))+")


def parse_since(text: str) -> tuple[float | None, float | None]:
    """`--since`: (seconds ago, None) for a duration (journalctl and docker accept the same shapes), else (None,
    epoch seconds) for an ISO 8601 time; anything else is bad input naming the flag."""
    import datetime

    value = text.strip()
    if value.isdigit():
        return float(value), None
    if SINCE_DURATION.fullmatch(value):
        return float(sum(int(n) * SINCE_UNITS[u] for n, u in re.findall(r"(\d+)([smhd])", value))), None
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"--since: {text!r} is neither a duration (90s, 10m, 2h, 1d, 1h30m) nor a time (2026-12-01T19:00)"
        ) from None
    return None, when.timestamp()


def _classify(file: str | None, as_json: bool) -> None:
    from launcher.health.classify import classify_file
    from launcher.render import terminal_text

    if not file:
        raise UserError("usage: rlaunch logs classify FILE [--json]")
    try:
        flags = classify_file(file)
    except FileNotFoundError:
        raise UserError(f"{file}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{file}: is a directory") from None
    except OSError as exc:
        raise UserError(f"{file}: cannot read: {exc.strerror or exc}") from None
    for flag in flags:
        data = {"line": flag.line, "category": flag.category, "severity": flag.severity, "text": flag.text}
        if as_json:
            click.echo(json.dumps(data))
        else:
            color = "red" if flag.severity == "fatal" else "yellow"
            click.echo(
                f"{file}:{flag.line}: "
                + click.style(f"{flag.severity} {flag.category}", fg=color)
                + f": {terminal_text(flag.text)}"
            )
    if any(f.severity == "fatal" for f in flags):
        raise JobFailed("")
