"""/proc and process identity for the node guard: process trees, per-rank usage, and signals that reach only the
process a PID named when it was recorded (PID + start time, field 22 of /proc/PID/stat, proc(5)).

Processes are never matched by name: only by pid, and pids read back from disk only together with their start
time, so that a reused pid is never signalled. Standard library only (pushed beside guard.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

if __package__:  # imported by the head or tests as launcher.node.*
    from launcher.node import gpuact
else:  # imported by guard.py run as a script from the run directory, beside this file
    try:
        import gpuact  # type: ignore[no-redef]
    except ImportError:  # a run directory pushed by an older rlaunch: no GPU activity, the CPU/IO rule alone
        gpuact = None  # type: ignore[assignment]

CMD_CHARS = 200
KILL_ROUNDS = (
    50  # SIGKILL rounds after the grace period; bounds teardown against unkillable (D-state) processes
)


def read_stat(pid: int) -> dict | None:
    """Parse /proc/PID/stat; None if the process is gone. comm may hold spaces and ')' so split at the last ')'."""
    # os.open/os.read, not open(): a node's whole /proc is read this way every second (the guard's tree walk), and
    # a buffered file object costs about twice the syscalls themselves (measured: 14 against 5 µs a process).
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    close = raw.rfind(")")
    if close < 0:
        return None
    fields = raw[close + 2 :].split(None, 20)  # up to starttime; the other ~30 fields are never read here
    # fields[0] is stat field 3 (state), so stat field N is fields[N - 3].
    return {
        "pid": pid,
        "comm": raw[raw.find("(") + 1 : close],
        "state": fields[0],
        "ppid": int(fields[1]),
        "pgrp": int(fields[2]),
        "session": int(fields[3]),
        "starttime": int(fields[19]),
    }


def last_pid() -> int | None:
    """The PID the kernel handed out last in this PID namespace, threads included (/proc/loadavg's fifth field,
    proc(5)); None where it cannot be read. Unchanged between two reads means no process or thread was created in
    between, so a tree walked after the first read still holds every descendant (the guard's `record_tree`)."""
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY)
    except OSError:
        return None
    try:
        return int(os.read(fd, 256).split()[-1])
    except (OSError, ValueError, IndexError):
        return None
    finally:
        os.close(fd)


def all_stats() -> list:
    stats = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = read_stat(int(name))
            if st is not None:
                stats.append(st)
    return stats


def cmdline(pid: int, comm: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        raw = b""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return (text or f"[{comm}]")[:CMD_CHARS]


def valid_pid(value: object) -> bool:
    """A PID we may ever signal: an int above 1 (kill(1) or kill(-1) would hit init or every process we can)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 1


def valid_start(value: object) -> bool:
    """A start time as /proc/PID/stat field 22 gives it (clock ticks since boot)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_alive(pid: int, starttime: int | None = None) -> bool:
    """True if pid runs (zombies count as dead) and, when given, was started at `starttime`. Anything that may
    lead to a signal passes the start time (guard_identity never returns a pid without one): pids are reused."""
    if not valid_pid(pid):
        return False
    st = read_stat(pid)
    if st is None or st["state"] in ("Z", "X"):
        return False
    return starttime is None or st["starttime"] == starttime


def tree_of(roots: list, stats: list) -> list:
    """The stats of all descendants of `roots` (not the roots themselves), new sessions included."""
    children: dict = {}
    for st in stats:
        children.setdefault(st["ppid"], []).append(st)
    found, todo, seen = [], list(roots), set(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child["pid"] not in seen:
                seen.add(child["pid"])
                found.append(child)
                todo.append(child["pid"])
    return found


def job_processes(root_pids: list, records: set) -> list:
    """What is left of a job: descendants of live `root_pids`, plus whatever still matches `records`.

    `records` holds (pid, starttime, sid) triples (sid may be None). A record matches a live process only with the
    same start time, so a reused pid never does. Without a guard, a process can escape the tree: a dying parent
    forks a child that is reparented to init. It stays in its session, though, so members of a recorded session
    count too, if they started no earlier than the job and the session's leader is dead or still the recorded
    process (a leader pid reused by a stranger makes that session untrusted).
    """
    stats = all_stats()
    by_pid = {st["pid"]: st for st in stats}
    pairs = {(pid, start) for pid, start, _ in records}
    matched = [pid for pid, st in by_pid.items() if (pid, st["starttime"]) in pairs]
    sessions = set()
    for pid, start, sid in records:
        leader = by_pid.get(pid)
        if sid == pid and (leader is None or leader["starttime"] == start):
            sessions.add(sid)
    if sessions:
        earliest = min(start for _, start, _ in records)
        matched += [st["pid"] for st in stats if st["session"] in sessions and st["starttime"] >= earliest]
    result = {st["pid"]: st for st in tree_of(list(root_pids) + matched, stats)}
    for pid in matched:
        result[pid] = by_pid[pid]
    for pid in root_pids:
        result.pop(pid, None)
    return sorted(result.values(), key=lambda st: st["pid"])


def describe(procs: list) -> list:
    return [
        {"pid": st["pid"], "ppid": st["ppid"], "state": st["state"], "cmd": cmdline(st["pid"], st["comm"])}
        for st in procs
    ]


CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_RANKS: dict = {}  # (pid, starttime) -> global rank, read once from /proc/PID/environ
_GPU_ENV: dict = {}  # (pid, starttime) -> the rank's GPU visibility variables, read with its rank


def rank_of(st: dict) -> int | None:
    """The RANK a launcher (torchrun, DeepSpeed) gave this process, read from its environment once found.

    "No rank" is never cached: between fork and exec a new process still shows its parent's environment (and
    keeps its start time across exec), so a rank seen that early would otherwise stay rank-less for good."""
    key = (st["pid"], st["starttime"])
    if key not in _RANKS:
        try:
            with open("/proc/{}/environ".format(st["pid"]), "rb") as f:
                env = {}
                for item in f.read().split(b"\0"):
                    name, _, value = item.partition(b"=")
                    if name == b"RANK" and value.isdigit():
                        _RANKS[key] = int(value)
                    elif name.decode("ascii", "replace") in GPU_ENV_NAMES:
                        env[name.decode()] = value.decode("utf-8", "replace")
                if key in _RANKS:
                    _GPU_ENV[key] = env
        except OSError:
            pass
    return _RANKS.get(key)


GPU_ENV_NAMES = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "LOCAL_RANK")


def gpu_index_of(st: dict) -> int | None:
    """The physical GPU a rank process computes on (gpuact.device_of over its environment), once its rank is known."""
    env = _GPU_ENV.get((st["pid"], st["starttime"]))
    return None if env is None or gpuact is None else gpuact.device_of(env)


def usage(st: dict) -> dict:
    """Additive fields of a procs record for the launcher's hang and straggler rules: the rank, cumulative CPU
    seconds (utime + stime, stat fields 14-15) and bytes read + written through any file or socket (rchar + wchar
    of /proc/PID/io; proc(5)). A rank whose counters stand still is idle: asleep or blocked in a collective."""
    out: dict = {"rank": rank_of(st)}
    if out["rank"] is None:
        return out
    out["start"] = st[
        "starttime"
    ]  # the stack collector re-checks it before py-spy attaches (PIDs are reused)
    try:
        with open("/proc/{}/stat".format(st["pid"]), "rb") as f:
            raw = f.read().decode("utf-8", "replace")
        fields = raw[raw.rfind(")") + 2 :].split()
        out["cpu"] = (int(fields[11]) + int(fields[12])) / CLK_TCK
        with open("/proc/{}/io".format(st["pid"])) as f:
            io = dict(line.split(":", 1) for line in f if ":" in line)
        out["io"] = int(io["rchar"]) + int(io["wchar"])
    except (OSError, ValueError, KeyError, IndexError):
        pass
    return out


def describe_with_usage(procs: list) -> list:
    return [dict(describe([st])[0], **usage(st)) for st in procs]


def signal_pid(pid: int, sig: int) -> None:
    if not valid_pid(pid):
        return
    with contextlib.suppress(OSError):  # already gone, or not ours to signal: nothing more to do
        os.kill(pid, sig)


def signal_same(pid: int, starttime: int, sig: int) -> bool:
    """Signal pid only if it is still the process that started at `starttime`. A pidfd pins the process between
    the check and the signal, so a pid reused in between is never hit; without pidfds the window is one read."""
    if not (valid_pid(pid) and valid_start(starttime)):
        return False
    fd = None
    with contextlib.suppress(AttributeError, OSError):
        fd = os.pidfd_open(pid)
    try:
        if not is_alive(pid, starttime):
            return False
        if fd is not None:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
        return True
    except OSError:
        return False
    finally:
        if fd is not None:
            os.close(fd)


def terminate(remaining, grace: float, poll: float = 0.1) -> tuple:
    """The one teardown loop (the guard's own, and `stop`'s after the guard died): SIGTERM+SIGCONT each process
    that `remaining()` lists once (a stopped process acts on SIGTERM only once continued), SIGKILL what is left
    after `grace`, for at most KILL_ROUNDS rounds. Every signal goes through `signal_same`, so a pid reused
    meanwhile is never hit. Returns (how many processes were signalled, pids that never died)."""
    termed: set = set()
    deadline = time.time() + grace
    while True:
        procs = remaining()
        if not procs:
            return len(termed), []
        for st in procs:
            key = (st["pid"], st["starttime"])
            if st["state"] != "Z" and key not in termed:
                termed.add(key)
                signal_same(st["pid"], st["starttime"], signal.SIGTERM)
                signal_same(st["pid"], st["starttime"], signal.SIGCONT)
        if time.time() >= deadline:
            break
        time.sleep(poll)
    for _ in range(KILL_ROUNDS):
        procs = remaining()
        if not procs:
            return len(termed), []
        for st in procs:
            if st["state"] != "Z":
                signal_same(st["pid"], st["starttime"], signal.SIGKILL)
        time.sleep(poll)
    return len(termed), [st["pid"] for st in remaining()]
