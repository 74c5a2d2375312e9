"""What the end-to-end tests share: waiting with a deadline and reading the simulated nodes' process tables.

Tests distrust the launcher: "nothing left" is read from each node's /proc, never from rlaunch's own report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, result: dict | None = None) -> Any:
    """Poll until `predicate()` is truthy and return its value; fail naming `what` after `timeout` seconds, or
    at once when `result` (a background `up`'s result holder) shows that the run already ended."""
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
