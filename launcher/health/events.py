"""The watcher's words: the one record it emits (the runner appends it to ``events.jsonl``) and the states of its
verdict on an attempt (launcher/states.py maps them into the run's). No I/O here, and nothing heavy to import:
`status`, `down` and the run record read these words without building the rule table."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from enum import Enum
from typing import Any

KINDS = ("line", "exit", "stall", "stopped", "lost", "gpu", "info", "hang", "straggler")
SEVERITIES = ("fatal", "warning", "info")


class State(str, Enum):
    """The watcher's verdict on an attempt (launcher/health/watch.py)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class Event:
    """Something worth recording about one node (and maybe one rank) at one time.

    ``time`` is seconds on the head node's clock (whatever clock the runner feeds the watcher);
    ``line`` is the 1-based line number in the node's log when the event came from a log line.
    ``code``/``signal`` are set for "exit" events; ``rule`` names the classifier rule that matched.
    """

    time: float
    node: str
    rank: int | None
    kind: str
    category: str | None
    severity: str
    text: str
    line: int | None = None
    code: int | None = None
    signal: str | None = None
    rule: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown event kind {self.kind!r}; expected one of {KINDS}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; expected one of {SEVERITIES}")

    @property
    def is_fatal(self) -> bool:
        return self.severity == "fatal"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        """One compact JSON object (one line of events.jsonl)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        known = {f.name for f in fields(cls)}
        # Ignore keys written by a newer rlaunch so old readers keep working.
        return cls(**{key: value for key, value in data.items() if key in known})

    @classmethod
    def from_json(cls, text: str) -> Event:
        return cls.from_dict(json.loads(text))
