"""Failure detection and teardown benchmark: rlaunch vs plain torchrun, one rank SIGKILLed or SIGSTOPped.

On 2 simulated nodes × 2 ranks (tests/simnodes.py) running examples/train.py (gloo, 20 steps/s), in one run and
on the same nodes, interleaved per repetition:
  rlaunch    `lifecycle.up` in a thread (the same code path as `rlaunch up`), health.stall_timeout = --stall-timeout
  torchrun   `ssh -F <ssh_config> nodeI python -m torch.distributed.run --nnodes 2 --node-rank I ...` per node,
             what a user without rlaunch runs

Then global rank 3 (node2, local rank 1) is SIGKILLed (crash) or SIGSTOPped (hang), or (quiet) falls asleep in
Python forever at step 30 while its peers wait in all_reduce (examples/train.py --hang-at-step; rlaunch with
default health settings: its progress-aware hang rule, not stall_timeout), and from that instant (quiet: from the
head seeing the last step):
  detected   rlaunch: the first fatal event reaches the head (on_event); torchrun: the first ssh client exits
  verdict    rlaunch: `up` returned its Outcome; torchrun: the last ssh client exited (the user's shell is back)
  gone       no process of the job (torchrun agents, ranks: any cmdline naming train.py) left on either node
Runs that do not get there within --cap seconds count as "> cap" (plain torchrun on a hang waits for the
process-group timeout, 600 s in examples/train.py: docs/facts.md). After a capped run the bench continues the stopped
rank and SIGKILLs what is left by PID, inside the simulated node's own PID namespace (only this bench runs there).

BENCH_VERBOSE=1 prints rlaunch's event timeline of each run (seconds from the signal) to stderr.

Usage (root, after scripts/setup.sh):
  .venv/bin/python bench/health.py [--reps 3] [--stall-timeout 10] [--cap 60] [--cases crash,hang] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import benchmarks_md  # noqa: E402
from e2e_helpers import wait_for, worker_pid  # noqa: E402
from simnodes import SimCluster  # noqa: E402

from cluster.inventory import Inventory, from_mapping  # noqa: E402
from launcher import lifecycle, records  # noqa: E402

TRAIN = str(ROOT / "examples" / "train.py")
TRAIN_ARGS = ["--steps", "100000", "--sleep", "0.05"]
VICTIM_NODE, VICTIM_LOCAL_RANK = "node2", 1  # global rank 3
SIGNALS = {"crash": signal.SIGKILL, "hang": signal.SIGSTOP, "quiet": None}
QUIET_STEP = 30  # rank 3 sleeps forever before this step's all_reduce
QUIET_ARGS = ["--hang-at-step", str(QUIET_STEP), "--hang-rank", "3"]
QUIET_TARGET_S = 90.0  # issue 14: a quiescent hang ends the job within 90 s with default settings
POLL_S = 0.05  # resolution of the "gone" and "ssh exited" figures
STEPS_BEFORE_FAULT = 10  # training must really be running (all-reduces flowing) before the fault
START_TIMEOUT_S = 180.0  # 6 Python processes importing torch on 2 shared cores
VERBOSE = bool(os.environ.get("BENCH_VERBOSE"))
MARK_BEGIN = "<!-- health:begin (bench/health.py rewrites this section) -->"
MARK_END = "<!-- health:end -->"


@dataclass
class Trial:
    """Seconds after the signal; None = not within the cap."""

    detected: float | None
    verdict: float | None
    gone: float | None
    named: bool | None = None  # rlaunch only: the root cause is node2 (rank 3 or the node itself)
    startup: float | None = None  # rlaunch only: from up() to the first training step seen at the head
    summary: str = ""  # rlaunch only: the Outcome's one-line verdict
    load: float = field(default_factory=lambda: os.getloadavg()[0])


# --------------------------------------------------------------------------------------------- node processes
def job_pids(sim: SimCluster, node: str) -> list[int]:
    """The job's processes on a node: torchrun agents and ranks (both name train.py on their command line)."""
    return [pid for pid, cmd in sim.node_pids(node) if "train.py" in cmd]


def all_gone(sim: SimCluster) -> bool:
    return not any(job_pids(sim, node.name) for node in sim.nodes)


def force_clean(sim: SimCluster) -> None:
    """After a capped run: continue and SIGKILL what is left, by PID, inside the bench's own node namespaces."""
    for node in sim.nodes:
        for pid in job_pids(sim, node.name):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    break
    wait_for(lambda: all_gone(sim), 30, "the job's processes to die after SIGKILL")


def all_ranks_up(sim: SimCluster) -> bool:
    return all(worker_pid(sim, node.name, local) for node in sim.nodes for local in (0, 1))


def inject(sim: SimCluster, case: str, steps_seen: Callable[[], list[float]] | None = None) -> float:
    """Send the fault and return its instant; for "quiet" the job hangs by itself: the last step's arrival."""
    if case == "quiet":
        assert steps_seen is not None
        wait_for(lambda: len(steps_seen()) >= QUIET_STEP - 1, START_TIMEOUT_S, f"step {QUIET_STEP - 1}")
        return steps_seen()[QUIET_STEP - 2]
    pid = worker_pid(sim, VICTIM_NODE, VICTIM_LOCAL_RANK)
    if pid is None:
        raise SystemExit(f"rank {VICTIM_LOCAL_RANK} on {VICTIM_NODE} vanished before the fault")
    t0 = time.time()
    os.kill(pid, SIGNALS[case])
    return t0


# ------------------------------------------------------------------------------------------------ rlaunch
def trial_inventory(sim: SimCluster, case: str, stall_timeout: float) -> Inventory:
    """The job both rlaunch trials (foreground and detached) run, so that they differ only in who holds the run."""
    data = sim.inventory_dict(
        job={
            "kind": "torchrun",
            "script": TRAIN,
            "args": TRAIN_ARGS + (QUIET_ARGS if case == "quiet" else []),
            "nproc_per_node": 2,
            "timeout": 120,
        },
        master={"port": "auto"},
        health={"heartbeat_timeout": 5, "grace": 2, "stall_timeout": stall_timeout},
    )
    if case == "quiet":
        data.pop("health", None)  # every health setting at its default
    return from_mapping(data)


def rlaunch_trial(sim: SimCluster, case: str, stall_timeout: float, cap: float) -> Trial:
    inv = trial_inventory(sim, case, stall_timeout)
    steps: list[float] = []
    first_fatal: list[float] = []
    timeline: list[tuple[float, dict[str, Any]]] = []
    returned: dict[str, Any] = {}

    def on_event(event: dict[str, Any]) -> None:
        timeline.append((time.time(), event))
        if event.get("severity") == "fatal" and not first_fatal:
            first_fatal.append(time.time())  # arrival at the head, not the node's own timestamp

    def run() -> None:
        try:
            returned["outcome"] = lifecycle.up(
                inv,
                force=True,
                on_event=on_event,
                on_line=lambda host, rank, text: (
                    steps.append(time.time()) if text.startswith("step=") else None
                ),
            )[1]
        except Exception as exc:  # reported below; the bench must not hang on a dead thread
            returned["error"] = exc
        returned["at"] = time.time()

    thread = threading.Thread(target=run, name="rlaunch-up", daemon=True)
    started = time.time()
    thread.start()
    wait_for(lambda: "at" in returned or (all_ranks_up(sim) and len(steps) >= STEPS_BEFORE_FAULT),
             START_TIMEOUT_S, "rlaunch's job to train")  # fmt: skip
    if "at" in returned:
        raise SystemExit(f"rlaunch ended before the fault: {returned}")
    startup = steps[0] - started
    t0 = inject(sim, case, lambda: steps)
    gone = poll_until(lambda: all_gone(sim), t0, cap)
    thread.join(timeout=max(1.0, t0 + cap - time.time()))
    if thread.is_alive():
        force_clean(sim)
        thread.join(timeout=60)
    if "error" in returned:
        print(f"rlaunch up raised: {returned['error']!r}", file=sys.stderr)
    outcome = returned.get("outcome")
    root = (outcome.root_cause or {}) if outcome is not None else {}
    named = root.get("node") == VICTIM_NODE and root.get("rank") in (3, None)
    verdict = returned["at"] - t0 if "at" in returned and returned["at"] - t0 <= cap else None
    detected = first_fatal[0] - t0 if first_fatal else None
    if gone is None:
        force_clean(sim)
    if VERBOSE:
        for at, event in timeline:
            print(
                f"  {at - t0:+7.2f} {event.get('kind')} {event.get('severity')} {event.get('node')} "
                f"{str(event.get('text'))[:100]}",
                file=sys.stderr,
            )
    summary = outcome.summary if outcome is not None else repr(returned.get("error"))
    return Trial(detected, verdict, gone, named, startup, summary)


def rlaunch_detached_trial(sim: SimCluster, case: str, stall_timeout: float, cap: float) -> Trial:
    """`up --detach`: nobody holds a terminal; the run's supervisor (launcher/supervise.py) must reach the same
    verdict and teardown as a foreground `up`. The verdict time is when the run record says it failed."""
    started = time.time()
    run_id, _ = lifecycle.up(trial_inventory(sim, case, stall_timeout), detach=True, force=True)
    record = records.RunRecord.open(run_id)

    def steps_seen() -> list[float]:
        path = record.log_path("node1")
        text = path.read_text(errors="replace") if path.is_file() else ""
        return [time.time()] * text.count("step=")

    wait_for(lambda: all_ranks_up(sim) and len(steps_seen()) >= STEPS_BEFORE_FAULT, START_TIMEOUT_S,
             "the detached job to train")  # fmt: skip
    startup = time.time() - started
    t0 = inject(sim, case, steps_seen)
    gone = poll_until(lambda: all_gone(sim), t0, cap)
    ended = poll_until(lambda: record.read_state().get("state") not in ("starting", "running"), t0, cap)
    state = record.read_state()
    if gone is None or ended is None:
        lifecycle.down(run_id)
        force_clean(sim)
    outcomes = sorted(record.root.glob("outcome-*.json"))
    root = json.loads(outcomes[-1].read_text()).get("root_cause") or {} if outcomes else {}
    named = root.get("node") == VICTIM_NODE and root.get("rank") in (3, None)
    return Trial(None, ended, gone, named, startup, str(state.get("summary") or state.get("reason") or ""))


def poll_until(done: Callable[[], bool], t0: float, cap: float) -> float | None:
    """Seconds from t0 until done() holds, polled every POLL_S; None past the cap."""
    while time.time() - t0 <= cap:
        if done():
            return time.time() - t0
        time.sleep(POLL_S)
    return None


# ----------------------------------------------------------------------------------------- plain torchrun
def torchrun_trial(sim: SimCluster, case: str, cap: float, logs: Path) -> Trial:
    port = random.randint(20000, 40000)  # each node has its own network namespace: only node1's port matters
    clients: list[subprocess.Popen[bytes]] = []
    out_files = []
    try:
        for rank, node in enumerate(sim.nodes):
            remote = [
                "env", "OMP_NUM_THREADS=1",  # as rlaunch sets it on simulated nodes (docs/facts.md)
                sys.executable, "-m", "torch.distributed.run",
                "--nnodes=2", f"--node-rank={rank}", "--nproc-per-node=2",
                f"--master-addr={sim.nodes[0].name}", f"--master-port={port}", "--max-restarts=0",
                TRAIN, *TRAIN_ARGS, *(QUIET_ARGS if case == "quiet" else []),
            ]  # fmt: skip
            out = open(logs / f"torchrun-{node.name}.log", "wb")  # noqa: SIM115 - handed to ssh
            out_files.append(out)
            clients.append(
                subprocess.Popen(
                    ["ssh", "-F", str(sim.ssh_config), node.name, shlex.join(remote)],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        master_log = logs / f"torchrun-{sim.nodes[0].name}.log"

        def training() -> bool:
            if any(c.poll() is not None for c in clients):
                raise SystemExit(f"plain torchrun ended before the fault: see {logs}")
            text = master_log.read_text(errors="replace")
            return all_ranks_up(sim) and text.count("step=") >= STEPS_BEFORE_FAULT

        wait_for(training, START_TIMEOUT_S, "plain torchrun's job to train")
        seen: list[float] = []

        def steps_seen() -> list[float]:
            count = master_log.read_text(errors="replace").count("step=")
            seen.extend([time.time()] * (count - len(seen)))
            return seen

        t0 = inject(sim, case, steps_seen)
        exits: list[float] = []  # seconds after t0 at which each ssh client was seen exited
        gone: float | None = None
        while time.time() - t0 <= cap:
            now = time.time() - t0
            finished = sum(c.poll() is not None for c in clients)
            exits += [now] * (finished - len(exits))
            if gone is None and all_gone(sim):
                gone = now
            if gone is not None and finished == len(clients):
                break
            time.sleep(POLL_S)
    finally:
        if not all_gone(sim):
            force_clean(sim)
        for client in clients:
            if client.poll() is None:
                client.kill()  # our own ssh client, by its Popen handle
            client.wait(30)
        for out in out_files:
            out.close()
    detected = exits[0] if exits else None
    verdict = exits[-1] if len(exits) == len(clients) else None
    return Trial(detected, verdict, gone)


# ------------------------------------------------------------------------------------------------- driver
def median_s(values: list[float | None]) -> float:
    """Median where a capped run (None) counts as infinitely slow."""
    return statistics.median([float("inf") if v is None else v for v in values])


def fmt(value: float, cap: float) -> str:
    return f"> {cap:g}" if value == float("inf") or value > cap else f"{value:.2f}"


def samples(values: list[float | None], cap: float) -> str:
    return " / ".join(f"> {cap:g}" if v is None else f"{v:.2f}" for v in values)


def table(
    results: dict[tuple[str, str], list[Trial]], cap: float, stall_timeout: float, quiet_cap: float = 150.0
) -> str:
    lines = [
        "| fault (rank 3 of 4) | launcher | detected (s) | verdict (s) | all job processes gone (s) "
        "| gone, each run (s) | root cause named | load avg (1 min) |",
        "|---|---|---:|---:|---:|---|---:|---:|",
    ]
    what = {
        "crash": "crash (SIGKILL)",
        "hang": f"hang (SIGSTOP), stall_timeout {stall_timeout:g} s",
        "quiet": "quiescent hang (rank asleep in Python, peers in all_reduce), default settings",
    }
    for (case, launcher), trials in results.items():
        c = quiet_cap if case == "quiet" else cap
        # Plain torchrun names nothing; a detached run has no terminal, so nothing is "detected" on the head
        # before the supervisor's verdict lands in the record.
        named = "-" if launcher == "torchrun" else f"{sum(bool(t.named) for t in trials)}/{len(trials)}"
        detected = "n/a" if launcher == "rlaunch-detached" else fmt(median_s([t.detected for t in trials]), c)
        loads = [t.load for t in trials]
        lines.append(
            f"| {what[case]} | {launcher} | {detected} "
            f"| {fmt(median_s([t.verdict for t in trials]), c)} | {fmt(median_s([t.gone for t in trials]), c)} "
            f"| {samples([t.gone for t in trials], c)} | {named} | {min(loads):.1f}–{max(loads):.1f} |"
        )
    return "\n".join(lines)


def verdict(
    results: dict[tuple[str, str], list[Trial]], cap: float, stall_timeout: float, quiet_cap: float = 150.0
) -> str:
    """The issue's targets (crash ≤ 2 s, hang ≤ stall_timeout + 2 s, to verdict and nothing left) vs this run."""
    parts = []
    for case, target in (("crash", 2.0), ("hang", stall_timeout + 2.0), ("quiet", QUIET_TARGET_S)):
        trials = results.get((case, "rlaunch"))
        if not trials:
            continue
        worst = median_s(
            [None if t.verdict is None or t.gone is None else max(t.verdict, t.gone) for t in trials]
        )
        met = "met" if worst <= target else "NOT met"
        shown = fmt(worst, quiet_cap if case == "quiet" else cap)
        parts.append(f"{case} ≤ {target:g} s: {met} (median {shown} s to verdict and nothing left)")
    misnamed = sorted({t.summary for trials in results.values() for t in trials if t.named is False})
    named_otherwise = "".join(f" Root cause named otherwise: {summary[:160]}." for summary in misnamed)
    return "Targets (rlaunch). " + "; ".join(parts) + "." + named_otherwise


def machine_notes(reps: int, cap: float, load_before: tuple[float, float, float], startup: float) -> str:
    import torch

    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return (
        f"Machine: {os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, Python {platform.python_version()}, "
        f"torch {torch.__version__} (gloo). Load average {load_before[0]:.1f} before / {os.getloadavg()[0]:.1f} "
        f"after; the machine is shared with other engineers' test runs, the 4 ranks and both nodes' agents run on "
        f"the same cores, and launchers are interleaved per repetition. Median of {reps} repetitions; a run that "
        f"did not get there within {cap:g} s counts as > {cap:g}. Times are from the signal to the head seeing it "
        f"(polled every {POLL_S * 1000:.0f} ms). rlaunch's first training step reached the head {startup:.0f} s "
        "after `up` (median): until a job's first line, health.startup_timeout applies (default: stall_timeout), so "
        "with the issue's example of 10 s set startup_timeout too, or the job is stopped before it trains."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    # The stall clock starts at launch and the first step comes ~30 s after `up` here (6 processes importing
    # torch on 2 shared cores): a stall_timeout of 10 s tears the job down before it trains.
    parser.add_argument("--stall-timeout", type=float, default=60.0, help="rlaunch's health.stall_timeout")
    parser.add_argument("--cap", type=float, default=60.0, help="seconds to wait for the job to end")
    parser.add_argument("--cases", default="crash,hang,quiet", help="comma-separated: crash, hang, quiet")
    parser.add_argument("--quiet-cap", type=float, default=150.0, help="the cap for the quiet case")
    parser.add_argument(
        "--launchers", default="rlaunch,torchrun", help="comma-separated: rlaunch, rlaunch-detached, torchrun"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args()
    # SIGTERM (a test's timeout, a CI cancel) unwinds like Ctrl-C, so SimCluster's `with` stops the nodes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cases = [c for c in args.cases.split(",") if c]
    launchers = [name for name in args.launchers.split(",") if name]
    if bad := set(cases) - set(SIGNALS) or set(launchers) - {"rlaunch", "rlaunch-detached", "torchrun"}:
        raise SystemExit(f"unknown case or launcher: {', '.join(sorted(bad))}")
    load_before = os.getloadavg()
    results: dict[tuple[str, str], list[Trial]] = {(c, name): [] for c in cases for name in launchers}
    with tempfile.TemporaryDirectory(prefix="rlaunch-bench-health-") as tmp:
        os.environ["RLAUNCH_HOME"] = str(Path(tmp) / "home")  # run records of this bench only
        with SimCluster(2) as sim:
            for rep in range(args.reps):
                for case in cases:
                    for name in launchers:
                        cap = args.quiet_cap if case == "quiet" else args.cap
                        if name == "rlaunch":
                            trial = rlaunch_trial(sim, case, args.stall_timeout, cap)
                        elif name == "rlaunch-detached":
                            trial = rlaunch_detached_trial(sim, case, args.stall_timeout, cap)
                        else:
                            trial = torchrun_trial(sim, case, cap, Path(tmp))
                        results[(case, name)].append(trial)
                        print(f"rep {rep + 1} {case:5} {name:8} {trial}", file=sys.stderr, flush=True)
    result = table(results, args.cap, args.stall_timeout, args.quiet_cap)
    startups = [t.startup for trials in results.values() for t in trials if t.startup is not None]
    notes = machine_notes(args.reps, args.cap, load_before, statistics.median(startups) if startups else 0.0)
    print(result)
    print(verdict(results, args.cap, args.stall_timeout, args.quiet_cap))
    print(notes)
    if not args.no_write:
        text = (
            "## Failure detection and teardown (bench/health.py)\n\n"
            f"{result}\n\n{verdict(results, args.cap, args.stall_timeout, args.quiet_cap)}\n\n{notes}"
        )
        benchmarks_md.write_section(MARK_BEGIN, MARK_END, text)


if __name__ == "__main__":
    main()
