"""Spare nodes: a spare takes a failed (or struck-out) node's place in the inventory, and so its node rank.

Swapping in the inventory rather than the plan keeps everything else unchanged: world size, ranks, the master's
position and the checkpoint layout are those of the original node list, so a ZeRO-3 checkpoint loads as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cluster.inventory import Inventory, NodeSpec
from cluster.transport import Transport
from launcher import ledger, nodecall
from launcher import plan as planning
from launcher.errors import LaunchError


def swap(inv: Inventory, failed: str, spare: NodeSpec) -> Inventory:
    """`failed` leaves the job (and is not a spare any more); `spare` takes its position and node rank."""
    nodes = tuple(spare if n.host == failed else n for n in inv.nodes)
    rest = tuple(s for s in inv.spares if s.host != spare.host)
    master = inv.master
    if master.node == failed:
        master = master.model_copy(update={"node": spare.host})
    return inv.model_copy(update={"nodes": nodes, "spares": rest, "master": master})


def admit(inv: Inventory, entries: list[dict], now: float | None = None) -> tuple[Inventory, dict[str, str]]:
    """At `up`: replace every node at health.max_strikes by a spare below it, or refuse (exit 3) naming it.
    Returns the inventory to run and {struck node: spare}."""
    limit = inv.health.max_strikes
    if not limit:
        return inv, {}
    summary = ledger.summarize(entries, window_s=inv.health.strike_window, now=now)
    replaced: dict[str, str] = {}
    for node in ledger.over_limit([n.host for n in inv.nodes], summary, limit):
        usable = [s for s in inv.spares if not ledger.over_limit([s.host], summary, limit)]
        if not usable:
            raise LaunchError(
                "refusing to start: " + ledger.describe_limit(node, limit, inv.health.strike_window)
            )
        inv = swap(inv, node.host, usable[0])
        replaced[node.host] = usable[0].host
    return inv, replaced


def pick(
    inv: Inventory,
    failed: str,
    transport: Transport,
    *,
    run_id: str,
    sources: Mapping[str, bytes],
    head_env: Mapping[str, str],
    say: Callable[[str], None],
    entries: list[dict] | None = None,
    attempt: int = 0,
) -> tuple[Inventory, str] | None:
    """After `failed` ended an attempt: the inventory with the first spare that passes doctor's fast checks
    in its place (and that spare's host), or None when no spare is healthy."""
    from launcher.doctor import run_doctor

    summary = ledger.summarize(entries or [], window_s=inv.health.strike_window)
    for spare in inv.spares:
        if ledger.over_limit([spare.host], summary, inv.health.max_strikes):
            say(f"spare {spare.host} skipped: at health.max_strikes")
            continue
        candidate = swap(inv, failed, spare)
        plan = planning.build_plan(
            candidate, run_id=run_id, attempt=attempt, sources=sources, head_env=head_env
        )
        probe = candidate.model_copy(
            update={"master": candidate.master.model_copy(update={"port": plan.master_port})}
        )
        report = run_doctor(probe, transport, nodecall.node_script("facts.py").encode(), fast=True)
        # A check failing on a survivor is not the spare's fault; one naming the spare (or no node) is.
        bad = [c for c in report.failed if c.severity == "error" and (not c.nodes or spare.host in c.nodes)]
        if not bad:
            return candidate, spare.host
        say(f"spare {spare.host} failed the fast checks: " + "; ".join(f"{c.name}: {c.message}" for c in bad))
    return None
