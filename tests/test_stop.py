"""The stop request's pieces without a job: the node script that raises it, the job helper that reads it, and the
restart policy that never restarts a stopped run (docs/preemption.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.nodecall import node_script, with_modules
from launcher.restart_policy import AttemptResult, Policy
from launcher.run.loop import CKPT_MODULES

NODE = Path(__file__).resolve().parents[1] / "launcher" / "node"


def _helper():
    spec = importlib.util.spec_from_file_location("rlaunch_job", NODE / "rlaunch_job.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stopreq(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", (NODE / "stopreq.py").read_text(), *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return json.loads(proc.stdout)


def test_the_request_file_is_written_atomically_and_read_by_the_helper(tmp_path: Path, monkeypatch) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    job = _helper()
    monkeypatch.setenv("RLAUNCH_STOP_FILE", str(run_dir / "stop-save.json"))
    assert not job.should_stop() and not job.stop_requested()
    reply = stopreq(str(run_dir), "1700000120", "rlaunch stop")
    assert reply == {"ok": True, "path": str(run_dir / "stop-save.json")}
    data = json.loads((run_dir / "stop-save.json").read_text())
    assert data["deadline"] == 1700000120 and data["reason"] == "rlaunch stop"
    assert (os.stat(run_dir / "stop-save.json").st_mode & 0o777) == 0o600
    assert sorted(p.name for p in run_dir.iterdir()) == ["stop-save.json"]  # no temporary file left
    assert job.should_stop()  # no process group here: the node's own view
    assert not job.should_stop(every=2) and job.should_stop(every=2)  # every 2nd call only
    monkeypatch.delenv("RLAUNCH_STOP_FILE")
    assert not job.stop_requested()


def test_a_symlinked_or_missing_run_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert not stopreq(str(tmp_path / "link"), "0", "x")["ok"]
    assert not (tmp_path / "real" / "stop-request.json").exists()
    assert "No such file" in stopreq(str(tmp_path / "none"), "0", "x")["error"]


def test_a_requested_stop_is_never_restarted() -> None:
    exit75 = {"kind": "line", "node": "n1", "category": "crash", "text": "  exitcode  : 75 (pid: 1)"}
    policy = Policy(max_restarts=5, on_exit_codes=(75,))
    history = [AttemptResult(0, 1, exit75)]
    assert policy.decide(history).restart
    stop = policy.decide(history, stop_requested=True)
    assert not stop.restart and stop.rule == "stop_requested" and stop.exit_code == 75


def _guard_side():
    spec = importlib.util.spec_from_file_location("stopreq_mod", NODE / "stopreq.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CATCHES_USR1 = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGUSR1, lambda *a: (print('got', flush=True), sys.exit(7)))\n"
    "print('ready', flush=True)\ntime.sleep(60)\n"
)


def test_the_guard_signals_only_processes_that_catch_the_stop_signal_and_tears_down_after_the_deadline(
    tmp_path: Path,
) -> None:
    """A real pair of processes: one catches SIGUSR1, one keeps the default action (which would kill it). The hook
    signals the first once, never the second, and answers a teardown reason only after the deadline."""
    from launcher.node.procs import read_stat, signal_same

    mod = _guard_side()
    catcher = subprocess.Popen([sys.executable, "-c", CATCHES_USR1], stdout=subprocess.PIPE, text=True)
    plain = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert catcher.stdout.readline() == "ready\n" and plain.stdout.readline() == "ready\n"
        procs = [read_stat(catcher.pid), read_stat(plain.pid)]
        job = {"env": {"RLAUNCH_STOP_SIGNAL": "SIGUSR1"}}
        assert mod.poll(str(tmp_path), procs, job, 100.0, signal_same) is None  # no request yet
        assert mod.write_request(str(tmp_path), 200.0, "rlaunch stop")["ok"]
        assert mod.poll(str(tmp_path), procs, job, 150.0, signal_same) is None
        seen = json.loads((tmp_path / "stop-seen.json").read_text())
        assert seen["signalled"] == [[catcher.pid, procs[0]["starttime"]]] and seen["deadline"] == 200.0
        assert catcher.wait(timeout=30) == 7 and catcher.stdout.read() == "got\n"
        assert plain.poll() is None  # never signalled: SIGUSR1 would have killed it
        assert mod.poll(str(tmp_path), procs, job, 160.0, signal_same) is None  # once each
        late = mod.poll(str(tmp_path), procs, job, 200.5, signal_same)
        assert late.startswith("stop deadline passed (rlaunch stop)")
        # `none`: the file alone, no signal to anyone.
        assert mod.signal_number({"env": {"RLAUNCH_STOP_SIGNAL": "none"}}) is None
    finally:
        for p in (catcher, plain):
            p.kill()
            p.wait(timeout=30)


def test_the_helper_catches_the_stop_signal_only_where_it_has_the_default_action() -> None:
    code = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(NODE)!r})\n"
        "signal.signal(signal.SIGUSR2, lambda *a: None)\n"
        "os.environ['RLAUNCH_STOP_SIGNAL'] = 'SIGUSR2'\n"
        "import rlaunch_job\n"  # installs at import: not over the job's own SIGUSR2 handler
        "assert signal.getsignal(signal.SIGUSR2) is not rlaunch_job._on_signal\n"
        "os.environ['RLAUNCH_STOP_SIGNAL'] = 'SIGUSR1'\n"
        "assert rlaunch_job.install_handler() and not rlaunch_job.install_handler()\n"  # once
        "assert not rlaunch_job.stop_requested()\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\n"
        "assert rlaunch_job.stop_requested() and rlaunch_job.should_stop()\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RLAUNCH_STOP_SIGNAL": "SIGUSR1"})  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


def test_the_record_says_saved_or_missed_the_deadline() -> None:
    from launcher.preempt import judge

    common = {"run_id": "r", "asked": 100.0, "deadline": 60.0, "max_step": 37, "has_checkpoint_dir": True}
    saved = judge(before="/c/checkpoint-30", after="/c/checkpoint-37", ended=120.0, forced=False, **common)
    assert saved["saved"] and saved["step"] == 37 and saved["lost_steps"] == 0 and not saved["timed_out"]
    assert saved["summary"] == "stopped for preemption at step 37, saved (/c/checkpoint-37)"
    late = judge(before="/c/checkpoint-30", after="/c/checkpoint-30", ended=161.0, forced=False, **common)
    assert not late["saved"] and late["timed_out"] and late["lost_steps"] == 7
    assert late["summary"] == (
        "save did not finish within the deadline (60 s): the job was torn down; the latest complete checkpoint is "
        "/c/checkpoint-30"
    )
    nothing = judge(before=None, after=None, ended=200.0, forced=True, **common)
    assert nothing["lost_steps"] == 37 and "no complete checkpoint" in nothing["summary"]


def test_only_the_two_user_signals_are_stop_signals() -> None:
    import pytest

    from cluster.inventory import InventoryError, from_mapping

    base = {"nodes": [{"host": "n1"}], "job": {"kind": "command", "command": ["true"]}}
    assert from_mapping(base).job.stop_signal == "SIGUSR1"
    with pytest.raises(InventoryError, match="stop_signal"):
        from_mapping({**base, "job": {**base["job"], "stop_signal": "SIGTERM"}})


@pytest.mark.slow
def test_the_hf_callback_saves_through_the_trainer_when_the_request_comes_during_evaluation(
    tmp_path: Path,
) -> None:
    """A real transformers Trainer (tests/jobs/hf_stop.py): the request arrives at the first prediction step of
    the evaluation at step 4; the callback saves checkpoint-4 through Trainer._save_checkpoint there and then, and
    the process exits 75 without training on (the issue's "0 of 6 saves": a flag read only at step boundaries)."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "jobs" / "hf_stop.py"), str(NODE), str(out)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "RLAUNCH_STOP_FILE": str(tmp_path / "stop-save.json"), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert proc.returncode == 75, proc.stderr[-2000:]
    assert "rlaunch: stop requested: saved checkpoint-4, exiting to be requeued" in proc.stdout
    assert "finished without a stop" not in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-4"]
    assert json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())["global_step"] == 4
    latest = subprocess.run(
        [sys.executable, "-c", with_modules(node_script("ckpt.py"), "ckpt.py", CKPT_MODULES), str(out), "1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert json.loads(latest.stdout)["latest"] == str(out / "checkpoint-4")  # complete by the resume rule


def test_the_next_up_resumes_only_from_the_clusters_latest_run_when_it_was_preempted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cluster.inventory import from_mapping
    from launcher import preempted as preempt
    from launcher import records

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))

    def inventory(ckpt: str) -> object:
        return from_mapping({"cluster": "c1", "nodes": [{"host": "n1"}],
                             "job": {"kind": "command", "command": ["true"], "checkpoint_dir": ckpt}})  # fmt: skip

    inv = inventory("/shared/ck")

    def run(rid: str, started: float, **state: object) -> None:
        records.RunRecord.create(rid, {}).update_state(cluster="c1", started_at=started, **state)

    assert preempt.resume_point(inv) is None  # no run yet
    saved = {"checkpoint": "/shared/ck/checkpoint-37", "saved": True, "lost_steps": 0}
    run("20261201-100000-aaaa", 100.0, state="stopped", preemption=saved, slurm_job_id="41")
    assert preempt.resume_point(inv) == {
        "run": "20261201-100000-aaaa", "checkpoint": "/shared/ck/checkpoint-37", "step": 37, "lost_steps": 0
    }  # fmt: skip
    assert preempt.resume_point(inventory("/x")) is None  # another job's checkpoint directory
    run("20261201-110000-bbbb", 200.0, state="running", slurm_job_id="42")
    assert preempt.resume_point(inv) is None  # a later run (from scratch) ends the chain
    assert preempt.run_of_job("42") == "20261201-110000-bbbb" and preempt.run_of_job("41") is None
    assert preempt.run_of_job(None) is None


def test_requeue_exit_leaves_with_75_skipping_only_the_exit_collections(tmp_path: Path) -> None:
    """requeue_exit (no process group here): exit code 75, `finally` blocks and atexit handlers still run, and by
    then every object is in the permanent generation (gc.freeze), so the interpreter's exit collections skip the
    job's objects instead of traversing all of them."""
    script = tmp_path / "job.py"
    script.write_text(
        "import atexit, gc, sys\n"
        f"sys.path.insert(0, {str(NODE)!r})\n"
        "import rlaunch_job\n"
        "atexit.register(lambda: print('atexit ran, frozen:', gc.get_freeze_count() > 0, flush=True))\n"
        "print('frozen before:', gc.get_freeze_count() > 0, flush=True)\n"
        "try:\n"
        "    rlaunch_job.requeue_exit()\n"
        "finally:\n"
        "    print('finally ran', flush=True)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 75, proc.stderr
    assert proc.stdout.splitlines() == ["frozen before: False", "finally ran", "atexit ran, frozen: True"]
