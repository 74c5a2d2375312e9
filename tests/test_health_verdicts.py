"""Verdict wording (issue 12 item 5): readable times, and "killed by SIGKILL" unless memory evidence says OOM."""

from __future__ import annotations

import time

from launcher.health.watch import ProcSample, Watcher, format_duration, format_time

# A wall-clock start (epoch seconds) as the runner feeds it; tests elsewhere use run-relative times.
T0 = 1_796_090_000.0
OOM_KERNEL = (
    "Out of memory: Killed process 4242 (python3) total-vm:90000000kB, anon-rss:60000000kB, file-rss:0kB, "
    "shmem-rss:0kB, UID:1000 pgtables:120000kB oom_score_adj:0"
)


def _watcher() -> Watcher:
    watcher = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    watcher.start(T0)
    return watcher


def test_a_stopped_process_says_when_in_local_time_and_for_how_long() -> None:
    watcher = _watcher()
    assert watcher.observe_procs(T0 + 10, "node2", [ProcSample(45, "T", 3)]) == []
    (event,) = watcher.observe_procs(T0 + 13, "node2", [ProcSample(45, "T", 3)])
    local = time.strftime("%H:%M:%S", time.localtime(T0 + 10))
    assert (
        event.text
        == f"process 45 stopped (state T: SIGSTOP or a debugger) since {local}, seen stopped for 3 s"
    )
    assert "e+09" not in watcher.verdict().summary


def test_a_stall_names_the_last_output_as_a_local_time() -> None:
    watcher = _watcher()
    watcher.observe_line(T0 + 5, "node1", 0, "step 1")
    (event,) = watcher.tick(T0 + 5 + 700)
    local = time.strftime("%H:%M:%S", time.localtime(T0))
    assert (
        event.text == f"no output from any rank for 11 min 40 s (quietest: node2, its last output at {local})"
    )


def test_sigkill_without_evidence_is_a_crash_not_oom() -> None:
    watcher = _watcher()
    watcher.observe_exit(T0 + 20, "node2", None, signal="SIGKILL", rank=3)
    assert watcher.verdict().summary == "node2 rank 3: crash — killed by SIGKILL"
    line = watcher.observe_line(T0 + 21, "node2", None, "  exitcode  : -9 (pid: 14750)")
    assert line is not None and line.category == "crash"


def test_sigkill_after_the_kernel_oom_killer_line_is_oom() -> None:
    watcher = _watcher()
    watcher.observe_gpu(T0 + 19.5, "node2", OOM_KERNEL)
    watcher.observe_exit(T0 + 20, "node2", None, signal="SIGKILL", rank=3)
    root = watcher.first_failure
    assert root is not None and root.category == "oom"
    assert watcher.verdict().summary.startswith("node2")


def test_evidence_that_arrives_after_the_kill_still_names_oom() -> None:
    watcher = _watcher()
    watcher.observe_exit(T0 + 20, "node2", None, signal="SIGKILL", rank=3)
    watcher.observe_gpu(T0 + 22, "node2", OOM_KERNEL)
    root = watcher.first_failure
    assert root is not None and (root.kind, root.category) == ("exit", "oom")
    assert root.text == f"killed by SIGKILL — out of memory, per the kernel log: {OOM_KERNEL[:120]}"


def test_cgroup_memory_events_are_evidence_too() -> None:
    watcher = _watcher()
    watcher.observe_exit(T0 + 20, "node2", None, signal="SIGKILL", rank=3)
    watcher.observe_oom_kill(T0 + 21, "node2", "memory.events oom_kill 0 -> 1")
    assert watcher.verdict().summary == (
        "node2 rank 3: oom — killed by SIGKILL — out of memory, per memory.events oom_kill 0 -> 1"
    )


def test_the_jobs_own_oom_output_upgrades_torchruns_exitcode_line() -> None:
    watcher = _watcher()
    watcher.observe_line(T0 + 20, "node2", None, "srun: error: node2: task 3: Out Of Memory")
    event = watcher.observe_line(T0 + 21, "node2", None, "  exitcode  : -9 (pid: 14750)")
    assert event is not None and event.category == "oom"


def test_evidence_elsewhere_or_long_before_changes_nothing() -> None:
    watcher = _watcher()
    watcher.observe_gpu(T0 + 1, "node2", OOM_KERNEL)  # a different process, long before
    watcher.observe_gpu(T0 + 20, "node1", OOM_KERNEL)  # another node
    watcher.observe_exit(T0 + 100, "node2", None, signal="SIGKILL", rank=3)
    kill = next(e for e in watcher.events if e.kind == "exit")
    assert (kill.category, kill.text) == ("crash", "killed by SIGKILL")


def test_time_and_duration_formats() -> None:
    assert format_time(12.0) == "t+12s"
    assert format_time(T0) == time.strftime("%H:%M:%S", time.localtime(T0))
    assert [format_duration(s) for s in (0.4, 59, 60, 200, 7500)] == [
        "0 s",
        "59 s",
        "1 min 0 s",
        "3 min 20 s",
        "2 h 5 min",
    ]
