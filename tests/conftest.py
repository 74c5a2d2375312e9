"""Shared fixtures: simulated SSH nodes (tests/simnodes.py).

`sim3` is one 3-node cluster for the whole session: tests that break nodes (kill, partition, re-key) must use
`sim_cluster(n)` instead, which stops its clusters when the test ends.
"""

from __future__ import annotations

import sys
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
