"""Directory sync benchmark: a project tree pushed to N simulated nodes, `sync:` against rsync and `pdcp -r`.

Side by side, in one run, on the same nodes (tests/simnodes.py), each tool into its own directory of each node's
private /tmp (removed before the next tool, the tmpfs holds 256 MB):
  rlaunch   launcher/sync.py over one SSHTransport (connections opened before timing: `up` has them open)
  rsync     `rsync -a --delete` per node over ssh, all nodes at once (one process per node, a new SSH connection
            each: how a script loops over hosts)
  pdcp -r   pdsh's copy (PDSH_RCMD_TYPE=ssh, fanout = N); it has no notion of "unchanged": it copies everything

Three steps per tool: cold (empty node directory), unchanged (the same tree again), one file changed. Per step:
wall seconds on all nodes; head CPU seconds (user + system of this process, where rlaunch's paramiko runs, plus
the children it reaped: rsync/pdcp and their ssh); bytes sent to the nodes (tx_bytes of every node's veth on the
head side: SSH, TCP and IP included, the same wire for every tool). Each step is checked (the nodes hold the
tree's bytes) before it counts.

Usage (root, after scripts/setup.sh: rsync and pdsh installed):
  .venv/bin/python bench/sync.py [--nodes 64] [--mb 50] [--files 200] [--no-write]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import benchmarks_md  # noqa: E402
from simnodes import SimCluster  # noqa: E402

from cluster.inventory import from_mapping  # noqa: E402
from cluster.ssh import SSHTransport  # noqa: E402
from cluster.transport import Endpoint, zip_hosts  # noqa: E402
from launcher import sync  # noqa: E402

MARK_BEGIN = "<!-- sync:begin (bench/sync.py rewrites this section) -->"
MARK_END = "<!-- sync:end -->"


def make_tree(root: Path, mb: int, files: int) -> None:
    size = mb * 1_000_000 // files
    for i in range(files):
        d = root / f"pkg{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"file{i:04d}.bin").write_bytes(os.urandom(size))


def digest_of(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.startswith(".rlaunch-sync"):
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def check(sim: SimCluster, hosts: list[str], dest: str, want: str, what: str) -> None:
    for host in hosts:
        got = digest_of(sim.node_path(host, dest))
        if got != want:
            raise SystemExit(f"{what}: {host} does not hold the tree")


def head_cpu() -> float:
    """User + system CPU seconds of this process and of the children it has reaped."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def wire_bytes(sim: SimCluster) -> int | None:
    """Bytes the head has sent to every node so far (the head side of each node's veth); None on loopback."""
    total = 0
    for node in sim.nodes:
        if not node.host_veth:
            return None
        total += int(Path(f"/sys/class/net/{node.host_veth}/statistics/tx_bytes").read_text())
    return total


def measured(sim: SimCluster, fn: Callable[[], object]) -> dict[str, float | None]:
    time.sleep(0.3)
    cpu, sent, start = head_cpu(), wire_bytes(sim), time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    after = wire_bytes(sim)
    return {
        "wall": wall,
        "cpu": head_cpu() - cpu,
        "bytes": None if sent is None or after is None else float(after - sent),
    }


def rlaunch_tool(sim: SimCluster, tree: Path) -> tuple[Callable[[], None], Callable[[], None], str]:
    data = sim.inventory_dict(ssh={"max_parallel": 1024}, sync={"src": str(tree)}, cluster="bench")
    inv = from_mapping(data, base_dir="/")
    transport = SSHTransport(Endpoint.all_from(inv), max_parallel=1024)
    transport.run_all([n.name for n in sim.nodes], ["true"])  # open the connections, as `up` has them

    def push() -> None:
        result = sync.push_all(inv, transport)
        bad = {h: n.error for h, n in result.nodes.items() if n.error}
        if bad:
            raise SystemExit(f"rlaunch sync failed: {bad}")

    return push, transport.close, inv.sync_dir


def rsync_tool(sim: SimCluster, tree: Path, dest: str) -> Callable[[], None]:
    hosts = [n.name for n in sim.nodes]

    def push() -> None:
        def one(host: str) -> int:
            return subprocess.run(
                ["rsync", "-a", "--delete", "-e", f"ssh -F {sim.ssh_config}", f"{tree}/", f"{host}:{dest}/"],
                capture_output=True,
            ).returncode

        codes = dict(zip_hosts(hosts, one, len(hosts)))
        if any(codes.values()):
            raise SystemExit(f"rsync failed: {codes}")

    return push


def pdcp_tool(sim: SimCluster, tree: Path, parent: str) -> Callable[[], None]:
    """`pdcp -r TREE PARENT` puts the tree at PARENT/<tree name> on every node (PARENT made before timing)."""
    hosts = [n.name for n in sim.nodes]
    env = {**os.environ, "PDSH_RCMD_TYPE": "ssh", "PDSH_SSH_ARGS": f"-F {sim.ssh_config} -x %h"}
    fanout = ["-f", str(len(hosts)), "-w", ",".join(hosts)]
    subprocess.run(["pdsh", *fanout, f"mkdir -p {parent}"], env=env, capture_output=True, check=True)

    def push() -> None:
        out = subprocess.run(
            ["pdcp", "-r", *fanout, str(tree), parent], env=env, capture_output=True, text=True
        )
        if out.returncode != 0:
            raise SystemExit(f"pdcp failed: {out.stderr[-300:]}")

    return push


STEPS = ("cold", "unchanged", "one changed")
Row = dict[str, dict[str, float | None]]


def bench(n: int, mb: int, files: int) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    with tempfile.TemporaryDirectory(prefix="rlaunch-sync-bench-") as tmp, SimCluster(n) as sim:
        tree = Path(tmp) / "project"
        make_tree(tree, mb, files)
        hosts = [node.name for node in sim.nodes]
        victim = next(tree.rglob("*.bin"))
        for name in ("rlaunch", "rsync", "pdcp -r"):
            original = victim.read_bytes()
            close: Callable[[], None] = lambda: None  # noqa: E731
            if name == "rlaunch":
                push, close, dest = rlaunch_tool(sim, tree)
            elif name == "rsync":
                dest = "/tmp/bench-rsync"
                push = rsync_tool(sim, tree, dest)
            else:
                push = pdcp_tool(sim, tree, "/tmp/bench-pdcp")
                dest = f"/tmp/bench-pdcp/{tree.name}"
            want = digest_of(tree)
            row: Row = {"cold": measured(sim, push)}
            check(sim, hosts, dest, want, f"{name} cold")
            row["unchanged"] = measured(sim, push)
            check(sim, hosts, dest, want, f"{name} unchanged")
            victim.write_bytes(os.urandom(len(original)))
            want = digest_of(tree)
            row["one changed"] = measured(sim, push)
            check(sim, hosts, dest, want, f"{name} one changed")
            victim.write_bytes(original)
            close()
            for host in hosts:
                shutil.rmtree(sim.node_path(host, dest), ignore_errors=True)
            rows[name] = row
            print(f"{n} nodes, {name}: {row}", file=sys.stderr)
    return rows


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.1f}" if value >= 1e5 else f"{value / 1e6:.3f}"


def table(n: int, mb: int, files: int, rows: dict[str, Row]) -> str:
    lines = [
        f"{n} simulated nodes, a {mb} MB tree of {files} files. Per step on all nodes: wall s / head CPU s / "
        "MB sent on the wire (all nodes together).",
        "",
        "| tool | cold (empty nodes) | unchanged tree again | one file changed |",
        "|---|---|---|---|",
    ]
    for name, r in rows.items():
        cells = [f"{r[s]['wall']:.2f} / {r[s]['cpu']:.2f} / {_mb(r[s]['bytes'])}" for s in STEPS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()
    rows = bench(args.nodes, args.mb, args.files)
    text = table(args.nodes, args.mb, args.files, rows)
    notes = (
        f"One run, load average before {load[0]:.1f} on {os.cpu_count()} cores shared with other work; every "
        "node's sshd, rsync/pdcp and our node script run on the same cores, so cold pushes measure this machine's "
        "SSH encryption more than any tool. rsync's unchanged check is size + mtime per file (its quick check) "
        "and each push opens a new SSH connection per node (handshake bytes and CPU included); rlaunch's "
        "connections are open already, as in `up`, its unchanged push is one round trip per node carrying the "
        "manifest (path, size, mode, sha256 per file) and the node script, and the head hashes the tree each "
        "time. pdcp -r sends every byte every time."
    )
    print(text + "\n\n" + notes)
    if not args.no_write:
        benchmarks_md.write_section(
            MARK_BEGIN, MARK_END, f"## Directory sync (bench/sync.py)\n\n{text}\n\n{notes}"
        )


if __name__ == "__main__":
    main()
