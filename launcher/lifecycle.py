"""The verbs behind `up`, `down`, `status` and `logs`: run records + plans + the Runner, with restarts.

Each function returns plain data (Outcome, dicts) for the CLI to render; printing of streamed lines goes through
the `on_line` callback so the same code serves the terminal, tests and validation.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.inventory import Inventory
from cluster.transport import Transport, make_transport
from launcher import plan as planning
from launcher import records
from launcher.run import (
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    LaunchError,
    LineSink,
    Outcome,
    Runner,
    node_script,
    show_specs,
)


@dataclass(frozen=True)
class GuardTarget:
    host: str
    python: str
    run_dir: str


def guard_all(
    transport: Transport, targets: list[GuardTarget], verb: str, *extra: str, timeout: float = 60
) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """Run `guard.py VERB RUN_DIR` on every target in parallel: host → (parsed JSON, error)."""
    by_host = {t.host: t for t in targets}
    group = transport.run_all(
        by_host,
        lambda h: [by_host[h].python, f"{by_host[h].run_dir}/guard.py", verb, by_host[h].run_dir, *extra],
        timeout=timeout,
    )
    out: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    for host, result in group.results.items():
        parsed = None
        with contextlib.suppress(ValueError, IndexError):
            parsed = json.loads(result.stdout.strip().splitlines()[-1])
        out[host] = (parsed, None if result.ok or (parsed and result.error is None) else result.why())
    return out


def targets_of(plan_json: Mapping[str, Any]) -> list[GuardTarget]:
    python_of = {n["host"]: n["argv"][0] for n in plan_json["nodes"]}
    return [
        GuardTarget(n["host"], n.get("python") or python_of[n["host"]], n["run_dir"])
        for n in plan_json["nodes"]
    ]


# ---------------------------------------------------------------------------------------------------------
# up


def check_lock(inv: Inventory, base: Any = None) -> str | None:
    """A running job on any of the same nodes (by this head's records) blocks `up`; returns its id."""
    hosts = {n.host for n in inv.nodes}
    for run_id in reversed(records.list_run_ids(base)):
        rec = records.RunRecord.open(run_id, base)
        try:
            state = rec.read_state()
        except (OSError, ValueError):
            continue
        if state.get("state") not in ("starting", "running"):
            continue
        if state.get("cluster") != inv.cluster or not hosts & set(state.get("hosts", [])):
            continue
        pid = state.get("launcher_pid")
        if not state.get("detached") and pid and not _pid_alive(int(pid)):
            rec.update_state(state="abandoned", reason="launcher died without cleaning up its record")
            continue
        return run_id
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def up(
    inv: Inventory,
    *,
    detach: bool = False,
    on_line: LineSink | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    head_env: Mapping[str, str] | None = None,
    force: bool = False,
    run_id: str | None = None,
    transport: Transport | None = None,
    doctor: bool = False,
    ranks: str | None = None,
) -> tuple[str, Outcome]:
    """Launch the inventory's job; with restarts per `restart:`. Returns (run id, outcome)."""
    say = on_status or (lambda text: None)
    head_env = os.environ if head_env is None else head_env
    if not force and (busy := check_lock(inv)):
        raise LaunchError(
            f"run {busy} is still running on these nodes; stop it with `rlaunch down {busy}` (or use --force)",
            code=2,
        )
    if detach and (transport.guard_attached if transport else inv.transport == "slurm"):
        raise LaunchError(
            "--detach is not possible with transport slurm: the job lives in the launcher's srun steps "
            "(submit `rlaunch up` itself with sbatch instead)",
            code=2,
        )
    run_id = run_id or records.new_run_id()
    sources = planning.load_sources(inv)
    plan = planning.build_plan(inv, run_id=run_id, sources=sources, head_env=head_env, detach=detach)
    try:
        show_specs(plan, ranks)
    except ValueError as exc:
        raise LaunchError(str(exc), code=2) from None
    record = records.RunRecord.create(run_id, plan.to_json())
    records.write_atomic(record.root / "inventory.json", inv.model_dump_json(indent=1))
    record.update_state(
        state="starting",
        cluster=inv.cluster,
        hosts=plan.hosts,
        detached=detach,
        launcher_pid=os.getpid(),
        attempt=0,
        started_at=time.time(),
        ranks=ranks,
    )
    own_transport = transport is None
    transport = transport or make_transport(inv)
    try:
        if doctor:
            say(f"doctor: fast checks on {len(plan.nodes)} nodes")
            failed = preflight_doctor(inv, plan, transport)
            if failed:
                record.update_state(state="failed", reason="doctor preflight", ended_at=time.time())
                raise LaunchError(
                    "doctor preflight failed, nothing was started:\n"
                    + "\n".join(f"  {line}" for line in failed)
                    + "\n  (see `rlaunch doctor`; skip with --no-doctor)",
                    EXIT_INFRA,
                )
        return run_id, _attempts(
            inv, plan, sources, head_env, record, transport, detach, on_line, on_event, say
        )
    finally:
        record.close()
        if own_transport:
            transport.close()


def _attempts(
    inv: Inventory,
    plan: planning.Plan,
    sources: dict[str, bytes],
    head_env: Mapping[str, str],
    record: records.RunRecord,
    transport: Transport,
    detach: bool,
    on_line: LineSink | None,
    on_event: Callable[[dict[str, Any]], None] | None,
    say: Callable[[str], None],
    *,
    first_attempt: int = 0,
    adopt: Mapping[str, int] | None = None,
    on_runner: Callable[[Runner], None] | None = None,
) -> Outcome:
    """Start, watch, restart. `adopt` (the detached supervisor): the plan's guards already run; follow them from
    these byte offsets instead of starting anything for the first attempt."""
    attempt = first_attempt
    supervising = adopt is not None
    # A supervisor taking over mid-run: nodes left out of the current plan were excluded by an earlier restart.
    excluded: frozenset[str] = frozenset({n.host for n in inv.nodes} - set(plan.hosts) if adopt else ())
    while True:
        ranks = record.read_state().get("ranks")
        runner = Runner(plan, transport, record, on_line=on_line, on_event=on_event, ranks=ranks)
        if on_runner is not None:
            on_runner(runner)
        if adopt is not None:
            for host, offset in adopt.items():
                if host in runner.nodes:
                    runner.nodes[host].offset = int(offset)
            adopt = None
        else:
            _launch(runner, plan, record, attempt, say)
        if detach and not supervising:
            return _leave_supervisor(record, say)
        try:
            runner.attach()
            outcome = runner.watch()
        except KeyboardInterrupt:
            say("interrupted: stopping the job on every node")
            runner.stop(reason="interrupted")
            runner.detach_followers()
            record.update_state(state="stopped", reason="interrupted", ended_at=time.time())
            return Outcome(
                EXIT_INTERRUPTED, "interrupted: job stopped on every node", nodes=runner.outcome().nodes
            )
        finally:
            runner.detach_followers()
        if outcome.code != 0:
            runner.collect_artifacts()
        _save_outcome(record, attempt, outcome)
        if outcome.code == 0 or attempt >= inv.restart.max_restarts:
            record.update_state(
                state="succeeded" if outcome.code == 0 else "failed",
                ended_at=time.time(),
                summary=outcome.summary,
                exit_code=outcome.code,
            )
            return outcome
        attempt += 1
        failed_node = (outcome.root_cause or {}).get("node")
        if inv.restart.exclude_failed_node and failed_node and len(plan.nodes) > 1:
            excluded = excluded | {failed_node}
        say(f"restart {attempt}/{inv.restart.max_restarts} in {inv.restart.backoff:g} s: {outcome.summary}")
        time.sleep(inv.restart.backoff)
        resume_from = find_checkpoint(inv, plan, transport)
        say(f"resuming from {resume_from}" if resume_from else "no complete checkpoint found: starting over")
        plan = planning.build_plan(
            inv,
            run_id=f"{record.run_id}-r{attempt}",
            sources=sources,
            head_env=head_env,
            resume_from=resume_from,
            exclude=excluded,
            detach=detach,
        )
        records.write_atomic(record.root / "plan.json", json.dumps(plan.to_json(), indent=1))


def _launch(
    runner: Runner, plan: planning.Plan, record: records.RunRecord, attempt: int, say: Callable[[str], None]
) -> None:
    say(f"preflight + push to {len(plan.nodes)} nodes")
    try:
        runner.push()
        say("starting")
        runner.start()
    except LaunchError as exc:
        record.update_state(state="failed", reason=str(exc), ended_at=time.time())
        raise
    record.update_state(state="running", attempt=attempt, plan_run_id=plan.run_id)


def _leave_supervisor(record: records.RunRecord, say: Callable[[str], None]) -> Outcome:
    """`up --detach`: hand the started run to a daemonized supervisor (launcher/supervise.py) and return."""
    from launcher import supervise

    try:
        pid = supervise.spawn(record.root)
    except (RuntimeError, OSError, ValueError) as exc:
        # The job runs (its guards end it on a local failure); only the head's watch is missing.
        say(f"the job runs UNSUPERVISED: {exc}; start one with `rlaunch supervise {record.run_id}`")
        return Outcome(0, f"started run {record.run_id} (detached, unsupervised)")
    return Outcome(0, f"started run {record.run_id} (detached, supervisor pid {pid})")


def preflight_doctor(inv: Inventory, plan: planning.Plan, transport: Transport) -> list[str]:
    """The fast doctor subset against the planned master port; one line per failed check (empty: all good)."""
    from cluster.doctor import run_doctor

    probe = inv.model_copy(update={"master": inv.master.model_copy(update={"port": plan.master_port})})
    report = run_doctor(probe, transport, node_script("facts.py").encode(), fast=True)
    return [
        f"{c.name}"
        + (f" [{', '.join(c.nodes)}]" if c.nodes else "")
        + f": {c.message}"
        + (f" — fix: {c.fix}" if c.fix else "")
        for c in report.failed
        if c.severity == "error"
    ]


def _save_outcome(record: records.RunRecord, attempt: int, outcome: Outcome) -> None:
    data = {
        "attempt": attempt,
        "code": outcome.code,
        "summary": outcome.summary,
        "root_cause": outcome.root_cause,
        "nodes": outcome.nodes,
        "end_of_run_abort": outcome.end_of_run_abort,
    }
    records.write_atomic(record.root / f"outcome-{attempt}.json", json.dumps(data, indent=1))


def find_checkpoint(inv: Inventory, plan: planning.Plan, transport: Transport) -> str | None:
    """The latest complete checkpoint under job.checkpoint_dir, as seen from the master node."""
    if not inv.job.checkpoint_dir:
        return None
    master = plan.nodes[0]
    result = transport.run(
        master.host,
        [master.python, "-c", node_script("ckpt.py"), inv.job.checkpoint_dir, str(plan.world_size)],
        timeout=60,
    )
    try:
        return json.loads(result.stdout.strip().splitlines()[-1]).get("latest")
    except (ValueError, IndexError):
        return None


# ---------------------------------------------------------------------------------------------------------
# down / status / logs


def open_run(run_id: str | None) -> tuple[records.RunRecord, Inventory, dict[str, Any]]:
    record = records.RunRecord.open(run_id)
    inv = Inventory.model_validate_json((record.root / "inventory.json").read_text())
    return record, inv, record.plan_json()


def down(
    run_id: str | None, *, grace: float | None = None
) -> tuple[str, dict[str, tuple[dict | None, str | None]]]:
    record, inv, plan_json = open_run(run_id)
    grace = inv.health.grace if grace is None else grace
    from launcher import supervise

    # A detached run's supervisor stops the job as Ctrl-C would (and so never mistakes it for a failure to restart);
    # the guards' stop below then finds nothing left, or cleans up if the supervisor could not.
    supervise.stop(record.root, timeout=grace + 40)
    plan_json = record.plan_json()  # a restart may have replaced the plan meanwhile
    with make_transport(inv) as transport:
        results = guard_all(
            transport, targets_of(plan_json), "stop", "--grace", str(grace), timeout=grace + 30
        )
    unclean = {h: err for h, (_, err) in results.items() if err}
    record.update_state(
        state="stopped" if not unclean else "stop-failed",
        ended_at=time.time(),
        reason="rlaunch down" if not unclean else f"unreachable: {', '.join(sorted(unclean))}",
    )
    return record.run_id, results


def status(run_id: str | None, *, live: bool = True) -> dict[str, Any]:
    record, inv, plan_json = open_run(run_id)
    state = record.read_state()
    out: dict[str, Any] = {"run_id": record.run_id, **state, "nodes": {}}
    supervised = False
    if state.get("detached") and state.get("state") in ("starting", "running"):
        from launcher import supervise

        supervised = supervise.supervisor_alive(state)
        out["supervised"] = supervised
    if live and state.get("state") in ("starting", "running"):
        with make_transport(inv) as transport:
            for host, (info, err) in guard_all(
                transport, targets_of(plan_json), "status", timeout=30
            ).items():
                out["nodes"][host] = info if info else {"state": "unknown", "error": err}
        node_states = [n.get("state") for n in out["nodes"].values()]
        ended = ("succeeded", "failed", "stopped", "lost-launcher")
        if not supervised and node_states and all(s in ended for s in node_states):
            final = "succeeded" if all(s == "succeeded" for s in node_states) else "failed"
            # Nobody watched the end (an unsupervised detached run): keep the guards' own reasons, edge decisions
            # first (launcher/node/edge.py), as the record's summary.
            why = sorted(
                ((0 if n.get("edge") else 1), f"{h}: {n.get('reason')}")
                for h, n in out["nodes"].items()
                if n.get("state") != "succeeded" and n.get("reason")
            )
            summary = "; ".join(text for _, text in why) or None
            record.update_state(state=final, **({"summary": summary} if summary else {}))
            out["state"] = final
            out["summary"] = summary or out.get("summary")
    outcomes = sorted(record.root.glob("outcome-*.json"))
    if outcomes:
        out["outcome"] = json.loads(outcomes[-1].read_text())
    return out


def read_logs(
    run_id: str | None, node: str | None = None, grep: str | None = None, rank: int | None = None
) -> list[tuple[str, str]]:
    """Every line of the run, read from the nodes' own logs (each attempt's out.log): the head's record holds only
    what the followers forwarded. A node that cannot be reached falls back to the record's copy."""
    record, inv, plan_json = open_run(run_id)
    state = record.read_state()
    pattern = re.compile(grep) if grep else None
    hosts = [n.host for n in inv.nodes if node is None or n.host == node]
    firsts = {n["host"]: int(n["ranks"][0]) for n in plan_json["nodes"]}
    local: dict[str, str] = {h: "all" for h in hosts}
    if rank is not None:
        nproc = {n["host"]: int(n["nproc"]) for n in plan_json["nodes"]}
        local = {h: str(rank - firsts[h]) for h in hosts if h in firsts and 0 <= rank - firsts[h] < nproc[h]}
    plan_ids = [record.run_id] + [
        f"{record.run_id}-r{k}" for k in range(1, int(state.get("attempt") or 0) + 1)
    ]
    python = {t.host: t.python for t in targets_of(plan_json)}
    out: list[tuple[str, str]] = []
    with make_transport(inv) as transport:
        group = transport.run_all(
            list(local),
            lambda h: [
                python.get(h, "python3"),
                "-c",
                node_script("logcat.py"),
                local[h],
                grep or "",
                *(f"{inv.workdir.rstrip('/')}/{p}/{h}" for p in plan_ids),
            ],
            timeout=120,
        )
    for host in local:
        result = group.results.get(host)
        if result is not None and result.ok:
            out += [(host, line) for line in result.stdout.splitlines()]
            continue
        path = record.log_path(host)
        for line in path.read_text(errors="replace").splitlines() if path.is_file() else []:
            if pattern is None or pattern.search(line):
                out.append((host, line))
    return out


def follow_logs(
    run_id: str | None,
    on_line: Callable[[str, str], None],
    *,
    node: str | None = None,
    grep: str | None = None,
) -> None:
    """Re-attach to a running job's logs, every line (no heartbeats, no teardown: watching only). Ends when the job
    ends. A live supervisor records what it needs itself: then nothing here is written to the record."""
    record, inv, plan_json = open_run(run_id)
    pattern = re.compile(grep) if grep else None
    from launcher import supervise

    recording = not supervise.supervisor_alive(record.read_state())
    offsets = record.read_state().get("offsets", {})
    targets = [t for t in targets_of(plan_json) if node is None or t.host == node]
    done = threading.Event()
    remaining = {t.host for t in targets}
    lock = threading.Lock()

    def handle(host: str, stream: str, line: str) -> None:
        try:
            rec = json.loads(line)
        except ValueError:
            return
        if rec.get("k") == "line":
            text = rec.get("text", "")
            if recording:
                offsets[host] = rec.get("off", offsets.get(host, 0))
                record.append_log(host, text)
            if pattern is None or pattern.search(text):
                on_line(host, text)
        elif rec.get("k") == "exit":
            with lock:
                remaining.discard(host)
                if not remaining:
                    done.set()

    with make_transport(inv) as transport:
        procs = [
            transport.start(
                t.host,
                [
                    t.python,
                    "-u",
                    f"{t.run_dir}/guard.py",
                    "follow",
                    t.run_dir,
                    "--offset",
                    str(offsets.get(t.host, 0)),
                ],
                lambda stream, line, host=t.host: handle(host, stream, line),
            )
            for t in targets
        ]
        try:
            while not done.wait(0.5):
                if all(p.poll() is not None for p in procs):
                    break
        finally:
            for p in procs:
                p.close()
            if recording:
                record.update_state(offsets=offsets)
            record.close()


__all__ = ["EXIT_INFRA", "LaunchError", "down", "follow_logs", "read_logs", "status", "up"]
