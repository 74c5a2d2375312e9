"""The files of one guard run directory (RUNDIR): reading and writing them without following links, job.json's
defaults, the guard's identity from state.json, and the one builder of state.json's shape (FinalState).

Files in RUNDIR: job.json (input), guard.pid, guard.lock (flock held by the live guard), state.json (atomic),
out.log (job stdout+stderr), guard.log, heartbeat (mtime touched by the follower), head_closed, pids (append-only
"PID STARTTIME SID" lines of every descendant seen, so `stop` can find them after the guard itself was SIGKILLed),
stop_request.json (the grace `stop` asked for), out.idx (out.log's time index, OutIndex), procs.json (the guard's
latest walk of the job's tree, which its followers read instead of walking /proc themselves). Standard library only
(pushed beside guard.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass

if __package__:  # imported by the head or tests as launcher.node.*
    from launcher.node import procs as proctab
    from launcher.node import protocol
else:  # imported by guard.py run as a script from the run directory, beside this file
    import procs as proctab  # type: ignore[no-redef]
    import protocol  # type: ignore[no-redef]

HEAD_CLOSED = "head_closed"  # touched by a heartbeating follower whose stdin closed: the head's end went away
# Edge health (edge.py, pushed beside guard.py with the head's rules.py): the key of the guard's own decision in
# state.json and in the follower's exit record.
EDGE_FILE = "edge.py"
EDGE_KEY = "edge"


def path_in(rundir: str, name: str) -> str:
    return os.path.join(rundir, name)


def open_nofollow(path: str, flags: int, mode: int = 0o600) -> int:
    """os.open that never follows a symlink at `path` (a link planted there would redirect our writes)."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


class OutIndex:
    """RUNDIR/out.idx (protocol.OUT_INDEX): "TIME SIZE" whenever out.log has grown, at most once per
    OUT_INDEX_EVERY_S, so `rlaunch logs --since` finds where a time begins in out.log (logcat.py): the job writes
    out.log itself, its lines carry no time. One stat per poll; about 20 bytes a second while the job writes,
    nothing while it is quiet."""

    def __init__(self, rundir: str) -> None:
        self.log = path_in(rundir, "out.log")
        self.fd = open_nofollow(path_in(rundir, protocol.OUT_INDEX), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self.size = -1
        self.next_at = 0.0

    def note(self, force: bool = False) -> None:
        now = time.time()
        if now < self.next_at and not force:
            return
        try:
            size = os.stat(self.log).st_size
        except OSError:
            return
        if size != self.size:
            os.write(self.fd, f"{now:.2f} {size}\n".encode())
            self.size = size
            self.next_at = now + protocol.OUT_INDEX_EVERY_S


def write_json_atomic(path: str, data: dict, durable: bool = True) -> None:
    """Readers see the old file or the new one, never half of one. `durable=False` skips the fsync, for a file
    rewritten every second whose loss in a crash costs nothing (procs.json)."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover of a crashed writer with our pid; O_EXCL below refuses anything there
    with os.fdopen(open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w") as f:
        json.dump(data, f)
        f.write("\n")
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


PROCS_SNAPSHOT = "procs.json"


def write_procs(rundir: str, guard: tuple, procs: list) -> None:
    """The guard's latest walk of its job's tree, as (pid, starttime) pairs, for its followers (`read_procs`).

    Why: finding a tree's members means reading every process's /proc/PID/stat (the parent pid is only there), a
    cost that grows with the whole node, not the job: on a node of a few thousand processes, kernel threads
    included, each walk costs tens of ms. The guard walks once a second to record new descendants; each follower
    walked again for its process records. 64 simulated nodes on one machine (about 1000 processes in one /proc)
    spent most of their CPU there (make test, turn 14: 402 CPU-seconds in the scale test)."""
    pairs = [[st["pid"], st["starttime"]] for st in procs]
    write_json_atomic(
        path_in(rundir, PROCS_SNAPSHOT), {"t": time.time(), "guard": list(guard), "procs": pairs}, False
    )


def read_procs(rundir: str, guard: tuple, max_age: float) -> list | None:
    """The job's processes as the guard `guard` (pid, starttime) last found them, each read again now (state and
    all: a process gone or whose pid was reused is left out); None where there is no such snapshot younger than
    `max_age` seconds (an older guard, or one too busy to write it): the caller walks /proc itself."""
    data = read_json(path_in(rundir, PROCS_SNAPSHOT))
    if not isinstance(data, dict) or data.get("guard") != list(guard):
        return None
    when, pairs = data.get("t"), data.get("procs")
    if not isinstance(when, (int, float)) or not isinstance(pairs, list) or abs(time.time() - when) > max_age:
        return None
    procs = []
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2):
            return None
        pid, start = pair
        if not (proctab.valid_pid(pid) and proctab.valid_start(start)):
            return None
        st = proctab.read_stat(pid)
        if st is not None and st["starttime"] == start:
            procs.append(st)
    return procs


def read_json(path: str) -> dict | None:
    try:
        with os.fdopen(open_nofollow(path, os.O_RDONLY)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_records(rundir: str) -> set:
    """The (pid, starttime, sid) triples appended to RUNDIR/pids ("PID STARTTIME SID" lines; SID optional)."""
    records = set()
    try:
        with os.fdopen(open_nofollow(path_in(rundir, "pids"), os.O_RDONLY)) as f:
            for line in f:
                parts = line.split()
                if len(parts) in (2, 3) and all(part.isdigit() for part in parts):
                    pid, start = int(parts[0]), int(parts[1])
                    sid = int(parts[2]) if len(parts) == 3 else None
                    if proctab.valid_pid(pid):  # pid 1, 0 or no start time: never ours to kill
                        records.add((pid, start, sid if proctab.valid_pid(sid) else None))
    except OSError:
        pass
    return records


def left_of_job(rundir: str) -> list:
    """The job's recorded processes still alive (zombies excluded: their new parent reaps them): what the stop verb
    tears down without a live guard (guard.py `kill_recorded`) and what the follower's exit record reports as
    `remaining` once the guard has exited."""
    return [st for st in proctab.job_processes([], read_records(rundir)) if st["state"] != "Z"]


def record_of(st: dict) -> tuple:
    return st["pid"], st["starttime"], st["session"]


def append_records(rundir: str, records: list) -> None:
    with os.fdopen(open_nofollow(path_in(rundir, "pids"), os.O_WRONLY | os.O_CREAT | os.O_APPEND), "w") as f:
        f.write("".join(f"{pid} {start} {sid}\n" for pid, start, sid in records))


def touch(path: str) -> None:
    os.close(open_nofollow(path, os.O_WRONLY | os.O_CREAT))
    os.utime(path, None)


def load_job(rundir: str) -> dict:
    """job.json with defaults; raises ValueError with a readable message when it is unusable."""
    job = read_json(path_in(rundir, "job.json"))
    if not isinstance(job, dict):
        raise ValueError("{} is missing or not a JSON object".format(path_in(rundir, "job.json")))
    argv = job.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("job.json: argv must be a non-empty list of strings")
    env = job.get("env") or {}
    if not isinstance(env, dict):
        raise ValueError("job.json: env must be an object")
    try:
        return {
            "argv": argv,
            "env": {str(k): str(v) for k, v in env.items()},
            "cwd": job.get("cwd") or rundir,
            "heartbeat_timeout": float(job.get("heartbeat_timeout") or 0),
            "grace": float(job.get("grace", 10)),
            "poll_interval": float(job.get("poll_interval") or 0.2),
            EDGE_KEY: job.get(EDGE_KEY) if isinstance(job.get(EDGE_KEY), dict) else None,
            "node_lock": job.get("node_lock") if isinstance(job.get("node_lock"), str) else None,
            "run_id": job.get("run_id") if isinstance(job.get("run_id"), str) else None,
        }
    except (TypeError, ValueError) as e:
        raise ValueError(f"job.json: {e}") from e


@dataclass
class FinalState:
    """state.json: the one shape every writer gives it (the daemon while it runs and when it ends, a daemon that
    could not start the job, `stop` on behalf of a guard that died), read back by `status`, `follow` and the head
    (launcher/states.py FROM_GUARD maps `state`). `edge` (EDGE_KEY) is present only when the node-local rules ended
    the job."""

    state: str
    guard_pid: int | None
    guard_starttime: int | None
    job_pid: int | None = None
    job_pgid: int | None = None
    job_sid: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    reason: str | None = None
    edge: dict | None = None

    @classmethod
    def of_this_process(cls, state: str = protocol.RUNNING) -> FinalState:
        pid = os.getpid()
        return cls(state, pid, (proctab.read_stat(pid) or {}).get("starttime"), started_at=time.time())

    def end(self, state: str, reason: str) -> None:
        self.state, self.reason, self.ended_at = state, reason, time.time()

    def to_json(self) -> dict:
        data = asdict(self)
        if data[EDGE_KEY] is None:
            del data[EDGE_KEY]
        return data

    def write(self, rundir: str) -> None:
        write_json_atomic(path_in(rundir, "state.json"), self.to_json())


def write_ended(rundir: str, state: dict, final: str, reason: str) -> dict:
    """End a state.json another process wrote (keeping every key it holds, whichever rlaunch wrote it)."""
    state.update(state=final, ended_at=time.time(), reason=reason)
    write_json_atomic(path_in(rundir, "state.json"), state)
    return state


def guard_identity(rundir: str) -> tuple:
    """(guard_pid, guard_starttime, state dict) from state.json; (None, None, None) if there is none yet.

    The pid and start time come back only when both are well-formed (ints, pid above 1): a record without its
    start time, or a tampered one, must never name a process to signal. The state is still returned."""
    state = read_json(path_in(rundir, "state.json"))
    if not isinstance(state, dict):
        return None, None, None
    pid, start = state.get("guard_pid"), state.get("guard_starttime")
    if not (proctab.valid_pid(pid) and proctab.valid_start(start)):
        return None, None, state
    return pid, start, state


def guard_alive(rundir: str) -> bool:
    pid, start, _ = guard_identity(rundir)
    return pid is not None and proctab.is_alive(pid, start)


def log(msg: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} guard[{os.getpid()}]: {msg}\n")
    sys.stderr.flush()


def edge_module(rundir: str):
    """RUNDIR/edge.py as a module, or None when it was not pushed (an older run directory)."""
    path = path_in(rundir, EDGE_FILE)
    if not os.path.isfile(path):
        return None
    import importlib.util

    spec = importlib.util.spec_from_file_location("rlaunch_edge", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rlaunch_edge"] = module
    spec.loader.exec_module(module)
    return module
