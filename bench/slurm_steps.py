"""Slurm job steps per run and head time: today's per-node-step path beside the one-step path, in one run.

On a real multi-node Slurm (tests/slurm_fixture.py `start_slurm_cluster`: slurmctld, munged, MariaDB + slurmdbd
on the head, one slurmd per simulated node in its own namespaces) of N nodes, inside one `salloc --no-shell`
allocation of all of them, `lifecycle.up` (the `rlaunch up --from-slurm` code path, doctor off) of the same job
through `SlurmTransport(one_step=False)` (one step per command per node: push, each guard, each stop) and
`SlurmTransport(one_step=True)` (one step for every node, the bundle by sbcast). Per path and scenario:

  steps      job steps of the run, counted with `sacct` (a sentinel step after the run: slurmdbd has them all)
  wall       wall seconds of `up`
  head CPU   CPU seconds of the head: this process + its children (srun, sbcast, scontrol) during `up`

Beside them, what a user does without rlaunch, with real srun in the same allocation (`by hand`): `srun per node`
(per attempt and node, one srun that writes the job's config file and one that runs the command: the loop of
`srun -w NODE --overlap ...` that a launcher script without a one-step fan-out makes), and `one srun -N N` (the
command as one step per attempt: nothing pushed, nothing watched, no per-node teardown; the restart is the
user's own rerun).

Scenarios: `clean` (a command job that prints and exits 0 on every node) and `restart` (node 2 exits 1 in attempt
0, `restart.max_restarts: 1`, attempt 1 runs through). Each path runs each scenario --reps times (median).

Usage (root, after scripts/setup.sh): .venv/bin/python bench/slurm_steps.py [--nodes 4,16] [--reps 1] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import benchmarks_md  # noqa: E402
from slurm_fixture import SlurmCluster, multinode_missing, start_slurm_cluster  # noqa: E402

from cluster.inventory import load_inventory  # noqa: E402
from cluster.slurm import SlurmTransport  # noqa: E402
from cluster.transport import Endpoint  # noqa: E402
from launcher import lifecycle  # noqa: E402

PYTHON = sys.executable
PATHS = (
    "by hand: srun per node",
    "by hand: one srun -N N",
    "rlaunch, per node (before)",
    "rlaunch, one step",
)
SECTION = "Slurm in one step: job steps per run (bench/slurm_steps.py, issue 23)"
BEGIN, END = "<!-- bench/slurm_steps.py begin -->", "<!-- bench/slurm_steps.py end -->"


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def job_for(scenario: str, marker: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    if scenario == "clean":
        return {"kind": "command", "command": [PYTHON, "-c", "print('hello', flush=True)"]}, {}
    code = (
        "import os,socket,sys\n"
        f"m={str(marker)!r}\n"
        "if socket.gethostname()=='sn2' and not os.path.exists(m):\n"
        "    open(m,'w').close(); sys.exit(1)\n"
        "print('done', flush=True)\n"
    )
    return {"kind": "command", "command": [PYTHON, "-c", code]}, {
        "restart": {"max_restarts": 1, "backoff": 1}
    }


def one_run(cluster: SlurmCluster, job_id: str, env: dict[str, str], one_step: bool, scenario: str,
            work: Path, seen: set[str]) -> dict[str, Any]:  # fmt: skip
    marker = Path(tempfile.mkdtemp(prefix="rlaunch-bench-", dir="/var/tmp")) / "crashed"
    job, over = job_for(scenario, marker)
    data = {
        "cluster": "bench",
        "transport": "slurm",
        "python": PYTHON,
        "workdir": "/tmp/rlaunch",
        "profile": "cpu",
        "master": {"port": "auto"},
        "env": {"OMP_NUM_THREADS": "1"},
        "job": job,
        "health": {"heartbeat_timeout": 20, "grace": 2, "stall_timeout": 120},
        **over,
    }
    path = work / f"cluster-{scenario}-{one_step}.yaml"
    path.write_text(json.dumps(data))
    inv = load_inventory(path, from_slurm=env)
    transport = SlurmTransport(
        {n.host: Endpoint(n.host, n.host) for n in inv.nodes}, environ=env, python=PYTHON, one_step=one_step
    )
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    _, outcome = lifecycle.up(inv, transport=transport)
    wall, cpu = time.monotonic() - wall0, cpu_seconds() - cpu0
    steps = cluster.new_steps(job_id, seen)
    marker.unlink(missing_ok=True)
    marker.parent.rmdir()
    left = {n: cluster.node_pids(n) for n in cluster.node_names}
    deadline = time.monotonic() + 30
    while any(left.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
        left = {n: cluster.node_pids(n) for n in cluster.node_names}
    return {"code": outcome.code, "steps": len(steps), "wall": wall, "cpu": cpu,
            "left": sum(len(v) for v in left.values())}  # fmt: skip


def by_hand(cluster: SlurmCluster, job_id: str, env: dict[str, str], style: str, scenario: str,
            seen: set[str]) -> dict[str, Any]:  # fmt: skip
    """The user's own srun calls for the scenario's attempts (a restart is a second attempt)."""
    attempts = 2 if scenario == "restart" else 1
    base = ["srun", f"--jobid={job_id}", "--overlap", "--quiet"]
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    codes = []
    for attempt in range(attempts):
        if style == "one srun -N N":
            argv = [*base, f"-N{cluster.n}", "--ntasks-per-node=1", PYTHON, "-c", "print('hello')"]
            codes.append(subprocess.run(argv, env=env, capture_output=True, timeout=300).returncode)
            continue
        procs = []
        for node in (
            cluster.node_names
        ):  # the config (one node after another), then the commands side by side: each its own srun
            one = [*base, "-N1", "-n1", f"--nodelist={node}"]
            put = [*one, "sh", "-c", f"mkdir -p /tmp/byhand && cat > /tmp/byhand/job-{attempt}.json"]
            procs.append(subprocess.Popen(put, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL))
            procs[-1].communicate(json.dumps({"attempt": attempt, "node": node}).encode())
        runs = [
            subprocess.Popen(
                [*base, "-N1", "-n1", f"--nodelist={node}", PYTHON, "-c", "print('hello')"],
                env=env,
                stdout=subprocess.DEVNULL,
            )
            for node in cluster.node_names
        ]
        codes += [p.wait(300) for p in procs + runs]
    wall, cpu = time.monotonic() - wall0, cpu_seconds() - cpu0
    steps = cluster.new_steps(job_id, seen)
    return {"code": max(codes), "steps": len(steps), "wall": wall, "cpu": cpu, "left": 0}


def bench(n: int, reps: int, home: Path) -> list[dict[str, Any]]:
    t0 = time.monotonic()
    cluster = start_slurm_cluster(n)
    up_s = time.monotonic() - t0
    rows = []
    try:
        job_id = cluster.allocate(n)
        env = {**cluster.env, "SLURM_JOB_ID": job_id, "SLURM_JOB_NODELIST": ",".join(cluster.node_names)}
        os.environ.update({k: v for k, v in env.items() if k.startswith("SLURM") or k == "PATH"})
        os.environ["RLAUNCH_HOME"] = str(home / f"home-{n}")
        seen: set[str] = set()
        cluster.new_steps(job_id, seen)
        with tempfile.TemporaryDirectory() as work:
            for scenario in ("clean", "restart"):
                for path in PATHS:
                    runs = [
                        by_hand(cluster, job_id, env, path[len("by hand: "):], scenario, seen)
                        if path.startswith("by hand")
                        else one_run(cluster, job_id, env, path == "rlaunch, one step", scenario, Path(work), seen)
                        for _ in range(reps)
                    ]  # fmt: skip
                    row = {
                        "nodes": n,
                        "scenario": scenario,
                        "path": path,
                        "codes": sorted({r["code"] for r in runs}),
                        "steps": statistics.median(r["steps"] for r in runs),
                        "wall": statistics.median(r["wall"] for r in runs),
                        "cpu": statistics.median(r["cpu"] for r in runs),
                        "left": max(r["left"] for r in runs),
                        "cluster_up_s": up_s,
                    }
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    finally:
        cluster.stop()
    return rows


def render(rows: list[dict[str, Any]], reps: int) -> str:
    load = os.getloadavg()
    lines = [
        f"## {SECTION}",
        "",
        "A real Slurm 22.05 on this shared 2-core machine: slurmctld, munged, MariaDB + slurmdbd on the head, one",
        "slurmd per simulated node (own network/PID/mount/UTS namespaces, hostname = NodeName), one",
        "`salloc --no-shell` of all nodes; `lifecycle.up` (the `up --from-slurm` path, doctor off, `keep_runs`",
        "on) through the per-node-step transport and the one-step transport, and the same job by hand with real",
        "srun (one srun per node per command: config + command; or one `srun -N N` of the command, which pushes,",
        "watches and tears down nothing), side by side in the same run, steps counted with `sacct`. `restart`:",
        "node 2 fails attempt 0, attempt 1 runs through (by hand: run again).",
        f"Median of {reps} run(s) per cell; wall = `up` (rlaunch) or the srun calls (by hand); head CPU = this process + its children (srun, sbcast).",
        f"Machine: {platform.node()}, {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} at the end.",
        "",
        "| nodes | scenario | path | exit | job steps | wall (s) | head CPU (s) | left behind |",
        "|---:|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['nodes']} | {r['scenario']} | {r['path']} | {','.join(map(str, r['codes']))} | {r['steps']:g} | "
            f"{r['wall']:.1f} | {r['cpu']:.2f} | {r['left']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="4,16")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if reason := multinode_missing():
        sys.exit(f"cannot run: {reason}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as home:
        for n in [int(x) for x in args.nodes.split(",")]:
            rows += bench(n, args.reps, Path(home))
    text = render(rows, args.reps)
    print(text)
    if not args.no_write:
        benchmarks_md.write_section(BEGIN, END, text.strip("\n"))


if __name__ == "__main__":
    main()
