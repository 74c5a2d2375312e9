"""Doctor's network and fabric checks: the route to the master, NCCL_SOCKET_IFNAME, RDMA ports, the RoCE v2 GID
index, IOMMU and ACS. Pure: raw facts (launcher/node/netfacts.py, under each node's `network` key) in, checks out.

The silent killers on ROCm clusters are not errors: RCCL falls back to TCP sockets when libibverbs cannot be opened
or no RDMA port is ACTIVE (ROCm/rccl#1728: "Failed to open libibverbs.so[.1]" then "NET/Socket : Using"), and a job
with one NCCL_SOCKET_IFNAME for nodes whose interfaces are named differently fails at init on the node that has no
such interface. Each check names the nodes side by side, with what each one has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.inventory import Inventory
from launcher.doctor.check import Check, Severity, _check, odd_ones_out
from launcher.doctor.facts import Facts

ROCE_V2 = "RoCE v2"


def network_of(facts: Facts) -> dict[str, Any] | None:
    return facts.probe("network")


def ifname_matches(spec: str, names: list[str]) -> list[str]:
    """The interfaces NCCL_SOCKET_IFNAME selects, as NCCL documents it (docs.nvidia.com/deeplearning/nccl/
    user-guide/docs/env.html#nccl-socket-ifname): a comma-separated list of name prefixes; `^` first excludes
    the listed prefixes instead; `=` first matches exact names instead of prefixes."""
    spec = spec.strip()
    exclude = spec.startswith("^")
    spec = spec.removeprefix("^")
    exact = spec.startswith("=")
    spec = spec.removeprefix("=")
    items = [s for s in spec.split(",") if s]

    def hit(name: str) -> bool:
        return any(name == s if exact else name.startswith(s) for s in items)

    return [n for n in names if hit(n) != exclude]


def socket_ifname_of(facts: Facts) -> str | None:
    env = facts.raw.get("env") if isinstance(facts.raw.get("env"), dict) else {}
    value = env.get("NCCL_SOCKET_IFNAME")
    return str(value) if value else None


def route_check(live: Mapping[str, Facts]) -> Check:
    """The interface that routes to MASTER_ADDR on each node, named side by side."""
    routes: dict[str, str] = {}
    failing: dict[str, str] = {}
    unknown: list[str] = []
    for host, f in live.items():
        route = (network_of(f) or {}).get("route")
        if not isinstance(route, dict):
            continue
        if route.get("unknown"):
            unknown.append(f"{host}: {route['unknown']}")
        elif route.get("error"):
            failing[host] = f"no route to the master {route.get('addr')}: {route['error']}"
        else:
            routes[host] = str(route.get("dev"))
    note = f" (unknown on {'; '.join(unknown)})" if unknown else ""
    if not routes and not failing:
        why = "route to the master not probed (no master address)" if not unknown else f"route unknown{note}"
        return Check("master_route", "error", "skip", why)
    side = ", ".join(f"{h}: {d}" for h, d in routes.items())
    return _check(
        "master_route",
        "error",
        failing,
        f"the master is routed through {side}{note}",
        "add a route to the master's address on that node (or fix master.node / the node's address)",
    )


def socket_ifname_check(live: Mapping[str, Facts], inv: Inventory | None = None) -> Check:
    """NCCL_SOCKET_IFNAME must select an existing interface on every node, and the one that routes to the master;
    with `net: auto` rlaunch sets it per node from the route (launcher/netauto.py)."""
    failing: dict[str, str] = {}
    seen: dict[str, str] = {}
    routes: dict[str, str] = {}
    for host, f in live.items():
        net = network_of(f)
        if not net:
            continue
        route = net.get("route") if isinstance(net.get("route"), dict) else {}
        dev = route.get("dev")
        if dev:
            routes[host] = str(dev)
        spec = socket_ifname_of(f)
        if not spec:
            continue
        seen[host] = spec
        names = sorted((net.get("interfaces") or {}).keys())
        chosen = ifname_matches(spec, names)
        if not chosen:
            failing[host] = (
                f"NCCL_SOCKET_IFNAME={spec} matches no interface (it has {', '.join(names) or 'none'})"
            )
        elif dev and dev not in chosen:
            failing[host] = (
                f"NCCL_SOCKET_IFNAME={spec} selects {', '.join(chosen)}, but the master is routed through {dev}"
            )
    if not seen:
        routed = ", ".join(f"{h}: {d}" for h, d in routes.items())
        return Check(
            "nccl_socket_ifname",
            "error",
            "skip",
            "NCCL_SOCKET_IFNAME not set (RCCL picks an interface itself)"
            + (f"; routes: {routed}" if routed else ""),
        )
    if failing:
        side = ", ".join(f"{h} routes through {d}" for h, d in routes.items())
        fix = (
            "set `net: auto` in cluster.yaml (rlaunch sets NCCL_SOCKET_IFNAME per node from the route), or set it "
            f"per node under nodes[].env ({side})"
        )
        return _check("nccl_socket_ifname", "error", failing, "", fix)
    return Check(
        "nccl_socket_ifname", "error", "pass", "NCCL_SOCKET_IFNAME selects the master's route on every node"
    )


def _active_ports(net: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (str(dev.get("device")), port)
        for dev in net.get("rdma") or []
        for port in dev.get("ports") or []
        if "ACTIVE" in str(port.get("state") or "")
    ]


def rdma_check(live: Mapping[str, Facts], inv: Inventory | None) -> Check:
    """RDMA devices with an ACTIVE port on every node: an error when the inventory expects RDMA
    (`net: {transport: ib}`), a warning when some nodes have it and others do not (RCCL then uses sockets between
    them)."""
    expect = inv is not None and inv.net.transport == "ib"
    active: dict[str, list[str]] = {}
    probed: set[str] = set()
    for host, f in live.items():
        net = network_of(f)
        if net is None:
            continue
        probed.add(host)
        active[host] = [f"{dev}:{port.get('port')}" for dev, port in _active_ports(net)]
    if not probed:
        return Check("rdma_active", "error" if expect else "warning", "skip", "network facts not collected")
    with_rdma = {h for h, ports in active.items() if ports}
    severity: Severity = "error" if expect else "warning"
    if not with_rdma and not expect:
        return Check("rdma_active", "warning", "skip", "no RDMA devices (RCCL uses TCP sockets)")
    failing = {}
    for host in sorted(probed - with_rdma):
        devices = [d for d in (network_of(live[host]) or {}).get("rdma") or []]
        states = ", ".join(
            f"{d.get('device')}:{p.get('port')} {p.get('state')}"
            for d in devices
            for p in d.get("ports") or []
        )
        failing[host] = f"no ACTIVE RDMA port ({states or 'no RDMA devices in /sys/class/infiniband'})"
    side = ", ".join(f"{h}: {' '.join(active[h])}" for h in sorted(with_rdma))
    why = "net.transport is ib" if expect else "the others have RDMA"
    return _check(
        "rdma_active",
        severity,
        {h: f"{w} ({why}; {side})" if side else w for h, w in failing.items()},
        f"an ACTIVE RDMA port on every node ({side})",
        "check `ibv_devinfo` and the cable/switch port on that node; load the RDMA driver (rdma-core, the NIC's "
        "kernel module); without an ACTIVE port RCCL silently falls back to TCP sockets",
    )


def roce_v2_index(net: Mapping[str, Any]) -> tuple[int | None, str]:
    """The GID index RCCL should use on this node: the first RoCE v2 GID holding an IPv4-mapped address
    (::ffff:a.b.c.d, the usual routable one) on an ACTIVE Ethernet port, else the first RoCE v2 GID there."""
    v2: list[tuple[str, dict[str, Any]]] = []
    for dev, port in _active_ports(net):
        if str(port.get("link_layer")) != "Ethernet":
            continue
        for gid in port.get("gids") or []:
            if gid.get("type") == ROCE_V2:
                v2.append((f"{dev}:{port.get('port')}", gid))
    for where, gid in v2:
        if str(gid.get("gid", "")).startswith("0000:0000:0000:0000:0000:ffff:"):
            return int(gid["index"]), f"{where} {gid['gid']}"
    if v2:
        return int(v2[0][1]["index"]), f"{v2[0][0]} {v2[0][1]['gid']}"
    return None, ""


def gid_index_check(live: Mapping[str, Facts]) -> Check:
    """NCCL_IB_GID_INDEX must point at a RoCE v2 GID on every RoCE node; the right index differs between NICs
    (3 on many ConnectX setups, 1 on AMD's AI NIC, 7 in NVIDIA/nccl#1538), so nodes that differ are named."""
    indices: dict[str, int] = {}
    where: dict[str, str] = {}
    failing: dict[str, str] = {}
    for host, f in live.items():
        net = network_of(f)
        if not net:
            continue
        index, at = roce_v2_index(net)
        if index is None:
            continue
        indices[host], where[host] = index, at
        env = f.raw.get("env") if isinstance(f.raw.get("env"), dict) else {}
        configured = env.get("NCCL_IB_GID_INDEX")
        if configured is None or not str(configured).lstrip("-").isdigit() or int(configured) < 0:
            continue
        types = {
            int(g.get("index")): g.get("type")
            for _, p in _active_ports(net)
            for g in p.get("gids") or []
            if str(p.get("link_layer")) == "Ethernet"
        }
        if int(configured) not in types:
            failing[host] = (
                f"NCCL_IB_GID_INDEX={configured} is an empty GID here; RoCE v2 is index {index} ({at})"
            )
        elif types[int(configured)] != ROCE_V2:
            failing[host] = (
                f"NCCL_IB_GID_INDEX={configured} is {types[int(configured)]}; RoCE v2 is index {index} ({at})"
            )
    if not indices:
        return Check("roce_gid_index", "error", "skip", "no RoCE ports")
    if failing:
        return _check(
            "roce_gid_index",
            "error",
            failing,
            "",
            "set NCCL_IB_GID_INDEX per node under nodes[].env to the RoCE v2 index shown (or unset it: RCCL "
            "then picks one itself)",
        )
    majority, odd = odd_ones_out(indices)
    if odd:
        side = ", ".join(f"{h}: {i} ({where[h]})" for h, i in indices.items())
        return Check(
            "roce_gid_index",
            "warning",
            "fail",
            f"the RoCE v2 GID index differs between nodes: {side}",
            tuple(odd),
            "do not set one NCCL_IB_GID_INDEX for all nodes: set it per node under nodes[].env, or leave it unset",
        )
    return Check("roce_gid_index", "error", "pass", f"RoCE v2 GID index {majority} on every RoCE node")


def iommu_acs_check(live: Mapping[str, Facts]) -> Check:
    """Notes, never errors: ACS source validation on PCIe bridges sends GPU-NIC peer traffic through the root
    complex (RCCL's and AMD's cluster networking guides ask for ACS off), and nodes whose IOMMU setup differs."""
    failing: dict[str, str] = {}
    iommu: dict[str, str] = {}
    unknown: list[str] = []
    for host, f in live.items():
        info = (network_of(f) or {}).get("iommu")
        if not isinstance(info, dict):
            continue
        groups = info.get("iommu_groups")
        iommu[host] = "on" if groups else "off" if groups == 0 else "unknown"
        acs = info.get("acs")
        if isinstance(acs, dict) and acs.get("enabled"):
            failing[host] = (
                f"ACS source validation on for {acs['enabled']} of {acs.get('functions')} PCIe functions"
            )
        elif acs is None:
            unknown.append(host)
    _, odd = odd_ones_out({h: v for h, v in iommu.items() if v != "unknown"})
    for host in odd:
        side = ", ".join(f"{h}: {v}" for h, v in iommu.items())
        failing.setdefault(host, f"IOMMU {iommu[host]} here, unlike the others ({side})")
    note = f" (ACS not readable on {', '.join(unknown)}: needs root)" if unknown else ""
    if not iommu:
        return Check("iommu_acs", "warning", "skip", "network facts not collected")
    return _check(
        "iommu_acs",
        "warning",
        failing,
        f"no ACS redirect found; IOMMU the same on every node{note}",
        "disable ACS on the PCIe switches between GPUs and NICs (setpci, or the BIOS option), and use the same "
        "iommu= kernel option on every node",
    )


def net_checks(live: Mapping[str, Facts], inv: Inventory | None) -> list[Check]:
    return [
        route_check(live),
        socket_ifname_check(live, inv),
        rdma_check(live, inv),
        gid_index_check(live),
        iommu_acs_check(live),
    ]
