"""The watcher state machine, replayed from plain data (times are plain numbers, no clock)."""

from __future__ import annotations

from launcher.health.events import Event
from launcher.health.watch import ProcSample, State, Watcher, decode_exit, describe

RANKS = {"node1": [0, 1, 2], "node2": [3, 4, 5]}
LOSS = "{'loss': 1.9, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.1}"


def _watcher(**kwargs: float) -> Watcher:
    watcher = Watcher(ranks=RANKS, **{"stall_timeout": 60.0, **kwargs})
    watcher.start(0.0)
    return watcher


def test_healthy_run_succeeds() -> None:
    watcher = _watcher()
    assert watcher.state is State.STARTING
    assert watcher.observe_line(1.0, "node1", 0, LOSS) is None
    assert watcher.state is State.RUNNING
    assert watcher.tick(30.0) == []
    watcher.observe_exit(50.0, "node1", 0)
    assert watcher.state is State.RUNNING
    watcher.observe_exit(50.2, "node2", 0)
    verdict = watcher.verdict()
    assert (verdict.ok, verdict.state, verdict.root_cause) == (True, State.SUCCEEDED, None)
    assert verdict.exit_codes == {"node1": 0, "node2": 0}


def test_cascade_root_cause_is_the_killed_rank_not_the_survivors() -> None:
    # rank 3 SIGKILLed on node2 at t=10.0; node1's ranks see "Connection closed by peer" at 10.8;
    # node1's torchrun exits 1 at 11.5. The runner hears of the kill only at 12.0 (SSH lag), the
    # survivors' lines arrive first: precedence, not arrival order, names the root cause.
    watcher = _watcher()
    watcher.observe_line(1.0, "node1", 0, LOSS)
    closed = "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:30872"
    for rank in (0, 1, 2):
        event = watcher.observe_line(10.8, "node1", rank, closed)
        assert event is not None and event.category == "network"
    assert watcher.should_stop
    watcher.observe_exit(11.5, "node1", 1)
    watcher.observe_exit(10.0, "node2", None, signal="SIGKILL", rank=3)
    watcher.observe_exit(12.5, "node2", 1)
    root = watcher.first_failure
    assert root is not None and (root.node, root.rank, root.kind, root.signal) == (
        "node2",
        3,
        "exit",
        "SIGKILL",
    )
    verdict = watcher.verdict()
    assert verdict.state is State.FAILED and not verdict.ok
    assert verdict.summary == "node2 rank 3: crash — killed by SIGKILL"
    assert verdict.exit_codes == {"node1": 1, "node2": 1}


def test_specific_cause_wins_even_when_reported_slightly_later() -> None:
    watcher = _watcher()
    watcher.observe_line(
        20.0, "node1", 0, "[rank0]: ncclRemoteError: A call failed possibly due to a network error"
    )
    watcher.observe_line(
        21.0, "node2", 4, "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.88 GiB."
    )
    root = watcher.first_failure
    assert root is not None and (root.node, root.category) == ("node2", "oom")


def test_outside_the_window_the_earliest_failure_wins() -> None:
    watcher = _watcher(cascade_window=5.0)
    watcher.observe_line(20.0, "node1", 0, "Connection reset by peer")
    watcher.observe_line(40.0, "node2", 4, "torch.OutOfMemoryError: HIP out of memory.")
    root = watcher.first_failure
    assert root is not None and (root.node, root.category) == ("node1", "network")


def test_first_of_equal_precedence_wins() -> None:
    watcher = _watcher()
    watcher.observe_line(
        5.0, "node2", 3, "Memory access fault by GPU node-2 (Agent handle: 0x1) on address 0x1000."
    )
    watcher.observe_line(6.0, "node1", 0, "torch.OutOfMemoryError: HIP out of memory.")
    assert watcher.first_failure is not None and watcher.first_failure.node == "node2"


def test_teardown_sigterm_and_plain_exit_codes_are_cascade() -> None:
    watcher = _watcher()
    watcher.observe_exit(10.0, "node1", -15, rank=1)  # torchrun's SIGTERM to a survivor
    watcher.observe_exit(10.5, "node2", 1, rank=3)
    watcher.observe_line(11.0, "node2", 3, "Segmentation fault (core dumped)")
    root = watcher.first_failure
    assert root is not None and root.rule == "segfault"


def test_exit_decoding() -> None:
    assert decode_exit(-9, None) == (-9, "SIGKILL")
    assert decode_exit(137, None) == (137, "SIGKILL")
    assert decode_exit(None, 11) == (None, "SIGSEGV")
    assert decode_exit(1, None) == (1, None)
    assert decode_exit(0, None) == (0, None)


def test_stall_is_whole_job_silence_and_names_the_quietest_node() -> None:
    watcher = _watcher(stall_timeout=60.0)
    watcher.observe_line(5.0, "node2", 3, "step")
    watcher.observe_line(30.0, "node1", 0, LOSS)  # only the main process keeps printing
    assert watcher.tick(80.0) == []  # node2 quiet for 75 s, but the job is not
    events = watcher.tick(91.0)
    assert [(e.kind, e.node, e.severity) for e in events] == [("stall", "node2", "fatal")]
    assert watcher.tick(95.0) == []  # reported once per silence
    assert watcher.should_stop


def test_stall_counts_from_start_when_nothing_was_printed() -> None:
    watcher = _watcher(stall_timeout=60.0)
    assert watcher.tick(59.0) == []
    assert [e.kind for e in watcher.tick(60.0)] == ["stall"]


def test_stopped_process_needs_confirmation() -> None:
    watcher = _watcher(stop_confirm_s=1.0)
    watcher.observe_line(1.0, "node1", 0, LOSS)
    assert watcher.observe_procs(10.0, "node2", [ProcSample(4242, "T", rank=4), (4243, "S", 5)]) == []
    assert watcher.observe_procs(10.5, "node2", [ProcSample(4242, "T", rank=4)]) == []
    events = watcher.observe_procs(11.2, "node2", [ProcSample(4242, "T", rank=4)])
    assert [(e.kind, e.node, e.rank, e.time) for e in events] == [("stopped", "node2", 4, 10.0)]
    assert watcher.observe_procs(12.5, "node2", [ProcSample(4242, "T", rank=4)]) == []  # once


def test_a_process_that_resumes_is_not_stopped() -> None:
    watcher = _watcher(stop_confirm_s=1.0)
    watcher.observe_procs(10.0, "node2", [(4242, "T", 4)])
    watcher.observe_procs(10.6, "node2", [(4242, "R", 4)])
    assert watcher.observe_procs(11.5, "node2", [(4242, "T", 4)]) == []
    assert watcher.first_failure is None


def test_stopped_rank_beats_the_collective_timeouts_it_causes() -> None:
    watcher = _watcher(stall_timeout=1000.0)
    watcher.observe_procs(100.0, "node2", [(4242, "T", 4)])
    watcher.observe_procs(101.5, "node2", [(4242, "T", 4)])
    timeout = (
        "[rank0]:[E1206 x.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)"
    )
    watcher.observe_line(700.0, "node1", 0, timeout)
    assert watcher.verdict().summary.startswith("node2 rank 4: stopped — process 4242 stopped")


def test_lost_node_beats_the_survivors_connection_errors() -> None:
    watcher = _watcher()
    watcher.observe_line(10.0, "node1", 0, "Connection closed by peer [10.0.0.2]:1234")
    watcher.observe_lost(14.0, "node2", "no heartbeat for 4s")
    root = watcher.first_failure
    assert root is not None and (root.kind, root.node, root.category) == ("lost", "node2", "network")


def test_gpu_state_lines() -> None:
    watcher = _watcher()
    assert watcher.observe_gpu(3.0, "node2", "amdgpu 0000:08:00.0: amdgpu: GPU reset begin!") is not None
    assert watcher.observe_gpu(3.5, "node2", "amdgpu: SMU is resumed successfully!") is None
    assert watcher.first_failure is not None and watcher.first_failure.kind == "gpu"


def test_end_of_run_abort_after_completion_is_a_warning() -> None:
    watcher = _watcher()
    watcher.observe_line(
        90.0, "node1", 0, "{'train_runtime': 88.1, 'train_samples_per_second': 3.1, 'epoch': 1.0}"
    )
    event = watcher.observe_line(91.0, "node2", 4, "terminate called without an active exception")
    assert event is not None and event.severity == "warning" and event.text.startswith("end-of-run abort")
    watcher.observe_exit(91.1, "node2", -6, rank=4)
    watcher.observe_line(
        91.3, "node2", None, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
    )
    watcher.observe_exit(91.5, "node2", 1)
    watcher.observe_exit(91.6, "node1", 0)
    verdict = watcher.verdict()
    assert (verdict.ok, verdict.state, verdict.root_cause) == (True, State.SUCCEEDED, None)
    assert len(verdict.end_of_run_aborts) == 4
    assert verdict.exit_codes == {"node1": 0, "node2": 1}


def test_the_same_abort_before_completion_is_a_failure() -> None:
    watcher = _watcher()
    watcher.observe_line(50.0, "node1", 0, LOSS)
    event = watcher.observe_line(51.0, "node2", 4, "terminate called without an active exception")
    assert event is not None and event.severity == "fatal"
    assert watcher.first_failure == event


def test_an_abort_read_just_before_another_nodes_completion_line_is_forgiven() -> None:
    # Seen in the restart e2e test (issue 12): node2's rank aborts at exit right after the final barrier; its
    # follower delivers the abort 0.2 s before node1's follower delivers rank 0's "training complete".
    watcher = _watcher()
    watcher.observe_line(10.0, "node1", 0, "step=12 loss=0.23")
    abort = watcher.observe_line(20.0, "node2", 3, "terminate called without an active exception")
    assert abort is not None and abort.is_fatal and watcher.first_failure == abort
    assert watcher.worth_holding(abort, now=20.1)  # the runner waits for the other followers' lines
    watcher.observe_line(20.2, "node1", 0, "training complete")
    assert watcher.first_failure is None and not watcher.should_stop
    watcher.observe_line(20.4, "node2", 3, "  exitcode  : -6 (pid: 77)  (SIGABRT)")
    watcher.observe_exit(20.5, "node2", 1)
    watcher.observe_exit(20.6, "node1", 0)
    verdict = watcher.verdict()
    assert (verdict.ok, verdict.state) == (True, State.SUCCEEDED), verdict.summary
    assert len(verdict.end_of_run_aborts) == 3


def test_the_hold_for_a_completion_line_is_short() -> None:
    watcher = _watcher()
    abort = watcher.observe_line(20.0, "node2", 3, "terminate called without an active exception")
    assert abort is not None and not watcher.worth_holding(abort, now=20.0 + watcher.clock_slack)
    watcher.observe_line(25.0, "node1", 0, "training complete")  # too late: the abort came first
    assert watcher.first_failure == abort


def test_a_victims_abort_at_exit_is_cascade_not_the_root_cause() -> None:
    # Seen in the restart e2e test: node2's rank is SIGKILLed; node1's rank fails in all_reduce with "Connection
    # closed by peer", then aborts at interpreter exit, and both arrive before node2's torchrun reports the kill.
    watcher = _watcher()
    watcher.observe_line(10.0, "node1", 0, "step=7 loss=0.5")
    closed = "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection closed by peer [198.18.0.6]:30872"
    watcher.observe_line(10.9, "node1", 0, closed)
    watcher.observe_line(11.0, "node1", 0, "terminate called without an active exception")
    watcher.observe_line(11.2, "node1", 0, "  exitcode  : -6 (pid: 41)  (SIGABRT)")
    watcher.observe_exit(11.3, "node1", 1)
    kill = "failed (exitcode: -9) local_rank: 0 (pid: 16) of binary: /venv/bin/python"
    killed = watcher.observe_line(11.6, "node2", 3, kill)
    assert watcher.first_failure == killed


def test_a_crash_on_another_rank_of_the_victims_node_still_counts() -> None:
    watcher = _watcher()
    closed = "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection closed by peer [198.18.0.6]:30872"
    watcher.observe_line(10.9, "node1", 0, closed)
    segv = watcher.observe_line(11.0, "node1", 1, "Segmentation fault (core dumped)")
    assert watcher.first_failure == segv


def test_requested_stop_ends_stopped_not_failed() -> None:
    watcher = _watcher()
    watcher.observe_line(1.0, "node1", 0, LOSS)
    watcher.request_stop(5.0)
    assert watcher.should_stop
    assert watcher.observe_exit(6.0, "node1", -15).severity == "info"
    watcher.observe_exit(6.1, "node2", 143)
    verdict = watcher.verdict()
    assert (verdict.state, verdict.ok, verdict.summary) == (State.STOPPED, False, "stopped on request")


def test_events_survive_events_jsonl() -> None:
    watcher = _watcher()
    watcher.observe_line(10.8, "node1", 0, "[rank0]: Connection closed by peer [10.0.0.2]:30872")
    watcher.observe_exit(10.0, "node2", -9, rank=3)
    replayed = [Event.from_json(event.to_json()) for event in watcher.events]
    assert replayed == watcher.events
    assert describe(replayed[0]).startswith("node1 rank 0: network — ")


def test_fatal_line_followed_by_clean_exit_is_forgiven() -> None:
    """torchrun's exit-barrier noise on a non-master node: a DistNetworkError line, then exit 0."""
    w = Watcher({"node1": [0], "node2": [1]}, stall_timeout=60)
    w.start(0.0)
    line = "E1130 api.py:1008] torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed."
    assert w.observe_line(10.0, "node2", None, line) is not None
    assert w.first_failure is not None
    w.observe_exit(10.5, "node1", 0)
    w.observe_exit(11.0, "node2", 0)
    assert w.first_failure is None
    verdict = w.verdict()
    assert verdict.ok and verdict.state.value == "succeeded"


def test_fatal_line_followed_by_a_late_clean_exit_still_counts() -> None:
    w = Watcher({"node1": [0]}, stall_timeout=60)
    w.start(0.0)
    w.observe_line(
        10.0, "node1", 0, "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error"
    )
    w.observe_exit(10.0 + w.confirm_s + 5, "node1", 0)
    assert w.first_failure is not None and not w.verdict().ok


def test_end_of_run_abort_stops_nodes_left_in_the_exit_barrier_and_succeeds() -> None:
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600, end_of_run_grace=20)
    w.start(0.0)
    w.observe_line(10.0, "node1", 0, "  train_runtime            = 0:00:01.23")
    w.observe_line(10.5, "node2", 3, "terminate called without an active exception")
    w.observe_exit(11.0, "node2", 1)  # torchrun on node2 gives up: forgiven, the run had completed
    assert w.first_failure is None
    assert w.tick(20.0) == []  # node1's agent still waits in torchrun's exit barrier
    events = w.tick(31.5)
    assert w.should_stop and w.stop_reason == "end-of-run" and events
    w.observe_exit(33.0, "node1", None, "SIGKILL")  # our teardown's SIGKILL after the grace: not a cause
    verdict = w.verdict()
    assert verdict.ok and verdict.state.value == "succeeded" and verdict.end_of_run_aborts


def test_what_a_node_prints_while_the_end_of_run_teardown_stops_it_is_not_a_failure() -> None:
    """make test, turn 8: after an end-of-run abort the watcher stops the nodes still in torchrun's exit barrier;
    one of them printed c10d's store loss as its peer's agent went (a W-level line, then the DistNetworkError
    raised from it) and the run that had completed was reported failed on it."""
    w = Watcher({"node1": [0], "node2": [1], "node3": [2]}, stall_timeout=600, end_of_run_grace=20)
    w.start(0.0)
    w.observe_line(10.0, "node1", 0, "  train_runtime            = 0:00:01.23")
    w.observe_line(10.5, "node3", 2, "terminate called without an active exception")
    w.observe_exit(11.0, "node3", 1)
    w.tick(31.5)
    assert w.should_stop and w.stop_reason == "end-of-run"
    w.observe_line(
        32.0,
        "node2",
        None,
        "[W1204 23:39:03.076309900 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3, "
        "addr=[::1]:55788, remote=[::1]:27943): Failed to recv, got 0 bytes. Connection was likely closed. Did the "
        "remote server shutdown or crash?",
    )
    w.observe_line(
        32.1,
        "node2",
        None,
        "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did the "
        "remote server shutdown or crash?",
    )
    w.observe_exit(33.0, "node2", None, "SIGKILL")
    w.observe_exit(33.0, "node1", None, "SIGKILL")
    verdict = w.verdict()
    assert verdict.ok and verdict.state.value == "succeeded", verdict.summary
    assert any(e.text.startswith("while stopping after the run completed") for e in w.events)


def test_a_kill_reported_after_teardown_began_is_still_the_cause() -> None:
    """The teardown's own SIGKILLs are consequences; a death before it started is not, even if reported late."""
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    w.start(0.0)
    w.observe_line(
        10.8,
        "node1",
        0,
        "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [198.18.0.6]:1234",
    )
    w.request_stop(12.0)
    w.observe_exit(10.0, "node2", None, "SIGKILL", rank=3)
    w.observe_exit(13.0, "node1", None, "SIGKILL")
    root = w.first_failure
    assert root is not None and root.node == "node2" and root.rank == 3


def test_retry_lines_are_no_progress_for_the_stall_clock() -> None:
    """A rank stuck connecting to a master that does not listen prints TCPStore retries: that is still a hang (a
    master with no route to it fails sooner: test_a_node_without_a_route_to_the_store_fails_...)."""
    w = Watcher({"node1": [0], "node2": [1]}, stall_timeout=30)
    w.start(0.0)
    retry = (
        "[W1130 08:57:11.474908280 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
        "198.18.158.58:29611 - retrying (try=3, timeout=900000ms, delay=650ms): Connection refused"
    )
    for t in range(5, 40, 5):
        w.observe_line(float(t), "node2", None, retry)
        w.observe_line(
            float(t),
            "node2",
            None,
            "Exception raised from recvBytes at Utils.hpp:787 (most recent call first):",
        )
        w.observe_line(float(t), "node2", None, "frame #0: c10::Error::Error(c10::SourceLocation) + 0x9d")
        w.observe_line(
            float(t), "node2", None,
            "[E1130 09:56:33.769305467 socket.cpp:818] [c10d] The client socket has failed to connect to any "
            "network address of (198.19.224.62, 29895).",
        )  # fmt: skip
    stalls = w.tick(40.0)
    assert stalls and stalls[0].kind == "stall"


def test_startup_has_its_own_allowance_then_the_stall_clock_runs_from_the_first_line() -> None:
    w = Watcher({"node1": [0]}, stall_timeout=30, startup_timeout=120)
    w.start(0.0)
    assert w.tick(100.0) == []  # loading a model: silent, but within the start-up allowance
    w.observe_line(110.0, "node1", 0, "step=1 loss=2.0")
    assert w.tick(130.0) == []
    stalls = w.tick(141.0)
    assert stalls and stalls[0].kind == "stall"
    quiet = Watcher({"node1": [0]}, stall_timeout=30, startup_timeout=120)
    quiet.start(0.0)
    assert quiet.tick(121.0)  # never printed anything: hung in start-up


def test_forwarded_healthy_lines_still_teach_the_cadence_and_a_hang_is_found() -> None:
    """Edge forwarding sends healthy lines unclassified (observe_activity); the hang rule must still learn the step
    cadence from them (a rank asleep forever was never found behind forwarding, issue 13 × issue 14)."""
    w = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    w.start(0.0)
    for step in range(1, 20):
        w.observe_activity(float(step), "node1", 0, text=f"step={step} loss=0.5")
        for node, ranks in (("node1", (0, 1)), ("node2", (2, 3))):
            w.observe_procs(
                float(step), node, [ProcSample(100 + r, "S", r, step * 0.1, step * 1000) for r in ranks]
            )
    assert w.progress.interval is not None and w.progress.interval > 0
    found = []
    for t in range(20, 200):  # every rank idle from step 19 on: same CPU and I/O counters
        for node, ranks in (("node1", (0, 1)), ("node2", (2, 3))):
            w.observe_procs(float(t), node, [ProcSample(100 + r, "S", r, 1.9, 19000) for r in ranks])
        found += w.tick_progress(float(t))
        if found:
            break
    assert found and found[0].kind == "hang", found


STORE_LOST = "E1130 api.py:1008] torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed."


def test_a_clean_exit_wins_over_a_store_line_however_late_it_arrives() -> None:
    """The master's agent exited 0 and closed the store: node2's store line waits for node2's own exit code, not
    for ``confirm_s`` (under load the exit record came later than that and a good run failed)."""
    w = Watcher({"node1": [0], "node2": [1]}, stall_timeout=60)
    w.start(0.0)
    w.observe_exit(10.0, "node1", 0)
    line = w.observe_line(10.2, "node2", None, STORE_LOST)
    assert line is not None and w.first_failure == line
    late = 10.2 + w.confirm_s + 5
    assert w.worth_holding(line, now=late)  # still waiting for node2's exit code
    assert not w.worth_holding(line, now=10.2 + w.end_of_run_grace)  # bounded all the same
    w.observe_exit(late, "node2", 0)
    verdict = w.verdict()
    assert w.first_failure is None and verdict.ok and verdict.state.value == "succeeded"
    assert verdict.warnings == 1


def test_a_store_line_read_before_the_masters_clean_exit_waits_for_it_too() -> None:
    """Followers of different nodes deliver in any order: the line first, the master's exit 0 next."""
    w = Watcher({"node1": [0], "node2": [1]}, stall_timeout=60)
    w.start(0.0)
    line = w.observe_line(10.0, "node2", None, STORE_LOST)
    assert line is not None and w.worth_holding(line, now=10.5)
    w.observe_exit(10.0 + w.confirm_s, "node1", 0)
    assert w.worth_holding(line, now=10.0 + w.confirm_s + 1)
    w.observe_exit(10.0 + w.confirm_s + 4, "node2", 0)
    assert w.verdict().ok


def test_a_store_line_after_a_clean_peer_still_fails_when_its_node_exits_non_zero() -> None:
    w = Watcher({"node1": [0], "node2": [1]}, stall_timeout=60)
    w.start(0.0)
    w.observe_exit(10.0, "node1", 0)
    line = w.observe_line(10.2, "node2", None, STORE_LOST)
    assert line is not None
    w.observe_exit(16.0, "node2", 1)
    failure = w.first_failure
    assert failure is not None and failure.node == "node2" and not w.worth_holding(failure, now=16.1)
    assert not w.verdict().ok


def test_a_store_line_after_its_own_agents_success_waits_for_its_exit_code() -> None:
    """torchrun's agent said its worker group succeeded, then its exit barrier lost the master's store: that node's
    exit code decides, even when no peer's exit 0 has been delivered yet (3 workers on 2 cores: node1's exit record
    came later than ``confirm_s`` after node3's line, and a clean run was torn down as a rendezvous failure)."""
    w = Watcher({"node1": [0], "node3": [1]}, stall_timeout=60)
    w.start(0.0)
    w.observe_line(
        9.0,
        "node3",
        None,
        "I1202 api.py:932] [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
    )
    line = w.observe_line(
        10.0, "node3", None, "E1202 api.py:1008] torch.distributed.DistNetworkError: Connection reset by peer"
    )
    assert line is not None and w.first_failure == line
    assert w.worth_holding(line, now=10.0 + w.confirm_s + 5)  # no peer exit yet: its own exit code decides
    w.observe_exit(10.0 + w.confirm_s + 6, "node3", 0)
    w.observe_exit(10.0 + w.confirm_s + 7, "node1", 0)
    assert w.first_failure is None and w.verdict().ok


def test_a_failed_worker_group_is_no_completion() -> None:
    from launcher.health.rules import is_completion_marker

    assert not is_completion_marker(
        "INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (FAILED). Waiting 300 seconds"
    )
    assert is_completion_marker(
        "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents"
    )


STORE_WARNED = (
    "[W1202 17:22:07.276600433 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3, "
    "addr=[::1]:3340, remote=[::1]:30399): Failed to recv, got 0 bytes. Connection was likely closed."
)


def test_a_store_line_logged_as_a_warning_waits_for_its_nodes_exit_code() -> None:
    """c10d's own W-level note of a lost store connection (every agent's exit barrier after the master's agent left):
    its node's exit code decides, even when no peer's exit 0 has been delivered yet (the 2-worker suite at load 24
    tore a clean 3-node run down on it)."""
    w = Watcher({"node1": [0], "node3": [1]}, stall_timeout=60)
    w.start(0.0)
    line = w.observe_line(10.0, "node3", None, STORE_WARNED)
    assert line is not None
    assert w.worth_holding(line, now=10.0 + w.confirm_s + 5)
    assert not w.worth_holding(line, now=10.0 + w.end_of_run_grace)  # bounded all the same
    w.observe_exit(10.0 + w.confirm_s + 6, "node3", 0)
    w.observe_exit(10.0 + w.confirm_s + 7, "node1", 0)
    assert w.first_failure is None and w.verdict().ok


def test_a_warned_store_line_still_fails_when_its_node_exits_non_zero() -> None:
    w = Watcher({"node1": [0], "node3": [1]}, stall_timeout=60)
    w.start(0.0)
    line = w.observe_line(10.0, "node3", None, STORE_WARNED)
    assert line is not None
    w.observe_exit(12.0, "node3", 1)
    assert w.first_failure is not None and not w.worth_holding(w.first_failure, now=12.1)
    assert not w.verdict().ok


# What torch 2.13's c10d prints on a node without a route to the master (make test, the pairwise-isolation validate
# test's node3 with its default route deleted): per address a W-level socket.cpp line with the errno, then
# TCPStore.cpp's retry line. The same lines with ECONNREFUSED are a master that is not listening yet.
def _store_retry_lines(errno: str) -> list[str]:
    return [
        f"[W1205 07:09:38.763285325 socket.cpp:764] [c10d] The client socket has failed to connect to "
        f"[::]:45419 (errno: {errno}).",
        "[E1205 07:09:38.763319179 socket.cpp:818] [c10d] The client socket has failed to connect to any network "
        "address of (198.18.239.78, 29515).",
        "[W1205 07:09:38.763588784 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
        "198.18.239.78:29515 - retrying (try=0, timeout=900000ms, delay=709ms): The client socket has failed to "
        "connect to any network address of (198.18.239.78, 29515).",
    ]


def _feed_retries(w: Watcher, node: str, errno: str, seconds: float, start: float = 1.0) -> None:
    t = start
    while t <= start + seconds:
        for line in _store_retry_lines(errno):
            w.observe_line(t, node, None, line)
        t += 1.5


def test_a_node_without_a_route_to_the_store_fails_the_run_after_the_unreachable_window() -> None:
    w = _watcher(stall_timeout=300)
    w.start(0.0)
    _feed_retries(w, "node3", "101 - Network is unreachable", 6.0)
    assert w.first_failure is None and w.state is State.RUNNING  # a few seconds of retries are not a verdict
    _feed_retries(w, "node3", "101 - Network is unreachable", 8.0, start=7.5)
    root = w.first_failure
    assert root is not None and root.node == "node3" and root.category == "network"
    assert root.rule == "store-unreachable" and "Network is unreachable" in root.text
    assert describe(root).startswith("node3: network — cannot reach the master's store")
    assert w.state is State.STOPPING
    assert sum(e.rule == "store-unreachable" for e in w.events) == 1  # reported once, however long it retries


def test_no_route_to_host_counts_and_a_refused_connection_never_does() -> None:
    w = _watcher(stall_timeout=300)
    w.start(0.0)
    # the master not listening yet: c10d's to wait
    _feed_retries(w, "node2", "111 - Connection refused", 120.0)
    assert w.first_failure is None
    _feed_retries(w, "node1", "113 - No route to host", 12.0, start=130.0)
    root = w.first_failure
    assert root is not None and root.node == "node1" and "No route to host" in root.text
