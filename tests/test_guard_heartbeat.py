"""The guard's judgement of a lost head (launcher/node/daemon.py Guard.head_lost), on a real run directory with the
heartbeat file's mtime set by hand: before the first beat the guard waits first_heartbeat_timeout (start-up at
hundreds of nodes opens followers later than heartbeat_timeout after the first guard began: issue 23), after it
heartbeat_timeout, and the reason says which."""

from __future__ import annotations

import os
import time
from pathlib import Path

from launcher.node import rundir as rd
from launcher.node.daemon import Guard

JOB = {"argv": ["true"], "env": {}, "heartbeat_timeout": 15.0, "first_heartbeat_timeout": 120.0, "grace": 1}


def guard(tmp_path: Path, **job: float) -> Guard:
    g = Guard(str(tmp_path), {**JOB, **job})
    beat = rd.path_in(str(tmp_path), "heartbeat")
    rd.touch(beat)  # as spawn does, without starting a job
    g.spawn_beat = os.stat(beat).st_mtime
    return g


def age_heartbeat(tmp_path: Path, seconds: float, *, beat: bool = False) -> None:
    """The heartbeat file's mtime `seconds` in the past; with beat=True as a follower's beat left it (a new
    mtime, so no longer the spawn's)."""
    path = rd.path_in(str(tmp_path), "heartbeat")
    when = time.time() - seconds + (0.001 if beat else 0.0)
    os.utime(path, (when, when))


def spawned_ago(g: Guard, tmp_path: Path, seconds: float) -> None:
    """As if the guard had spawned `seconds` ago and no beat came since."""
    past = time.time() - seconds
    os.utime(rd.path_in(str(tmp_path), "heartbeat"), (past, past))
    g.spawn_beat = past


def test_before_the_first_beat_the_guard_waits_first_heartbeat_timeout(tmp_path: Path) -> None:
    g = guard(tmp_path)
    spawned_ago(g, tmp_path, 60)  # past heartbeat_timeout, within the first window: followers still opening
    assert g.head_lost() is None
    spawned_ago(g, tmp_path, 121)
    why = g.head_lost()
    assert why is not None and "no heartbeat at all" in why and "never followed" in why


def test_after_the_first_beat_heartbeat_timeout_applies(tmp_path: Path) -> None:
    g = guard(tmp_path)
    age_heartbeat(tmp_path, 10, beat=True)
    assert g.head_lost() is None
    age_heartbeat(tmp_path, 16, beat=True)
    why = g.head_lost()
    assert why is not None and "beats missed" in why and "timeout 15 s" in why


def test_the_first_window_is_never_shorter_than_heartbeat_timeout(tmp_path: Path) -> None:
    g = guard(tmp_path, first_heartbeat_timeout=5.0)
    spawned_ago(g, tmp_path, 10)
    assert g.head_lost() is None  # 10 s < heartbeat_timeout 15 s
    spawned_ago(g, tmp_path, 16)
    assert g.head_lost() is not None


def test_a_closed_head_connection_is_named_as_such(tmp_path: Path) -> None:
    g = guard(tmp_path)
    age_heartbeat(tmp_path, 20, beat=True)
    rd.touch(rd.path_in(str(tmp_path), rd.HEAD_CLOSED))
    why = g.head_lost()
    assert why is not None and "connection closed" in why


def test_a_detached_job_has_no_heartbeat_rule(tmp_path: Path) -> None:
    g = guard(tmp_path, heartbeat_timeout=0, first_heartbeat_timeout=0)
    past = time.time() - 10_000
    os.utime(rd.path_in(str(tmp_path), "heartbeat"), (past, past))
    assert g.head_lost() is None
