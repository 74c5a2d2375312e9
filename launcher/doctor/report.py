"""Doctor, step 5: the report (a table of facts side by side, the failed checks) and `run_doctor`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from cluster.inventory import Inventory
from cluster.transport import Transport
from launcher.doctor.checks import Check, checks, fast_preflight_checks, shared_dir_check
from launcher.doctor.facts import TABLE_FACTS, Facts
from launcher.doctor.gather import gather, gather_markers

# ---------------------------------------------------------------------------------------------------------
# The report


@dataclass
class DoctorReport:
    nodes: list[str]
    facts: dict[str, Facts]
    checks: list[Check]

    @property
    def ok(self) -> bool:
        """No error failed. A failed warning (an unknown GPU model, a clock offset) is shown but does not fail the
        doctor: `--help` promises exit 0 when no check failed, and a prolog must not drain a node over a warning."""
        return not self.errors

    @property
    def errors(self) -> list[Check]:
        return [c for c in self.checks if c.failed and c.severity == "error"]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.failed]

    def rows(self) -> list[tuple[str, dict[str, str], bool]]:
        """Facts table: (fact, {host: shown value}, differs across nodes)."""
        out = []
        for name in TABLE_FACTS:
            cells = {h: self.facts[h].get(name).show() for h in self.nodes}
            known = {self.facts[h].get(name).value for h in self.nodes if self.facts[h].get(name).known}
            differs = len(known) > 1 and name not in (
                "hostname",
                "disk_free_gib",
                "mem_available_gib",
                "clock_offset_s",
            )
            out.append((name, cells, differs))
        return out

    def sources(self) -> list[str]:
        """One line per way a node's torch facts were learnt other than a fresh import (issue 23: say so)."""
        by_source: dict[str, list[str]] = {}
        for host in self.nodes:
            source = self.facts[host].get("torch").source
            if source:
                by_source.setdefault(source, []).append(host)
        return [
            f"torch facts {source}: {', '.join(hosts[:5])}"
            + (f" and {len(hosts) - 5} more" if len(hosts) > 5 else "")
            for source, hosts in by_source.items()
        ]

    def to_json(self) -> str:
        return json.dumps(
            {
                "ok": self.ok,
                "nodes": self.nodes,
                "facts": {
                    h: {
                        "error": f.error,
                        "values": {
                            k: {"value": x.value, "reason": x.reason, "source": x.source}
                            for k, x in f.values.items()
                        },
                        "gpus": [asdict(g) for g in f.gpus] if f.gpus is not None else None,
                    }
                    for h, f in self.facts.items()
                },
                "table": [{"fact": n, "values": c, "differs": d} for n, c, d in self.rows()],
                "checks": [asdict(c) for c in self.checks],
            },
            indent=2,
            default=str,
        )


def format_report(report: DoctorReport) -> str:
    """Plain-text rendering (the CLI may use rich instead): table with differing rows marked '!', then failures."""
    nodes = report.nodes
    rows = report.rows()
    width = [2 + max(len("fact"), *(len(n) for n, _, _ in rows))] + [
        min(40, max(len(h), *(len(c[h]) for _, c, _ in rows))) for h in nodes
    ]

    def line(cells: list[str]) -> str:
        return "  ".join(c[:w].ljust(w) for c, w in zip(cells, width, strict=True)).rstrip()

    out = [line(["fact", *nodes])]
    for name, cells, differs in rows:
        out.append(line([("! " if differs else "  ") + name, *(cells[h] for h in nodes)]))
    out.append("")
    for c in report.checks:
        if c.failed:
            out.append(f"FAIL [{c.severity}] {c.name}: {c.message}")
            if c.fix:
                out.append(f"     fix: {c.fix}")
    passed = sum(c.status == "pass" for c in report.checks)
    skipped = sum(c.status == "skip" for c in report.checks)
    out.append(f"{passed} passed, {len(report.failed)} failed, {skipped} skipped")
    out.extend(report.sources())
    return "\n".join(out)


# The module a job kind's ranks really start from, imported on every node (launcher/node/facts.py IMPORT_PROBE):
# rlaunch_lf.py (as `-m llamafactory.launcher`) runs llamafactory.train.tuner.run_exp (LLaMA-Factory v0.9.5 launcher.py).
ENTRY_IMPORTS: dict[str, tuple[str, ...]] = {"llamafactory": ("llamafactory.train.tuner",)}


def doctor_args(
    inv: Inventory,
    token: str,
    *,
    fast: bool = False,
    dataset: str | dict[str, Any] | None = None,
    tool_timeout: float = 10.0,
    torch_timeout: float = 60.0,
    import_timeout: float = 110.0,
) -> Callable[[str], dict[str, Any]]:
    """Per-node probe arguments for an inventory: env, dirs, master listen/connect, dataset, entry imports."""
    master = inv.master_node
    port = inv.master.port if isinstance(inv.master.port, int) else None
    hosts = [n.host for n in inv.nodes]

    def for_host(host: str) -> dict[str, Any]:
        node = next(n for n in inv.nodes if n.host == host)
        args: dict[str, Any] = {
            "node": host,
            "token": token,
            "env": {**inv.env, **node.env},
            "workdir": inv.workdir,
            "fast": fast,
            "tool_timeout": tool_timeout,
            "torch_timeout": torch_timeout,
            "connect_window": min(10.0, tool_timeout),
        }
        if inv.job.kind in ENTRY_IMPORTS and not fast:  # the fast checks never import torch (issue 23)
            args["imports"] = list(ENTRY_IMPORTS[inv.job.kind])
            args["import_timeout"] = import_timeout
        if inv.job.checkpoint_dir and not fast:
            args["ckpt_dir"] = inv.job.checkpoint_dir
        if dataset and not fast:
            args["dataset"] = dataset
        if port is not None:
            args["master_addr"] = master.address or master.host
            args["master_port"] = port
            if host == master.host:
                args["listen"] = True
                args["expect_peers"] = hosts
                # With more nodes than ssh.max_parallel, the probes run in batches: peers of a later batch
                # start after the earlier ones finished, so the master listens through every batch (it stops
                # as soon as every peer connected). Found at 128 simulated nodes (issue 23, bench/scale.py).
                batches = -(-len(hosts) // max(1, inv.ssh.max_parallel))
                args["connect_window"] = (
                    args["connect_window"] * (batches + 1) if batches > 1 else args["connect_window"]
                )
        return args

    return for_host


def run_doctor(
    inv: Inventory,
    transport: Transport,
    script: bytes,
    *,
    fast: bool = False,
    dataset: str | dict[str, Any] | None = None,
    timeout: float = 120.0,
    tool_timeout: float = 10.0,
    torch_timeout: float = 60.0,
) -> DoctorReport:
    """Gather facts from every node, run the checks (the fast subset when `fast`), return the report."""
    hosts = [n.host for n in inv.nodes]
    python_for = {n.host: inv.python_for(n) for n in inv.nodes}
    # The master's probe first: it listens while every other node connects, batches of ssh.max_parallel included.
    order = [inv.master_node.host] + [h for h in hosts if h != inv.master_node.host]
    token = uuid.uuid4().hex  # marks this run's files and master-port handshake
    args = doctor_args(
        inv,
        token,
        fast=fast,
        dataset=dataset,
        tool_timeout=tool_timeout,
        torch_timeout=torch_timeout,
        import_timeout=max(
            tool_timeout, timeout - 10
        ),  # inside the per-node deadline, so the reply still comes
    )
    gathered = gather(transport, order, script, args, timeout, python_for=python_for)
    facts = {h: gathered[h] for h in hosts}
    result = fast_preflight_checks(facts, inv) if fast else checks(facts, inv)
    if not fast and inv.job.checkpoint_dir:
        live = [h for h in hosts if not facts[h].error]
        seen = gather_markers(
            transport, live, script, inv.job.checkpoint_dir, token, timeout, python_for=python_for
        )
        result.append(shared_dir_check({h: facts[h] for h in live}, seen))
    return DoctorReport(nodes=hosts, facts=facts, checks=result)
