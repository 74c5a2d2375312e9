"""Scale harness: rlaunch's verbs on N simulated SSH nodes side by side with pdsh, and the head alone at 1,000+.

`sim` (N simulated nodes, tests/simnodes.py: one sshd per node in its own namespaces), one run per N, phases in
order, each the real CLI in a child process (`python -m launcher.cli ...`) measured from outside:
  doctor --fast, up --no-doctor (a command job printing a line a second for JOB_S), up (with doctor),
  up --detach --no-doctor (a long job), status (through the run's supervisor, once it follows every node),
  status --probe (every node asked), logs, down; then pdsh running the same job, and pdsh running `true` (one round
  trip). "SSH logins": new connections the nodes' sshds accepted during the phase (their logs).
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
from collections.abc import Collection
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
    started_s: float | None = (
        None  # wall until node 0's first job line reached the terminal (foreground `up`)
    )
    follow_cpu_s: float | None = (
        None  # the head's CPU per second while only following (between two job lines)
    )
    load: float = 0.0  # the machine's 1-minute load average when the phase ended
    logins: int | None = None  # new SSH connections the nodes' sshds accepted during the phase (their logs)
    busy: float | None = None  # the machine's busy cores over the phase (/proc/stat, machine_busy_s)


TAIL_CHARS = 4 << 20  # enough for `logs` of every node (tests read it); the JSON dump keeps less
FIRST_LINE = b"step=1\n"  # node 0's job is running and its lines reach the head
FOLLOW_FROM, FOLLOW_TO = b"step=2\n", f"step={JOB_S - 1}\n".encode()  # every node started: only following


def _proc_cpu(pid: int) -> float | None:
    """The process's own user + system CPU seconds so far (proc(5): fields 14 and 15 of /proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _proc_peak_rss_mib(pid: int) -> float:
    """The process's peak resident set so far (proc(5) /proc/PID/status VmHWM), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


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


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy since boot (proc(5) /proc/stat "cpu": all but idle and iowait).
    Over a phase, busy seconds / wall = cores busy: at 2.0 on a 2-core machine the simulated nodes' own work (their
    sshds, guards and followers, on cores a real cluster would not share) sets the wall, not the head."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def measure(name: str, argv: list[str], env: dict[str, str], timeout: float = 900) -> Phase:
    """Run argv as a child; its own CPU and peak RSS from wait4's rusage, threads and fds sampled meanwhile."""
    with tempfile.TemporaryFile() as out:
        return _measure(name, argv, env, timeout, out)


def _measure(name: str, argv: list[str], env: dict[str, str], timeout: float, out: Any) -> Phase:
    start, busy0 = time.perf_counter(), machine_busy_s()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    peak = [0, 0]
    done = threading.Event()
    seen: dict[bytes, tuple[float, float]] = {}  # marker -> (wall, head CPU) when it first appeared

    def sample() -> None:
        while not done.wait(0.1):
            threads, fds = _proc_sample(proc.pid)
            peak[0], peak[1] = max(peak[0], threads), max(peak[1], fds)
            if len(seen) < 3:
                text = os.pread(out.fileno(), 1 << 20, 0)
                for marker in (FIRST_LINE, FOLLOW_FROM, FOLLOW_TO):
                    if marker not in seen and marker in text:
                        seen[marker] = (time.perf_counter() - start, _proc_cpu(proc.pid) or 0.0)

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
    busy = (machine_busy_s() - busy0) / wall if wall > 0 else None
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    tail = out.read().decode(errors="replace")[-TAIL_CHARS:]
    follow = None
    if FOLLOW_FROM in seen and FOLLOW_TO in seen and seen[FOLLOW_TO][0] > seen[FOLLOW_FROM][0]:
        (t0, c0), (t1, c1) = seen[FOLLOW_FROM], seen[FOLLOW_TO]
        follow = (c1 - c0) / (t1 - t0)
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
        seen[FIRST_LINE][0] if FIRST_LINE in seen else None,
        follow,
        os.getloadavg()[0],
        busy=busy,
    )


def sshd_logins(sim: Any) -> int:
    """SSH connections every node's sshd has accepted so far: its log (LogLevel INFO, tests/simnodes.py) has one
    "Accepted publickey" line per connection. The difference across a phase is what that phase opened."""
    total = 0
    for node in sim.nodes:
        try:
            total += (node.state_dir / "sshd.log").read_bytes().count(b"Accepted publickey")
        except OSError:
            continue
    return total


def wait_for_view(home: Path, n: int, timeout: float = 600) -> Phase:
    """Until the detached run's supervisor shares a live view that follows all n nodes and has heard from each
    (launcher/records.py live.json): `status` through it then asks no node. wall: how long that took after `up --detach` returned;
    head CPU: the supervisor's own CPU so far (start-up, n followers opened, following)."""
    start = time.perf_counter()
    followed, pid = 0, None
    while time.perf_counter() - start < timeout:
        for live in home.glob("runs/*/live.json"):
            try:
                view = json.loads(live.read_text())
            except (OSError, ValueError):
                continue
            pid = view.get("writer_pid")
            # Followed and heard from: a follower whose first record has not come yet (its ssh and python still
            # starting on a loaded node) is silent to `status`, which asks that node itself after
            # records.NODE_SILENT_S (launcher/lifecycle.py _from_live_view).
            followed = sum(
                1
                for node in view.get("nodes", {}).values()
                if node.get("followed") and node.get("last_heard") is not None
            )
        if followed == n:
            break
        time.sleep(0.5)
    cpu, rss, threads, fds = 0.0, 0.0, 0, 0
    if isinstance(pid, int):
        cpu, rss, (threads, fds) = _proc_cpu(pid) or 0.0, _proc_peak_rss_mib(pid), _proc_sample(pid)
    wall = time.perf_counter() - start
    return Phase(
        "supervisor follows all", 0 if followed == n else 1, wall, cpu, rss, threads, fds, -1,
        f"{followed} of {n} nodes followed and heard from", load=os.getloadavg()[0],
    )  # fmt: skip


def leftovers(sim: Any, skip: Collection[str] = ()) -> dict[str, list[str]]:
    """Job processes on every node but `skip` (anything but the node's init and sshd), one walk of /proc."""
    by_ns = {node.pidns: node for node in sim.nodes if node.pidns and node.name not in skip}
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


# Faults for `status --probe`, `logs` and `down` (issue 23 item 3: one slow or dead node never holds the rest): a hung node
# (every process stopped, its kernel still ACKs: connections open, nobody answers) and a dead one (its link down:
# silence). They are made after `up --detach`; the run's own connections get a long keepalive and heartbeat
# timeout so that the detached supervisor does not end the run meanwhile: the faults are for the verbs to meet.
FAULTS = {"freeze": "hung", "partition": "dead"}
FAULT_INVENTORY = {
    "ssh": {"keepalive": 120.0, "connect_timeout": 3.0},
    "health": {"heartbeat_timeout": 600, "hang_floor": 600, "grace": 2},
}


def run_sim(
    n: int,
    *,
    pdsh: bool = True,
    phases: list[str] | None = None,
    repeat: int = 1,
    faults: dict[str, str] | None = None,
) -> list[Phase]:
    """Every phase on n simulated nodes; each Phase's `left` counts job processes left where the phase ends.

    `faults` (node -> "freeze" | "partition") are made after `status` (through the supervisor, every node
    healthy); `status --probe`, `logs` and `down` then run with them, and `down-after-heal` (the faults undone) must leave nothing anywhere."""
    faults = faults or {}
    from simnodes import SimCluster

    wanted = phases or [
        "doctor",
        "up-no-doctor",
        "up",
        "up-detach",
        "status",
        "status-probe",
        "logs",
        "down",
        "pdsh",
        "pdsh-true",
    ]
    out: list[Phase] = []
    with SimCluster(n) as sim, tempfile.TemporaryDirectory(prefix="rlaunch-scale-") as tmp:
        hosts = [node.name for node in sim.nodes]
        extra = FAULT_INVENTORY if faults else {}
        base = sim.inventory_dict(
            ssh={"max_parallel": 64, **extra.get("ssh", {})},
            health={"heartbeat_timeout": 15, "first_heartbeat_timeout": 120, **extra.get("health", {})},
        )
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
            ("up-detach", [*cli, "up", str(long), "--detach", "--no-doctor"], False),
            ("status", [*cli, "status", "--json"], False),  # through the supervisor's live view
            ("status-probe", [*cli, "status", "--json", "--probe"], False),  # every node asked, as before
            ("logs", [*cli, "logs"], False),
            ("down", [*cli, "down"], True),
        ]
        if faults:
            steps.append(("down-after-heal", [*cli, "down"], True))
        if pdsh and shutil.which("pdsh"):
            pdsh_env = {**env, "PDSH_RCMD_TYPE": "ssh", "PDSH_SSH_ARGS": f"-F {sim.ssh_config} -x %h"}
            fan = ["pdsh", "-S", "-f", str(n), "-w", ",".join(hosts)]
            job = " ".join(JOB[:2]) + " '" + JOB[2] + "'"
            steps += [("pdsh", [*fan, job], True), ("pdsh-true", [*fan, "true"], True)]
        else:
            pdsh_env = env
        broken: set[str] = set()
        for name, argv, ends in steps:
            if name.split("#")[0] not in wanted and not (name == "down-after-heal" and "down" in wanted):
                continue
            if name == "status-probe" and faults:
                for node, how in faults.items():
                    getattr(sim, how)(node)  # SimCluster.freeze / .partition
                    broken.add(node)
            if name == "down-after-heal":
                for node, how in faults.items():
                    (sim.thaw if how == "freeze" else sim.heal)(node)
                broken.clear()
            if name == "status" and "up-detach" in wanted:
                before = sshd_logins(sim)
                out.append(wait_for_view(Path(tmp, "home"), n))
                # Logins while the supervisor came to follow every node (before turn 18 it connected again here).
                out[-1].logins = sshd_logins(sim) - before
                print(f"{n} nodes: {out[-1].tail} after {out[-1].wall_s:.1f}s", file=sys.stderr, flush=True)
            logins = sshd_logins(sim)
            phase = measure(name, argv, pdsh_env if name.startswith("pdsh") else env)
            phase.logins = sshd_logins(sim) - logins
            if ends:
                # A guard's teardown may still be finishing on a loaded machine; broken nodes are read after healing.
                deadline = time.monotonic() + 30
                left = leftovers(sim, broken)
                while left and time.monotonic() < deadline:
                    time.sleep(0.5)
                    left = leftovers(sim, broken)
                phase.left = sum(len(v) for v in left.values())
            out.append(phase)
            print(
                f"{n} nodes {name}: exit {phase.code} wall {phase.wall_s:.1f}s cpu {phase.cpu_s:.2f}s "
                f"rss {phase.rss_mib:.0f}MiB threads {phase.threads} fds {phase.fds} left {phase.left} "
                f"first line {phase.started_s} follow {phase.follow_cpu_s} load {phase.load:.0f} busy {phase.busy}",
                file=sys.stderr,
                flush=True,
            )
        # Nothing may be left whatever happened above (a failed `down` included).
        for node, how in faults.items():
            (sim.thaw if how == "freeze" else sim.heal)(node)
        final = leftovers(sim)
        if final:
            out.append(
                Phase("left-at-end", 1, 0, 0, 0, 0, 0, sum(len(v) for v in final.values()), str(final)[:500])
            )
    return out


def sim_table(rows: dict[int, list[Phase]]) -> str:
    lines = [
        "| nodes | phase | exit | wall (s) | to first line (s) | head CPU (s) | CPU / node (ms) "
        "| following: CPU / node / s (ms) | peak RSS (MiB) | RSS / node (MiB) | threads | fds | SSH logins "
        "| left | load | machine busy (cores) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, phases in rows.items():
        for p in phases:
            left = "-" if p.left < 0 else str(p.left)
            first = "-" if p.started_s is None else f"{p.started_s:.1f}"
            follow = "-" if p.follow_cpu_s is None else f"{1000 * p.follow_cpu_s / n:.3f}"
            lines.append(
                f"| {n} | {p.name} | {p.code} | {p.wall_s:.1f} | {first} | {p.cpu_s:.2f} | {1000 * p.cpu_s / n:.1f} "
                f"| {follow} | {p.rss_mib:.0f} | {p.rss_mib / n:.2f} | {p.threads} | {p.fds} "
                f"| {'-' if p.logins is None else p.logins} | {left} | {p.load:.0f} "
                f"| {'-' if p.busy is None else f'{p.busy:.2f}'} |"
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
        raw["sim"] = {n: [{**asdict(p), "tail": p.tail[-20000:]} for p in ps] for n, ps in rows.items()}
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
