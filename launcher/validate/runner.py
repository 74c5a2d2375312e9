"""Run one validation workload (launcher/node/probe.py or allreduce.py) on some nodes of the user's cluster.

Each workload becomes its own inventory (same ssh, nodes, python, env and workdir as the user's; `job.kind:
torchrun` with the node script pushed by the plan) and goes through `lifecycle.up`, so validation exercises the
very preflight/push/guard/watch/teardown path real jobs take, and each workload leaves its own run record.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from cluster.inventory import Inventory, from_mapping
from launcher import lifecycle, records
from launcher.errors import BadInput, ExitCode, LaunchError
from launcher.validate.checks import Record, parse_allreduce, parse_probe

# Probe and all-reduce runs are seconds long; a hung rendezvous (a node cut off from the master) must end in
# a verdict well before the 10 min process-group default.
DEFAULT_STALL_TIMEOUT = 120.0
PG_TIMEOUT_S = 120
# Before a workload's first line: python + torch imports and torchrun's agent rendezvous (a node that cannot reach
# the master hangs there, printing only c10d retries), so not much more than the stall timeout.
STARTUP_EXTRA_S = 30.0


def node_script_path(name: str) -> str:
    """Head-node path of a node workload; the plan reads it and pushes it like a user's script."""
    return str(resources.files("launcher.node").joinpath(name))


@dataclass
class WorkloadResult:
    """What one workload run produced. `infra` holds host → reason when it could not even start there."""

    name: str
    hosts: list[str]
    code: int
    summary: str
    run_id: str | None = None
    lines: list[str] = field(default_factory=list)
    infra: dict[str, str] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)  # host → transport failure kind (never reached)

    @property
    def ok(self) -> bool:
        return self.code == ExitCode.OK

    @property
    def probe(self) -> list[Record]:
        return parse_probe(self.lines)

    @property
    def allreduce(self) -> list[Record]:
        return parse_allreduce(self.lines)

    @property
    def record_dir(self) -> Path | None:
        return records.home() / "runs" / self.run_id if self.run_id else None

    def why(self) -> str:
        """The run's own summary, plus the last stderr-ish line a failed rank left (probe errors say why)."""
        if self.ok:
            return self.summary
        hints = [line for line in self.lines if line.startswith("probe:") or "Error" in line]
        return self.summary + (f"; last error: {hints[-1][:200]}" if hints else "")


def _run_id(name: str) -> str:
    # lifecycle.up refuses an existing record; parallel workloads started in the same second need distinct ids.
    return f"{records.new_run_id()}-{name}-{secrets.token_hex(2)}"


def workload_inventory(
    base: Inventory,
    hosts: Sequence[str],
    script: str,
    args: Sequence[str],
    *,
    nproc: int,
    env: Mapping[str, str] | None = None,
    stall_timeout: float = DEFAULT_STALL_TIMEOUT,
    checkpoint_dir: str | None = None,
    max_restarts: int = 0,
) -> Inventory:
    """The user's inventory narrowed to `hosts` (master = first of them) running a node script."""
    data: dict[str, Any] = base.model_dump(mode="json", exclude={"base_dir", "source", "job", "restart"})
    wanted = list(hosts)
    by_host = {n["host"]: n for n in data["nodes"]}
    data["nodes"] = [by_host[h] for h in wanted]
    data["master"] = {"node": wanted[0], "port": "auto"}
    data["env"] = {"RLAUNCH_PG_TIMEOUT": str(PG_TIMEOUT_S), **data.get("env", {}), **(env or {})}
    data["job"] = {
        "kind": "torchrun",
        "script": node_script_path(script),
        "args": list(args),
        "nproc_per_node": nproc,
        "timeout": PG_TIMEOUT_S,
    }
    # The stall clock starts at the workload's first line (printed before the rendezvous); until then, imports
    # on a busy node may take a while.
    data["health"] = {
        **data.get("health", {}),
        "stall_timeout": stall_timeout,
        "startup_timeout": stall_timeout + STARTUP_EXTRA_S,
    }
    if checkpoint_dir:
        data["job"]["checkpoint_dir"] = checkpoint_dir
    data["restart"] = {"max_restarts": max_restarts, "backoff": 0}
    return from_mapping(data, source=f"{base.source} (validate: {script})", base_dir=base.base_dir)


class _Collector:
    """Every output line, per attempt (the run loop announces each attempt through `on_attempt`)."""

    def __init__(self) -> None:
        self.attempts: list[list[str]] = [[]]
        self._lock = threading.Lock()

    @property
    def lines(self) -> list[str]:
        return [line for attempt in self.attempts for line in attempt]

    def __call__(self, host: str, rank: int | None, text: str) -> None:
        with self._lock:
            self.attempts[-1].append(text)

    def on_attempt(self, attempt: int) -> None:
        with self._lock:
            while len(self.attempts) <= attempt:
                self.attempts.append([])


def run_workload(
    base: Inventory, name: str, hosts: Sequence[str], script: str, args: Sequence[str], **options: Any
) -> WorkloadResult:
    """Run a node script under torchrun on `hosts`, quietly; every output line is kept for the checks (options:
    those of `workload_inventory`).

    A BadInput (the nodes are busy with another run) propagates: that is the user's call."""
    return run_attempts(base, name, hosts, script, args, **options)[-1]


def run_attempts(
    base: Inventory, name: str, hosts: Sequence[str], script: str, args: Sequence[str], **options: Any
) -> list[WorkloadResult]:
    """Like `run_workload`, through rlaunch's restart path (`restart.max_restarts`, resume from the latest complete
    checkpoint under `checkpoint_dir`): one result per attempt, the last being the run's outcome. Options: those
    of `workload_inventory` (nproc, env, stall_timeout, checkpoint_dir, max_restarts), defined there once."""
    inv = workload_inventory(base, hosts, script, args, **options)
    collect = _Collector()
    try:
        # ranks="all": every rank's lines reach the checks (the default forwards only the first node's rank 0).
        run_id, outcome = lifecycle.up(
            inv, on_line=collect, on_attempt=collect.on_attempt, run_id=_run_id(name), ranks="all"
        )
    except BadInput:
        raise  # the nodes are busy with another run, or the input cannot work: the user's call
    except LaunchError as exc:
        return [
            WorkloadResult(
                name, list(hosts), exc.code, str(exc), infra=dict(exc.failed), unreachable=dict(exc.failures)
            )
        ]
    results = []
    record = records.RunRecord.open(run_id)
    for attempt, lines in enumerate(collect.attempts[:-1]):
        saved = json.loads(record.outcome_path(attempt).read_text())
        results.append(
            WorkloadResult(f"{name}#{attempt}", list(hosts), saved["code"], saved["summary"], run_id, lines)
        )
    results.append(
        WorkloadResult(name, list(hosts), outcome.code, outcome.summary, run_id, collect.attempts[-1])
    )
    return results
