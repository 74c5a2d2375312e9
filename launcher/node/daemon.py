"""The daemonized guard: owns one job's whole process tree so that nothing is left behind.

Why a subreaper: torchrun starts its workers with start_new_session=True (pytorch/pytorch
torch/distributed/elastic/multiprocessing/subprocess_handler/subprocess_handler.py), so killing torchrun's process
group misses them. With PR_SET_CHILD_SUBREAPER (prctl(2), value 36 in include/uapi/linux/prctl.h) every orphaned
descendant is reparented to the guard, so walking the ppid tree from the guard finds them all.
Standard library only (pushed beside guard.py; `guard.py start` forks into daemon_main).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import time
import traceback

if __package__:  # imported by the head or tests as launcher.node.*
    from launcher.node import procs as proctab
    from launcher.node import protocol, stopreq
    from launcher.node import rundir as rd
else:  # imported by guard.py run as a script from the run directory, beside this file
    import procs as proctab  # type: ignore[no-redef]
    import protocol  # type: ignore[no-redef]
    import rundir as rd  # type: ignore[no-redef]

    try:  # stop requests (rlaunch stop --save, docs/preemption.md); absent in a bundle of an older rlaunch
        import stopreq  # type: ignore[no-redef]
    except ImportError:
        stopreq = None  # type: ignore[assignment]

PR_SET_CHILD_SUBREAPER = 36
RECORD_EVERY_S = 1.0


class Guard:
    """The daemonized owner of one job: spawns it, records its tree, reaps, and tears everything down."""

    def __init__(self, rundir: str, job: dict) -> None:
        self.rundir = rundir
        self.job = job
        self.pid = os.getpid()
        self.stop_requested = False
        self.records: set = set()
        self.job_pid: int | None = None
        self.job_status: int | None = None  # raw waitpid status of the job's main process
        self.state = rd.FinalState.of_this_process()
        # Kept open for the guard's life: appended to on every poll.
        self.pids_file = os.fdopen(
            rd.open_nofollow(rd.path_in(rundir, "pids"), os.O_WRONLY | os.O_CREAT | os.O_APPEND), "w"
        )
        self.out_index = rd.OutIndex(rundir)  # out.log's time index, for `rlaunch logs --since`
        self.edge = None  # set by load_edge, after the start reply: the rule table is off the "started" path
        self.procs: list = []
        self.walked_after: int | None = None  # procs.last_pid() as read just before the last full walk
        self.spawn_beat: float | None = None  # the heartbeat file's mtime as spawn left it (no beat since)

    def load_edge(self) -> None:
        """Turn on edge health: RUNDIR/edge.py's EdgeHealth for this job, or none (not pushed, switched off, or it
        does not load). Called after `start` has its reply: loading the rule table costs a node a quarter of a
        CPU-second, which at hundreds of nodes on shared cores would delay every node's "started" (issue 23).
        Nothing is missed: edge health reads out.log from its start, and the head watches meanwhile."""
        if not self.job.get(rd.EDGE_KEY):
            return
        try:
            module = rd.edge_module(self.rundir)
            edge = None if module is None else module.make(self.rundir, self.job)
        except Exception:
            rd.log("edge health unavailable:\n" + traceback.format_exc())
            return
        rd.log("edge health on" if edge is not None else "edge health off (no rules.py)")
        if edge is not None:
            edge.on_bad_line = rd.log
        self.edge = edge

    def on_stop_signal(self, signum: int, _frame: object) -> None:
        self.stop_requested = True

    def spawn(self) -> None:
        if self.job["heartbeat_timeout"] > 0:
            # The follower connects only after `start` has returned; the file's first mtime tells "no beat yet".
            rd.touch(rd.path_in(self.rundir, "heartbeat"))
            self.spawn_beat = os.stat(rd.path_in(self.rundir, "heartbeat")).st_mtime
        env = dict(os.environ)
        env.update(self.job["env"])
        env["PYTHONUNBUFFERED"] = "1"
        out_fd = rd.open_nofollow(rd.path_in(self.rundir, "out.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        with os.fdopen(out_fd, "ab", buffering=0) as out:
            # start_new_session: the job gets its own session and process group, away from the guard's signals.
            proc = subprocess.Popen(
                self.job["argv"],
                cwd=self.job["cwd"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        # The guard reaps with waitpid(-1); keep Popen from ever waiting on the pid itself.
        proc.returncode = 0
        self.job_pid = proc.pid
        self.state.job_pid = self.state.job_pgid = self.state.job_sid = proc.pid
        self.record_tree()
        self.write_state()

    def write_state(self) -> None:
        self.state.write(self.rundir)

    def record_tree(self) -> list:
        """Append newly seen descendants to RUNDIR/pids; return the current descendants."""
        # With the subreaper every descendant is in the tree; the records matter only if prctl failed.
        created = proctab.last_pid()
        if created is not None and created == self.walked_after:
            # Nothing was created on the node since before the last walk: its members, each read again, are the
            # whole tree (those gone left out). A walk reads every process's stat (a few ms a thousand processes).
            procs = []
            for was in self.procs:
                st = proctab.read_stat(was["pid"])
                if st is not None and st["starttime"] == was["starttime"]:
                    procs.append(st)
        else:
            procs = proctab.job_processes([self.pid], self.records)
            self.walked_after = created  # read before the walk: a process made during it shows as a change
        fresh = [rd.record_of(st) for st in procs if rd.record_of(st) not in self.records]
        if fresh:
            self.pids_file.write("".join(f"{pid} {start} {sid}\n" for pid, start, sid in fresh))
            self.pids_file.flush()
            self.records.update(fresh)
        self.procs = procs  # what the next round re-reads when nothing new was created
        try:  # for the followers (rundir.write_procs): one walk of /proc a node, not one per reader
            rd.write_procs(self.rundir, (self.pid, self.state.guard_starttime), procs)
        except OSError as exc:  # a full disk: the followers walk /proc themselves
            rd.log(f"cannot write {rd.PROCS_SNAPSHOT}: {exc.strerror}")
        return procs

    def reap(self) -> None:
        """Collect every exited child (we are a subreaper, so orphans land here too); note the job's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            if pid == self.job_pid and self.job_status is None:
                self.job_status = status
                if os.WIFSIGNALED(status):
                    self.state.signal = os.WTERMSIG(status)
                else:
                    self.state.exit_code = os.WEXITSTATUS(status)
                rd.log(f"job {pid} ended: exit_code={self.state.exit_code} signal={self.state.signal}")

    def heartbeat_expired(self) -> bool:
        return self.head_lost() is not None

    def head_lost(self) -> str | None:
        """Why the head counts as gone, or None. Two signs, told apart in the reason: the follower saw the head's
        end of the connection close (RUNDIR/head_closed newer than the last beat), or beats stopped while the
        connection stayed open (a stalled head or a silent network). Either way the guard waits the whole
        heartbeat_timeout since the last beat, BEATS_PER_TIMEOUT beats: a late beat or a follower that
        reconnects is never taken for a lost head. Before the first beat (the heartbeat file still as spawn left
        it) the window is first_heartbeat_timeout: at hundreds of nodes the head starts every guard, then opens
        every follower, and the last follower can open later than heartbeat_timeout after the first guard began."""
        timeout = self.job["heartbeat_timeout"]
        if timeout <= 0:
            return None
        now = time.time()
        try:
            beat = os.stat(rd.path_in(self.rundir, "heartbeat")).st_mtime
        except OSError:
            return "no heartbeat file: the head never followed"
        age = now - beat
        first = self.spawn_beat is not None and beat == self.spawn_beat
        window = (
            protocol.first_beat_window(timeout, self.job.get("first_heartbeat_timeout")) if first else timeout
        )
        if age <= window:
            return None
        try:
            closed: float | None = os.stat(rd.path_in(self.rundir, rd.HEAD_CLOSED)).st_mtime
        except OSError:
            closed = None
        if closed is not None and closed >= beat:
            return f"the head's connection closed {now - closed:.1f} s ago; no heartbeat for {age:.1f} s (timeout {timeout:g} s)"
        if first:
            return (
                f"no heartbeat at all in the {age:.1f} s since the guard started (first_heartbeat_timeout "
                f"{window:g} s): the head never followed this node"
            )
        missed = int(age * protocol.BEATS_PER_TIMEOUT / timeout)
        return (
            f"no heartbeat for {age:.1f} s ({missed} beats missed, timeout {timeout:g} s) while the head's connection stayed open: "
            "the head stalled or the network went silent"
        )

    def grace(self) -> float:
        override = rd.read_json(rd.path_in(self.rundir, "stop_request.json"))
        if self.stop_requested and isinstance(override, dict) and override.get("grace") is not None:
            return float(override["grace"])
        return self.job["grace"]

    def run(self) -> None:
        poll = self.job["poll_interval"]
        next_record = 0.0
        while True:
            self.reap()
            if time.time() >= next_record:
                # A full /proc walk costs a few ms on a busy node: not every poll. Teardown walks every round.
                self.record_tree()  # sets self.procs
                next_record = time.time() + RECORD_EVERY_S
            if self.stop_requested:
                self.finish(protocol.STOPPED, "guard received SIGTERM/SIGINT")
                return
            if self.job_status is not None:
                state = protocol.SUCCEEDED if self.state.exit_code == 0 else protocol.FAILED
                self.finish(state, "job exited")
                return
            late = (
                stopreq.poll(self.rundir, self.procs, self.job, time.time(), proctab.signal_same)
                if stopreq
                else None
            )
            if late is not None:  # a stop request's deadline passed (stopreq.py): the normal teardown
                self.finish(protocol.STOPPED, late)
                return
            lost = self.head_lost()
            if lost is not None:
                self.finish(protocol.LOST_LAUNCHER, lost)
                return
            decision = self.edge_decision()
            if decision is not None:
                self.state.edge = decision
                self.finish(protocol.FAILED, decision["reason"])
                return
            self.out_index.note()
            time.sleep(poll)

    def edge_decision(self) -> dict | None:
        """The node-local health rules (edge.py): a decision to tear this node down, or None."""
        if self.edge is None:
            return None
        try:
            return self.edge.check(time.time(), self.procs)
        except Exception:  # a bug in the rules must not take the job down: the head still watches
            rd.log("edge health disabled after an error:\n" + traceback.format_exc())
            self.edge = None
            return None

    def finish(self, state: str, reason: str) -> None:
        rd.log(f"tearing down: {state} ({reason})")
        signalled, survivors = self.teardown(self.grace())
        if signalled:
            reason += f"; signalled {signalled} remaining process(es)"
        if survivors:
            reason += f"; {len(survivors)} process(es) would not die: {survivors}"
        self.reap()
        self.out_index.note(force=True)
        self.state.end(state, reason)
        self.write_state()
        rd.log(f"final state {json.dumps(self.state.to_json())}")

    def teardown(self, grace: float) -> tuple:
        """SIGTERM+SIGCONT every descendant, SIGKILL survivors after `grace`: (signalled, pids that never died).

        Zombies count as remaining until reaped: their parents are in the tree and die too, which reparents the
        zombies to us, and reaping them is ours to do."""

        def remaining() -> list:
            self.reap()
            return self.record_tree()

        return proctab.terminate(remaining, grace, poll=min(self.job["poll_interval"], 0.1))


def set_child_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            return True
        rd.log(f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}")
    except (OSError, AttributeError) as e:
        rd.log(f"prctl unavailable: {e}")
    return False


def daemon_main(rundir: str, job: dict, reply_fd: int) -> int:
    """Runs in the grandchild: redirect stdio, become subreaper, spawn the job, report to `start`, loop."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    guard_log = rd.open_nofollow(rd.path_in(rundir, "guard.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(guard_log, 1)
    os.dup2(guard_log, 2)
    os.close(guard_log)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the SSH session that started us may end at any time
    os.chdir("/")  # pin no mount point; job.json's cwd is applied to the job itself

    def reply(data: dict) -> None:
        try:
            os.write(reply_fd, (json.dumps(data) + "\n").encode())
            os.close(reply_fd)
        except OSError:
            pass  # `start` gave up waiting; the guard runs on regardless

    try:
        if not set_child_subreaper():
            rd.log("continuing without subreaper: teardown relies on the recorded pids")
        guard = Guard(rundir, job)
        signal.signal(signal.SIGTERM, guard.on_stop_signal)
        signal.signal(signal.SIGINT, guard.on_stop_signal)
        with os.fdopen(
            rd.open_nofollow(rd.path_in(rundir, "guard.pid"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w"
        ) as f:
            f.write(f"{os.getpid()}\n")
        guard.spawn()
    except Exception as e:
        rd.log(f"could not start job: {e!r}")
        failed = rd.FinalState.of_this_process(protocol.FAILED)
        failed.end(protocol.FAILED, f"could not start job: {e}")
        failed.write(rundir)
        reply({"error": str(e)})
        return protocol.EXIT_FAILED
    rd.log(f"job {guard.job_pid} started: {job['argv']}")
    reply({"guard_pid": guard.pid, "job_pid": guard.job_pid})
    try:
        guard.load_edge()
        guard.run()
    except Exception as e:
        # A bug here must not leave the job unguarded: tear it down rather than vanish.
        rd.log("guard error:\n" + traceback.format_exc())
        guard.finish(protocol.FAILED, f"guard error: {e!r}")
        return protocol.EXIT_FAILED
    return protocol.EXIT_OK
