"""Network preflight on simulated nodes with differently named interfaces (real network namespaces; node2's
interface renamed to ens5 for this module): doctor names the node NCCL_SOCKET_IFNAME misses, `net: auto` gives
each node its own, and with `net: {transport: ib}` a node whose RCCL init says NET/Socket ends the run, named.

One 2-node cluster serves every case (CI time)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
import simnodes
from e2e_helpers import assert_nothing_left

from cluster.inventory import from_mapping
from cluster.transport import make_transport
from launcher import doctor, lifecycle
from launcher.nodecall import node_script
from launcher.plan import build_plan, load_sources
from launcher.run.launch import preflight_doctor

pytestmark = pytest.mark.usefixtures("run_home")

# A public RCCL init line (ROCm/rccl-tests#163, tests/fixtures/netinit/rccl-tests-163-socket.log) and an IB one
# (ROCm/rccl#419), printed by a command job as RCCL would print them.
SOCKET_LINE = "z292:58192:58200 [2] NCCL INFO NET/Socket : Using [0]eno2np1:192.168.2.194<0>"
IB_LINE = "e05r3n09:929:929 [2] NCCL INFO NET/IB : Using [0]mlx5_3:1/IB [1]mlx5_2:1/IB ; OOB ib0:11.5.5.50<0>"


def _ip(netns: str, *commands: str) -> None:
    for command in commands:
        subprocess.run(["ip", "-n", netns, *command.split()], check=True, capture_output=True)


@pytest.fixture(scope="module")
def renamed() -> Iterator[simnodes.SimCluster]:
    """Two nodes; node2's eth0 is called ens5 (routes restored after the rename), put back afterwards."""
    if simnodes.unavailable_reason() or not simnodes.netns_possible():
        pytest.skip("needs network namespaces")
    cluster = simnodes.SimCluster(2).start()
    node = cluster.node("node2")
    assert node.netns and node.gateway
    try:
        _ip(node.netns, "link set eth0 down", "link set eth0 name ens5", "link set ens5 up",
            f"route replace default via {node.gateway} dev ens5")  # fmt: skip
        yield cluster
    finally:
        _ip(node.netns, "link set ens5 down", "link set ens5 name eth0")
        cluster._link_up(node)
        cluster.stop()


def test_doctor_names_the_node_that_has_no_such_interface(renamed: simnodes.SimCluster) -> None:
    data = renamed.inventory_dict(env={"NCCL_SOCKET_IFNAME": "eth0"})
    inv = from_mapping(data)
    with make_transport(inv) as transport:
        report = doctor.run_doctor(
            inv, transport, node_script("facts.py").encode(), fast=True, timeout=60, tool_timeout=5
        )
        # up's fast checks refuse to start, naming the node.
        plan = build_plan(inv, run_id="t", sources=load_sources(inv), head_env={})
        failed = preflight_doctor(inv, plan, transport)
    checks = {c.name: c for c in report.checks}
    text = doctor.format_report(report)
    assert checks["master_route"].message == "the master is routed through node1: eth0, node2: ens5", text
    ifname = checks["nccl_socket_ifname"]
    assert ifname.failed and ifname.nodes == ("node2",), text
    assert "node2: NCCL_SOCKET_IFNAME=eth0 matches no interface (it has ens5, lo)" in ifname.message, text
    assert "node1 routes through eth0, node2 routes through ens5" in (ifname.fix or ""), text
    assert checks["rdma_active"].status == "skip", text  # no RDMA devices here, none expected
    assert any(
        line.startswith("nccl_socket_ifname [node2]: node2: NCCL_SOCKET_IFNAME=eth0") for line in failed
    )


def test_net_auto_and_the_socket_fallback_on_real_nodes(renamed: simnodes.SimCluster) -> None:
    # net: auto: each node gets the interface that routes to the master (node1: its own address on eth0).
    data = renamed.inventory_dict(
        net="auto", job={"kind": "command", "command": ["sh", "-c", "echo ifname=$NCCL_SOCKET_IFNAME"]}
    )
    lines: list[tuple[str, str]] = []
    status: list[str] = []
    _, outcome = lifecycle.up(
        from_mapping(data), ranks="all", on_line=lambda h, r, t: lines.append((h, t)), on_status=status.append
    )
    assert outcome.code == 0, outcome.summary
    assert ("node1", "ifname=eth0") in lines and ("node2", "ifname=ens5") in lines, lines
    assert any(s.startswith("net: auto: NCCL_SOCKET_IFNAME node1=eth0, node2=ens5") for s in status), status

    # net.transport ib: node1's RCCL says NET/IB, node2's NET/Socket; both would then sleep for ten minutes.
    script = (
        'if [ "$NODE_RANK" = 1 ]; then echo "$SOCKET"; else echo "$IB"; fi; '
        'echo "debug=$NCCL_DEBUG/$NCCL_DEBUG_SUBSYS"; exec sleep 600'
    )
    data = renamed.inventory_dict(
        net={"transport": "ib"},
        env={"SOCKET": SOCKET_LINE, "IB": IB_LINE},
        job={"kind": "command", "command": ["sh", "-c", script]},
        health={"grace": 2},
    )
    lines.clear()
    _, outcome = lifecycle.up(from_mapping(data), ranks="all", on_line=lambda h, r, t: lines.append((h, t)))
    assert outcome.code == 1, outcome.summary
    root = outcome.root_cause or {}
    assert root.get("node") == "node2" and root.get("rule") == "rccl-net-socket", outcome.summary
    assert "on node2 uses TCP sockets (NET/Socket), but net.transport is ib" in outcome.summary
    assert ("node1", "debug=INFO/INIT") in lines
    assert_nothing_left(renamed)
