"""Network and fabric preflight on plain data: RCCL INIT lines from public threads (tests/fixtures/netinit/), fake
sysfs trees for the RDMA readers (launcher/node/netfacts.py), doctor's net checks, `net: auto` and the watcher's
NET/Socket rule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cluster.inventory import InventoryError, from_mapping, load_inventory
from launcher import netauto
from launcher.doctor.facts import Facts
from launcher.doctor.net import (
    gid_index_check,
    ifname_matches,
    iommu_acs_check,
    rdma_check,
    route_check,
    socket_ifname_check,
)
from launcher.errors import Infra
from launcher.health.netinit import transport_of_line
from launcher.health.watch import Watcher
from launcher.plan import build_plan, load_sources

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures" / "netinit"
NODE = HERE.parent / "launcher" / "node"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, NODE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


netfacts = _load("netfacts")
edge = _load("edge")


def fixture_lines() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(FIXTURES.glob("*.log")):
        lines = path.read_text().splitlines()
        assert lines[0].startswith("# source: ") and "https://" in lines[0], path.name
        for raw in lines[1:]:
            expect, _, line = raw.partition("\t")
            out.append((path.name, expect, line))
    return out


@pytest.mark.parametrize(("name", "expect", "line"), fixture_lines())
def test_rccl_init_lines_name_their_transport_on_head_and_node_alike(
    name: str, expect: str, line: str
) -> None:
    assert transport_of_line(line) == (None if expect == "-" else expect), f"{name}: {line}"
    assert bool(edge.NET_INIT.search(line)) == (expect != "-"), f"{name}: the node's forwarding disagrees"


def test_the_watcher_fails_the_node_whose_ranks_say_net_socket_when_rdma_is_expected() -> None:
    ib = "e05r3n09:929:929 [2] NCCL INFO NET/IB : Using [0]mlx5_3:1/IB [1]mlx5_2:1/IB ; OOB ib0:11.5.5.50<0>"
    sock = "z292:58192:58200 [2] NCCL INFO NET/Socket : Using [0]eno2np1:192.168.2.194<0>"
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=60, expect_net="ib")
    assert w.observe_line(1.0, "node1", 0, ib) is None
    event = w.observe_line(1.2, "node2", 3, sock)
    assert event is not None and event.is_fatal and event.node == "node2" and event.category == "config"
    assert "RCCL on rank 3 on node2 uses TCP sockets (NET/Socket), but net.transport is ib" in event.text
    assert w.observe_line(1.3, "node2", 2, sock) is None  # once per node
    for node in ("node1", "node2"):
        w.observe_exit(2.0, node, 1)
    verdict = w.verdict()
    assert not verdict.ok and verdict.root_cause.node == "node2" and "NET/Socket" in verdict.summary
    # Without the expectation sockets are a choice, not a failure.
    plain = Watcher({"node1": [0]}, stall_timeout=60)
    assert plain.observe_line(1.0, "node1", 0, sock) is None


def test_socket_ifname_prefix_exclude_and_exact_rules() -> None:
    names = ["eth0", "eth1", "ens5", "lo", "docker0"]
    assert ifname_matches("eth", names) == ["eth0", "eth1"]
    assert ifname_matches("^docker,lo", names) == ["eth0", "eth1", "ens5"]
    assert ifname_matches("=eth1", names) == ["eth1"]
    assert ifname_matches("=eth", names) == []
    assert ifname_matches("ens,eth0", names) == ["eth0", "ens5"]


def fake_port(root: Path, dev: str, port: int, state: str, link: str, gids: list[tuple[str, str]]) -> None:
    """A /sys/class/infiniband/<dev>/ports/<port> tree as the kernel lays it out (drivers/infiniband/core/sysfs.c)."""
    base = root / dev / "ports" / str(port)
    (base / "gids").mkdir(parents=True)
    (base / "gid_attrs" / "types").mkdir(parents=True)
    (base / "gid_attrs" / "ndevs").mkdir(parents=True)
    (base / "state").write_text(state + "\n")
    (base / "link_layer").write_text(link + "\n")
    (base / "rate").write_text("400 Gb/sec (4X NDR)\n")
    for i, (gid, kind) in enumerate([*gids, (netfacts.ZERO_GID, "")]):
        (base / "gids" / str(i)).write_text(gid + "\n")
        if kind:
            (base / "gid_attrs" / "types" / str(i)).write_text(kind + "\n")
            (base / "gid_attrs" / "ndevs" / str(i)).write_text("ens5\n")


LINK_LOCAL = "fe80:0000:0000:0000:c025:a1ff:fe31:2e81"
V4 = "0000:0000:0000:0000:0000:ffff:0a9c:8184"  # ::ffff:10.156.129.132 (NVIDIA/nccl#1538's show_gids)


def test_rdma_readers_on_fake_sysfs(tmp_path: Path) -> None:
    ib = tmp_path / "infiniband"
    fake_port(ib, "mlx5_0", 1, "4: ACTIVE", "Ethernet",
              [(LINK_LOCAL, "IB/RoCE v1"), (LINK_LOCAL, "RoCE v2"), (V4, "IB/RoCE v1"), (V4, "RoCE v2")])  # fmt: skip
    fake_port(ib, "mlx5_1", 1, "1: DOWN", "Ethernet", [(LINK_LOCAL, "RoCE v2")])
    devices = netfacts.rdma_devices(str(ib))
    assert [d["device"] for d in devices] == ["mlx5_0", "mlx5_1"]
    port = devices[0]["ports"][0]
    assert port["state"] == "4: ACTIVE" and port["link_layer"] == "Ethernet"
    assert [(g["index"], g["type"]) for g in port["gids"]] == [
        (0, "IB/RoCE v1"),
        (1, "RoCE v2"),
        (2, "IB/RoCE v1"),
        (3, "RoCE v2"),
    ]
    assert netfacts.rdma_devices(str(tmp_path / "none")) == []
    net = tmp_path / "net"
    (net / "ens5").mkdir(parents=True)
    (net / "ens5" / "operstate").write_text("up\n")
    assert netfacts.interfaces(str(net))["ens5"]["state"] == "up"


def node(
    host: str, *, route: str | None = "eth0", ifaces=("eth0", "lo"), env=None, rdma=None, iommu=None
) -> Facts:
    network = {
        "route": {"addr": "10.0.0.1", "dev": route}
        if route
        else {"addr": "10.0.0.1", "error": "unreachable"},
        "interfaces": {n: {"state": "up", "ipv4": []} for n in ifaces},
        "rdma": rdma or [],
        "iommu": iommu or {"iommus": [], "iommu_groups": 12, "acs": None},
    }
    return Facts(host=host, raw={"network": network, "env": env or {}})


def roce(index_v4: int, state: str = "4: ACTIVE") -> list[dict]:
    gids = [
        {"index": i, "gid": LINK_LOCAL, "type": "RoCE v2" if i % 2 else "IB/RoCE v1"}
        for i in range(index_v4 - 1)
    ]
    gids += [
        {"index": index_v4 - 1, "gid": V4, "type": "IB/RoCE v1"},
        {"index": index_v4, "gid": V4, "type": "RoCE v2"},
    ]
    return [
        {"device": "rdma0", "ports": [{"port": 1, "state": state, "link_layer": "Ethernet", "gids": gids}]}
    ]


def inv(**over):
    data = {"nodes": [{"host": "a"}, {"host": "b"}], "job": {"kind": "command", "command": ["true"]}, **over}
    return from_mapping(data)


def test_routes_and_socket_ifname_are_named_side_by_side() -> None:
    live = {
        "a": node("a", env={"NCCL_SOCKET_IFNAME": "eth0"}),
        "b": node("b", route="ens5", ifaces=("ens5", "lo"), env={"NCCL_SOCKET_IFNAME": "eth0"}),
    }
    route = route_check(live)
    assert route.status == "pass" and route.message == "the master is routed through a: eth0, b: ens5"
    check = socket_ifname_check(live)
    assert check.failed and check.nodes == ("b",)
    assert "b: NCCL_SOCKET_IFNAME=eth0 matches no interface (it has ens5, lo)" in check.message
    assert "net: auto" in check.fix and "a routes through eth0, b routes through ens5" in check.fix
    wrong_route = {"a": node("a", ifaces=("eth0", "eth1", "lo"), env={"NCCL_SOCKET_IFNAME": "eth1"})}
    assert "selects eth1, but the master is routed through eth0" in socket_ifname_check(wrong_route).message
    unset = socket_ifname_check({"a": node("a")})
    assert unset.status == "skip" and "routes: a: eth0" in unset.message
    lost = route_check({"a": node("a"), "b": node("b", route=None)})
    assert lost.failed and lost.nodes == ("b",) and "no route to the master 10.0.0.1" in lost.message


def test_rdma_expected_needs_an_active_port_on_every_node() -> None:
    live = {"a": node("a", rdma=roce(3)), "b": node("b", rdma=roce(3, state="1: DOWN"))}
    expected = rdma_check(live, inv(net={"transport": "ib"}))
    assert expected.failed and expected.severity == "error" and expected.nodes == ("b",)
    assert "b: no ACTIVE RDMA port (rdma0:1 1: DOWN) (net.transport is ib; a: rdma0:1)" in expected.message
    mixed = rdma_check(live, inv())
    assert mixed.failed and mixed.severity == "warning"
    none = rdma_check({"a": node("a"), "b": node("b")}, inv())
    assert none.status == "skip"
    assert rdma_check({"a": node("a")}, inv(net={"transport": "ib"})).failed


def test_roce_v2_gid_index_differs_and_a_wrong_setting_is_named() -> None:
    live = {"a": node("a", rdma=roce(3)), "b": node("b", rdma=roce(1))}
    differ = gid_index_check(live)
    assert differ.failed and differ.severity == "warning" and differ.nodes in (("a",), ("b",))
    assert "a: 3 (rdma0:1 " in differ.message and "b: 1 (rdma0:1 " in differ.message
    wrong = gid_index_check({"a": node("a", rdma=roce(3), env={"NCCL_IB_GID_INDEX": "2"})})
    assert wrong.failed and wrong.severity == "error"
    assert "NCCL_IB_GID_INDEX=2 is IB/RoCE v1; RoCE v2 is index 3" in wrong.message
    assert gid_index_check({"a": node("a", rdma=roce(3), env={"NCCL_IB_GID_INDEX": "3"})}).status == "pass"
    assert gid_index_check({"a": node("a")}).status == "skip"


def test_acs_and_iommu_notes_never_errors() -> None:
    live = {
        "a": node(
            "a", iommu={"iommus": ["ivhd0"], "iommu_groups": 40, "acs": {"functions": 12, "enabled": 4}}
        ),
        "b": node("b", iommu={"iommus": [], "iommu_groups": 0, "acs": {"functions": 12, "enabled": 0}}),
        "c": node(
            "c", iommu={"iommus": ["ivhd0"], "iommu_groups": 40, "acs": {"functions": 12, "enabled": 0}}
        ),
    }
    check = iommu_acs_check(live)
    assert check.failed and check.severity == "warning"
    assert "a: ACS source validation on for 4 of 12 PCIe functions" in check.message
    assert "b: IOMMU off here, unlike the others (a: on, b: off, c: on)" in check.message


def test_net_auto_puts_each_nodes_route_in_its_env_and_names_a_node_without_one() -> None:
    auto = inv(net="auto", spares=[{"host": "s"}])
    assert auto.net.socket_ifname == "auto"
    resolved = netauto.apply_routes(auto, {"a": {"dev": "eth0"}, "b": {"dev": "ens5"}, "s": {"dev": "eno1"}})
    assert [n.env["NCCL_SOCKET_IFNAME"] for n in resolved.nodes] == ["eth0", "ens5"]
    assert resolved.spares[0].env["NCCL_SOCKET_IFNAME"] == "eno1" and resolved.net.socket_ifname is None
    plan = build_plan(resolved, run_id="r1", sources=load_sources(resolved), head_env={})
    assert [n.env["NCCL_SOCKET_IFNAME"] for n in plan.nodes] == ["eth0", "ens5"]
    with pytest.raises(Infra, match="net: auto: no route to the master a on b: Network is unreachable"):
        netauto.apply_routes(
            auto, {"a": {"dev": "eth0"}, "b": {"error": "Network is unreachable"}, "s": {"dev": "x"}}
        )
    note = build_plan(auto, run_id="r1", sources=load_sources(auto), head_env={}).notes
    assert any(n.startswith("net: auto → NCCL_SOCKET_IFNAME per node") for n in note)


def test_net_transport_ib_turns_on_rccl_init_lines() -> None:
    ib = inv(net={"transport": "ib"})
    plan = build_plan(ib, run_id="r1", sources=load_sources(ib), head_env={})
    env = plan.nodes[0].env
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT"
    assert plan.to_json()["net"]["transport"] == "ib"
    own = inv(net={"transport": "ib"}, env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"})
    assert build_plan(own, run_id="r1", sources=load_sources(own), head_env={}).nodes[0].env[
        "NCCL_DEBUG_SUBSYS"
    ] == ("INIT,NET")
    plain = build_plan(inv(), run_id="r1", sources=load_sources(inv()), head_env={})
    assert plain.nodes[0].env["NCCL_DEBUG"] == "WARN" and "NCCL_DEBUG_SUBSYS" not in plain.nodes[0].env


def test_the_inventory_names_bad_net_keys(tmp_path: Path) -> None:
    base = 'nodes: [{host: a}]\njob: {kind: command, command: ["true"]}\n'
    cases = {
        "net: fast\n": "net: expected `auto` or a mapping",
        "net: {transport: rdma}\n": "net.transport",
        "net: auto\nenv: {NCCL_SOCKET_IFNAME: eth0}\n": "env.NCCL_SOCKET_IFNAME: NCCL_SOCKET_IFNAME is set here",
    }
    for text, expected in cases.items():
        path = tmp_path / "c.yaml"
        path.write_text(base + text)
        with pytest.raises(InventoryError) as exc:
            load_inventory(path)
        assert expected in str(exc.value) and str(exc.value).startswith(f"{path}:"), str(exc.value)


def test_a_node_without_iproute2_is_unknown_not_unroutable() -> None:
    blind = node("b")
    blind.raw["network"]["route"] = {"addr": "10.0.0.1", "unknown": "ip: not found on PATH"}
    check = route_check({"a": node("a"), "b": blind})
    assert check.status == "pass" and "(unknown on b: ip: not found on PATH)" in check.message
    assert route_check({"b": blind}).status == "skip"
