"""The guard's GPU activity and OOM-killer forwarding, end to end on this machine: a real guarded process with a
rank's environment, a fake amd-smi answering with captured outputs (tests/fakebin/gpuact), a kernel log file
(RLAUNCH_KMSG), and the follower's records replayed into the head's watcher."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e_helpers import wait_for
from test_guard import Job

from launcher.health.watch import Watcher
from launcher.node import gpuact
from launcher.run.attempt import _proc_sample

ROOT = Path(__file__).resolve().parent.parent
SMI = ROOT / "tests" / "fixtures" / "smi"
FAKEBIN = ROOT / "tests" / "fakebin" / "gpuact"
RANK_ENV = {"RANK": "3", "LOCAL_RANK": "1", "HIP_VISIBLE_DEVICES": "0,1"}  # rank 3 computes on GPU 1


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Job]:
    metric = tmp_path / "metric.json"
    shutil.copy(SMI / "amd-smi_metric_mi300x_idle.json", metric)
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,1,-;Out of memory: Killed process 1 (init) anon-rss:1kB: from before the follower\n")
    # The follower inherits these: it runs the tool and reads the kernel log, not the job.
    monkeypatch.setenv("PATH", f"{FAKEBIN}:{os.environ['PATH']}")
    monkeypatch.setenv("RLAUNCH_FAKE_SMI_METRIC", str(metric))
    monkeypatch.setenv("RLAUNCH_KMSG", str(kmsg))
    rundir = tmp_path / "run"
    rundir.mkdir()
    guarded = Job(rundir, ["sh", "-c", "echo $$ > rank.pid; exec sleep 300"], env=RANK_ENV)
    yield guarded
    guarded.cleanup()


def swap(job: Job, name: str) -> None:
    """Replace the fake's output atomically (the follower may be reading it)."""
    target = Path(os.environ["RLAUNCH_FAKE_SMI_METRIC"])
    staged = target.with_suffix(".new")
    shutil.copy(SMI / name, staged)
    os.replace(staged, target)


def rank_gpu(record: dict) -> dict | None:
    return next((p["gpu"] for p in record.get("procs", []) if p.get("rank") == 3 and "gpu" in p), None)


def with_gpu(check: Callable[[dict], bool]) -> Callable[[dict], bool]:
    return lambda r: r["k"] == "procs" and rank_gpu(r) is not None and check(rank_gpu(r))


def test_rank_gpu_readings_and_oom_kill_reach_the_head(job: Job) -> None:
    job.start()
    wait_for(lambda: (job.rundir / "rank.pid").exists(), 30, "the rank to start")
    pid = int((job.rundir / "rank.pid").read_text())
    follower = job.follow()
    records = follower.until(with_gpu(lambda g: g["gfx"] == 0))
    idle = rank_gpu(records[-1])
    assert idle == {"id": 1, "gfx": 0.0, "umc": 0.0, "w": 182.0, "idle_w": 182.0}, idle
    swap(job, "amd-smi_metric_mi300x_spin.json")
    records += follower.until(with_gpu(lambda g: g["gfx"] == 100))
    spinning = rank_gpu(records[-1])
    assert spinning is not None and (spinning["w"], spinning["idle_w"]) == (190.0, 182.0)
    assert gpuact.gpu_state(spinning["gfx"], spinning["umc"], spinning["w"], spinning["idle_w"]) == "spinning"
    # Each sample is carried by one procs record only, so the head counts it once.
    carried = [r for r in records if r["k"] == "procs" and rank_gpu(r) is not None]
    assert len(carried) <= len([r for r in records if r["k"] == "procs"]) // 2 + 1

    # The kernel OOM killer: a line about another process is no business of this job; one about the rank is.
    kmsg = Path(os.environ["RLAUNCH_KMSG"])
    with kmsg.open("a") as f:
        f.write(
            "3,900,5000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
            "global_oom,task_memcg=/user.slice,task=python3,pid=1,uid=0\n"
        )
        f.write(
            f"3,901,5001,-;Out of memory: Killed process {pid} (sleep) total-vm:53312244kB, "
            "anon-rss:31451456kB, file-rss:74816kB, shmem-rss:12296kB, UID:0 pgtables:69068kB oom_score_adj:0\n"
        )
    records += follower.until(lambda r: r["k"] == "kernel")
    kernel = [r["text"] for r in records if r["k"] == "kernel"]
    assert kernel == [f"Out of memory: Killed process {pid} (sleep) " + kernel[0].split("(sleep) ", 1)[1]]
    assert "pid=1," not in " ".join(kernel)

    # Replayed into the head's watcher, as the runner feeds it (launcher/run.py).
    watcher = Watcher(ranks={"node2": [3]}, stall_timeout=600)
    for record in records:
        if record["k"] == "procs":
            watcher.observe_procs(record["t"], "node2", [_proc_sample(p) for p in record["procs"]])
        elif record["k"] == "kernel":
            watcher.observe_gpu(record["t"], "node2", record["text"])
    root = watcher.first_failure
    assert root is not None and (root.node, root.rank, root.category) == ("node2", 3, "oom"), root
    assert root.text == f"rank 3 (node2) killed by the kernel OOM killer: anon-rss 31451456kB (pid {pid})"
    assert watcher.verdict().summary.startswith("node2 rank 3: oom — rank 3 (node2) killed by the kernel OOM")
    rank = watcher.progress.ranks[("node2", 3)]
    assert [state for _, state in rank.gpu][-1] == "spinning"
    follower.send("stop")
    follower.until(lambda r: r["k"] == "exit")
    job.wait_finished()
    job.assert_nothing_left()


def test_a_rank_stuck_in_the_kernel_reaches_the_head_and_another_task_does_not(job: Job) -> None:
    """The kernel's hung-task and soft-lockup reports name a task by pid: the rank's are forwarded, as a warning that
    names the node (the stall check decides whether the job is stuck); anyone else's stay on the node."""
    job.start()
    wait_for(lambda: (job.rundir / "rank.pid").exists(), 30, "the rank to start")
    pid = int((job.rundir / "rank.pid").read_text())
    follower = job.follow()
    follower.until(lambda r: r["k"] == "procs")  # the follower knows the job's processes
    with Path(os.environ["RLAUNCH_KMSG"]).open("a") as f:
        f.write("3,900,5000,-;INFO: task jbd2/sda1-8:1 blocked for more than 122 seconds.\n")
        f.write("0,901,5001,-;watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kworker/3:1:2]\n")
        f.write(f"3,902,5002,-;INFO: task sleep:{pid} blocked for more than 122 seconds.\n")
    records = follower.until(lambda r: r["k"] == "kernel")
    kernel = [r["text"] for r in records if r["k"] == "kernel"]
    assert kernel == [f"INFO: task sleep:{pid} blocked for more than 122 seconds."], kernel
    watcher = Watcher(ranks={"node2": [3]}, stall_timeout=600)
    event = watcher.observe_gpu(records[-1]["t"], "node2", kernel[0])
    assert event is not None and (event.node, event.severity, event.category) == (
        "node2",
        "warning",
        "gpu-fault",
    )
    assert watcher.first_failure is None
    follower.send("stop")
    follower.until(lambda r: r["k"] == "exit")
    job.wait_finished()
    job.assert_nothing_left()


def test_a_hanging_tool_is_one_process_killed_at_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """amd-smi can hang (tests/fakebin/broken): the follower never waits for it, runs one at a time, kills it."""
    from launcher.node import guard

    (tmp_path / "amd-smi").write_text("#!/bin/sh\nexec sleep 60\n")
    (tmp_path / "amd-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setenv("RLAUNCH_KMSG", str(tmp_path / "no-kmsg"))
    monkeypatch.setattr(guard.GpuWatch, "TOOL_TIMEOUT_S", 1.0)
    watch = guard.GpuWatch()
    clock = watch.next_sample
    snapshots, started = [], []
    for step in range(40):  # 8 s of the follower's passes, 0.2 s apart, on a fake clock
        now = clock + step * 0.2
        snapshots.append(watch.poll(now))
        time.sleep(0.02)  # real time for a killed tool to be gone (it is reaped on a later pass)
        assert watch.proc is None or watch.killed or now - watch.proc_started <= 1.0
        if watch.proc is not None and watch.proc.pid not in started:
            started.append(watch.proc.pid)
    assert len(started) == 2, started  # one every ACTIVITY_EVERY_S, never two at once
    errors = [s for s in snapshots if s is not None]
    assert errors and all(s == {"tool": "amd-smi", "error": "no answer within 1 s"} for s in errors)
    watch.close()
    assert all(not guard.is_alive(pid) for pid in started)
