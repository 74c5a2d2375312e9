"""Watcher CPU benchmark: what following N nodes' logs costs the head node.

In process, for each N in --nodes (no nodes started; the head's side exactly as `rlaunch up` runs it):
  a Runner built from a real Plan (N nodes × --ranks ranks, torchrun job) with its real watch() loop in a thread,
  and one feeder thread per node, as SSHTransport has one reader thread per follower channel, calling
  Runner._on_follow(host, "stdout", line) with the JSON records launcher/node/guard.py's `follow` emits:
  {"k": "line", ...} at --rate lines/s per rank (torchrun's "[defaultN]:" prefix; step, HF-Trainer dict,
  tqdm and logging lines), delivered every 0.1 s, and one {"k": "procs", ...} record per node per second.
  Head CPU = time.process_time() (all threads) over the feed window, minus a second pass whose feeders call a
  no-op (the feeders' own cost). Then a per-line breakdown of _on_follow's steps, to find hot spots.
Real (--real N, 0 to skip): SimCluster(N) and a chatty `command` job (one process per node printing the same
  lines for --ranks ranks) through lifecycle.up in this process; the launcher's CPU from psutil over a steady
  window. This adds what the in-process figure leaves out: paramiko's decryption and its reader threads.

Usage (root for --real, after scripts/setup.sh):
  .venv/bin/python bench/watcher_cpu.py [--nodes 8,64] [--seconds 10] [--rate 10] [--ranks 8] [--real 8] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import benchmarks_md  # noqa: E402
import psutil  # noqa: E402

from cluster.inventory import from_mapping  # noqa: E402
from cluster.transport import make_transport  # noqa: E402
from launcher import lifecycle, records  # noqa: E402
from launcher import plan as planning  # noqa: E402
from launcher.health import rules as rules_module  # noqa: E402
from launcher.health.classify import parse_rank_prefix  # noqa: E402
from launcher.health.rules import classify  # noqa: E402
from launcher.health.watch import Watcher  # noqa: E402
from launcher.node.edge import Forwarder  # noqa: E402
from launcher.run.attempt import Runner  # noqa: E402

TRAIN = str(ROOT / "examples" / "train.py")
TICK_S = 0.1  # a follower's lines reach the head in small bursts, as the guard polls out.log every 0.2 s
MARK_BEGIN = "<!-- watcher-cpu:begin (bench/watcher_cpu.py rewrites this section) -->"
MARK_END = "<!-- watcher-cpu:end -->"

# What chatty ranks print (after torchrun's prefix). None of these is classified: a healthy run.
TEMPLATES = (
    "step={n} loss={loss!r}",
    "{{'loss': {loss:.4f}, 'grad_norm': 0.8123, 'learning_rate': 4.99e-05, 'epoch': 0.{n}}}",
    " 12%|█▏        | {n}/1000 [00:30<03:40,  4.00it/s]",
    "[INFO|trainer.py:2414] 2025-11-30 09:19:37,203 >> Step {n}: saving model checkpoint to out/checkpoint-{n}",
    "[rank{g}]:[W1130 09:19:37.203000 13 torch/utils/data/dataloader.py:665] prefetch queue length {n}",
)


def rank_text(local: int, global_rank: int, n: int) -> str:
    body = TEMPLATES[n % len(TEMPLATES)].format(n=n, loss=1.0 / (n + 1), g=global_rank)
    return f"[default{local}]:{body}"


def procs_record(t: float, ranks: int) -> str:
    cmd = f"{sys.executable} -u /tmp/rlaunch/run/node/train.py --steps 100000 --sleep 0.05"[:200]
    procs = [{"pid": 100, "ppid": 1, "state": "S", "cmd": "python -m torch.distributed.run --nnodes=64 ..."}]
    procs += [{"pid": 101 + r, "ppid": 100, "state": "R" if r % 2 else "S", "cmd": cmd} for r in range(ranks)]
    return json.dumps({"k": "procs", "t": t, "procs": procs})


# ------------------------------------------------------------------------------------------- in process
def make_runner(nodes: int, ranks: int, home: Path) -> Runner:
    """A Runner over a real Plan; its transport is never used (no push/start/attach: followers are None)."""
    inv = from_mapping(
        {
            "cluster": f"bench{nodes}",
            "python": sys.executable,
            "nodes": [
                {"host": f"n{i:03d}", "address": f"10.0.{i // 250}.{i % 250 + 1}"} for i in range(nodes)
            ],
            "job": {"kind": "torchrun", "script": TRAIN, "nproc_per_node": ranks},
            "health": {"stall_timeout": 600},
        }
    )
    run_id = records.new_run_id()
    plan = planning.build_plan(inv, run_id=run_id, sources=planning.load_sources(inv), head_env={})
    record = records.RunRecord.create(run_id, plan.to_json(), base=home)
    return Runner(plan, make_transport(inv), record)


def batches_for(
    host: str, first_rank: int, ranks: int, rate: float, seconds: float, show: str | None = None
) -> list[list[str]]:
    """The JSON lines one node's follower delivers, tick by tick. `show` (edge forwarding, the default path now):
    the node-side Forwarder (launcher/node/edge.py) classifies every line here, while the batches are built (node
    CPU, outside the measured window), and only its records are delivered; None: every line (the path before)."""
    fwd = None if show is None else Forwarder(rules_module, show)
    base, offset, n = time.time(), 0, 0
    per_tick = max(1, round(rate * ranks * TICK_S))
    out: list[list[str]] = []
    for tick in range(round(seconds / TICK_S)):
        t = base + tick * TICK_S
        batch = []
        for _ in range(per_tick):
            local = n % ranks
            text = rank_text(local, first_rank + local, n // ranks)
            offset += len(text.encode()) + 1
            if fwd is None:
                batch.append(json.dumps({"k": "line", "t": t, "off": offset, "text": text}))
            else:
                batch += [json.dumps(record) for record in fwd.line(t, offset, text)]
            n += 1
        if tick % round(1 / TICK_S) == 0:
            batch.append(procs_record(t, ranks))
            summary = None if fwd is None else fwd.summary(t)
            if summary is not None:
                batch.append(json.dumps(summary))
        out.append(batch)
    return out


@dataclass
class Feed:
    cpu_s: float
    wall_s: float
    lines: int

    @property
    def cpu_per_wall(self) -> float:
        return self.cpu_s / self.wall_s

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.wall_s


def feed(
    feeds: dict[str, list[list[str]]],
    callback: Callable[[str, str, str], None],
    start: threading.Event,
    lines_offered: int = 0,
) -> Feed:
    """One thread per node delivers its batches every TICK_S (catching up without sleep when behind)."""
    done_at: list[float] = []

    def node_thread(host: str, batches: list[list[str]]) -> None:
        start.wait()
        due = time.monotonic()
        for batch in batches:
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            for line in batch:
                callback(host, "stdout", line)
            due += TICK_S
        done_at.append(time.monotonic())

    threads = [threading.Thread(target=node_thread, args=item, daemon=True) for item in feeds.items()]
    for thread in threads:
        thread.start()
    time.sleep(0.2)  # every feeder is parked on `start`
    cpu0, wall0 = time.process_time(), time.monotonic()
    start.set()
    for thread in threads:
        thread.join()
    lines = lines_offered or sum(
        1 for batches in feeds.values() for batch in batches for line in batch if '"k": "line"' in line
    )
    # The window is the feed's nominal length (the last burst is due one tick before its end), or longer if the
    # callbacks could not keep up.
    nominal = TICK_S * max(len(batches) for batches in feeds.values())
    return Feed(time.process_time() - cpu0, max(nominal, max(done_at) - wall0), lines)


def in_process(nodes: int, ranks: int, rate: float, seconds: float, home: Path, edge: bool) -> dict[str, Any]:
    runner = make_runner(nodes, ranks, home)
    feeds = {
        n.host: batches_for(
            n.host, n.first_rank, ranks, rate, seconds, (runner.show or {}).get(n.host) if edge else None
        )
        for n in runner.plan.nodes
    }
    offered = (
        round(seconds / TICK_S) * max(1, round(rate * ranks * TICK_S)) * nodes
    )  # lines printed, all paths
    idle = feed(feeds, lambda host, stream, line: None, threading.Event(), offered)
    watch_result: dict[str, Any] = {}
    watcher = threading.Thread(target=lambda: watch_result.update(outcome=runner.watch()), daemon=True)
    watcher.start()
    real = feed(feeds, runner._on_follow, threading.Event(), offered)
    for host in feeds:  # every node ends cleanly: the real watch loop returns
        exit_record = {"k": "exit", "t": time.time(), "state": {"state": "succeeded", "exit_code": 0}}
        runner._on_follow(host, "stdout", json.dumps(exit_record))
    watcher.join(timeout=30)
    runner.record.close()
    outcome = watch_result.get("outcome")
    if outcome is None or outcome.code != 0:
        raise SystemExit(f"{nodes} nodes: the watch loop did not end cleanly: {outcome}")
    target = nodes * ranks * rate
    return {
        "nodes": nodes,
        "path": "edge forwarding (now)" if edge else "every line to the head (before)",
        "target": target,
        "lines_per_s": real.lines_per_s,
        "cpu_per_wall": real.cpu_per_wall,
        "idle_per_wall": idle.cpu_per_wall,
        "net_us_per_line": 1e6 * max(0.0, real.cpu_s - idle.cpu_s) / real.lines,
        "behind": real.wall_s > seconds + 2 * TICK_S,
    }


def per_line_costs(ranks: int, home: Path, count: int = 20000) -> dict[str, float]:
    """µs per line of each step of _on_follow, single-threaded, on the same lines (best of 3)."""
    runner = make_runner(1, ranks, home)
    host = runner.plan.nodes[0].host
    lines = [line for batch in batches_for(host, 0, ranks, 10, count / (10 * ranks)) for line in batch]
    lines = [line for line in lines if '"k": "line"' in line][:count]
    records_ = [json.loads(line) for line in lines]
    texts = [rec["text"] for rec in records_]
    rests = [parse_rank_prefix(text)[1] for text in texts]
    watcher = Watcher({host: list(range(ranks))}, stall_timeout=600)
    steps: dict[str, Callable[[], object]] = {
        "json.loads": lambda: [json.loads(line) for line in lines],
        "parse_rank_prefix": lambda: [parse_rank_prefix(text) for text in texts],
        "classify (rules)": lambda: [classify(rest) for rest in rests],
        "RunRecord.append_log (write+flush)": lambda: [
            runner.record.append_log(host, text) for text in texts
        ],
        "Watcher.observe_line": lambda: [
            watcher.observe_line(rec["t"], host, 0, rest) for rec, rest in zip(records_, rests, strict=True)
        ],
        "Runner._on_follow (all of it)": lambda: [runner._on_follow(host, "stdout", line) for line in lines],
    }
    out = {}
    for name, step in steps.items():
        best = float("inf")
        for _ in range(3):
            cpu0 = time.process_time()
            step()
            best = min(best, time.process_time() - cpu0)
        out[name] = 1e6 * best / len(lines)
    runner.record.close()
    return out


# ------------------------------------------------------------------------------------------------ real
CHATTY = """
import sys, time
TEMPLATES = {templates!r}
seconds, ranks, rate = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
per_tick, n, end = max(1, round(rate * ranks * {tick})), 0, time.time() + seconds
while time.time() < end:
    out = []
    for _ in range(per_tick):
        local, step = n % ranks, n // ranks
        out.append("[default%d]:" % local + TEMPLATES[step % len(TEMPLATES)].format(n=step, loss=1.0 / (step + 1), g=local))
        n += 1
    sys.stdout.write("\\n".join(out) + "\\n")
    sys.stdout.flush()
    time.sleep({tick})
"""


def real_run(nodes: int, ranks: int, rate: float, seconds: float) -> dict[str, Any]:
    """`rlaunch up` in this process on SimCluster(nodes); the launcher's CPU over a steady window."""
    from simnodes import SimCluster

    window = max(3.0, seconds)
    code = CHATTY.format(templates=TEMPLATES, tick=TICK_S)
    lines: list[float] = []
    sample: dict[str, Any] = {}
    me = psutil.Process()

    def cpu() -> float:
        times = me.cpu_times()
        return times.user + times.system

    def measure() -> None:
        while not lines:
            time.sleep(0.05)
        time.sleep(1.0)  # past the first burst (follower start, out.log catch-up)
        sample.update(cpu0=cpu(), wall0=time.monotonic(), lines0=len(lines))
        time.sleep(window)
        sample.update(cpu1=cpu(), wall1=time.monotonic(), lines1=len(lines))

    with SimCluster(nodes) as sim:
        inv = from_mapping(
            sim.inventory_dict(
                job={
                    "kind": "command",
                    "command": [sys.executable, "-c", code, str(window + 3), str(ranks), str(rate)],
                    "nproc_per_node": ranks,
                },
                health={"stall_timeout": 600, "heartbeat_timeout": 5, "grace": 2},
            )
        )
        meter = threading.Thread(target=measure, daemon=True)
        meter.start()
        _, outcome = lifecycle.up(
            inv, force=True, on_line=lambda host, rank, text: lines.append(time.monotonic())
        )
        meter.join(timeout=10)
    if outcome.code != 0 or "cpu1" not in sample:
        raise SystemExit(f"real run on {nodes} nodes failed: {outcome.summary}")
    wall = sample["wall1"] - sample["wall0"]
    handled = sample["lines1"] - sample["lines0"]
    return {
        "nodes": nodes,
        "target": nodes * ranks * rate,
        "lines_per_s": handled / wall,
        "cpu_per_wall": (sample["cpu1"] - sample["cpu0"]) / wall,
        "us_per_line": 1e6 * (sample["cpu1"] - sample["cpu0"]) / max(1, handled),
    }


# ---------------------------------------------------------------------------------------------- report
def table(rows: list[dict[str, Any]], real: dict[str, Any] | None) -> str:
    lines = [
        "| nodes | setup | lines/s offered | lines/s printed and handled | head CPU s per wall s "
        "| of which feeders | CPU µs per printed line (net) | kept up |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['nodes']} | in process, {r['path']} | {r['target']:.0f} | {r['lines_per_s']:.0f} "
            f"| {r['cpu_per_wall']:.3f} | {r['idle_per_wall']:.3f} | {r['net_us_per_line']:.0f} "
            f"| {'no' if r['behind'] else 'yes'} |"
        )
    if real:
        lines.append(
            f"| {real['nodes']} | real: SimCluster, `lifecycle.up`, SSH followers (psutil) | {real['target']:.0f} "
            f"| {real['lines_per_s']:.0f} | {real['cpu_per_wall']:.3f} | - | {real['us_per_line']:.0f} "
            f"| {'yes' if real['lines_per_s'] >= 0.9 * real['target'] else 'no'} |"
        )
    return "\n".join(lines)


def cost_table(costs: dict[str, float]) -> str:
    lines = ["| step of `Runner._on_follow`, per line | CPU µs |", "|---|---:|"]
    lines += [f"| {name} | {us:.1f} |" for name, us in costs.items()]
    return "\n".join(lines)


def notes(args: argparse.Namespace, load_before: tuple[float, float, float]) -> str:
    return (
        f"Feed: {args.ranks} ranks per node × {args.rate:g} lines/s each for {args.seconds:g} s, in bursts every "
        f"{TICK_S:g} s, plus one procs record per node per second. Machine: {os.cpu_count()} CPUs, Linux "
        f"{platform.release()}, Python {platform.python_version()}. Load average {load_before[0]:.1f} before / "
        f'{os.getloadavg()[0]:.1f} after (shared with other engineers\' test runs). "of which feeders" is the '
        "same feed into a no-op callback (the bench's own threads, not the head's cost); \"net\" subtracts it. "
        "Before: every line crosses and is classified on the head (RLAUNCH_FORWARD_ALL=1). Now: each node's "
        "Forwarder (launcher/node/edge.py) classifies there (node CPU, spent building the batches, outside the "
        "window) and delivers flagged lines, the first node's rank 0 and one activity summary per node per second; "
        "µs per printed line divides the head's CPU by every line the ranks printed, forwarded or not. "
        "The real row includes paramiko's decryption and reader threads and the heartbeats, and runs next to the "
        "simulated nodes' guards and jobs on the same cores."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="8,64", help="comma-separated node counts (in process)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=10.0, help="lines per second per rank")
    parser.add_argument("--ranks", type=int, default=8, help="ranks per node")
    parser.add_argument(
        "--real", type=int, default=8, help="also run for real on N simulated nodes (0: skip)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args()
    # SIGTERM (a test's timeout, a CI cancel) unwinds like Ctrl-C, so SimCluster's `with` stops the nodes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rlaunch-bench-watcher-") as tmp:
        home = Path(tmp)
        os.environ["RLAUNCH_HOME"] = str(home / "home")  # run records of the real run
        rows = []
        for n in (int(s) for s in args.nodes.split(",") if s):
            for edge in (False, True):  # side by side in the same run
                os.environ.pop("RLAUNCH_FORWARD_ALL", None)
                if not edge:
                    os.environ["RLAUNCH_FORWARD_ALL"] = "1"
                rows.append(in_process(n, args.ranks, args.rate, args.seconds, home, edge))
                os.environ.pop("RLAUNCH_FORWARD_ALL", None)
                print(f"in process, {n} nodes: {rows[-1]}", file=sys.stderr, flush=True)
        costs = per_line_costs(args.ranks, home)
        real = real_run(args.real, args.ranks, args.rate, args.seconds) if args.real else None
        if real:
            print(f"real, {args.real} nodes: {real}", file=sys.stderr, flush=True)
    result, breakdown, text_notes = table(rows, real), cost_table(costs), notes(args, load_before)
    print(result, breakdown, text_notes, sep="\n\n")
    if not args.no_write:
        benchmarks_md.write_section(
            MARK_BEGIN,
            MARK_END,
            f"## Watcher CPU (bench/watcher_cpu.py)\n\n{result}\n\n{breakdown}\n\n{text_notes}",
        )


if __name__ == "__main__":
    main()
