"""The load-aware limits every end-to-end test uses (tests/e2e_helpers.py): pinned by RLAUNCH_TEST_SLOWDOWN,
bounded, and applied to the limits a loaded machine overruns only."""

from __future__ import annotations

import pytest
from e2e_helpers import HEARTBEAT_SURGE, MAX_SLOWDOWN, scaled, scaled_inventory, slowdown


def test_the_slowdown_is_pinned_by_the_environment_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLAUNCH_TEST_SLOWDOWN", "3")
    assert slowdown() == 3.0 and scaled(60) == 180.0
    monkeypatch.setenv("RLAUNCH_TEST_SLOWDOWN", "0.2")
    assert slowdown() == 1.0  # never shorter than an idle machine needs
    monkeypatch.setenv("RLAUNCH_TEST_SLOWDOWN", "100")
    assert slowdown() == MAX_SLOWDOWN
    monkeypatch.delenv("RLAUNCH_TEST_SLOWDOWN")
    assert 1.0 <= slowdown() <= MAX_SLOWDOWN


def test_inventories_get_their_stall_and_startup_limits_and_job_timeout_scaled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RLAUNCH_TEST_SLOWDOWN", "2")
    data = {
        "job": {"kind": "torchrun", "timeout": 60},
        "health": {"stall_timeout": 60, "startup_timeout": 90, "heartbeat_timeout": 5, "grace": 2},
    }
    out = scaled_inventory(data)
    assert out["health"] == {
        "stall_timeout": 120,
        "startup_timeout": 180,
        "heartbeat_timeout": 5 * HEARTBEAT_SURGE,  # at least the surge factor, not only today's load (2)
        "grace": 2,
    }
    assert out["job"] == {"kind": "torchrun", "timeout": 120}
    monkeypatch.setenv("RLAUNCH_TEST_SLOWDOWN", str(HEARTBEAT_SURGE + 1))
    assert scaled_inventory(data)["health"]["heartbeat_timeout"] == 5 * (HEARTBEAT_SURGE + 1)
    assert data["health"]["stall_timeout"] == 60  # a copy: the caller's mapping is left alone
