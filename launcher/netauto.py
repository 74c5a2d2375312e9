"""`net: auto`: NCCL_SOCKET_IFNAME per node, the interface that routes to the master, found at `up`.

One NCCL_SOCKET_IFNAME for every node breaks when interface names differ (eth0 here, ens5 there: RCCL on the node
without the named interface fails at init, "Bootstrap : no socket interface found", or picks another one). The
route the kernel would use to reach MASTER_ADDR (`ip route get`, launcher/node/netfacts.py) is the interface the
job's bootstrap traffic takes anyway, so it is the one to name. The plan stays pure: this runs before it, through
the transport, and hands the plan an inventory whose nodes carry the value in their own `env:`.
"""

from __future__ import annotations

from collections.abc import Callable

from cluster.inventory import Inventory, NodeSpec
from cluster.transport import Transport
from launcher import nodecall
from launcher.errors import Infra

ROUTE_TAG = '"rlaunch_route"'


def master_address(inv: Inventory) -> str:
    master = inv.master_node
    return master.address or master.host


def find_routes(inv: Inventory, transport: Transport, script: str, timeout: float = 30.0) -> dict[str, dict]:
    """{host: {"dev", "src"} or {"error"}} for every node and spare."""
    addr = master_address(inv)
    nodes = {n.host: n for n in (*inv.nodes, *inv.spares)}
    replies = nodecall.call_all(
        transport,
        list(nodes),
        lambda h: inv.python_for(nodes[h]),
        script,
        ["route", addr],
        timeout=timeout,
        tag=ROUTE_TAG,
    )
    out: dict[str, dict] = {}
    for host in nodes:
        reply = replies.get(host)
        if reply is None or not reply.result.ok:
            out[host] = {"error": reply.why() if reply is not None else "no answer"}
            continue
        # A tagged line that is no JSON object reads as no route: the probe printed something else.
        out[host] = reply.data if reply.data is not None else {"error": "no route in the probe's output"}
    return out


def apply_routes(inv: Inventory, routes: dict[str, dict]) -> Inventory:
    """The inventory with NCCL_SOCKET_IFNAME in each node's env (and `net.socket_ifname` resolved). A node without
    a route is an infrastructure error naming it: starting would only fail later at the job's first collective."""
    failed = {h: r.get("error") for h, r in routes.items() if r.get("error") or not r.get("dev")}
    if failed:
        raise Infra(
            f"net: auto: no route to the master {master_address(inv)} on "
            + "; ".join(f"{h}: {why}" for h, why in sorted(failed.items()))
        )

    def with_ifname(node: NodeSpec) -> NodeSpec:
        dev = str(routes[node.host]["dev"])
        return node.model_copy(update={"env": {**node.env, "NCCL_SOCKET_IFNAME": dev}})

    return inv.model_copy(
        update={
            "nodes": tuple(with_ifname(n) for n in inv.nodes),
            "spares": tuple(with_ifname(n) for n in inv.spares),
            "net": inv.net.model_copy(update={"socket_ifname": None}),
        }
    )


def resolve(
    inv: Inventory, transport: Transport, script: str, say: Callable[[str], None] | None = None
) -> Inventory:
    if inv.net.socket_ifname != "auto":
        return inv
    routes = find_routes(inv, transport, script)
    resolved = apply_routes(inv, routes)
    if say is not None:
        say(
            "net: auto: NCCL_SOCKET_IFNAME "
            + ", ".join(f"{h}={r['dev']}" for h, r in routes.items())
            + f" (the route to {master_address(inv)})"
        )
    return resolved
