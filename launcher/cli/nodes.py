"""CLI verbs about nodes and runs after the fact: `nodes` (the strike ledger) and `report` (one HTML page)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import click

from launcher.cli.app import UserError, guarded, main
from launcher.errors import Infra


def _when(t: float | None) -> str:
    if not t:
        return ""
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _one_slurm_node(host: str) -> str | None:
    """Why `host` is not exactly one Slurm node, or None. scontrol reads a node name as a host list: `ALL` is every
    node of the cluster and `n[1-64]` a range (scontrol(1) "NodeName"), so a ledger host (any string a hostfile or
    a hand edit put there) is drained only when `scontrol show node -o HOST` names exactly that one node."""
    import subprocess

    if host.upper() == "ALL" or not host or any(c in host for c in "[],*? =\t\n"):
        return f"{host!r} is not one node name (Slurm reads it as a keyword or a host list)"
    try:
        done = subprocess.run(
            ["scontrol", "show", "node", "-o", host], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"scontrol show node {host}: {exc}"
    names = [
        word.split("=", 1)[1]
        for line in done.stdout.splitlines()
        for word in line.split()[:1]
        if word.startswith("NodeName=")
    ]
    if done.returncode != 0 or names != [host]:
        found = ", ".join(names[:5]) or (done.stderr or done.stdout).strip()[:200] or "nothing"
        return f"scontrol show node {host} does not name exactly that node (it gave: {found})"
    return None


def _drain(nodes: list) -> None:
    """`scontrol update state=drain` for each node, reason `rlaunch: …`: ops/slurm/rlaunch-healthcheck resumes
    such nodes once they pass again, and leaves nodes drained for any other reason alone."""
    import subprocess

    from launcher import ledger

    failed = []
    for node in nodes:
        refused = _one_slurm_node(node.host)
        if refused:
            failed.append(f"{node.host}: {refused}")
            continue
        reason = ledger.drain_reason(node)
        argv = ["scontrol", "update", f"nodename={node.host}", "state=drain", f"reason={reason}"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            failed.append(f"{node.host}: {exc}")
            continue
        if done.returncode != 0:
            failed.append(f"{node.host}: {(done.stderr or done.stdout).strip()}")
        else:
            from launcher.render import terminal_text

            click.echo(terminal_text(f"drained {node.host}: {reason}"))
    if not nodes:
        click.echo("no node at the strike limit: nothing drained")
    if failed:
        raise Infra("could not drain " + "; ".join(failed))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per node, in a list.")
@click.option("--clear", "clear", metavar="HOST", help="Forgive HOST's strikes (appends a `clear` entry).")
@click.option(
    "--window",
    type=float,
    default=None,
    help="Count strikes of the last this many seconds (default: all since the last clear).",
)
@click.option(
    "--drain",
    "drain_at",
    type=click.IntRange(min=1),
    metavar="N",
    default=None,
    help="Drain in Slurm (scontrol) every node with N or more strikes on node-level evidence (lost, GPU, exit "
    "signal, straggler; not a line the job printed), with an `rlaunch:` reason.",
)
@guarded
def nodes(as_json: bool, clear: str | None, window: float | None, drain_at: int | None) -> None:
    """Nodes in the ledger ($RLAUNCH_HOME/nodes.jsonl): strikes, last cause, last run, goodput.

    \b
    A strike is a failure whose root cause is the node (GPU fault, lost node, crash by a signal, straggler).
    With `health.max_strikes: N`, `up` replaces a node at N strikes by a spare or refuses to start (exit 3).
    Exit: 0 shown (or cleared, drained) · 2 bad input (an unknown node to --clear) · 3 scontrol could not drain
    """
    from launcher import ledger
    from launcher.render import summary_table

    if clear is not None:
        known = {e["host"] for e in ledger.read()}
        if clear not in known:
            raise UserError(f"--clear: no node '{clear}' in {ledger.path()} (see `rlaunch nodes`)")
        ledger.append([ledger.clear(clear)])
        click.echo(f"cleared {clear}: its strikes no longer count")
        return
    if window is not None and window <= 0:
        raise UserError("--window: expected a positive number of seconds")
    summary = ledger.summarize(ledger.read(), window_s=window)
    if drain_at is not None:
        # Only strikes on node-level evidence drain: a strike from a line the job printed could be any text.
        _drain(ledger.over_limit(sorted(summary), summary, drain_at, node_level=True))
        return
    rows = [s.to_json() for s in sorted(summary.values(), key=lambda s: (-s.strikes, s.host))]
    if as_json:
        click.echo(json.dumps(rows))
        return
    if not rows:
        click.echo(f"no nodes in {ledger.path()} yet (runs add them)")
        return
    summary_table(
        [
            {
                **r,
                "last_time": _when(r["last_time"]),
                "ratio": "" if r["ratio"] is None else f"{r['ratio']:.0%}",
                "productive_s": f"{r['productive_s']:.0f}",
                "total_s": f"{r['total_s']:.0f}",
                "last_cause": r["last_cause"] or "",
            }
            for r in rows
        ],
        [
            "host",
            "strikes",
            "strikes_total",
            "last_cause",
            "last_time",
            "last_run",
            "runs",
            "total_s",
            "ratio",
        ],
        title="node ledger",
    )


def goodput_line(data: dict) -> str:
    """One line for people: `goodput 71% of 42.0 s (startup 9.1, detect 1.2, teardown 2.0, restart 7.7; 1 step lost)`."""
    parts = ", ".join(
        f"{k.removesuffix('_s')} {data[k]:.1f}" for k in ("startup_s", "detect_s", "teardown_s", "restart_s")
    )
    lost = data.get("lost_steps", 0)
    return (
        f"goodput {data['ratio']:.0%} of {data['total_s']:.1f} s (productive {data['productive_s']:.1f}; {parts}"
        + (f"; {lost} step{'s' if lost != 1 else ''} lost to rollback" if lost else "")
        + ")"
    )


@main.command()
@click.argument("run_id", required=False)
@click.option(
    "--html", "html_path", required=True, type=click.Path(dir_okay=False), help="Write the page here."
)
@guarded
def report(run_id: str | None, html_path: str) -> None:
    """One self-contained HTML page about a run (default: the latest): attempts per node, loss across restarts,
    goodput, root cause with its log lines, ledger entries. No network, no scripts.

    \b
    Exit: 0 written · 2 bad input (an unknown run, no directory for --html)
    """
    from launcher import runreport

    target = Path(html_path)
    if target.parent and not target.parent.is_dir():
        raise UserError(f"--html: directory {target.parent} does not exist")
    rid = runreport.write(run_id, target)
    click.echo(f"wrote {target} (run {rid})")
    from launcher.cli.app import _status, next_commands

    _status(next_commands(rid))
