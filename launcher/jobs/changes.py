"""One change rlaunch makes to a key of the user's config, shown in `plan` as `key: before → after (why)`.

The user's LLaMA-Factory yaml and DeepSpeed json are the source of truth: anything rlaunch adds or changes in them
is one `Change`, listed in the plan's notes, so nothing is rewritten silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class _Unset:
    """A key the user's file does not have."""

    def __repr__(self) -> str:
        return "(unset)"


UNSET: Any = _Unset()


def show(value: Any) -> str:
    """A value as the user would write it in yaml/json: null, true, 900, "auto", a path."""
    if value is UNSET:
        return "(unset)"
    if isinstance(value, str):
        return value
    return json.dumps(value)


@dataclass(frozen=True)
class Change:
    where: str  # the file the key belongs to, as pushed: llamafactory.yaml, ds_config.json
    key: str
    before: Any
    after: Any
    why: str

    def __str__(self) -> str:
        return f"{self.where} {self.key}: {show(self.before)} → {show(self.after)} ({self.why})"
