"""CLI verbs for ad-hoc work on every node: exec (pdsh / `sky exec`), gc (old run directories), sync (a directory)."""

from __future__ import annotations

import json

import click

from launcher.cli.app import guarded, inventory_options, load, main
from launcher.errors import Infra, raise_for


@main.command(name="exec")
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS...]")
@inventory_options
@click.option(
    "--nodes", "-w", default=None, help="Only these nodes: node01,node02 or node[01-04] (pdsh's -w)."
)
@click.option(
    "--collate",
    "-c",
    is_flag=True,
    help="Identical output once, under the nodes that printed it (dshbak -c).",
)
@click.option("--timeout", "-t", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds per node; the command is then ended on the node.")  # fmt: skip
@click.option(
    "--shell", is_flag=True, help="Run CMD as one `sh -c` string on the node (pipes, globs, $VARS)."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object: per node exit code, stdout, stderr.")
@guarded
def exec_(
    inventory: str,
    command: tuple[str, ...],
    hostfile: str | None,
    from_slurm: bool,
    nodes: str | None,
    collate: bool,
    timeout: float,
    shell: bool,
    as_json: bool,
) -> None:
    """Run a command on every node at once, in parallel; output prefixed by node.

    \b
    rlaunch exec cluster.yaml -- rocm-smi --showuse
    rlaunch exec cluster.yaml --nodes 'node[01-02]' --collate -- python -c 'import torch; print(torch.__version__)'
    rlaunch exec cluster.yaml --shell -- 'df -h /scratch | tail -1'
    The words after `--` are passed as argv, quoted: nothing is split or expanded by a shell unless --shell.
    Options go before `--`.
    Exit: 0 every node exited 0 · 1 a node failed or timed out · 2 bad input · 3 a node unreachable
    """
    from launcher import fleet
    from launcher.render import terminal_lines, terminal_text

    inv = load(inventory, hostfile, from_slurm)
    group = fleet.exec_all(inv, command, nodes=nodes, shell=shell, timeout=timeout)
    code = fleet.exec_code(group)
    if as_json:
        click.echo(json.dumps(fleet.exec_json(group)))
        raise_for(code)
        return
    if collate:
        for hosts, text in fleet.collate(group):
            click.echo("-" * 16 + f"\n{terminal_text(hosts)}\n" + "-" * 16)
            click.echo(terminal_lines(text), nl=not text.endswith("\n") and bool(text))
    else:
        for host, r in group.results.items():
            for line in r.stdout.splitlines():
                click.echo(f"{host}: {terminal_text(line)}")
            for line in r.stderr.splitlines():
                click.echo(f"{host}: {terminal_text(line)}", err=True)
    for host, r in group.results.items():
        if not r.ok:
            why = terminal_text(r.error or f"exit {r.exit_code}")
            click.echo(click.style(f"{host}: ", fg="red") + why, err=True)
    click.echo(click.style("rlaunch: ", bold=True) + terminal_text(fleet.summary_line(group)), err=True)
    raise_for(code)  # a node unreachable: Infra; a node failed or timed out: JobFailed


@main.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@inventory_options
@click.option("--keep", type=click.IntRange(min=0), default=None,
              help="Finished runs to keep per node (default: the inventory's keep_runs, 5).")  # fmt: skip
@click.option("--nodes", "-w", default=None, help="Only these nodes (as for exec).")
@click.option("--dry-run", "-n", is_flag=True, help="Say what would go; remove nothing.")
@click.option("--json", "as_json", is_flag=True)
@guarded
def gc(
    inventory: str,
    hostfile: str | None,
    from_slurm: bool,
    keep: int | None,
    nodes: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Remove older finished runs' directories from the nodes' workdir (`up` does it with `keep_runs`).

    \b
    Never a running run (its node guard holds a lock), never anything outside the workdir or not named like a
    run id. Exit: 0 done · 2 bad input · 3 a node unreachable or a directory could not be removed
    """
    from launcher import fleet
    from launcher.render import terminal_text

    inv = load(inventory, hostfile, from_slurm)
    keep = keep if keep is not None else (inv.keep_runs if inv.keep_runs is not None else 5)
    done = fleet.gc_all(inv, keep=keep, dry_run=dry_run, nodes=nodes)
    if as_json:
        click.echo(json.dumps({h: vars(g) for h, g in done.items()}))
    else:
        verb = "would remove" if dry_run else "removed"
        for host, g in done.items():
            line = f"{host}: {verb} {len(g.removed)} ({g.freed_bytes / 1e6:.1f} MB), kept {len(g.kept)}"
            if g.running:
                line += f", running {', '.join(g.running)}"
            click.echo(terminal_text(line))  # run names and errors are the node's words
            for error in g.errors:
                click.echo(click.style(f"{host}: ", fg="red") + terminal_text(error), err=True)
    if any(g.errors for g in done.values()):
        raise Infra("")


@main.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@inventory_options
@click.option("--nodes", "-w", default=None, help="Only these nodes (as for exec).")
@click.option("--json", "as_json", is_flag=True)
@guarded
def sync(inventory: str, hostfile: str | None, from_slurm: bool, nodes: str | None, as_json: bool) -> None:
    """Push the inventory's `sync:` directory to every node now (`up` does it before starting the job).

    \b
    Only files that changed are sent (sha256); an unchanged tree costs one round trip per node.
    Exit: 0 done · 2 bad input (no `sync:` key, src not a directory) · 3 a node could not take it
    """
    from cluster.transport import make_transport
    from launcher import fleet
    from launcher import sync as syncing
    from launcher.errors import BadInput
    from launcher.render import terminal_text

    inv = load(inventory, hostfile, from_slurm)
    if inv.sync is None:
        raise BadInput(f"{inventory}: no `sync:` key (e.g. `sync: {{src: ., exclude: [data/]}}`)")
    hosts = fleet.select_nodes(inv, nodes)
    with make_transport(inv) as transport:
        result = syncing.push_all(inv, transport, hosts)
    if as_json:
        click.echo(
            json.dumps(
                {"dest": result.dest, "files": result.files, "bytes": result.total_bytes,
                 "nodes": {h: vars(n) for h, n in result.nodes.items()}}
            )
        )  # fmt: skip
    else:
        click.echo(f"{result.files} files, {result.total_bytes / 1e6:.1f} MB → {result.dest}")
        for host, n in result.nodes.items():
            if n.error:
                click.echo(click.style(f"{host}: ", fg="red") + terminal_text(n.error), err=True)
            else:
                click.echo(
                    f"{host}: sent {n.sent_files} files ({n.sent_bytes / 1e6:.2f} MB), deleted {n.deleted}"
                )
    if any(n.error for n in result.nodes.values()):
        raise Infra("")
