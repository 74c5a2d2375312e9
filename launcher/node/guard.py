"""Node-side guard: owns a job's whole process tree so that nothing is left behind.

Pushed to every node and run with the node's own Python (standard library only, Linux, Python >= 3.8):

    python guard.py start  RUNDIR              daemonize, run job.json's argv, print {"guard_pid", "job_pid"}
    python guard.py run    RUNDIR              start without leaving the caller's session (a child, not a daemon),
                                               print a "started" record, then follow (for srun steps)
    python guard.py follow RUNDIR [--offset N]  stream out.log lines, process lists and the final state as JSON lines
    python guard.py start-follow RUNDIR         start (a daemon), print a "started" record, then follow on the same
                                               channel (a foreground run: one channel per node, not two)
    python guard.py stop   RUNDIR [--grace S]   tear the job down, print the final state; exit 0 if nothing remains
    python guard.py status RUNDIR               print {"state", "alive", "descendants"}

The verbs are protocol.VERBS; each lives in its own module, pushed beside this file (protocol.GUARD_BUNDLE):
procs.py (/proc and PID + start-time identity), rundir.py (the run directory's files, state.json's one shape),
daemon.py (the guard that owns the job), follower.py (the stream every channel runs), gpuwatch.py (GPU health).
This file is the entry: argument parsing, `start` (fork into the daemon), `stop` and `status`.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import select
import signal
import sys
import time
import traceback

if __package__:  # imported by the head or tests as launcher.node.guard
    from launcher.node import daemon, follower, protocol
    from launcher.node import procs as proctab
    from launcher.node import rundir as rd
else:  # run as a script from the run directory, where its modules are pushed beside it (named explicitly:
    # `python -I` or PYTHONSAFEPATH leave the script's directory off sys.path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import daemon  # type: ignore[no-redef]
    import follower  # type: ignore[no-redef]
    import procs as proctab  # type: ignore[no-redef]
    import protocol  # type: ignore[no-redef]
    import rundir as rd  # type: ignore[no-redef]

# Names tests and older callers import from the guard module: the same objects, defined in their own modules.
read_stat, is_alive, signal_same = proctab.read_stat, proctab.is_alive, proctab.signal_same
usage, describe_with_usage = proctab.usage, proctab.describe_with_usage
read_records, LogTail, GpuWatch = rd.read_records, follower.LogTail, follower.gpuwatch.GpuWatch
MAX_LINE_BYTES = protocol.MAX_LINE_BYTES

START_REPLY_TIMEOUT_S = 60.0
NODE_LOCK_WAIT_S = 10.0


def take_node_lock(rundir: str, job: dict | None = None) -> tuple:
    """One run per node (and user) at a time, kept by the node itself: the guard holds an flock on
    <workdir>/.node-<host>.lock for the job's life (two `up`s from two heads, or `--force`, cannot both start here).
    job.json names the lock and the run ("node_lock", "run_id"); without them (an older plan) the run dir is
    <workdir>/<run id>/<host>. A previous run's (or attempt's) guard may still be finishing its teardown, so the
    lock is awaited for NODE_LOCK_WAIT_S. Returns (descriptor, None) or (None, why)."""
    host, run_id = os.path.basename(rundir), os.path.basename(os.path.dirname(rundir))
    path = os.path.join(os.path.dirname(os.path.dirname(rundir)), f".node-{host}.lock")
    if job and isinstance(job.get("node_lock"), str) and isinstance(job.get("run_id"), str):
        path, run_id = job["node_lock"], job["run_id"]
        host = os.path.basename(path)[len(".node-") : -len(".lock")]
    try:
        fd = rd.open_nofollow(path, os.O_RDWR | os.O_CREAT)
    except OSError as e:
        return None, f"cannot open {path}: {e.strerror}"
    deadline = time.time() + NODE_LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.time() >= deadline:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another run"
                os.close(fd)
                return (
                    None,
                    f"node {host} is busy with run {holder} (its guard holds {path}); stop that run first",
                )
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    os.pwrite(fd, run_id.encode(), 0)
    return fd, None


def cmd_start(rundir: str, attached: bool = False, follow: bool = False, show: str | None = None) -> int:
    """Start the guard. Detached (default): a daemon in its own session, so the SSH exec that started it can end.
    Attached (`run`): the guard is our child and we go on as its follower, so the whole guard lives inside the
    caller's session — what schedulers need that track a step's processes (srun; Slurm's proctrack plugins).
    Detached and `follow` (`start-follow`): a daemon as by default, and we go on as its follower (`show` as for
    follow), so a foreground run needs one channel per node for both. Where we go on as a follower, every answer
    is a record (K_STARTED, or K_ERROR and the exit code); else one JSON line."""
    streaming = attached or follow

    def refuse(error: str, code: int) -> int:
        if streaming:
            follower.emit({"k": protocol.K_ERROR, "t": time.time(), "error": error})
        else:
            print(json.dumps({"error": error}))
        return code

    try:
        job = rd.load_job(rundir)
    except ValueError as e:
        return refuse(str(e), protocol.EXIT_BAD_INPUT)
    # The live guard holds an flock on guard.lock for its whole life; it is released by the kernel on any death.
    try:
        lock_fd = rd.open_nofollow(rd.path_in(rundir, "guard.lock"), os.O_RDWR | os.O_CREAT)
    except OSError as e:
        return refuse(f"cannot open {rd.path_in(rundir, 'guard.lock')}: {e.strerror}", protocol.EXIT_INFRA)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pid, _, _ = rd.guard_identity(rundir)
        return refuse(f"a live guard (pid {pid}) already owns {rundir}", protocol.EXIT_INFRA)
    node_lock, busy = take_node_lock(rundir, job)
    if busy:
        return refuse(busy, protocol.EXIT_INFRA)
    for stale in ("stop_request.json", "heartbeat", rd.HEAD_CLOSED):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(rd.path_in(rundir, stale))
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    first = os.fork()
    if first == 0:
        os.close(read_end)
        if not attached:
            os.setsid()
            if os.fork() != 0:
                os._exit(
                    0
                )  # the intermediate exits so the daemon is no session leader and gets no controlling tty
        code = protocol.EXIT_FAILED
        try:
            code = daemon.daemon_main(rundir, job, write_end)
        except BaseException:
            rd.log("guard crashed:\n" + traceback.format_exc())
        finally:
            os._exit(code)
    os.close(write_end)
    os.close(lock_fd)  # the daemon holds its own copy of the locked descriptor
    os.close(node_lock)  # and of the node's
    if not attached:
        os.waitpid(first, 0)  # the intermediate; an attached guard is `first` itself and lives on
    reply = read_reply(read_end, START_REPLY_TIMEOUT_S)
    if reply is None or "error" in reply:
        why = (reply or {}).get("error") or f"guard did not report within {START_REPLY_TIMEOUT_S:.0f} s"
        return refuse(str(why), protocol.EXIT_FAILED)
    if streaming:
        follower.emit({"k": protocol.K_STARTED, "t": time.time(), **reply})
        return follower.cmd_follow(rundir, 0, show)
    print(json.dumps(reply))
    return protocol.EXIT_OK


def read_reply(fd: int, timeout: float) -> dict | None:
    deadline = time.time() + timeout
    data = b""
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.time()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        if data.endswith(b"\n"):
            break
    os.close(fd)
    try:
        return json.loads(data.decode())
    except ValueError:
        return None


def kill_recorded(rundir: str, grace: float) -> list:
    """Without a live guard: tear down what is left of the recorded pids and their trees (`terminate`). Their new
    parent (init or another subreaper) reaps them, so zombies are already dead here."""
    _, survivors = proctab.terminate(lambda: rd.left_of_job(rundir), grace)
    return survivors


def cmd_stop(rundir: str, grace: float | None) -> int:
    pid, start, state = rd.guard_identity(rundir)
    if grace is None:
        job = rd.read_json(rd.path_in(rundir, "job.json"))
        grace = job.get("grace", 10) if isinstance(job, dict) else 10
        if not isinstance(grace, (int, float)) or isinstance(grace, bool) or not 0 <= grace <= 3600:
            grace = 10  # a tampered job.json must not make stop crash or wait forever
    guard_was_alive = pid is not None and proctab.is_alive(pid, start)
    if guard_was_alive:
        rd.write_json_atomic(rd.path_in(rundir, "stop_request.json"), {"grace": grace, "t": time.time()})
        proctab.signal_same(pid, start, signal.SIGTERM)
        deadline = time.time() + grace + 10
        while proctab.is_alive(pid, start) and time.time() < deadline:
            time.sleep(0.1)
        if proctab.is_alive(pid, start):
            # The guard is stuck: record its tree first, then take over the teardown ourselves.
            rd.append_records(
                rundir, [rd.record_of(st) for st in proctab.job_processes([pid], rd.read_records(rundir))]
            )
            proctab.signal_same(pid, start, signal.SIGKILL)
    remaining = kill_recorded(rundir, grace)
    _, _, state = rd.guard_identity(rundir)
    if state is None:
        state = {"state": None, "reason": f"no state.json in {rundir}"}
    elif state.get("state") == protocol.RUNNING:
        # The guard died without a final word (SIGKILL, OOM): write the outcome on its behalf.
        rd.write_ended(rundir, state, protocol.STOPPED, "guard was gone; stop cleaned up its processes")
    state = dict(state, remaining=remaining)
    print(json.dumps(state))
    return protocol.EXIT_OK if not remaining else protocol.EXIT_FAILED


def cmd_status(rundir: str) -> int:
    pid, start, state = rd.guard_identity(rundir)
    alive = pid is not None and proctab.is_alive(pid, start)
    roots = [pid] if alive else []
    procs = proctab.job_processes(roots, rd.read_records(rundir))
    shown = dict(state or {"state": None})
    if not alive and shown.get("state") == protocol.RUNNING:
        shown["state"] = protocol.GUARD_LOST
    shown.update(alive=alive, descendants=proctab.describe(procs))
    print(json.dumps(shown))
    return protocol.EXIT_OK


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guard.py", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=protocol.VERBS)
    parser.add_argument("rundir")
    parser.add_argument("--offset", type=int, default=0, help="follow: byte offset in out.log to start from")
    parser.add_argument("--grace", type=float, default=None, help="stop: seconds between SIGTERM and SIGKILL")
    parser.add_argument(
        "--show",
        default=None,
        help="follow, start-follow: forward only flagged lines, activity and these local ranks (all|none|0,3)",
    )
    args = parser.parse_args(argv)
    rundir = os.path.abspath(args.rundir)
    if not os.path.isdir(rundir):
        print(json.dumps({"error": f"no such run directory: {rundir}"}))
        return protocol.EXIT_BAD_INPUT
    if args.command in (protocol.START, protocol.RUN, protocol.START_FOLLOW):
        follow = args.command == protocol.START_FOLLOW
        return cmd_start(rundir, attached=args.command == protocol.RUN, follow=follow, show=args.show)
    if args.command == "follow":
        return follower.cmd_follow(rundir, args.offset, args.show)
    if args.command == "stop":
        return cmd_stop(rundir, args.grace)
    return cmd_status(rundir)


if __name__ == "__main__":
    sys.exit(main())
