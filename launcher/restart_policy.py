"""When a failed attempt is restarted, and when the run stops: the restart policy. Pure: no I/O, no clock.

`restart.max_restarts` alone restarts a deterministic bug as often as a flaky link, burning the allocation on a
job that fails at the same step every time. The policy decides from plain data — the attempts so far
(`AttemptResult`: exit code, root cause, the latest complete checkpoint after it, the highest step it printed)
and the times of this cluster's recent restarts from the node ledger — and names the rule that stopped the run.

The rules, checked in this order (the first that says stop is the one named on the final line):
1. `restart.never_on`: an exit code listed there ends the run at once (a job saying "do not retry me").
2. the no-progress breaker: `restart.no_progress` attempts in a row that did not get past the previous attempt's
   latest complete checkpoint (or, when no checkpoint was ever seen, its highest step) end the run with
   "no progress in N attempts". Attempt 0 never counts: it has no previous attempt.
3. the budget of the root cause's kind (`restart.budgets`, see `kind_of`): code errors 1, node faults 3 (a spare,
   when listed, takes the node's place), network 2, hangs 1, anything else 1. An exit code listed in
   `restart.on_exit_codes` (a job asking to be restarted, e.g. 75 EX_TEMPFAIL) is counted against no kind budget.
4. `restart.max_restarts`, the overall cap (default 0: never restart).
5. the restart-storm guard: `restart.storm.restarts` restarts of the same cluster (any run) within
   `restart.storm.window` seconds (default 5 in 30 min) refuse the next one — something is wrong with the
   cluster, not with this attempt.

Kinds follow the node ledger where they overlap (launcher/ledger.py `node_fault`: a lost node, a GPU fault, a
rank killed by a signal other than a teardown signal, an evicted straggler are the node's fault), and the
classifier's categories (launcher/health/rules.py `CATEGORIES`) otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from launcher import ledger
from launcher.errors import ExitCode

KINDS = ("code", "node", "network", "hang", "other")
KIND_NAMES = {
    "code": "code errors",
    "node": "node faults",
    "network": "network errors",
    "hang": "hangs",
    "other": "other failures",
}
DEFAULT_BUDGETS = {"code": 1, "node": 3, "network": 2, "hang": 1, "other": 1}
CODE_CATEGORIES = frozenset({"config", "version-mismatch", "oom", "divergence", "crash", "unclassified"})
NETWORK_CATEGORIES = frozenset({"network", "comm-error", "collective-timeout", "rendezvous"})
# torchrun's failure table names the worker's own exit code ("exitcode  : 75 (pid: 123)"; elastic/multiprocessing/
# errors/__init__.py _FAILURE_FORMAT_TEMPLATE) and its agent log "failed (exitcode: 75) local_rank: 0": the agent
# itself exits 1 whatever the worker's code was, so the worker's code is read from the line.
_WORKER_CODE = re.compile(r"exitcode\s*:?\s*(-?\d+)")


@dataclass(frozen=True)
class AttemptResult:
    """One finished attempt, as plain data (what outcome-N.json holds)."""

    attempt: int
    code: int
    root_cause: Mapping[str, Any] | None = None
    nodes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    checkpoint: str | None = None  # the latest complete checkpoint after the attempt ended
    max_step: int | None = None  # the highest step the attempt printed
    restarted: bool = False  # a restart followed it (false for the last one)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptResult:
        return cls(
            attempt=int(data.get("attempt") or 0),
            code=int(data.get("code") or 0),
            root_cause=data.get("root_cause"),
            nodes=data.get("nodes") or {},
            checkpoint=data.get("checkpoint"),
            max_step=data.get("max_step"),
            restarted=bool(data.get("restarted")),
        )


@dataclass(frozen=True)
class Decision:
    restart: bool
    rule: (
        str  # "restart", "succeeded", "stopped", "never_on", "no_progress", "budget", "max_restarts", "storm"
    )
    kind: str | None
    message: str  # the final line when the run stops; "restart N/M (kind)" otherwise
    exit_code: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def exit_code_of(root_cause: Mapping[str, Any] | None, nodes: Mapping[str, Mapping[str, Any]]) -> int | None:
    """The failing worker's exit code: the root cause's own (an exit event, or torchrun's failure line), else the
    exit code of the root cause's node. None when no process exited with one (a lost node, a hang)."""
    if root_cause:
        if root_cause.get("kind") == "exit" and root_cause.get("code") is not None:
            return int(root_cause["code"])
        if root_cause.get("kind") == "line" and (m := _WORKER_CODE.search(str(root_cause.get("text") or ""))):
            return int(m.group(1))
        node = nodes.get(str(root_cause.get("node")))
        if node and node.get("exit_code") is not None:
            return int(node["exit_code"])
    return None


def kind_of(root_cause: Mapping[str, Any] | None) -> str:
    """The budget a failure counts against (module docstring)."""
    if not root_cause:
        return "other"
    if ledger.node_fault(root_cause) or root_cause.get("kind") in ("lost", "gpu"):
        return "node"
    worker = (
        _WORKER_CODE.search(str(root_cause.get("text") or "")) if root_cause.get("kind") == "line" else None
    )
    if (root_cause.get("kind") == "exit" and root_cause.get("signal")) or (
        worker and worker.group(1)[0] == "-"
    ):
        # Killed by a signal (an OOM killer, a preemption, an operator; torchrun's "exitcode: -9"): no code bug,
        # so the node budget; the ledger strikes the node only with node-level evidence (ledger.node_fault), the
        # budget needs none.
        return "node"
    if root_cause.get("kind") in ("hang", "stall", "stopped"):
        return "hang"
    category = root_cause.get("category")
    if category in NETWORK_CATEGORIES:
        return "network"
    if category in CODE_CATEGORIES or root_cause.get("kind") == "exit":
        return "code"
    return "other"


@dataclass(frozen=True)
class Policy:
    max_restarts: int = 0
    budgets: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_BUDGETS))
    no_progress: int = 3  # 0: the breaker is off
    on_exit_codes: tuple[int, ...] = ()
    never_on: tuple[int, ...] = ()
    storm_restarts: int = 5
    storm_window: float = 1800.0

    @classmethod
    def from_config(cls, restart: Mapping[str, Any]) -> Policy:
        """From `restart:` as the inventory (or plan.json) holds it; keys an older record lacks get defaults."""
        storm = restart.get("storm") or {}
        return cls(
            max_restarts=int(restart.get("max_restarts") or 0),
            budgets={**DEFAULT_BUDGETS, **{k: int(v) for k, v in (restart.get("budgets") or {}).items()}},
            no_progress=int(restart.get("no_progress", 3)),
            on_exit_codes=tuple(int(c) for c in restart.get("on_exit_codes") or ()),
            never_on=tuple(int(c) for c in restart.get("never_on") or ()),
            storm_restarts=int(storm.get("restarts", 5)),
            storm_window=float(storm.get("window", 1800.0)),
        )

    def describe(self) -> str:
        """One line for `plan`."""
        if self.max_restarts == 0:
            return "restart policy: never restart (restart.max_restarts 0)"
        budgets = ", ".join(f"{k} {self.budgets[k]}" for k in KINDS)
        parts = [f"up to {self.max_restarts} restarts", f"per kind: {budgets}"]
        parts.append(
            f"stop after {self.no_progress} attempts in a row without progress"
            if self.no_progress
            else "no-progress breaker off"
        )
        if self.on_exit_codes:
            parts.append(f"always on exit codes {', '.join(map(str, self.on_exit_codes))}")
        if self.never_on:
            parts.append(f"never on exit codes {', '.join(map(str, self.never_on))}")
        parts.append(
            f"no more than {self.storm_restarts} restarts of the cluster in {self.storm_window / 60:g} min"
        )
        return "restart policy: " + "; ".join(parts)

    def used(self, history: Sequence[AttemptResult]) -> dict[str, int]:
        """Restarts already made, per kind (an `on_exit_codes` restart counts against none)."""
        out = dict.fromkeys(KINDS, 0)
        for a in history:
            if a.restarted and exit_code_of(a.root_cause, a.nodes) not in self.on_exit_codes:
                out[kind_of(a.root_cause)] += 1
        return out

    def budget_left(self, history: Sequence[AttemptResult]) -> dict[str, Any]:
        """What `status` shows: restarts left overall and per kind."""
        used = self.used(history)
        restarts = sum(1 for a in history if a.restarted)
        return {
            "restarts": restarts,
            "restarts_left": max(0, self.max_restarts - restarts),
            "by_kind": {k: max(0, self.budgets[k] - used[k]) for k in KINDS},
            "no_progress_in_a_row": no_progress_streak(history),
        }

    def decide(
        self,
        history: Sequence[AttemptResult],
        storm_times: Sequence[float] = (),
        now: float = 0.0,
        *,
        stop_requested: bool = False,
    ) -> Decision:
        """Restart after the last attempt of `history`, or stop, and why. `storm_times`: when this cluster's
        recent restarts happened (node ledger, any run), on the same clock as `now`. `stop_requested`: someone ran
        `rlaunch stop` (docs/preemption.md): the job's exit is the answer to that, never restarted."""
        last = history[-1]
        if last.code == ExitCode.OK:
            return Decision(False, "succeeded", None, "succeeded")
        if last.code == ExitCode.INTERRUPTED:  # stopped on request (`rlaunch down`, Ctrl-C): never restarted
            return Decision(False, "stopped", None, "stopped on request")
        kind = kind_of(last.root_cause)
        code = exit_code_of(last.root_cause, last.nodes)
        if stop_requested:
            return Decision(False, "stop_requested", kind, "not restarting: the run was asked to stop", code)
        restarts = sum(1 for a in history[:-1] if a.restarted)
        stop = self._stop_rule(history, kind, code, restarts, storm_times, now)
        if stop is not None:
            rule, why = stop
            return Decision(False, rule, kind, f"not restarting: {why}", code)
        return Decision(
            True, "restart", kind, f"restart {restarts + 1}/{self.max_restarts} ({KIND_NAMES[kind]})", code
        )

    def _stop_rule(
        self,
        history: Sequence[AttemptResult],
        kind: str,
        code: int | None,
        restarts: int,
        storm_times: Sequence[float],
        now: float,
    ) -> tuple[str, str] | None:
        if code is not None and code in self.never_on:
            return "never_on", f"exit code {code} is in restart.never_on"
        if self.max_restarts == 0:
            return "max_restarts", "restart.max_restarts is 0"
        if self.no_progress and no_progress_streak(history) >= self.no_progress:
            return "no_progress", f"no progress in {self.no_progress} attempts ({_stuck_at(history[-1])})"
        asked = code is not None and code in self.on_exit_codes
        if not asked:
            used = self.used(history[:-1])[kind]
            if used >= self.budgets[kind]:
                return (
                    "budget",
                    f"the budget for {KIND_NAMES[kind]} is used up "
                    f"({used} of restart.budgets.{kind} {self.budgets[kind]})",
                )
        if restarts >= self.max_restarts:
            return "max_restarts", f"restart.max_restarts {self.max_restarts} reached"
        recent = [t for t in storm_times if now - t <= self.storm_window]
        if len(recent) >= self.storm_restarts:
            return (
                "storm",
                f"restart storm: {len(recent)} restarts of this cluster in the last "
                f"{self.storm_window / 60:g} min (restart.storm); check the cluster before starting again",
            )
        return None


def progressed(previous: AttemptResult, current: AttemptResult) -> bool:
    """Did `current` get past `previous`? A newer complete checkpoint is progress; when neither attempt left a
    checkpoint, a higher step is. A resumed attempt that ran on past its checkpoint but died before saving again
    made no progress that a restart keeps."""
    if current.checkpoint is not None or previous.checkpoint is not None:
        return current.checkpoint is not None and current.checkpoint != previous.checkpoint
    return (current.max_step or 0) > (previous.max_step or 0)


def no_progress_streak(history: Sequence[AttemptResult]) -> int:
    """How many of the last attempts in a row got nowhere past their predecessor."""
    streak = 0
    for i in range(len(history) - 1, 0, -1):
        if progressed(history[i - 1], history[i]):
            break
        streak += 1
    return streak


def _stuck_at(last: AttemptResult) -> str:
    if last.checkpoint:
        return f"each ended without a checkpoint newer than {last.checkpoint}"
    if last.max_step:
        return f"none got past step {last.max_step}"
    return "none reached a step"


def budget_line(left: Mapping[str, Any]) -> str:
    """`status`: restarts left overall and per kind, and the rule that stopped the run, if one did."""
    by_kind = left.get("by_kind") or {}  # state.json is written with sorted keys: show them in KINDS order
    kinds = ", ".join(
        f"{k} {by_kind[k]}" for k in (*KINDS, *sorted(set(by_kind) - set(KINDS))) if k in by_kind
    )
    line = (
        f"restarts: {left.get('restarts', 0)} made, {left.get('restarts_left', 0)} left (per kind: {kinds})"
    )
    if left.get("no_progress_in_a_row"):
        line += f"; {left['no_progress_in_a_row']} attempt(s) in a row without progress"
    stopped = left.get("stopped_by")
    if stopped:
        line += f"; stopped: {stopped.get('message', '').removeprefix('not restarting: ')}"
    return line


def storm_times(entries: Sequence[Mapping[str, Any]], cluster: str) -> list[float]:
    """When this cluster's recorded restarts happened (ledger `restart` entries)."""
    return [
        float(e.get("time") or 0)
        for e in entries
        if e.get("kind") == ledger.RESTART and e.get("cluster") == cluster
    ]
