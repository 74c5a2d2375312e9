"""Which network transport RCCL chose, read from its INIT lines. Pure: no I/O.

With `NCCL_DEBUG=INFO` (rlaunch limits it to `NCCL_DEBUG_SUBSYS=INIT` when `net.transport` is `ib`) every rank's
RCCL prints, once at init, the transport its network plugin uses: `NET/IB : Using [0]mlx5_0:1/RoCE ...` and
`Using network IB`, or after a failed RDMA setup `Failed to open libibverbs.so[.1]` / `NET/IB : No device found.`
and then `NET/Socket : Using [0]eth0:10.0.0.1<0>` and `Using network Socket` — TCP at a fraction of the fabric's
speed, with no warning. The strings are RCCL's (hipified NCCL, src/transport/net_socket.cc, net_ib.cc and
src/init.cc "Using network %s"); the fixture lines in tests/fixtures/netinit/ come from public threads, each cited.

launcher/node/edge.py forwards these lines from the nodes with the same patterns (`NET_INIT` there; a contract
test checks that both agree on every fixture line), since its own rules leave every `NCCL INFO` line healthy.
"""

from __future__ import annotations

import re

# "NET/Socket : Using [0]eth0:..." (older: "NET/Socket : Using"; newer: "NET/Socket : Using [0]..."), and
# "Using network Socket" (init.cc). IB: "NET/IB : Using [0]mlx5_0:1/RoCE" and "Using network IB" / "IBext_v8".
SOCKET = re.compile(r"NET/Socket\s*:\s*Using\b|\bUsing network Socket\b")
IB = re.compile(r"NET/IB\s*:\s*Using \[|\bUsing network IB")


def transport_of_line(text: str) -> str | None:
    """ "socket", "ib", or None for any other line."""
    if "NET/" not in text and "Using network" not in text:
        return None
    if SOCKET.search(text):
        return "socket"
    if IB.search(text):
        return "ib"
    return None
