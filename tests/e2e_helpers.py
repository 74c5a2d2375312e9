"""What the end-to-end tests share: waiting with a deadline, limits that follow the machine's load, and reading
the simulated nodes' process tables.

Tests distrust the launcher: "nothing left" is read from each node's /proc, never from rlaunch's own report.

Every deadline, stall limit and start-up limit an end-to-end test sets goes through `scaled(seconds)`: the
seconds an idle machine needs, stretched by `slowdown()` when the machine is busier than its cores (CI runs
files side by side on pytest-xdist workers; on the dev machine other sessions' tests run beside them). A limit
only bounds how long a failing test takes to fail; a passing test never waits for one, so stretching them costs
nothing when the test is green and removes failures that were only the machine being slow (11 of 1519 tests
failed that way with 4 workers on 2 cores, BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# DeepSpeed's JIT-built ops (deepspeed_shm_comm: ~24 s to build), one cache per interpreter path, kept between
# sessions. Its build.ninja names the include paths of the python that built it (sys.prefix, a checkout's .venv
# link), so one cache shared by checkouts at different paths was rebuilt by each in turn; a builder killed
# half-way (a test's teardown, a timeout) left torch's FileBaton `lock` file behind and every later DeepSpeed
# start waited on it forever (torch/utils/file_baton.py: no owner, no expiry; seen here: 13 min of a full run).
TORCH_EXTENSIONS = ROOT / ".cache" / "torch_extensions" / hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]
STALE_JIT_LOCK_S = 600.0  # a build takes ~24 s on an idle machine: a lock this old has no builder left


def clear_stale_jit_locks(root: Path = TORCH_EXTENSIONS, older_than: float = STALE_JIT_LOCK_S) -> list[Path]:
    """Remove FileBaton locks under `root` older than `older_than` seconds (their builder died); returns them."""
    removed = []
    for lock in root.glob("*/lock") if root.is_dir() else []:
        with contextlib.suppress(OSError):
            if time.time() - lock.stat().st_mtime > older_than:
                lock.unlink()
                removed.append(lock)
    return removed


MAX_SLOWDOWN = 6.0  # a 60 s stall limit becomes at most 6 min: under pytest-timeout's 600 s per test


def free_port() -> int:
    """A loopback port free right now, outside torchrun's 29500 and `auto`'s 29500-30499 that other workers' jobs
    bind: a local-transport test that leaves `master.port` at its default is refused by preflight ("master port
    29500 is already in use") whenever another file's torchrun runs beside it (seen in CI, turn 13)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def slowdown() -> float:
    """How much slower than an idle machine this one runs now, at least 1: RLAUNCH_TEST_SLOWDOWN when set (CI can
    pin it), else the larger of the 1-minute load average and the pytest-xdist worker count (its workers load
    the machine before the load average has caught up), each per usable core; at most MAX_SLOWDOWN."""
    pinned = os.environ.get("RLAUNCH_TEST_SLOWDOWN")
    if pinned:
        return min(MAX_SLOWDOWN, max(1.0, float(pinned)))
    cores = len(os.sched_getaffinity(0)) or 1
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return min(MAX_SLOWDOWN, max(1.0, os.getloadavg()[0] / cores, workers / cores))


def scaled(seconds: float) -> float:
    """`seconds` (what an idle machine needs, with a margin) for this machine now: see slowdown()."""
    return seconds * slowdown()


# The health limits a loaded machine overruns: silence before the first line (imports on starved cores), between
# lines, before a hang counts, and the heartbeat timeout: the beats have their own thread (launcher/guardctl.py),
# but at a load of 20 on 2 cores a head process got no core for 4-5 s and its guards tore the run down ("the guard
# lost our heartbeat ... the head stalled"; make test with 4 workers beside other sessions). Tests that wait for a
# guard to notice a lost head read the inventory's own value (a detached run's guards must outlive 2x of it).
HEALTH_LIMITS = ("stall_timeout", "startup_timeout", "hang_floor", "heartbeat_timeout")
# The heartbeat timeout also has to outlast a surge that comes after the test started, not only the load it started
# under: a head and its nodes' followers starved by a neighbour's burst (the 64-node scale test on the other worker:
# load 22 on 2 cores) went 12.6 s without a beat reaching the guard, at a timeout scaled to 7.4 s from the load at
# the start (make test, turn 8: two runs torn down as "the head stalled"). So it is scaled by at least this factor.
# Tests of a lost head read the inventory's own value (a detached run's guards must outlive 2x of it).
HEARTBEAT_SURGE = 4.0


def scaled_limit(key: str, value: float) -> float:
    """One health limit for this machine now: scaled(value), the heartbeat timeout by at least HEARTBEAT_SURGE."""
    if key == "heartbeat_timeout":
        return value * max(slowdown(), HEARTBEAT_SURGE)
    return scaled(value)


def health(**limits: float) -> dict[str, float]:
    """An inventory's `health` mapping with its time limits scaled (grace and the rest as given)."""
    return {key: scaled_limit(key, value) if key in HEALTH_LIMITS else value for key, value in limits.items()}


def scaled_inventory(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of an inventory mapping whose health limits and job timeout are scaled (see slowdown())."""
    out = dict(data)
    if isinstance(out.get("health"), dict):
        out["health"] = health(**out["health"])
    if isinstance(out.get("job"), dict) and out["job"].get("timeout"):
        out["job"] = {**out["job"], "timeout": scaled(out["job"]["timeout"])}
    return out


def scaled_model(inv: Any) -> Any:
    """The same for a loaded Inventory (cluster.inventory): health limits and the job's timeout scaled."""
    changes = {
        k: scaled_limit(k, v) for k in HEALTH_LIMITS if (v := getattr(inv.health, k, None)) is not None
    }
    update: dict[str, Any] = {"health": inv.health.model_copy(update=changes)}
    if getattr(inv.job, "timeout", None):
        update["job"] = inv.job.model_copy(update={"timeout": scaled(inv.job.timeout)})
    return inv.model_copy(update=update)


def fail_args(rank: int) -> list[str]:
    """examples/train.py arguments: 8 steps, a checkpoint every 2, global rank `rank` SIGKILLed at step 5."""
    return ["--steps", "8", "--ckpt-every", "2", "--fail-at-step", "5", "--fail-rank", str(rank)]


def crash_loop_inventory(tmp: Path, restart: dict[str, Any], *, cluster: str, python: str) -> dict[str, Any]:
    """Two simulated nodes x 1 rank on the local transport running examples/train.py with a checkpoint every 2
    steps and rank 1 SIGKILLed at step 5 of every attempt (resumed ones too): the restart policy's job
    (tests/test_e2e_restart_policy.py, bench/restart_policy.py). Its limits are scaled()."""
    return scaled_inventory(
        {
            "cluster": cluster,
            "transport": "local",
            "nodes": [
                {"host": "sim-node0", "address": "127.0.0.1", "gpus": 0},
                {"host": "sim-node1", "address": "127.0.0.1", "gpus": 0},
            ],
            "master": {"port": "auto"},
            "workdir": str(tmp / "work"),
            "python": python,
            "profile": "cpu",
            "job": {
                "kind": "torchrun",
                "script": str(ROOT / "examples" / "train.py"),
                "args": [*fail_args(rank=1), "--fail-always"],
                "nproc_per_node": 1,
                "checkpoint_dir": str(tmp / "ckpt"),
                "timeout": 60,
            },
            "health": {"stall_timeout": 60, "heartbeat_timeout": 10},
            "restart": restart,
        }
    )


def rlaunch(
    *args: str, home: Path | None = None, timeout: float = 60.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`rlaunch ARGS` (python -m launcher.cli, this checkout) to completion, output captured; RLAUNCH_HOME=`home`
    when given, `env` on top of this process's environment; `timeout` as an idle machine needs it (scaled())."""
    extra = {"RLAUNCH_HOME": str(home)} if home is not None else {}
    return subprocess.run(
        [sys.executable, "-m", "launcher.cli", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=scaled(timeout), env={**os.environ, **extra, **(env or {})},
    )  # fmt: skip


def processes_of_run(run_id: str) -> list[int]:
    """PIDs of every process on this machine whose environment carries the run's id (the plan puts
    RLAUNCH_RUN_ID into every job process): the local transport's "nothing left" check."""
    marker = f"RLAUNCH_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def push_guard_bundle(rundir: Path) -> list[str]:
    """Copy what a push leaves in a node's run directory (protocol.GUARD_BUNDLE: the node scripts and the health
    rules) into `rundir`, from this checkout; returns the file names."""
    from launcher.node import protocol
    from launcher.plan import rules_index

    for name in protocol.GUARD_BUNDLE:
        if name == protocol.RULES_INDEX_FILE:  # written by the head for each push, not a file of the package
            (rundir / name).write_bytes(rules_index() or b"")
            continue
        home = "health" if name in protocol.HEALTH_FILES else "node"
        shutil.copy(ROOT / "launcher" / home / name, rundir / name)
    return list(protocol.GUARD_BUNDLE)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, result: dict | None = None) -> Any:
    """Poll until `predicate()` is truthy and return its value; fail naming `what` after `timeout` seconds (as
    an idle machine needs them: scaled()), or at once when `result` (a background `up`'s result holder) shows
    that the run already ended."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result is not None and "out" in result:
            raise AssertionError(f"the run ended while waiting for {what}: {result['out'][1]}")
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def job_pids(cluster: Any, node: str) -> list[tuple[int, str]]:
    """(pid, command line) of every process on a simulated node but its sshd."""
    return [(pid, cmd) for pid, cmd in cluster.node_pids(node) if "sshd" not in cmd]


def assert_nothing_left(cluster: Any, timeout: float = 30.0, nodes: Iterable[str] | None = None) -> None:
    """Every (or each named) node's process table holds nothing but sshd within `timeout` seconds."""
    for name in nodes if nodes is not None else [n.name for n in cluster.nodes]:
        wait_for(lambda n=name: not job_pids(cluster, n), timeout, f"no job processes on {name}")


def running_everywhere(cluster: Any, nodes: Iterable[str], marker: str) -> bool:
    """Whether a process whose command line holds `marker` runs on each of `nodes`."""
    return all(any(marker in cmd for _, cmd in job_pids(cluster, n)) for n in nodes)


def worker_pid(cluster: Any, node: str, local_rank: int, marker: str = "train.py") -> int | None:
    """A rank (not its torchrun agent) on a node, found by LOCAL_RANK in its environment."""
    for pid, cmd in cluster.node_pids(node):
        if marker not in cmd or "torch.distributed.run" in cmd:
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"LOCAL_RANK={local_rank}".encode() in environ:
            return pid
    return None
