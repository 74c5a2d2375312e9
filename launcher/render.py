"""Terminal rendering of plans and summaries (rich). Pure presentation: no decisions are made here."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from launcher.plan import Plan

# Errors and progress go to stderr, results to stdout (so `--json` output stays clean).
# Piped into a file or a CI log, rich would assume 80 columns and wrap every table: give it room instead.
_WIDTH = None if sys.stdout.isatty() else 160
out = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)


def plan_table(plan: Plan, show_env: bool = True) -> None:
    # Everything from the inventory is printed as plain Text, never parsed as markup: `[blink red]x[/]` in
    # job.args must show as written (a dry run that hides arguments lies), and `[/]` must not crash rich.
    out.print(
        Text.assemble(
            ("plan", "bold"),
            f" run {plan.run_id} · cluster {plan.cluster} · {plan.job_kind} · {len(plan.nodes)} nodes · "
            f"world size {plan.world_size} · master {plan.master_addr}:{plan.master_port}",
        )
    )
    table = Table(show_lines=False, header_style="bold")
    for col in ("node", "address", "node_rank", "ranks", "nproc", "GPUs", "files"):
        table.add_column(col)
    for n in plan.nodes:
        table.add_row(
            *map(
                Text,
                (
                    n.host,
                    n.address,
                    str(n.node_rank),
                    f"{n.ranks.start}-{n.ranks.stop - 1}",
                    str(n.nproc),
                    ",".join(map(str, n.gpus)) or "cpu",
                    ", ".join(f.path for f in n.files),
                ),
            )
        )
    out.print(table)
    first = plan.nodes[0]
    out.print(Text.assemble(("command", "bold"), f" (node {first.host}): {first.command}"))
    if show_env:
        out.print(Text.assemble(("environment", "bold"), f" (node {first.host}; secrets shown as ***):"))
        for k, v in sorted(first.redacted_env().items()):
            out.print(f"  {k}={v}", markup=False)
    from launcher.restart_policy import Policy

    out.print(Text(Policy.from_config(plan.restart).describe()))
    for note in plan.notes:
        out.print(Text.assemble(("note:", "cyan"), f" {note}"))
    for warning in plan.warnings:
        out.print(Text.assemble(("warning:", "yellow"), f" {warning}"))


def summary_table(rows: list[dict[str, Any]], columns: list[str], title: str | None = None) -> None:
    table = Table(title=title, header_style="bold")
    for col in columns:
        table.add_column(col)
    for row in rows:  # cells hold what nodes and jobs said (ledger reasons, states): shown, never acted on
        table.add_row(*(Text(terminal_text(str(row.get(c, "")))) for c in columns))
    out.print(table)


# C0 controls but tab, DEL and C1 controls (ECMA-48): what a terminal acts on instead of showing. Job output is text
# any job can print: OSC 52 (`ESC ] 52 ; c ; ...`) writes the operator's clipboard, `ESC [2K` + CR overwrites the
# line before it, `ESC [8m` hides what follows (issue 21). Each is shown as a visible escape instead.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F, *range(0x80, 0xA0)]}


def terminal_text(text: str) -> str:
    """Job text made safe to write to a terminal: every control character but tab shown as `\\xNN`."""
    return text.translate(_CONTROLS)


def terminal_lines(text: str) -> str:
    """terminal_text for several lines: the line breaks stay, every other control character is shown."""
    return "\n".join(terminal_text(line) for line in text.split("\n"))


def _esc(text: str) -> str:
    return text.replace("[", r"\[")


def is_tty() -> bool:
    return sys.stdout.isatty()
