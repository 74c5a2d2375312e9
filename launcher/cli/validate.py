"""CLI verb `validate`: staged cluster validation (single node → two ranks → all nodes) with reports."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cluster.inventory import local_only
from launcher.cli.app import UserError, guarded, inventory_options, load, main
from launcher.errors import ExitCode, raise_for


def parse_tolerances(pairs: tuple[str, ...]) -> dict:
    from launcher.validate.baseline import DEFAULT_TOLERANCES

    tolerances = dict(DEFAULT_TOLERANCES)
    for pair in pairs:
        name, _, rel = pair.partition("=")
        if name not in tolerances:
            raise UserError(f"--tolerance {pair}: unknown metric {name!r} ({', '.join(sorted(tolerances))})")
        try:
            tolerances[name] = tolerances[name].__class__(tolerances[name].direction, float(rel), 0.0)
        except ValueError:
            raise UserError(f"--tolerance {pair}: expected METRIC=FRACTION, e.g. busbw_gbps=0.1") from None
    return tolerances


@main.command()
@click.argument("inventory", required=False, type=click.Path(dir_okay=False))
@inventory_options
@click.option(
    "--stage",
    type=click.Choice(["single", "dual", "cluster"]),
    default="single",
    show_default=True,
    help="single: each node alone · dual: 2 ranks on one node · cluster: all nodes. Earlier stages run first.",
)
@click.option("--only", is_flag=True, help="Run only the named stage, not the ones before it.")
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    help="cuda also means ROCm. Default: cuda if nodes list GPUs.",
)
@click.option("--steps", type=int, default=8, show_default=True, help="Training probe steps (at least 4).")
@click.option("--local", is_flag=True, help="This machine only, without SSH (Slurm prolog form).")
@click.option("--budget", type=float, help="Seconds; checks not started in time are skipped ('budget').")
@click.option("--ckpt-dir", help="Checkpoints for fault injection; must be on storage every node sees.")
@click.option(
    "--no-fault",
    is_flag=True,
    help="Skip kill + resume (fault injection): a quicker check, e.g. against a baseline in a Slurm prolog.",
)
@click.option("--node", "dual_node", help="The node for stage dual (default: the first node).")
@click.option("--min-busbw", type=float, help="All-reduce bus bandwidth threshold in GB/s.")
@click.option(
    "--save-baseline", type=click.Path(dir_okay=False), help="Write this run's metrics as a baseline."
)
@click.option("--baseline", type=click.Path(dir_okay=False), help="Flag regressions against this baseline.")
@click.option("--tolerance", multiple=True, help="METRIC=FRACTION, e.g. busbw_gbps=0.1 (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--prom", type=click.Path(dir_okay=False), help="Write a Prometheus textfile here.")
@click.option("--stall-timeout", type=float, default=120.0, hidden=True)
@click.option("--inject", hidden=True, help="Fault the validator itself (wrong-checkpoint), for tests.")
@guarded
def validate(
    inventory: str | None,
    hostfile: str | None,
    from_slurm: bool,
    stage: str,
    only: bool,
    device: str | None,
    steps: int,
    local: bool,
    budget: float | None,
    ckpt_dir: str | None,
    no_fault: bool,
    dual_node: str | None,
    min_busbw: float | None,
    save_baseline: str | None,
    baseline: str | None,
    tolerance: tuple[str, ...],
    as_json: bool,
    junit: str | None,
    prom: str | None,
    stall_timeout: float,
    inject: str | None,
) -> None:
    """Validate nodes with real workloads: environment, training probe, all-reduce, ZeRO-3, kill + resume.

    \b
    Exit: 0 every check passed (skips allowed) · 1 a check failed · 2 bad input · 3 nodes unreachable
    """
    from launcher.errors import BadInput
    from launcher.render import err, out
    from launcher.validate import baseline as baselines
    from launcher.validate import report, stages

    if inventory:
        inv = load(inventory, hostfile, from_slurm)
    elif not local:
        raise UserError("validate needs an inventory (rlaunch validate cluster.yaml) or --local")
    else:
        inv = None
    if local:
        if stage == "cluster":
            raise UserError("--local runs the node-local stages only (single, dual), not cluster")
        inv = local_only(inv)
    assert inv is not None
    if budget is not None and budget <= 0:
        raise UserError(f"--budget {budget:g}: must be positive")
    reference = None
    if baseline:
        try:
            reference = baselines.load_baseline(Path(baseline))
        except (OSError, ValueError) as exc:
            raise UserError(f"--baseline: {exc}") from None

    def progress(text: str) -> None:
        err.print(text, markup=False, highlight=False)

    opts = stages.Options(
        device=device or ("cuda" if any(n.gpus for n in inv.nodes) else "cpu"),
        steps=steps,
        only=only,
        ckpt_dir=ckpt_dir,
        budget=budget,
        inject=inject,
        fault=not no_fault,
        min_busbw=min_busbw,
        stall_timeout=stall_timeout,
        dual_node=dual_node,
        baseline=reference,
        tolerances=parse_tolerances(tolerance),
        progress=progress,
    )
    try:
        run = stages.run_validation(inv, stage, opts)
    except stages.ValidateInputError as exc:
        raise UserError(str(exc)) from None
    except BadInput as exc:  # e.g. another run holds these nodes
        raise UserError(str(exc)) from None

    for warning in run.warnings:
        err.print(f"warning: {warning}", markup=False, highlight=False)
    if as_json:
        click.echo(json.dumps(report.to_json(run.stages)))
    else:
        out.print(report.render_table(run.stages))
    if junit:
        report.write_junit(Path(junit), run.stages)
    if prom:
        report.write_prometheus(Path(prom), run.stages)
    if save_baseline:
        if run.exit_code == ExitCode.OK:
            baselines.save_baseline(Path(save_baseline), run.metrics)
            err.print(f"baseline: {len(run.metrics)} metrics written to {save_baseline}", markup=False)
        else:
            err.print("baseline: not written, the run did not pass", markup=False)
    if run.unreachable:
        err.print(f"unreachable: {', '.join(run.unreachable)}", markup=False, highlight=False)
    raise_for(run.exit_code)  # unreachable nodes: Infra; a failed check: JobFailed
