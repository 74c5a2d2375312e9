"""Supervision of detached runs: a daemonized head-side `rlaunch` per run that does what a foreground `up` does.

`up --detach` writes the run's record and leaves the launch itself to this supervisor: doctor's preflight, push and
start on the connections it then follows every guard on (the same Runner: health watch, first-failure verdict,
teardown, restart from the latest complete checkpoint), writing events and the outcome into the run record. The CLI
relays the launch's progress lines (launch.log) and returns once every guard has started (`launch` below). Its PID,
start time and log are in the record (state.json: supervisor_pid, supervisor_starttime, supervisor_log), so `status`
can tell a live supervisor from a dead one whose PID was reused.

What survives what: detached guards run with heartbeat_timeout 0, so the supervisor dying (or the head
rebooting) leaves the job running; the guards' own edge health rules (guard.py) still end it on its first failure.
`rlaunch supervise RUN` or `rlaunch attach RUN` starts a new supervisor that re-attaches to the guards from the
byte offsets saved in the record (so no line is recorded twice).

One supervisor per run: it holds an flock on supervisor.lock in the record for its whole life.

Run as `python -m launcher.supervise RUN_ID [--daemon]`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from launcher import records
from launcher.errors import ExitCode, Infra, Interrupted, JobFailed, LaunchError, RlaunchError, raise_for
from launcher.records import RunRecord
from launcher.states import RunState, is_active

SUPERVISOR_LOG = "supervisor.log"
SUPERVISOR_LOCK = "supervisor.lock"
LAUNCH_LOG = "launch.log"  # `up --detach`: the launch's progress lines, relayed by the CLI
READY_TIMEOUT_S = 30.0
OFFSETS_EVERY_S = 2.0


def _starttime(pid: int) -> int | None:
    from launcher.node.procs import read_stat

    st = read_stat(pid)
    return None if st is None or st["state"] in ("Z", "X") else int(st["starttime"])


def recorded_supervisor(state: dict[str, Any]) -> tuple[int, int] | None:
    """(supervisor PID, its start time) when the record names both as plain integers (PID above 1), else None:
    a record without a start time proves nothing about who the PID is now (docs/security.md)."""
    pid, start = state.get("supervisor_pid"), state.get("supervisor_starttime")
    if type(pid) is not int or type(start) is not int or pid <= 1 or start < 0:
        return None
    return pid, start


def supervisor_alive(state: dict[str, Any]) -> bool:
    """The recorded supervisor still runs: same PID *and* start time (a reused PID is someone else)."""
    recorded = recorded_supervisor(state)
    return recorded is not None and _starttime(recorded[0]) == recorded[1]


# `python -m launcher.supervise` put the caller's cwd first on sys.path: a planted `json.py` ran as us, and a project
# with its own `launcher/` package got an unsupervised detached run (issue 21). So: isolated mode (-I: no cwd, no
# PYTHON* variables, no user site) and the paths this process imports from, named explicitly, this package's root
# first (computed from this file, so a git worktree's copy wins over an installed one).
BOOT = (
    "import sys, json; sys.path[:0] = json.loads(sys.argv.pop(1)); import runpy; "
    "runpy.run_module('launcher.supervise', run_name='__main__', alter_sys=True)"
)


def supervisor_argv(run_id: str) -> list[str]:
    """The argv that starts `launcher.supervise RUN_ID --daemon` with no import from the current directory."""
    package_root = str(Path(__file__).resolve().parents[1])
    cwd = os.getcwd()
    paths = [package_root]
    for entry in sys.path:
        if entry and os.path.isabs(entry) and entry != cwd and entry not in paths:
            paths.append(entry)
    return [sys.executable, "-I", "-c", BOOT, json.dumps(paths), run_id, "--daemon"]


def spawn(root: Path, timeout: float = READY_TIMEOUT_S) -> int:
    """Start a daemonized supervisor for the run at `root`; return its PID once it has claimed the record.

    The intermediate process forks the daemon and exits, so the daemon is nobody's child here (no zombie in a
    long-lived caller) and lives in its own session (no terminal, no SIGHUP when the shell closes)."""
    env = dict(os.environ)
    env["RLAUNCH_HOME"] = str(root.parent.parent.resolve())  # the record home may be relative to our cwd
    done = subprocess.run(
        supervisor_argv(root.name),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )
    try:
        pid = int(done.stdout.split()[-1])  # the daemon's parent prints its PID last
    except (ValueError, IndexError):
        raise RuntimeError(f"supervisor did not start: {done.stderr.strip()[-300:]}") from None
    deadline = time.time() + timeout
    while time.time() < deadline:
        with contextlib.suppress(OSError, ValueError):
            state = json.loads(RunRecord(root).state_path.read_text())
            if state.get("supervisor_pid") == pid and supervisor_alive(state):
                return pid
            if not is_active(state.get("state")):
                return pid  # the run ended before (or as) the supervisor came up: nothing left to watch
        if _starttime(pid) is None:
            tail = (root / SUPERVISOR_LOG).read_text(errors="replace")[-300:] if root.exists() else ""
            raise RuntimeError(f"supervisor {pid} exited at start: {tail.strip()}")
        time.sleep(0.1)
    raise RuntimeError(f"supervisor {pid} did not claim the run within {timeout:.0f} s")


def launch(record: RunRecord, *, doctor: bool, say: Callable[[str], None]) -> Any:
    """`up --detach`: the supervisor launches the run itself and follows what it started, so each node sees one SSH
    connection per detached run and the run is followed from its start (before turn 18 the CLI connected, pushed and
    started, then the supervisor connected again to follow: two logins per node, and up to a minute at 250 nodes in
    which only the guards' own rules watched the run; docs/scale.md "A detached launch connects once"). This process
    relays the launch's progress lines and returns once every guard has started, or raises the launch's error as a
    foreground `up` would (the same message and exit code). Ctrl-C stops the launch: SIGTERM to the supervisor,
    which stops what it started (its Ctrl-C path)."""
    from launcher.errors import LaunchError, LaunchRefused
    from launcher.run.attempt import EXIT_OK, Outcome

    record.update_state(launch={"doctor": doctor})
    try:
        pid = spawn(record.root)
    except KeyboardInterrupt:
        if not stop(record.root, timeout=600):  # not claimed yet: it finds the run stopped and leaves
            record.set_state(RunState.STOPPED, reason="interrupted", ended_at=time.time())
        raise Interrupted("interrupted: the launch was stopped") from None
    except (RuntimeError, OSError, ValueError) as exc:
        record.set_state(RunState.FAILED, reason=f"supervisor did not start: {exc}", ended_at=time.time())
        raise LaunchError(f"the run's supervisor did not start, nothing was started: {exc}") from None
    tail = _Tail(record.root / LAUNCH_LOG)

    def relay() -> None:
        for line in tail.lines():
            say(line)

    try:
        while True:
            relay()
            state = record.read_state()
            if state.get("state") != RunState.STARTING.value:
                break
            if not supervisor_alive(state):
                break
            time.sleep(0.1)
    except KeyboardInterrupt:
        say("interrupted: stopping the launch on every node")
        stop(record.root, timeout=600)
        relay()
        raise Interrupted("interrupted: the launch was stopped on every node") from None
    if state.get("plan_run_id"):  # it started (and may have ended since: the supervisor judges that)
        relay()
        return Outcome(EXIT_OK, f"started run {record.run_id} (detached, supervisor pid {pid})")
    # The launch failed: wait for the supervisor to record why and exit, then say it as a foreground `up` would.
    deadline = time.time() + 30
    while time.time() < deadline and supervisor_alive(record.read_state()):
        time.sleep(0.1)
    relay()
    state = record.read_state()
    if state.get("state") == RunState.STARTING.value:  # it died mid-launch: the caller stops what it started
        last = (record.root / SUPERVISOR_LOG).read_text(errors="replace")[-300:].strip()
        raise SupervisorLost(f"the run's supervisor exited while launching: {last}")
    reason = str(state.get("reason") or "the launch failed")
    if state.get("state") == RunState.STOPPED.value:
        raise Interrupted(reason)
    raise (LaunchRefused if state.get("error_code") == ExitCode.BAD_INPUT else LaunchError)(reason)


class SupervisorLost(LaunchError):
    """The supervisor of `up --detach` exited before every guard had started (launcher/lifecycle.py stops the run)."""


class _Tail:
    """The new whole lines of one file since the last call (a partial last line waits for its newline)."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path, self.offset = path, offset

    def lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end].decode("utf-8", "replace").splitlines()


def ensure(root: Path) -> tuple[int | None, bool]:
    """A live supervisor for an active run: (pid, started now). (None, False) if the run is over."""
    state = json.loads(RunRecord(root).state_path.read_text())
    if not is_active(state.get("state")) or not state.get("detached"):
        return None, False
    recorded = recorded_supervisor(state)
    if recorded is not None and supervisor_alive(state):
        return recorded[0], False
    return spawn(root), True


def stop(root: Path, timeout: float) -> bool:
    """SIGTERM the run's supervisor (it tears the job down like Ctrl-C in a foreground `up`); wait for it."""
    from launcher.node.procs import signal_same

    state = json.loads(RunRecord(root).state_path.read_text())
    recorded = recorded_supervisor(state)
    if recorded is None or not supervisor_alive(state):
        return False
    # Through a pidfd opened before the start-time check: a PID reused in between is never signalled.
    if not signal_same(recorded[0], recorded[1], signal.SIGTERM):
        return False
    deadline = time.time() + timeout
    while time.time() < deadline and supervisor_alive(state):
        time.sleep(0.1)
    return True


# ---------------------------------------------------------------------------------------------------------
# The daemon


def _log(text: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} supervisor[{os.getpid()}]: {text}\n")
    sys.stderr.flush()


def _log_event(event: dict[str, Any]) -> None:
    _log(f"event {json.dumps(event, sort_keys=True)[:500]}")


def run(run_id: str) -> None:
    """Supervise the run until it ends (or SIGTERM, which tears it down). A run that did not succeed raises its
    verdict as a typed error (launcher/errors.py): JobFailed, Infra (a lost node) or Interrupted."""
    from cluster.transport import make_transport
    from launcher import plan as planning
    from launcher.errors import LaunchError
    from launcher.records import open_run
    from launcher.run.attempt import Runner
    from launcher.run.loop import RunContext, execute

    record, inv, plan_json = open_run(run_id)
    lock_fd = os.open(record.root / SUPERVISOR_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        _log("another supervisor holds this run; exiting")
        return
    state = record.read_state()
    if not is_active(state.get("state")):
        _log(f"run is {state.get('state')}: nothing to supervise")
        return
    record.update_state(
        supervisor_pid=os.getpid(),
        supervisor_starttime=_starttime(os.getpid()),
        supervisor_log=str(record.root / SUPERVISOR_LOG),
        supervised_since=time.time(),
    )
    _log(f"supervising run {record.run_id} (attempt {state.get('attempt', 0)}, plan {plan_json['run_id']})")
    try:
        sources = planning.load_sources(inv)
    except planning.PlanError as exc:
        _log(f"job files unreadable ({exc}): a restart will not be possible")
        sources = {}
    current: list[Runner] = []
    finished = threading.Event()

    def save_offsets() -> None:
        # Byte offsets of what the record already holds: a re-attaching supervisor resumes from there.
        while not finished.wait(OFFSETS_EVERY_S):
            if current:
                runner = current[-1]
                record.update_state(offsets=runner.offsets(), offsets_plan=runner.plan.run_id)

    def share_view() -> None:
        # What `status` shows without asking the nodes (records.py: "The supervisor's live view").
        while not finished.wait(records.LIVE_EVERY_S):
            if current:
                runner = current[-1]
                with contextlib.suppress(OSError, ValueError):
                    records.write_live(
                        record,
                        runner.live_view(),
                        attempt=runner.plan.attempt,
                        plan_run_id=runner.plan.run_id,
                    )

    saver = threading.Thread(target=save_offsets, daemon=True)
    saver.start()
    sharer = threading.Thread(target=share_view, name="rlaunch-live-view", daemon=True)
    sharer.start()
    offsets = state.get("offsets", {}) if state.get("offsets_plan") == plan_json["run_id"] else {}
    launching = state.get("launch")
    if launching is not None:
        # Claimed: a supervisor started later re-attaches, never launches again.
        record.update_state(launch=None)
    try:
        with make_transport(inv) as transport:
            if launching is not None:
                outcome = _launch_and_follow(
                    record, inv, plan_json, transport, sources, launching, current.append
                )
            else:
                ctx = RunContext(
                    inv,
                    watch_plan(plan_json),
                    record,
                    transport,
                    sources,
                    os.environ,
                    detach=True,
                    on_event=_log_event,
                    say=_log,
                    first_attempt=int(state.get("attempt") or 0),
                    adopt=offsets,
                    on_runner=current.append,
                )
                outcome = execute(ctx)
    except (LaunchError, planning.PlanError) as exc:
        record.set_state(RunState.FAILED, reason=str(exc), ended_at=time.time(), error_code=int(exc.code))
        _log(f"failed: {exc}")
        raise JobFailed(str(exc)) from exc
    except KeyboardInterrupt:
        if record.read_state().get("state") == RunState.STARTING.value:  # SIGTERM before anything started
            record.set_state(RunState.STOPPED, reason="interrupted", ended_at=time.time())
        raise
    finally:
        finished.set()
        saver.join(timeout=5)
        sharer.join(timeout=5)
        if current:
            _save_teardown(record, current[-1])
        if current:
            with contextlib.suppress(OSError, ValueError):
                record.update_state(offsets=current[-1].offsets(), offsets_plan=current[-1].plan.run_id)
        record.close()
    _log(f"run ended: code {outcome.code}: {outcome.summary}")
    raise_for(outcome.code, outcome.summary)


def _launch_and_follow(
    record: RunRecord,
    inv: Any,
    plan_json: dict[str, Any],
    transport: Any,
    sources: Any,
    launching: dict[str, Any],
    on_runner: Callable[[Any], None],
) -> Any:
    """`up --detach`'s launch, run here: doctor's preflight, push and start on the connections this supervisor then
    follows on (launcher/lifecycle.py `launch`). The plan is built again from the recorded inventory and must be the
    one `up` recorded (the same inputs give the same plan; the node files and secrets are not in plan.json)."""
    from launcher import plan as planning
    from launcher.errors import LaunchError
    from launcher.run.launch import launch

    # 0600, as every record file; open for the whole launch
    log = records.open_private(record.root / LAUNCH_LOG)

    def say(text: str) -> None:
        _log(text)
        with contextlib.suppress(OSError, ValueError):
            log.write(text + "\n")
            log.flush()

    preempted = record.read_state().get("resumed_after_preemption") or None
    try:
        sources = sources or planning.load_sources(inv)  # empty: run() could not read them; raise why here
        plan = planning.build_plan(
            inv,
            run_id=record.run_id,
            sources=sources,
            head_env=os.environ,
            detach=True,
            resume_from=preempted["checkpoint"] if preempted else None,
        )
        if json.loads(json.dumps(plan.to_json())) != plan_json:  # as plan.json holds it (lists, not tuples)
            raise LaunchError(
                "the job's files or this environment changed between `up --detach` and its supervisor; "
                "nothing was started: run `rlaunch up --detach` again"
            )
        return launch(
            inv,
            plan,
            record,
            transport,
            sources,
            os.environ,
            detach=True,
            doctor=bool(launching.get("doctor")),
            say=say,
            on_event=_log_event,
            on_runner=on_runner,
            preempted=preempted,
        )
    finally:
        log.close()


def _save_teardown(record: RunRecord, runner: Any) -> None:
    """The last teardown's reply from every node it asked (records.py: teardown.json): `down` trusts the nodes
    confirmed clean here and asks only the others itself (launcher/lifecycle.py)."""
    if runner.teardown is None:
        return
    stopped_at, replies = runner.teardown
    nodes = {
        host: {
            "run_dir": runner.targets[host].run_dir,
            "ok": reply.ok,
            "exit_code": reply.exit_code,
            "remaining": (reply.data or {}).get("remaining"),
            "error": reply.error,
            "final": reply.data,
        }
        for host, reply in replies.items()
        if host in runner.targets
    }
    with contextlib.suppress(OSError, ValueError):
        records.write_teardown(record, nodes, attempt=runner.plan.attempt, stopped_at=stopped_at)


def watch_plan(plan_json: dict[str, Any]) -> Any:
    """The Plan the Runner needs to follow, stop and judge already-started guards, rebuilt from plan.json.

    The node files (and the secrets in them) are not in plan.json and are not needed to watch; a restart builds a
    full plan again from the inventory."""
    from launcher.plan import NodePlan, Plan

    nodes = [
        NodePlan(
            host=n["host"],
            address=n.get("address", n["host"]),
            node_rank=int(n["node_rank"]),
            nproc=int(n["nproc"]),
            gpus=tuple(n.get("gpus", ())),
            first_rank=int(n["ranks"][0]),
            run_dir=n["run_dir"],
            attempt_dir=n.get("attempt_dir", ""),  # records before issue 20: the guard ran in run_dir
            python=n.get("python") or n["argv"][0],
            argv=list(n.get("argv", [])),
            env=dict(n.get("env", {})),
            files=[],
        )
        for n in plan_json["nodes"]
    ]
    return Plan(
        run_id=plan_json["run_id"],
        cluster=plan_json["cluster"],
        job_kind=plan_json["job_kind"],
        master_addr=plan_json["master_addr"],
        master_port=int(plan_json["master_port"]),
        world_size=int(plan_json["world_size"]),
        nodes=nodes,
        transport=plan_json["transport"],
        attempt=int(plan_json.get("attempt") or 0),
        workdir="",
        detach=True,
        collective_timeout=plan_json.get("collective_timeout"),
        health=dict(plan_json.get("health", {})),
        restart=dict(plan_json.get("restart", {})),
        net=dict(plan_json.get("net", {})),
    )


# ---------------------------------------------------------------------------------------------------------
# Streaming a supervised run from its record (attach, logs -f)


def tail_record(
    root: Path,
    on_line: Callable[[str, int | None, str], None],
    on_event: Callable[[dict[str, Any]], None] | None = None,
    *,
    node: str | None = None,
    from_start: bool = False,
    poll: float = 0.3,
) -> dict[str, Any]:
    """Stream what the supervisor writes into the record (logs/<host>.log, events.jsonl) until the run ends.

    Lines are printed as a foreground `up` prints them: (host, global rank, text without the rank prefix).
    Returns the final state.json. KeyboardInterrupt propagates: the caller detaches, the run goes on."""
    from launcher.health.classify import parse_rank_prefix

    tails: dict[Path, _Tail] = {}
    first_rank: dict[str, int] = {}

    def read_new(path: Path) -> list[str]:
        if path not in tails:
            tails[path] = _Tail(path, 0 if from_start else (path.stat().st_size if path.exists() else 0))
        return tails[path].lines()

    events = RunRecord(root).events_path
    read_new(events)  # events: only new ones, whatever from_start says (the summary covers the past)
    while True:
        state = json.loads(RunRecord(root).state_path.read_text())
        plan_json = json.loads(RunRecord(root).plan_path.read_text())
        first_rank = {n["host"]: int(n["ranks"][0]) for n in plan_json["nodes"]}
        for host in sorted(first_rank):
            if node and host != node:
                continue
            for text in read_new(RunRecord(root).log_path(host)):
                local, rest = parse_rank_prefix(text)
                if local is not None:
                    on_line(host, first_rank[host] + local, rest)
                else:
                    on_line(host, None, text)
        if on_event is not None:
            for raw in read_new(events):
                with contextlib.suppress(ValueError):
                    on_event(json.loads(raw))
        if not is_active(state.get("state")):
            return state
        if state.get("detached") and not supervisor_alive(state):
            return state  # nobody writes the record: stop here, the caller says so
        time.sleep(poll)


def main(argv: list[str] | None = None) -> int:
    """The supervisor process: its exit code is the run's verdict, by the type of error `run` raised."""
    args = list(sys.argv[1:] if argv is None else argv)
    daemon = "--daemon" in args
    args = [a for a in args if a != "--daemon"]
    if len(args) != 1:
        sys.stderr.write("usage: python -m launcher.supervise RUN_ID [--daemon]\n")
        return ExitCode.BAD_INPUT
    run_id = args[0]
    if daemon:
        # Fork before any thread exists: the parent reports the daemon's PID and leaves.
        sys.stdout.flush()
        pid = os.fork()
        if pid:
            print(pid, flush=True)
            os._exit(ExitCode.OK)
        from launcher import records

        root = records.RunRecord.open(run_id).root
        fd = os.open(root / SUPERVISOR_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.close(null)

    from launcher.run.signals import sigterm_interrupts

    sigterm_interrupts(daemon=daemon)
    try:
        run(run_id)
    except RlaunchError as exc:
        return exc.code
    except KeyboardInterrupt:  # SIGTERM (`rlaunch down`) before the run loop took over its teardown
        return Interrupted.code
    except Exception:
        import traceback

        _log("supervisor crashed:\n" + traceback.format_exc())
        return Infra.code
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
