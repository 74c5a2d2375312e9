"""Directory sync benchmark: a project tree pushed to N simulated nodes, `sync:` against rsync and `pdcp -r`.

Side by side, in one run, on the same nodes (tests/simnodes.py), each tool into its own directory of each node's
private /tmp (removed before the next tool, the tmpfs holds 256 MB):
  rlaunch   launcher/sync.py over one SSHTransport (connections opened before timing: `up` has them open)
  rsync     `rsync -a --delete` per node over ssh, all nodes at once (one process per node)
  pdcp -r   pdsh's copy (PDSH_RCMD_TYPE=ssh, fanout = N); it has no notion of "unchanged": it copies everything

Three steps per tool: cold (empty node directory), unchanged (the same tree again), one file changed. Wall
seconds for the step on all nodes; each step is checked (the nodes hold the tree's bytes) before it counts.

Usage (root, after scripts/setup.sh; rsync installed):
  .venv/bin/python bench/sync.py [--nodes 16] [--mb 50] [--files 200] [--no-write]
"""

from __future__ import annotations

import argparse
import hashlib
import os
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


def timed(fn: Callable[[], object]) -> float:
    time.sleep(0.3)
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


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


def bench(n: int, mb: int, files: int) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}
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
            row = {"cold": timed(push)}
            check(sim, hosts, dest, want, f"{name} cold")
            row["unchanged"] = timed(push)
            check(sim, hosts, dest, want, f"{name} unchanged")
            victim.write_bytes(os.urandom(len(original)))
            want = digest_of(tree)
            row["one changed"] = timed(push)
            check(sim, hosts, dest, want, f"{name} one changed")
            victim.write_bytes(original)
            close()
            for host in hosts:
                shutil.rmtree(sim.node_path(host, dest), ignore_errors=True)
            rows[name] = row
            print(
                f"{n} nodes, {name}: " + ", ".join(f"{k} {v:.2f}s" for k, v in row.items()), file=sys.stderr
            )
    return rows


def table(n: int, mb: int, files: int, rows: dict[str, dict[str, float]]) -> str:
    lines = [
        f"{n} simulated nodes, a {mb} MB tree of {files} files; wall seconds for the step on all nodes.",
        "",
        "| tool | cold (empty nodes) | unchanged tree again | one file changed |",
        "|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['cold']:.2f} | {r['unchanged']:.2f} | {r['one changed']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16)
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
        "SSH encryption more than any tool. rsync's unchanged check is size + mtime per file (its quick check); "
        "ours is the node's index of size + mtime + sha256, and the head hashes the tree each time."
    )
    print(text + "\n\n" + notes)
    if not args.no_write:
        benchmarks_md.write_section(
            MARK_BEGIN, MARK_END, f"## Directory sync (bench/sync.py)\n\n{text}\n\n{notes}"
        )


if __name__ == "__main__":
    main()
