"""Scale harness: rlaunch's verbs on N simulated SSH nodes side by side with pdsh, and the head alone at 1,000+.

`sim` (N simulated nodes, tests/simnodes.py: one sshd per node in its own namespaces), one run per N, phases in
order, each the real CLI in a child process (`python -m launcher.cli ...`) measured from outside:
  doctor --fast, up --no-doctor (a command job printing a line a second for JOB_S), up (with doctor), up --detach
  (a long job), status, logs, down; then pdsh running the same job, and pdsh running `true` (one round trip).
Per phase: wall, head CPU (the child's own rusage: user + system), peak RSS, peak threads and file descriptors
(sampled from /proc/PID every 0.1 s), the exit code, and after every phase the nodes' process tables (one /proc
walk, grouped by PID namespace): nothing of the job may be left after a phase that ends it.

`head` (bench/headsim.py): thousands of node guards simulated by one thread at the transport layer, the real
head above it: CPU per node to start, CPU per node per second while following, memory, heartbeat lateness.

Usage (root; under the machine's e2e lock, since 250 simulated nodes saturate a small machine):
  flock /tmp/rlaunch-e2e.lock .venv/bin/python bench/scale.py sim --sizes 32,128,250
  flock /tmp/rlaunch-e2e.lock .venv/bin/python bench/scale.py head --sizes 1000,4000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

JOB_S = 10  # the foreground job: one line a second for this long
JOB = ["sh", "-c", f"for i in $(seq {JOB_S}); do echo step=$i; sleep 1; done"]
LONG_JOB = ["sh", "-c", "while true; do echo tick; sleep 1; done"]


@dataclass
class Phase:
    name: str
    code: int | None
    wall_s: float
    cpu_s: float
    rss_mib: float
    threads: int
    fds: int
    left: int  # job processes left on the nodes after the phase (where the phase ends the job)
    tail: str = ""


def _proc_sample(pid: int) -> tuple[int, int]:
    threads = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0, 0
    return threads, fds


def measure(name: str, argv: list[str], env: dict[str, str], timeout: float = 900) -> Phase:
    """Run argv as a child; its own CPU and peak RSS from wait4's rusage, threads and fds sampled meanwhile."""
    with tempfile.TemporaryFile() as out:
        return _measure(name, argv, env, timeout, out)


def _measure(name: str, argv: list[str], env: dict[str, str], timeout: float, out: Any) -> Phase:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            threads, fds = _proc_sample(proc.pid)
            peak[0], peak[1] = max(peak[0], threads), max(peak[1], fds)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    deadline = time.monotonic() + timeout
    status, usage = 0, None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    tail = out.read().decode(errors="replace")[-20000:]
    return Phase(
        name,
        proc.returncode,
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        peak[0],
        peak[1],
        -1,
        tail,
    )


def leftovers(sim: Any) -> dict[str, list[str]]:
    """Job processes on every node (anything but the node's init and sshd), one walk of /proc."""
    by_ns = {node.pidns: node for node in sim.nodes if node.pidns}
    found: dict[str, list[str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            node = by_ns.get(os.readlink(f"/proc/{pid}/ns/pid"))
            if node is None or pid == node.init_pid:
                continue
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]).startswith(b"sshd"):
            continue
        found.setdefault(node.name, []).append(b" ".join(argv).decode(errors="replace"))
    return found


def run_sim(n: int, *, pdsh: bool = True, phases: list[str] | None = None, repeat: int = 1) -> list[Phase]:
    """Every phase on n simulated nodes; each Phase's `left` counts job processes left where the phase ends."""
    from simnodes import SimCluster

    wanted = phases or [
        "doctor",
        "up-no-doctor",
        "up",
        "up-detach",
        "status",
        "logs",
        "down",
        "pdsh",
        "pdsh-true",
    ]
    out: list[Phase] = []
    with SimCluster(n) as sim, tempfile.TemporaryDirectory(prefix="rlaunch-scale-") as tmp:
        hosts = [node.name for node in sim.nodes]
        base = sim.inventory_dict(ssh={"max_parallel": 64}, health={"heartbeat_timeout": 15})
        short, long = Path(tmp, "short.yaml"), Path(tmp, "long.yaml")
        short.write_text(json.dumps({**base, "job": {"kind": "command", "command": JOB}}))
        long.write_text(json.dumps({**base, "job": {"kind": "command", "command": LONG_JOB}}))
        env = {**os.environ, "RLAUNCH_HOME": str(Path(tmp, "home")), "PYTHONPATH": str(ROOT)}
        cli = [sys.executable, "-m", "launcher.cli"]
        steps: list[tuple[str, list[str], bool]] = [
            ("doctor", [*cli, "doctor", str(short), "--fast"], True),
            *[
                (
                    f"up-no-doctor{'' if k == 0 else f'#{k + 1}'}",
                    [*cli, "up", str(short), "--no-doctor"],
                    True,
                )
                for k in range(repeat)
            ],
            ("up", [*cli, "up", str(short)], True),
            ("up-detach", [*cli, "up", str(long), "--detach"], False),
            ("status", [*cli, "status", "--json"], False),
            ("logs", [*cli, "logs"], False),
            ("down", [*cli, "down"], True),
        ]
        if pdsh and shutil.which("pdsh"):
            pdsh_env = {**env, "PDSH_RCMD_TYPE": "ssh", "PDSH_SSH_ARGS": f"-F {sim.ssh_config} -x %h"}
            fan = ["pdsh", "-S", "-f", str(n), "-w", ",".join(hosts)]
            job = " ".join(JOB[:2]) + " '" + JOB[2] + "'"
            steps += [("pdsh", [*fan, job], True), ("pdsh-true", [*fan, "true"], True)]
        else:
            pdsh_env = env
        for name, argv, ends in steps:
            if name.split("#")[0] not in wanted:
                continue
            phase = measure(name, argv, pdsh_env if name.startswith("pdsh") else env)
            if ends:
                deadline = (
                    time.monotonic() + 30
                )  # a guard's teardown may still be finishing on a loaded machine
                left = leftovers(sim)
                while left and time.monotonic() < deadline:
                    time.sleep(0.5)
                    left = leftovers(sim)
                phase.left = sum(len(v) for v in left.values())
            out.append(phase)
            print(
                f"{n} nodes {name}: exit {phase.code} wall {phase.wall_s:.1f}s cpu {phase.cpu_s:.2f}s "
                f"rss {phase.rss_mib:.0f}MiB threads {phase.threads} fds {phase.fds} left {phase.left}",
                file=sys.stderr,
                flush=True,
            )
        # Nothing may be left whatever happened above (a failed `down` included).
        final = leftovers(sim)
        if final:
            out.append(
                Phase("left-at-end", 1, 0, 0, 0, 0, 0, sum(len(v) for v in final.values()), str(final)[:500])
            )
    return out


def sim_table(rows: dict[int, list[Phase]]) -> str:
    lines = [
        "| nodes | phase | exit | wall (s) | head CPU (s) | CPU / node (ms) | peak RSS (MiB) | threads | fds | left |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, phases in rows.items():
        for p in phases:
            left = "-" if p.left < 0 else str(p.left)
            lines.append(
                f"| {n} | {p.name} | {p.code} | {p.wall_s:.1f} | {p.cpu_s:.2f} | {1000 * p.cpu_s / n:.1f} "
                f"| {p.rss_mib:.0f} | {p.threads} | {p.fds} | {left} |"
            )
    return "\n".join(lines)


def head_table(rows: list[dict[str, float]]) -> str:
    lines = [
        "| nodes | ok | start wall (s) | start CPU / node (ms) | following: head cores | following: CPU / node / s (ms) "
        "| RSS (MiB) | RSS / node (MiB) | heartbeat late p99 / max (s) | threads | fds |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {int(r['nodes'])} | {'yes' if r['ok'] else 'NO'} | {r['start_wall_s']:.1f} "
            f"| {r['start_cpu_ms_per_node']:.2f} | {r['follow_cpu_core']:.3f} | {r['follow_cpu_ms_per_node_s']:.3f} "
            f"| {r['rss_mib']:.0f} | {r['rss_mib_per_node']:.3f} | {r['hb_late_p99_s']:.3f} / {r['hb_late_max_s']:.3f} "
            f"| {int(r['threads'])} | {int(r['fds'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", default=None, help="also write the raw figures to this file")
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("sim", parents=[common])
    s.add_argument("--sizes", default="32,128,250")
    s.add_argument("--phases", default=None, help="comma-separated subset of the phases")
    s.add_argument("--no-pdsh", action="store_true")
    s.add_argument("--repeat", type=int, default=1, help="foreground `up --no-doctor` runs per size")
    h = sub.add_parser("head", parents=[common])
    h.add_argument("--sizes", default="1000,4000")
    h.add_argument("--follow", type=float, default=30.0)
    h.add_argument("--nproc", type=int, default=8)
    args = parser.parse_args()
    load_before = os.getloadavg()
    raw: dict[str, Any] = {"load_before": load_before}
    if args.mode == "sim":
        rows = {}
        for n in (int(x) for x in args.sizes.split(",")):
            phases = args.phases.split(",") if args.phases else None
            rows[n] = run_sim(n, pdsh=not args.no_pdsh, phases=phases, repeat=args.repeat)
        raw["sim"] = {n: [asdict(p) for p in ps] for n, ps in rows.items()}
        print(sim_table(rows))
    else:
        import headsim

        results = []
        for n in (int(x) for x in args.sizes.split(",")):
            results.append(headsim.run_head(n, nproc=args.nproc, follow_s=args.follow))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        raw["head"] = results
        print(head_table(results))
    raw["load_after"] = os.getloadavg()
    print(
        f"load average {load_before[0]:.1f} before / {raw['load_after'][0]:.1f} after, {os.cpu_count()} CPUs"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
