"""What one command on N nodes costs the head, per node, over each way of reaching them (issue 23 item 1).

Side by side in one run on N simulated SSH nodes (tests/simnodes.py), every figure head CPU per node in ms:
- paramiko as shipped before this turn (transport thread polling every 0.1 s, known_hosts parsed per connection)
  and as now (cluster/ssh.py: IDLE_POLL_S, one parse per transport): a fresh connection + one exec (what every
  CLI verb pays), an exec on an open connection, an idle open connection per second (what following pays on
  top of the records), close;
- OpenSSH: a fresh `ssh host true` per node (what pdsh does), and ControlMaster / ControlPersist: the first call
  (which starts the master) and later calls through the master (the client process's CPU plus the masters').
The known_hosts file can be padded with entries for other names (`--known-hosts N`) to stand for a cluster of N
nodes whose file names every node: its parse cost per connection grows with it.

Head CPU is this process's rusage (self + waited-for children: the ssh clients); a ControlMaster runs detached, so
its CPU is read from /proc/PID/stat. Usage (root, under the e2e lock: it starts simulated nodes):
  flock /tmp/rlaunch-e2e.lock .venv/bin/python bench/ssh_reuse.py --nodes 64 --known-hosts 250
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import paramiko  # noqa: E402

from cluster import ssh  # noqa: E402
from cluster.inventory import from_mapping  # noqa: E402
from cluster.transport import Endpoint  # noqa: E402


def cpu(children: bool = False) -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    total = me.ru_utime + me.ru_stime
    if children:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += kids.ru_utime + kids.ru_stime
    return total


def proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Before(ssh._QuietTransport):
    _active_check_timeout = 0.1  # paramiko's own default


class OldSSH(ssh.SSHTransport):
    """cluster/ssh.py as it was: paramiko's 0.1 s poll, and every connection parses the known_hosts file."""

    def _host_keys(self, path: str) -> paramiko.HostKeys:
        return paramiko.HostKeys(path)


def paramiko_rows(
    cls: type[ssh.SSHTransport], eps: dict[str, Endpoint], hosts: list[str], label: str
) -> dict[str, float]:
    n = len(hosts)
    before = ssh._QuietTransport._active_check_timeout
    if cls is OldSSH:
        ssh._QuietTransport._active_check_timeout = _Before._active_check_timeout
    try:
        t = cls(eps, max_parallel=64)
        c0 = cpu()
        group = t.run_all(hosts, ["true"], timeout=60)
        assert group.ok, group.failed
        fresh = (cpu() - c0) / n
        c0 = cpu()
        assert t.run_all(hosts, ["true"], timeout=60).ok
        reuse = (cpu() - c0) / n
        c0 = cpu()
        time.sleep(5)
        idle = (cpu() - c0) / n / 5
        c0 = cpu()
        t.close()
        close = (cpu() - c0) / n
    finally:
        ssh._QuietTransport._active_check_timeout = before
    return {
        f"{label}: fresh connection + exec": fresh,
        f"{label}: exec on an open connection": reuse,
        f"{label}: idle connection, per second": idle,
        f"{label}: close": close,
    }


def fan(hosts: list[str], argv_for: Callable[[str], list[str]]) -> None:
    with ThreadPoolExecutor(64) as pool:
        results = list(pool.map(lambda h: subprocess.run(argv_for(h), capture_output=True), hosts))
    bad = [r for r in results if r.returncode]
    assert not bad, bad[0].stderr


def openssh_rows(config: Path, hosts: list[str]) -> dict[str, float]:
    n = len(hosts)
    out: dict[str, float] = {}
    c0 = cpu(children=True)
    fan(hosts, lambda h: ["ssh", "-F", str(config), h, "true"])
    out["OpenSSH: fresh `ssh host true`"] = (cpu(children=True) - c0) / n
    control = Path(tempfile.mkdtemp(prefix="rlaunch-cm-"))  # mkdtemp: mode 0700, so the sockets are private
    opts = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}/%C", "-o", "ControlPersist=120"]
    try:
        c0 = cpu(children=True)
        fan(hosts, lambda h: ["ssh", "-F", str(config), *opts, h, "true"])
        out["OpenSSH ControlMaster: first call (starts the master)"] = (cpu(children=True) - c0) / n
        masters = [
            int(p)
            for p in os.listdir("/proc")
            if p.isdigit() and str(control).encode() in _cmdline(int(p)) and b"[mux]" in _cmdline(int(p))
        ]
        m0 = sum(proc_cpu(p) for p in masters)
        c0 = cpu(children=True)
        fan(hosts, lambda h: ["ssh", "-F", str(config), *opts, h, "true"])
        out["OpenSSH ControlMaster: later call (client process)"] = (cpu(children=True) - c0) / n
        out["OpenSSH ControlMaster: later call (masters' share)"] = (
            sum(proc_cpu(p) for p in masters) - m0
        ) / n
        m0 = sum(proc_cpu(p) for p in masters)
        time.sleep(5)
        out["OpenSSH ControlMaster: idle master, per second"] = (
            (sum(proc_cpu(p) for p in masters) - m0) / n / 5
        )
    finally:
        for h in hosts:
            subprocess.run(["ssh", "-F", str(config), *opts, "-O", "exit", h], capture_output=True)
        shutil.rmtree(control, ignore_errors=True)
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def main() -> None:
    from simnodes import SimCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--known-hosts", type=int, default=0, help="pad known_hosts to this many entries")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with SimCluster(args.nodes) as sim:
        hosts = [node.name for node in sim.nodes]
        known = sim.known_hosts.read_text()
        pad = max(0, args.known_hosts - len(hosts))
        key = sim.nodes[0].host_key_line
        known += "".join(f"[198.19.{i // 250}.{i % 250 + 1}]:2222 {key}\n" for i in range(pad))
        sim.known_hosts.write_text(known)
        eps = Endpoint.all_from(from_mapping(sim.inventory_dict()))
        rows: dict[str, float] = {}
        rows.update(paramiko_rows(OldSSH, eps, hosts, "paramiko before"))
        rows.update(paramiko_rows(ssh.SSHTransport, eps, hosts, "paramiko now"))
        if shutil.which("ssh"):
            rows.update(openssh_rows(sim.ssh_config, hosts))
    print(f"| {args.nodes} nodes, known_hosts {len(hosts) + pad} entries | head CPU per node (ms) |")
    print("|---|---:|")
    for name, value in rows.items():
        print(f"| {name} | {1000 * value:.2f} |")
    print(f"load average {load:.1f} before / {os.getloadavg()[0]:.1f} after, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
