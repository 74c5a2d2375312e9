"""Head-only simulation: thousands of node guards served by one thread, speaking the real protocol to a real head.

The head is the real one (Plan, Runner, GuardClient, Watcher, heartbeats, run record); only the layer under it is
simulated, at the transport (cluster/transport.py): `SimTransport.run` answers the push and the guard verbs the
way guard.py does (protocol.reply_of reads them), and `SimTransport.start` starts a guard on the channel that follows
it (`start-follow`: the K_STARTED record first) and hands out followers whose records (launcher/node/protocol.py:
procs about once a second, edge activity summaries, node 0's healthy lines, the exit record) come from one thread
for every node, and whose `try_write` is where each node receives its heartbeats.
So what the head spends per node (CPU to start, CPU per second while following, memory, threads, descriptors)
is measured without any node's CPU, and the heartbeat delivery latency is seen from the nodes' side.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cluster.inventory import from_mapping  # noqa: E402
from cluster.transport import Endpoint, ExitCallback, LineCallback, RemoteProcess, Result, Transport  # noqa: E402
from launcher.node import protocol  # noqa: E402

TICK_S = 0.1


@dataclass
class SimNode:
    host: str
    index: int
    nproc: int
    on_line: LineCallback | None = None
    started: float = 0.0
    next_record: float = 0.0
    offset: int = 0
    step: int = 0
    beats: list[float] = field(default_factory=list)
    ended: bool = False
    final: dict[str, Any] | None = None


class SimFollower(RemoteProcess):
    def __init__(self, node: SimNode):
        self.host = node.host
        self.node = node

    def try_write(self, data: bytes) -> bool:
        if data.strip() == protocol.HEARTBEAT.encode():
            self.node.beats.append(time.monotonic())
        return True

    def write(self, data: bytes) -> None:
        self.try_write(data)

    def close_stdin(self) -> None: ...

    def poll(self) -> int | None:
        return 0 if self.node.ended else None

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = time.monotonic() + (timeout or 0)
        while not self.node.ended and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.poll()

    def close(self) -> None:
        self.node.ended = True


class SimGuards:
    """Every node's guard and follower, served by one thread (its CPU is measured apart from the head's)."""

    def __init__(self, hosts: Sequence[str], nproc: int, run_for: float):
        self.nodes = {h: SimNode(h, i, nproc) for i, h in enumerate(hosts)}
        self.run_for = run_for
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="sim-guards", daemon=True)
        self.lock = threading.Lock()

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=10)

    def cpu(self) -> float:
        """CPU seconds the simulated nodes spent making their records (not the head's handling of them, which
        runs in this thread too, as it runs in a follower's reader thread with SSH)."""
        return self.gen_cpu

    gen_cpu = 0.0

    def _serve(self) -> None:
        while not self._stop.wait(TICK_S):
            now = time.time()
            with self.lock:
                live = [n for n in self.nodes.values() if n.on_line is not None and not n.ended]
            for node in live:
                if now >= node.next_record:
                    t0 = time.thread_time()
                    lines = self._records(node, now)
                    self.gen_cpu += time.thread_time() - t0
                    assert node.on_line is not None
                    for line in lines:
                        node.on_line("stdout", line)
                    if node.final is not None:
                        node.ended = True  # after the exit record was delivered, as a follower ends

    def _records(self, node: SimNode, now: float) -> list[str]:
        out: list[str] = []
        node.next_record = now + 1.0
        if node.final is None and now - node.started >= self.run_for:
            node.final = {
                "state": protocol.SUCCEEDED,
                "exit_code": 0,
                "signal": None,
                "started_at": node.started,
                "ended_at": now,
            }
        if node.final is not None:
            out.append(json.dumps({"k": protocol.K_EXIT, "t": now, "state": node.final}))
            return out
        node.step += 1
        text = f"[default0]:step={node.step} loss={1.0 / node.step:.4f}"
        node.offset += len(text) + 1
        if node.index == 0:  # the shown rank's healthy lines, as edge forwarding sends them
            out.append(
                json.dumps({"k": protocol.K_LINE, "t": now, "off": node.offset, "text": text, "f": None})
            )
        out.append(
            json.dumps(
                {
                    "k": protocol.K_ACTIVITY,
                    "t": now,
                    "off": node.offset,
                    "lines": {str(r): 1 for r in range(node.nproc)},
                    "progress": {str(r): now for r in range(node.nproc)},
                }
            )
        )
        procs = [
            {"pid": 1000 + r, "state": "S", "rank": r, "cpu": node.step * 0.9, "io": node.step * 4096.0}
            for r in range(node.nproc)
        ]
        out.append(json.dumps({"k": protocol.K_PROCS, "t": now, "procs": procs}))
        return out

    def reply(self, host: str, argv: Sequence[str]) -> dict[str, Any]:
        node = self.nodes[host]
        verb = next((a for a in argv if a in protocol.VERBS), None)
        if verb is None:  # the push (push.py) or another node script: it answers ok
            return {"ok": True}
        if verb == protocol.STATUS:
            state = (node.final or {}).get("state", protocol.RUNNING)
            return {"state": state, "alive": node.final is None, "descendants": []}
        if verb == protocol.STOP:
            if node.final is None:
                node.final = {"state": protocol.STOPPED, "exit_code": None, "signal": 15, "started_at": node.started,
                              "ended_at": time.time(), "remaining": []}  # fmt: skip
            return {**node.final, "remaining": []}
        return {"error": f"unknown verb {verb}"}


class SimTransport(Transport):
    """A transport whose nodes are SimGuards: the layer under the head, simulated."""

    name = "sim"

    def __init__(self, sim: SimGuards, max_parallel: int = 64):
        super().__init__({h: Endpoint(h, "127.0.0.1") for h in sim.nodes}, max_parallel)
        self.sim = sim

    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        reply = self.sim.reply(host, argv)
        return Result(host, 0 if "error" not in reply else 1, json.dumps(reply) + "\n")

    def _start(
        self, host: str, argv: Sequence[str], on_line: LineCallback, on_exit: ExitCallback | None
    ) -> RemoteProcess:
        node = self.sim.nodes[host]
        with self.sim.lock:
            node.on_line = on_line
        # start-follow: the guard starts its job, then reports on the channel it follows on
        if protocol.START_FOLLOW in argv:
            node.started = time.time()
            started = {"guard_pid": 100000 + node.index, "job_pid": 200000 + node.index}
            on_line("stdout", json.dumps({"k": protocol.K_STARTED, "t": node.started, **started}))
        return SimFollower(node)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def inventory(n: int, nproc: int, workdir: str) -> Any:
    return from_mapping(
        {
            "cluster": "headsim",
            "transport": "ssh",
            "nodes": [{"host": f"n{i:05d}", "address": "127.0.0.1", "gpus": 0} for i in range(n)],
            "python": sys.executable,
            "workdir": workdir,
            "job": {"kind": "command", "command": ["true"], "nproc_per_node": nproc},
            "health": {"stall_timeout": 600, "heartbeat_timeout": 15, "first_heartbeat_timeout": 120},
        }
    )


def run_head(n: int, *, nproc: int = 8, follow_s: float = 30.0) -> dict[str, float]:
    """One head-only run at n nodes: start, follow for follow_s, let every node succeed; the head's costs."""
    from launcher import records
    from launcher.guardctl import heartbeat_interval
    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    with tempfile.TemporaryDirectory(prefix="rlaunch-headsim-") as tmp:
        os.environ["RLAUNCH_HOME"] = os.path.join(tmp, "home")
        rss0, fds0, threads0 = rss_mib(), fds(), threading.active_count()
        inv = inventory(n, nproc, os.path.join(tmp, "work"))
        sim = SimGuards([nd.host for nd in inv.nodes], nproc, follow_s)
        transport = SimTransport(sim, max_parallel=inv.ssh.max_parallel)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
        record = records.RunRecord.create(plan.run_id, plan.to_json())
        runner = Runner(plan, transport, record)
        runner.launch()  # preflight + push, then each guard started on the channel that follows it
        start_cpu, start_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        sim.start()
        samples: list[tuple[float, float, float]] = []  # (monotonic, process cpu, sim cpu)
        peak = {"rss": 0.0, "fds": 0, "threads": 0}
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.5):
                samples.append((time.monotonic(), time.process_time(), sim.cpu()))
                peak["rss"] = max(peak["rss"], rss_mib())
                peak["fds"] = max(peak["fds"], fds())
                peak["threads"] = max(peak["threads"], threading.active_count())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        outcome = runner.watch()
        done.set()
        sampler.join()
        sim.stop()
        record.close()
        # The steady window: from 3 s after the start to 2 s before the nodes finish.
        window = [s for s in samples if samples[0][0] + 3 <= s[0] <= samples[0][0] + follow_s - 2]
        if len(window) >= 2:
            (t_a, cpu_a, sim_a), (t_b, cpu_b, sim_b) = window[0], window[-1]
            head_cps = ((cpu_b - cpu_a) - (sim_b - sim_a)) / (t_b - t_a)
        else:
            head_cps = float("nan")
        every = heartbeat_interval(float(plan.health["heartbeat_timeout"]))
        late = [
            b - a - every
            for node in sim.nodes.values()
            for a, b in zip(node.beats, node.beats[1:], strict=False)
        ]
        late.sort()
        p99 = late[int(0.99 * (len(late) - 1))] if late else float("nan")
        beaten = sum(1 for node in sim.nodes.values() if node.beats)
        return {
            "nodes": n,
            "ok": float(outcome.code == 0),
            "summary": outcome.summary,
            "start_wall_s": start_wall,
            "start_cpu_ms_per_node": 1000 * start_cpu / n,
            "follow_cpu_core": head_cps,
            "follow_cpu_ms_per_node_s": 1000 * head_cps / n,
            "rss_mib": peak["rss"],
            "rss_mib_per_node": (peak["rss"] - rss0) / n,
            "threads": peak["threads"] - threads0,
            "fds": peak["fds"] - fds0,
            "hb_late_p99_s": p99,
            "hb_late_max_s": late[-1] if late else float("nan"),
            "hb_late_median_s": statistics.median(late) if late else float("nan"),
            "nodes_beaten": beaten,
            "hb_interval_s": every,
            "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,4000")
    parser.add_argument("--follow", type=float, default=30.0)
    parser.add_argument("--nproc", type=int, default=8)
    args = parser.parse_args(argv)
    for n in (int(s) for s in args.sizes.split(",")):
        print(json.dumps(run_head(n, nproc=args.nproc, follow_s=args.follow)), flush=True)


if __name__ == "__main__":
    main(shlex.split(os.environ.get("HEADSIM_ARGS", "")) or None)
