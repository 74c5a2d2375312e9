"""The `rlaunch` command group and what every verb shares: loading inputs, failing with one line and an exit
code (`guarded`), examples in --help. Verbs are thin shells: parse arguments → call one function → render.

Exit codes: 0 success · 1 job or check failed · 2 bad input · 3 infrastructure (unreachable node, SSH, preflight)
· 130 interrupted.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from cluster.inventory import Inventory, InventoryError, Overrides, load_inventory
from cluster.transport import TransportError
from launcher import __version__
from launcher.errors import BadInput, Infra, Interrupted, RlaunchError

F = TypeVar("F", bound=Callable[..., Any])


class UserError(BadInput):
    """Bad input discovered outside the inventory loader (exit 2)."""


def _leave(error: RlaunchError) -> NoReturn:
    """Print the error's line (none when the verb has shown its verdict already) and exit with its code."""
    from launcher.render import err

    if str(error):
        err.print(f"[bold red]rlaunch: error:[/] {_escape(str(error))}", markup=True, highlight=False)
    sys.exit(error.code)


def _status(text: str) -> None:
    click.echo(click.style("rlaunch: ", bold=True) + text, err=True)


def next_commands(run_id: str, active: bool = False) -> str:
    """What to type next about a run: every run id the CLI prints comes with these (a running run: watch or
    stop it; an ended one: read it)."""
    if active:
        return (
            f"next: rlaunch logs {run_id} -f · rlaunch status {run_id} --watch · rlaunch attach {run_id} · "
            f"rlaunch down {run_id}"
        )
    return (
        f"next: rlaunch logs {run_id} --tail 50 · rlaunch logs {run_id} --since 10m · "
        f"rlaunch report {run_id} --html {run_id}.html"
    )


def guarded(fn: F) -> F:
    """Turn every expected failure into one clear line and a documented exit code; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        # The one place where failures become exit codes: every verb raises a typed error (launcher/errors.py, its
        # code by type), the layers below `launcher/` theirs, mapped here; a verb never calls sys.exit itself.
        except RlaunchError as exc:
            _leave(exc)
        except (InventoryError, FileNotFoundError) as exc:
            _leave(BadInput(str(exc)))
        except TransportError as exc:
            _leave(Infra(str(exc)))
        except KeyboardInterrupt:
            _leave(Interrupted("interrupted"))
        except (click.ClickException, click.exceptions.Abort, click.exceptions.Exit, SystemExit):
            raise
        except Exception as exc:  # a bug: keep the traceback out of the user's face, but keep it
            from launcher.records import write_crash_report

            crash = write_crash_report(traceback.format_exc())
            _leave(Infra(f"internal error: {type(exc).__name__}: {exc} (details in {crash})"))

    return wrapper  # type: ignore[return-value]


def _escape(text: str) -> str:
    return text.replace("[", r"\[")


def inventory_options(fn: F) -> F:
    fn = click.option(
        "--hostfile", type=click.Path(dir_okay=False), help="DeepSpeed/MPI hostfile: `host slots=N` lines."
    )(fn)
    fn = click.option(
        "--from-slurm", is_flag=True, help="Nodes from the current Slurm allocation (SLURM_JOB_NODELIST)."
    )(fn)
    return fn


def override_options(fn: F) -> F:
    """`--env K=V`, `--nproc-per-node N` and `-- ARGS...` (replacing job.args), as torchrun and `sky launch`
    take them; applied once, to the inventory (cluster/inventory.py `Overrides`)."""
    fn = click.argument("job_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS...]")(fn)
    fn = click.option(
        "--nproc-per-node",
        type=click.IntRange(1, 256),
        default=None,
        help="Ranks per node (job.nproc_per_node).",
    )(fn)
    fn = click.option(
        "--env",
        "env_items",
        multiple=True,
        metavar="K=V",
        help="Set an environment variable on every node (repeatable; over `env:`). Secrets are refused: "
        "list them under `secrets:`.",
    )(fn)
    return fn


def overrides_of(
    env_items: tuple[str, ...], nproc_per_node: int | None, job_args: tuple[str, ...]
) -> Overrides:
    """The command line's overrides; `-- ARGS` replaces job.args when at least one is given."""
    return Overrides(
        env=Overrides.parse_env(env_items), nproc_per_node=nproc_per_node, args=tuple(job_args) or None
    )


def load(path: str, hostfile: str | None, from_slurm: bool, overrides: Overrides | None = None) -> Inventory:
    return load_inventory(
        path, hostfile=hostfile, from_slurm=dict(os.environ) if from_slurm else None, overrides=overrides
    )


EPILOG = """\b
Examples:
  rlaunch init cluster.yaml            write a commented starter inventory
  rlaunch plan cluster.yaml            show what every node will receive and run (dry run)
  rlaunch plan cluster.yaml --json     the same, as one JSON object
  rlaunch up cluster.yaml              preflight, push, start, stream logs, watch health
  rlaunch up cluster.yaml --detach     start and return; re-attach with `logs -f` / `status`
  rlaunch status                       state of the latest run (or: rlaunch status RUN_ID)
  rlaunch logs -f --node node02        follow one node's log
  rlaunch logs classify train.log      flag RCCL/HIP/NaN/OOM lines in any log
  rlaunch down                         stop the latest run everywhere, nothing left behind
  rlaunch stop RUN --save              ask every rank to save and exit, then check the save (docs/preemption.md)
  rlaunch doctor cluster.yaml          node facts and cross-node consistency checks
  rlaunch nodes                        strikes per node (failures caused by the node); --clear HOST forgives
  rlaunch report RUN --html run.html   one page: attempts per node, loss across restarts, goodput, root cause
  rlaunch validate cluster.yaml --stage dual --device cpu

\b
Exit codes: 0 ok · 1 job/check failed · 2 bad input · 3 infrastructure (unreachable node, SSH) · 130 interrupted
"""


@click.group(
    epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110}
)
@click.version_option(__version__, prog_name="rlaunch")
def main() -> None:
    """Multi-node training launcher for AMD ROCm clusters (torchrun, DeepSpeed ZeRO-3, LLaMA-Factory)."""


# --------------------------------------------------------------------------------------------------------
@main.command()
@click.argument("path", default="cluster.yaml", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@guarded
def init(path: str, force: bool) -> None:
    """Write a commented starter cluster.yaml.

    \b
    Exit: 0 written · 2 bad input (the file exists: --force replaces it)
    """
    import os
    import tempfile

    from launcher import templates

    target = Path(path)
    if os.path.lexists(target) and not force:  # lexists: a dangling symlink is "there" too (issue 21)
        raise UserError(f"{path} already exists (use --force to overwrite)")
    # A fresh file renamed over the name: a symlink at `path` is replaced, never written through.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            f.write(templates.read("cluster_starter.yaml"))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    click.echo(f"wrote {path}: edit nodes and job, then `rlaunch plan {path}`")


# --------------------------------------------------------------------------------------------------------
@main.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@inventory_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object.")
@click.option("--run-id", default=None, help="Plan for this run id (default: a new one).")
@override_options
@guarded
def plan(
    inventory: str,
    hostfile: str | None,
    from_slurm: bool,
    as_json: bool,
    run_id: str | None,
    env_items: tuple[str, ...],
    nproc_per_node: int | None,
    job_args: tuple[str, ...],
) -> None:
    """Dry run: what every node will receive and run, and every ROCm mapping applied.

    \b
    Takes `up`'s overrides: rlaunch plan cluster.yaml --env K=V --nproc-per-node 2 -- --steps 10
    Exit: 0 planned · 2 bad input (the inventory, an override, a file it names)
    """
    from launcher import plan as planning
    from launcher import records, render

    overrides = overrides_of(env_items, nproc_per_node, job_args)
    inv = load(inventory, hostfile, from_slurm, overrides)
    result = planning.build_plan(
        inv, run_id=run_id or records.new_run_id(), sources=planning.load_sources(inv), head_env=os.environ
    )
    if as_json:
        click.echo(json.dumps({**result.to_json(), "overrides": overrides.describe()}, indent=1))
    else:
        for line in overrides.describe():
            click.echo(f"override: {line}")
        render.plan_table(result)
