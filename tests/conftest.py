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
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # `import simnodes` from tests and from bench/

import simnodes
from e2e_helpers import clear_stale_jit_locks, scaled, wait_for


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the tests' subprocesses as it would from a terminal, however the run was started.

    A command started in the background by a non-interactive shell (`make test &`, `nohup ... &`, a CI runner's
    script) inherits SIGINT and SIGQUIT ignored (POSIX: "Shell Execution Environment"; bash(1), "COMMAND
    EXECUTION ENVIRONMENT"), an ignored signal stays ignored across exec, and a Python started that way installs
    no KeyboardInterrupt handler (https://docs.python.org/3/library/signal.html: "SIGINT is translated into a
    KeyboardInterrupt exception if the parent process has not changed it"). Every `rlaunch attach` a test
    started then ignored the test's SIGINT: the detach tests failed only in runs started in the background, and
    the xdist controller itself did not stop on SIGINT. Restored here, before any worker or subprocess starts."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _require_simnodes() -> None:
    reason = simnodes.unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def _no_stale_jit_locks() -> None:
    """A DeepSpeed op build killed in an earlier session must not make this one wait forever (e2e_helpers)."""
    for lock in clear_stale_jit_locks():
        warnings.warn(f"removed a stale DeepSpeed JIT build lock: {lock}", stacklevel=1)


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
    # sim3 asked for during the test (another fixture's getfixturevalue) counts too
    if cluster is None and "sim3" in request.fixturenames:
        cluster = request.getfixturevalue("sim3")
    if cluster is None or not cluster.started:
        return

    def leftovers() -> dict[str, list[tuple[int, str]]]:
        found = {
            node.name: [p for p in cluster.node_pids(node.name) if "sshd" not in p[1]]
            for node in cluster.nodes
        }
        return {name: procs for name, procs in found.items() if procs}

    left = leftovers()
    # A process still exiting (its command line already empty, its parent reaping it a moment later) is not left.
    if left:
        deadline = time.monotonic() + 5
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = leftovers()
    for procs in left.values():
        for pid, _ in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if left:  # gone before the next test starts: a dying guard still holds its node lock ("node is busy")
        pids = [pid for procs in left.values() for pid, _ in procs]
        wait_for(lambda: not any(map(_alive, pids)), 10, "the killed leftovers to be gone")
        warnings.warn(
            f"{request.node.nodeid} left processes on sim3, killed: "
            + "; ".join(f"{name}: {', '.join(cmd[:60] for _, cmd in procs)}" for name, procs in left.items()),
            stacklevel=1,
        )


def _alive(pid: int) -> bool:
    """Running, or dying but not yet a zombie (a zombie holds no locks)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def run_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RLAUNCH_HOME in the test's own tmp_path: run records, the node ledger, gc and `rlaunch status --all` of
    one test never see another's (xdist workers run side by side). Files that run the launcher take it for every
    test: `pytestmark = pytest.mark.usefixtures("run_home")`."""
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


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
    "test_scale",  # one test of ~300 s: handed out late (turn 13, not in this list) it was the run's last 5 min
    "test_llamafactory_e2e",
    "test_validate_e2e",
    "test_probe",
    "test_e2e_hang",
    "test_deepspeed_e2e",
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


# Files whose tests share nothing but `sim3` (one per worker), their own tmp_path and module fixtures that are cheap
# to make again on another worker (a temporary directory, the tiny model of tests/assets.py): each test is its own
# group, so one long file does not make the tail of the run. Not for module fixtures that are runs themselves
# (test_probe's reference runs): spreading would run them once per worker.
SPREAD = ("test_validate_e2e", "test_e2e_hang", "test_llamafactory_e2e", "test_deepspeed_e2e")


def _group_of(path: Path) -> str:
    return SLURM_GROUP if "slurm_fixture" in path.read_text(errors="replace") else path.stem


def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Refuse a `--dist loadgroup` run whose groups did not take (the controller sees each worker's node ids): with
    pytest 9.2 and pytest-xdist 3.8 the "@group" suffix xdist writes into each node id is dropped
    (pytest-dev/pytest-xdist#1386), so tests of one file, and the Slurm group's files, ran on several workers at once
    and three workers sat waiting on the Slurm machine lock (make test, turn 13). pyproject.toml pins pytest below
    9.2; this says so if a newer one comes back."""
    if node.config.getvalue("dist") != "loadgroup":
        return
    lost = [i for i in ids if "@" not in i.rpartition("]")[2]]
    if lost:
        pytest.exit(
            f"pytest-xdist did not group {len(lost)} tests (first: {lost[0]}): pytest {pytest.__version__} drops "
            "xdist's group suffix (pytest-dev/pytest-xdist#1386); run scripts/setup.sh to install pytest<9.2",
            returncode=4,
        )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test without an explicit `xdist_group` its file's group (before xdist reads the marks); under
    `--dist loadgroup` also put the known-slow groups first (with `--no-loadscope-reorder`, xdist hands groups
    out in collection order; by default it orders them by test count, which puts a file of a few long tests
    behind many quick ones and makes it the tail of the run)."""
    groups: dict[Path, str] = {}
    # pytest-timeout's per-test limit (addopts: --timeout=600) follows the load like every e2e limit (a test whose
    # own bounds are scaled() must not be cut off by an unscaled one above them), up to twice: a test that hangs
    # must still fail inside CI's 90 minutes.
    per_test = float(config.getoption("timeout", 0) or 0)
    limit = pytest.mark.timeout(min(scaled(per_test), 2 * per_test)) if per_test > 0 else None
    for item in items:
        if limit is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(limit)
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
