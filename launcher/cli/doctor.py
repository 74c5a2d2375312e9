"""CLI verbs that inspect: doctor (node facts + cross-node checks) and data check (LLaMA-Factory datasets)."""

from __future__ import annotations

from importlib import resources

import click

from cluster.inventory import local_only
from launcher.cli.app import UserError, guarded, inventory_options, load, main
from launcher.errors import ExitCode, Infra, JobFailed, raise_for


def facts_script() -> bytes:
    return resources.files("launcher.node").joinpath("facts.py").read_bytes()


@main.command()
@click.argument("inventory", required=False, type=click.Path(dir_okay=False))
@inventory_options
@click.option("--local", is_flag=True, help="Check this machine only, without SSH (Slurm prolog form).")
@click.option("--fast", is_flag=True, help="Only the checks `up` runs as preflight.")
@click.option(
    "--dataset",
    help="A dataset path on the nodes whose sha256 must match everywhere "
    "(default for llamafactory jobs: the yaml's datasets, resolved through dataset_info.json on each node).",
)
@click.option(
    "--timeout", type=float, default=120.0, show_default=True, help="Per-node time limit in seconds."
)
@click.option("--json", "as_json", is_flag=True)
@guarded
def doctor(
    inventory: str | None,
    hostfile: str | None,
    from_slurm: bool,
    local: bool,
    fast: bool,
    dataset: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Node facts (ROCm, GPUs, torch build, RCCL, groups, kernel options, disk, clock) and cross-node checks.

    \b
    Exit: 0 no error (warnings are shown) · 1 a check failed · 2 bad input · 3 nodes unreachable
    """
    from cluster.transport import make_transport
    from launcher.doctor import run_doctor

    if local:  # this machine only (cluster/inventory.py local_only: the same for validate --local)
        inv = local_only(load(inventory, hostfile, from_slurm) if inventory else None)
    elif inventory:
        inv = load(inventory, hostfile, from_slurm)
    else:
        raise UserError("doctor needs an inventory (rlaunch doctor cluster.yaml) or --local")
    from launcher.jobs.lfdata import job_dataset_spec

    # Without --dataset, a llamafactory job's datasets: each node resolves them through its dataset_info.json.
    spec = dataset or job_dataset_spec(inv)
    with make_transport(inv) as transport:
        report = run_doctor(inv, transport, facts_script(), fast=fast, dataset=spec, timeout=timeout)
    if as_json:
        click.echo(report.to_json())
    else:
        _render(report)
    if report.ok:
        return
    if all(c.name == "reachable" for c in report.errors):
        raise Infra("")
    raise JobFailed("")


def _render(report) -> None:
    from rich.table import Table

    from launcher.render import out

    table = Table(header_style="bold", title="node facts (rows in red differ across nodes)")
    table.add_column("fact")
    for host in report.nodes:
        table.add_column(host, overflow="fold", max_width=40)
    for name, cells, differs in report.rows():
        style = "red" if differs else None
        table.add_row(name, *(cells[h] for h in report.nodes), style=style)
    out.print(table)
    for check in report.checks:
        if check.failed:
            word = "[red]FAIL[/]" if check.severity == "error" else "[yellow]WARN[/]"
            where = f" [{', '.join(check.nodes)}]" if check.nodes else ""
            out.print(f"{word} {check.name}{where}: {check.message}", markup=True, highlight=False)
            if check.fix:
                out.print(f"     fix: {check.fix}", markup=False)
    passed = sum(c.status == "pass" for c in report.checks)
    skipped = sum(c.status == "skip" for c in report.checks)
    warned = len(report.failed) - len(report.errors)
    out.print(
        f"doctor: {passed} checks passed, {len(report.errors)} failed, {warned} warned, {skipped} skipped"
    )


@main.group()
def data() -> None:
    """Dataset tools."""


@data.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["alpaca", "sharegpt"]), help="Default: detected.")
@click.option("--json", "as_json", is_flag=True)
@guarded
def data_check(file: str, fmt: str | None, as_json: bool) -> None:
    """Validate a LLaMA-Factory dataset (alpaca or sharegpt; JSON or JSONL): one line per bad record.

    FILE may be a LLaMA-Factory yaml: its `dataset:` names are resolved through dataset_info.json.

    \b
    Exit: 0 all records good · 1 bad records · 2 unreadable, unparseable or empty file
    """
    from launcher.data import check_dataset

    if file.endswith((".yaml", ".yml")):
        raise_for(_check_yaml_datasets(file, as_json))
        return
    report = check_dataset(file, fmt)  # type: ignore[arg-type]
    if as_json:
        click.echo(report.to_json())
    else:
        for line in report.lines():
            click.echo(line)
    raise_for(report.exit_code)


def _check_yaml_datasets(file: str, as_json: bool) -> int:
    """Every dataset a LLaMA-Factory yaml names; the worst exit code of its files."""
    import json
    from pathlib import Path

    from launcher.jobs.lfdata import DatasetSpecError, check_yaml_datasets

    try:
        reports, notes = check_yaml_datasets(file, Path.cwd())
    except DatasetSpecError as exc:
        raise UserError(str(exc)) from None
    if as_json:
        click.echo(
            json.dumps({"files": [json.loads(r.to_json()) for r in reports], "notes": notes}, indent=2)
        )
    else:
        for report in reports:
            for line in report.lines():
                click.echo(line)
        for note in notes:
            click.echo(note)
    return max((r.exit_code for r in reports), default=ExitCode.OK)
