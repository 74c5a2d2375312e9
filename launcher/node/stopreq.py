"""Stop requests on a node (`rlaunch stop --save`, a Slurm preemption notice; docs/preemption.md).

Two uses, standard library only:

  python -I -c <this file> RUN_DIR DEADLINE REASON
      the head raises a request: RUN_DIR/stop-save.json (`{"deadline": EPOCH, "reason": ..., "time": EPOCH}`),
      written atomically. RUN_DIR is the attempt's guard directory (the job reads the same path from
      $RLAUNCH_STOP_FILE through rlaunch_job.should_stop). It must be a real directory of ours (lstat: no symlink,
      our uid), as every other run-dir file the head asks a node to write. Prints one JSON line:
      {"ok": true, "path": ...} or {"ok": false, "error": ...}.

  import stopreq; stopreq.poll(rundir, procs, job, now, send)
      the guard's hook (three lines in daemon.py's poll loop; stopreq.py travels in protocol.GUARD_BUNDLE): once a
      request is there, send the job's stop signal
      ($RLAUNCH_STOP_SIGNAL, default SIGUSR1) to every job process that *catches* it, once each, and after the
      deadline answer the reason to tear down (the guard's normal teardown: SIGTERM to the tree, SIGKILL after the
      grace). What it did goes to RUNDIR/stop-seen.json. Never SIGTERM before the deadline: torchrun's agent turns SIGTERM into "kill the workers" at once
      (TORCHELASTIC_SIGNALS_TO_HANDLE, torch/distributed/elastic/multiprocessing/api.py), and Slurm's
      GraceTime/KillWait follow it by SIGKILL (docs/facts.md, "Stop and preemption").

Why only processes that catch it: SIGUSR1's default action is to terminate (signal(7)); a rank, a torchrun agent
or a dataloader worker without a handler would die of the very notice meant to let it save. /proc/PID/status
`SigCgt` is the mask of caught signals (proc(5)), so a job that never imported rlaunch_job (or set its own handler,
as PyTorch Lightning's SLURM requeue does for SIGUSR1) is left to the file alone.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from collections.abc import Callable

STOP_FILE = "stop-save.json"
DEFAULT_SIGNAL = "SIGUSR1"
# torchrun's agent handles SIGTERM, SIGINT, SIGHUP, SIGQUIT by killing its workers (see above): never a stop notice.
SIGNALS = ("SIGUSR1", "SIGUSR2", "none")
SEEN_FILE = "stop-seen.json"  # what the guard did with a request: {"seen_at", "deadline", "signalled": [[pid, start]]}
_SEEN: dict = {}  # rundir → what this guard did with its request (one guard, one rundir)


def write_request(run_dir: str, deadline: float, reason: str) -> dict:
    try:
        st = os.lstat(run_dir)
    except OSError as exc:
        return {"ok": False, "error": f"{run_dir}: {exc.strerror}"}
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return {"ok": False, "error": f"{run_dir}: not a directory owned by uid {os.geteuid()}"}
    path = os.path.join(run_dir, STOP_FILE)
    tmp = os.path.join(run_dir, f".{STOP_FILE}.{os.getpid()}")
    data = json.dumps({"deadline": deadline, "reason": reason[:500], "time": time.time()}).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return {"ok": True, "path": path}


def read_request(rundir: str) -> dict | None:
    """The request in `rundir`, or None (absent, a symlink, not ours, or not a JSON object with a deadline)."""
    path = os.path.join(rundir, STOP_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return None
        data = json.loads(os.read(fd, 65536).decode("utf-8", "replace"))
    except ValueError:
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or not isinstance(data.get("deadline"), (int, float)):
        return None
    return data


def signal_number(job: dict) -> int | None:
    name = (job.get("env") or {}).get("RLAUNCH_STOP_SIGNAL", DEFAULT_SIGNAL)
    if name not in SIGNALS or name == "none":
        return None
    return int(getattr(signal, name))


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (bit signum-1 of /proc/PID/status SigCgt, proc(5))."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        return False
    return False


def poll(
    rundir: str, procs: list, job: dict, now: float, send: Callable[[int, int, int], bool] | None = None
) -> str | None:
    """The guard's hook: the reason to tear down once the request's deadline passed, else None. `procs`: the job's
    live processes as the guard lists them (dicts with pid and starttime); `send(pid, starttime, signum)` signals
    one by pid + start time (procs.signal_same). What it did goes to RUNDIR/SEEN_FILE when it changes."""
    request = read_request(rundir)
    if request is None:
        return None
    entry = dict(_SEEN.get(rundir) or {"seen_at": now, "deadline": request["deadline"], "signalled": []})
    changed = rundir not in _SEEN
    signum = signal_number(job)
    if signum is not None and send is not None:
        done = {tuple(p) for p in entry["signalled"]}
        for st in procs:
            key = (st["pid"], st["starttime"])
            if key not in done and catches(st["pid"], signum) and send(st["pid"], st["starttime"], signum):
                entry["signalled"] = [*entry["signalled"], list(key)]
                changed = True
    _SEEN[rundir] = entry
    if changed:
        write_seen(rundir, entry)
    if now >= float(request["deadline"]):
        return (
            f"stop deadline passed ({request.get('reason') or 'stop request'}): the job did not exit in time"
        )
    return None


def write_seen(rundir: str, entry: dict) -> None:
    path = os.path.join(rundir, SEEN_FILE)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(entry, f)
    os.replace(tmp, path)


if __name__ == "__main__":
    try:
        if len(sys.argv) != 4:
            reply = {"ok": False, "error": "usage: stopreq.py RUN_DIR DEADLINE REASON"}
        else:
            reply = write_request(sys.argv[1], float(sys.argv[2]), sys.argv[3])
    except (OSError, ValueError) as exc:
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(reply))
