"""One state vocabulary for a run, and the tables that map the guard's and the watcher's states into it.

The three state machines are distinct on purpose — the guard knows one node (launcher/node/protocol.py), the
Watcher knows the health of one attempt (launcher/health/watch.py; its words are in health/events.py), the run
record knows the whole run across attempts — but their words meet here, so `status`, `up` and the record never disagree about what "done" means
(TorchX's `AppState` with `is_terminal()` is the model: torchx/specs/api.py).
"""

from __future__ import annotations

from enum import Enum

from launcher.health.events import State as WatchState
from launcher.node import protocol


class RunState(str, Enum):
    PLANNED = "planned"  # the record exists (plan.json written); `up` has not claimed the nodes yet
    STARTING = "starting"  # planned, preflight and push under way
    RUNNING = "running"  # started on every node
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # the job failed (after its restarts), a guard died, or it could not start
    STOPPED = "stopped"  # stopped on request (down, Ctrl-C, SIGTERM)
    STOP_FAILED = "stop-failed"  # `down` could not reach or clean a node: processes may remain there
    ABANDONED = "abandoned"  # the foreground launcher died without settling its record

    def is_terminal(self) -> bool:
        return self in TERMINAL

    @classmethod
    def parse(cls, value: object) -> RunState | None:
        try:
            return cls(value)
        except ValueError:
            return None


TERMINAL = frozenset(
    {RunState.SUCCEEDED, RunState.FAILED, RunState.STOPPED, RunState.STOP_FAILED, RunState.ABANDONED}
)
ACTIVE = frozenset({RunState.STARTING, RunState.RUNNING})

# A node guard's final state → what it means for the run.
FROM_GUARD: dict[str, RunState] = {
    protocol.RUNNING: RunState.RUNNING,
    protocol.SUCCEEDED: RunState.SUCCEEDED,
    protocol.FAILED: RunState.FAILED,
    protocol.STOPPED: RunState.STOPPED,
    protocol.LOST_LAUNCHER: RunState.FAILED,
    protocol.GUARD_LOST: RunState.FAILED,
}

# The watcher's verdict on an attempt → the run's state once no restart follows.
FROM_WATCH: dict[WatchState, RunState] = {
    WatchState.STARTING: RunState.STARTING,
    WatchState.RUNNING: RunState.RUNNING,
    WatchState.STOPPING: RunState.RUNNING,
    WatchState.SUCCEEDED: RunState.SUCCEEDED,
    WatchState.FAILED: RunState.FAILED,
    WatchState.STOPPED: RunState.STOPPED,
}


def is_active(value: object) -> bool:
    """Whether a recorded state (a plain string from a run record) still claims its nodes."""
    return RunState.parse(value) in ACTIVE
