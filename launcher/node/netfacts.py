"""Network and fabric facts of one node, raw (parsed and judged on the head, launcher/doctor/net.py).

Standard library only; shipped beside facts.py (launcher/doctor/gather.py registers it for the probe) and also
run alone as `python -c <this file> route ADDR` by `net: auto` (launcher/netauto.py). Every reader takes a root
path so tests can point it at a fake sysfs tree.

- the route to the master: `ip -o route get ADDR` (iproute2; `-o` prints one line: "ADDR via GW dev IFACE src SRC
  uid 0"), the interface that carries the job's bootstrap and RCCL's socket traffic;
- interfaces: /sys/class/net/<name>/operstate, and their IPv4 addresses from `ip -o -4 addr show`;
- RDMA devices: /sys/class/infiniband/<dev>/ports/<n>/{state,link_layer,rate} and, per GID index,
  gids/<i> and gid_attrs/types/<i> ("IB/RoCE v1" or "RoCE v2"; the kernel's drivers/infiniband/core/sysfs.c) and
  gid_attrs/ndevs/<i> (the net device a RoCE GID belongs to);
- IOMMU and PCIe ACS: /sys/class/iommu entries, the IOMMU group count, and (root only: config space past 64 bytes
  is not readable otherwise) `lspci -vvv`'s ACSCtl lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
MAX_GIDS = 256  # GID table entries read per port (real tables hold 16-256)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(4096).strip()
    except OSError:
        return None


def _run(argv: list[str], timeout: float) -> tuple[int | None, str, str]:
    # iproute2 and pciutils live in sbin, which a non-root PATH (or the job's own PATH) often leaves out.
    exe = shutil.which(argv[0]) or shutil.which(argv[0], path="/usr/sbin:/sbin:/usr/bin:/bin")
    if not exe:
        return None, "", f"{argv[0]}: not found on PATH"
    try:
        proc = subprocess.run(
            [exe, *argv[1:]], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None, "", f"{argv[0]}: no answer after {timeout:g}s"
    except OSError as exc:
        return None, "", f"{argv[0]}: {exc.strerror or exc}"
    return proc.returncode, proc.stdout[: 1 << 20], proc.stderr[-2000:]


def route_to(addr: str, timeout: float = 5.0) -> dict:
    """{"dev", "src", "via"} of the route to `addr`, or {"error"}."""
    rc, out, err = _run(["ip", "-o", "route", "get", addr], timeout)
    if rc is None:  # no iproute2 here, or it hung: unknown, which is not the same as "no route"
        return {"addr": addr, "unknown": err[:300]}
    if rc != 0:
        return {"addr": addr, "error": (err.strip() or f"ip route get exit {rc}")[:300]}
    words = out.split()
    found: dict = {"addr": addr}
    for key in ("dev", "src", "via"):
        if key in words and words.index(key) + 1 < len(words):
            found[key] = words[words.index(key) + 1]
    if words[:1] == ["local"]:
        # The master itself: the kernel routes its own address through lo ("local ADDR dev lo"); its peers reach
        # it on the interface that holds the address, which is the one RCCL must use here too.
        found["local"] = True
        holder = next(
            (n for n, i in interfaces(timeout=timeout).items() if addr in i["ipv4"] and n != "lo"), None
        )
        if holder:
            found["dev"] = holder
    if "dev" not in found:
        found["error"] = f"no device in `ip route get` output: {out.strip()[:200]}"
    return found


def interfaces(net_root: str = "/sys/class/net", timeout: float = 5.0) -> dict:
    """{name: {"state", "ipv4": [...]}} for every interface the node has."""
    out: dict = {}
    try:
        names = sorted(os.listdir(net_root))
    except OSError:
        names = []
    for name in names:
        out[name] = {"state": _read(os.path.join(net_root, name, "operstate")), "ipv4": []}
    rc, text, _ = _run(["ip", "-o", "-4", "addr", "show"], timeout)
    if rc == 0:
        for line in text.splitlines():
            words = line.split()  # "2: eth0    inet 10.0.0.2/24 brd ... scope global eth0"
            if len(words) > 3 and words[2] == "inet":
                name = words[1].split("@")[0]
                out.setdefault(name, {"state": None, "ipv4": []})["ipv4"].append(words[3].split("/")[0])
    return out


def rdma_devices(ib_root: str = "/sys/class/infiniband") -> list:
    """Every RDMA device and port with its state, link layer and non-empty GIDs."""
    try:
        devices = sorted(os.listdir(ib_root))
    except OSError:
        return []
    out = []
    for dev in devices:
        ports_dir = os.path.join(ib_root, dev, "ports")
        try:
            port_names = sorted(os.listdir(ports_dir), key=lambda p: int(p) if p.isdigit() else 0)
        except OSError:
            port_names = []
        ports = []
        for port in port_names:
            base = os.path.join(ports_dir, port)
            gids = []
            for i in range(MAX_GIDS):
                gid = _read(os.path.join(base, "gids", str(i)))
                if gid is None:
                    break
                if gid == ZERO_GID:
                    continue
                gids.append(
                    {
                        "index": i,
                        "gid": gid,
                        "type": _read(os.path.join(base, "gid_attrs", "types", str(i))),
                        "ndev": _read(os.path.join(base, "gid_attrs", "ndevs", str(i))),
                    }
                )
            ports.append(
                {
                    "port": int(port) if port.isdigit() else port,
                    "state": _read(os.path.join(base, "state")),  # "4: ACTIVE"
                    "link_layer": _read(os.path.join(base, "link_layer")),  # "InfiniBand" or "Ethernet"
                    "rate": _read(os.path.join(base, "rate")),
                    "gids": gids,
                }
            )
        out.append({"device": dev, "ports": ports})
    return out


def iommu_acs(sys_root: str = "/sys", timeout: float = 10.0, fast: bool = False) -> dict:
    """IOMMU presence, group count and, as root, how many PCIe functions have ACS source validation on."""
    out: dict = {}
    try:
        out["iommus"] = sorted(os.listdir(os.path.join(sys_root, "class", "iommu")))
    except OSError:
        out["iommus"] = None
    try:
        out["iommu_groups"] = len(os.listdir(os.path.join(sys_root, "kernel", "iommu_groups")))
    except OSError:
        out["iommu_groups"] = None
    if fast:  # `up`'s preflight: lspci -vvv walks every PCIe function, and ACS is only a note
        out["acs"] = None
        out["acs_why"] = "not read in the fast checks"
        return out
    if os.geteuid() != 0:
        out["acs"] = None
        out["acs_why"] = "needs root (lspci reads the ACS capability from extended config space)"
        return out
    rc, text, err = _run(["lspci", "-vvv"], timeout)
    if rc != 0:
        out["acs"] = None
        out["acs_why"] = (err.strip() or f"lspci exit {rc}")[:200]
        return out
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("ACSCtl:")]
    out["acs"] = {"functions": len(lines), "enabled": sum("SrcValid+" in ln for ln in lines)}
    return out


def collect(
    master_addr: str | None, roots: dict | None = None, timeout: float = 5.0, fast: bool = False
) -> dict:
    roots = roots or {}
    return {
        "route": route_to(master_addr, timeout) if master_addr else None,
        "interfaces": interfaces(roots.get("net", "/sys/class/net"), timeout),
        "rdma": rdma_devices(roots.get("infiniband", "/sys/class/infiniband")),
        "iommu": iommu_acs(roots.get("sys", "/sys"), timeout, fast),
    }


if __name__ == "__main__":  # `python -c <this file> route ADDR`: one JSON line, for `net: auto`
    import json

    if len(sys.argv) == 3 and sys.argv[1] == "route":
        print(json.dumps({"rlaunch_route": 1, **route_to(sys.argv[2])}))
    else:
        print(json.dumps({"rlaunch_route": 1, "error": "usage: netfacts.py route ADDR"}))
