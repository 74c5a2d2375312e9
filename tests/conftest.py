"""Shared fixtures: simulated SSH nodes (tests/simnodes.py), and how `make test` spreads files over workers.

`sim3` is one 3-node cluster for the whole session (one per xdist worker): tests that break nodes (kill,
partition, re-key) must use `sim_cluster(n)` instead, which stops its clusters when the test ends.

Parallel runs (`make test`: pytest-xdist, `--dist loadgroup`; https://pytest-xdist.readthedocs.io/en/stable/
distribution.html): every test gets an `xdist_group`, by default its file, so the tests of one file run in order
on one worker as they would alone, and different files run side by side (most end-to-end time is waiting on
sockets and subprocesses, not CPU). Files that start the one-node Slurm (they import tests/slurm_fixture.py) share
the group "slurm": two slurmds for this host's one node name must not run at once. A file may name its own group
with `pytestmark = pytest.mark.xdist_group("name")` for any other resource only one test may hold at a time.
Simulated nodes need no group: simnodes.py picks names and addresses under a machine-wide lock. The tests of a
file in SPREAD are independent of each other and each get their own group.
The known-slow groups are handed out first (SLOW_FIRST), so that the last one to finish starts early.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # `import simnodes` from tests and from bench/

import simnodes


def _require_simnodes() -> None:
    reason = simnodes.unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def sim3() -> Iterator[simnodes.SimCluster]:
    """Three simulated nodes (node1..node3), shared by the session; do not break them."""
    _require_simnodes()
    cluster = simnodes.SimCluster(3).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(autouse=True)
def _sim3_left_clean(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on the shared `sim3`, no job of it may hold the nodes for the next test: a test that failed
    half-way (its teardown never reached) would otherwise fail every later test on this worker with "node is
    busy". Leftovers are killed (by PID, inside the node's own PID namespace) and reported as a warning; tests
    still assert nothing-left themselves (tests/e2e_helpers.py)."""
    cluster = request.getfixturevalue("sim3") if "sim3" in request.fixturenames else None
    yield
    if cluster is None or not cluster.started:
        return
    left = {
        node.name: [p for p in cluster.node_pids(node.name) if "sshd" not in p[1]] for node in cluster.nodes
    }
    left = {name: procs for name, procs in left.items() if procs}
    for procs in left.values():
        for pid, _ in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if left:
        warnings.warn(
            f"{request.node.nodeid} left processes on sim3, killed: "
            + "; ".join(f"{name}: {', '.join(cmd[:60] for _, cmd in procs)}" for name, procs in left.items()),
            stacklevel=1,
        )


@pytest.fixture
def sim_cluster() -> Iterator[Callable[..., simnodes.SimCluster]]:
    """Factory: sim_cluster(n, **options) starts n fresh nodes, stopped when the test ends."""
    _require_simnodes()
    started: list[simnodes.SimCluster] = []

    def make(n: int, **options: object) -> simnodes.SimCluster:
        cluster = simnodes.SimCluster(n, **options)  # type: ignore[arg-type]
        started.append(cluster)
        return cluster.start()

    try:
        yield make
    finally:
        for cluster in started:
            cluster.stop()


SLURM_GROUP = "slurm"
# Groups (files) by their wall time in a serial run, slowest first (make test --durations); the rest follow in
# collection order. Only the order of hand-out depends on it, never which tests run.
SLOW_FIRST = (
    "test_validate_e2e",
    "test_llamafactory_e2e",
    "test_e2e_hang",
    "test_deepspeed_e2e",
    "test_probe",
    "test_e2e_local",
    "test_e2e_detach",
    "test_e2e_spares",
    "test_frtrace",
    "test_bench_smoke",
    "test_e2e_contract",
    "test_e2e_ssh",
    "test_e2e_health",
    SLURM_GROUP,
    "test_security",
    "test_goodput",
    "test_guard",
    "test_doctor",
)


# Files whose tests share nothing but `sim3` (one per worker) and their own tmp_path: each test is its own group,
# so one long file does not make the tail of the run. Only for files without module-scoped fixtures.
SPREAD = ("test_validate_e2e", "test_e2e_hang")


def _group_of(path: Path) -> str:
    return SLURM_GROUP if "slurm_fixture" in path.read_text(errors="replace") else path.stem


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test without an explicit `xdist_group` its file's group (before xdist reads the marks); under
    `--dist loadgroup` also put the known-slow groups first (with `--no-loadscope-reorder`, xdist hands groups
    out in collection order; by default it orders them by test count, which puts a file of a few long tests
    behind many quick ones and makes it the tail of the run)."""
    groups: dict[Path, str] = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is None and getattr(item, "module", None) is not None:
            path = Path(item.module.__file__)
            if path not in groups:
                groups[path] = _group_of(path)
            group = groups[path]
            if group in SPREAD:
                group = f"{group}.{getattr(item, 'originalname', item.name)}"
            item.add_marker(pytest.mark.xdist_group(group))
    # A worker sees `--dist loadgroup` as option.loadgroup (xdist/remote.py resets its option.dist to "no").
    if getattr(config.option, "loadgroup", False) or config.getoption("dist", "no") == "loadgroup":
        rank = {name: i for i, name in enumerate(SLOW_FIRST)}

        def order(item: pytest.Item) -> int:
            mark = item.get_closest_marker("xdist_group")
            name = (mark.args[0] if mark.args else mark.kwargs.get("name", "")) if mark else ""
            return rank.get(name.partition(".")[0], len(rank))

        items.sort(key=order)  # stable: within a group, and among the rest, collection order stays
