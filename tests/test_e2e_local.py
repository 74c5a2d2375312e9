"""The embedded default (local transport, simulated nodes on this machine) and the attached-guard mode.

Process-table checks look for the run id that the plan puts into every job process's environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.inventory import load_inventory
from cluster.local import LocalTransport
from cluster.transport import Endpoint
from launcher import lifecycle, records

ROOT = Path(__file__).resolve().parents[1]


def processes_of_run(run_id: str) -> list[int]:
    marker = f"RLAUNCH_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture(autouse=True)
def run_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_embedded_default_through_the_cli(run_home: Path) -> None:
    """What `make demo` runs: two simulated nodes × two ranks, real torchrun over gloo."""
    proc = subprocess.run(
        [sys.executable, "-m", "launcher.cli", "up", "examples/local.yaml", "--no-doctor"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RLAUNCH_HOME": str(run_home)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "sim-node0[0] step=30 loss=" in proc.stdout and "training complete" in proc.stdout
    assert "succeeded" in proc.stderr
    run_id = records.list_run_ids(run_home)[-1]
    assert not processes_of_run(run_id)
    # The run id as soon as it exists, with what to type in another terminal; at the end what to read next.
    assert f"rlaunch: run {run_id} · next: rlaunch logs {run_id} -f · " in proc.stderr
    assert f"next: rlaunch logs {run_id} --tail 50 · " in proc.stderr.splitlines()[-1]
    losses = [float(line.split("loss=")[1]) for line in proc.stdout.splitlines() if " step=" in line]
    assert losses[-1] < losses[0]  # the demo job learns

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "launcher.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
            env={**os.environ, "RLAUNCH_HOME": str(run_home)},
        )  # fmt: skip

    logs = cli("logs", "--node", "sim-node0", "--grep", "step=30 ")
    assert logs.returncode == 0 and logs.stdout.strip().startswith("sim-node0| [default0]:step=30 loss=")
    assert len(logs.stdout.strip().splitlines()) == 1
    status = cli("status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["state"] == "succeeded"
    listing = cli("status", "--all")
    assert run_id in listing.stdout and "succeeded" in listing.stdout
    assert cli("logs", "--grep", "([").returncode == 2  # a bad regex is bad input, not a traceback


class AttachedLocalTransport(LocalTransport):
    guard_attached = True  # behave like srun: the guard must stay inside the follower's process tree


def test_attached_guard_runs_a_job_to_completion(tmp_path: Path) -> None:
    inv = load_inventory(ROOT / "examples" / "local.yaml")
    inv = inv.model_copy(update={"workdir": str(tmp_path / "work")})
    transport = AttachedLocalTransport(Endpoint.all_from(inv))
    lines: list[str] = []
    run_id, outcome = lifecycle.up(inv, transport=transport, on_line=lambda h, r, t: lines.append(t))
    assert outcome.code == 0, outcome.summary
    assert any(t.startswith("step=30") for t in lines)
    assert not processes_of_run(run_id)


def test_detach_is_refused_for_attached_transports(tmp_path: Path) -> None:
    inv = load_inventory(ROOT / "examples" / "local.yaml")
    transport = AttachedLocalTransport(Endpoint.all_from(inv))
    with pytest.raises(lifecycle.LaunchError) as info:
        lifecycle.up(inv, transport=transport, detach=True)
    assert info.value.code == 2


def test_attached_guard_ends_with_its_channel(tmp_path: Path) -> None:
    """When the launcher's channel goes (srun step ended, launcher killed), the attached guard cleans up."""
    import time

    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    inv = load_inventory(ROOT / "examples" / "local.yaml")
    job = inv.job.model_copy(update={"args": ["--steps", "100000", "--sleep", "0.05"]})
    health = inv.health.model_copy(update={"heartbeat_timeout": 2.0, "grace": 1.0})
    inv = inv.model_copy(update={"workdir": str(tmp_path / "work"), "job": job, "health": health})
    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    record = records.RunRecord.create(plan.run_id, plan.to_json())
    runner = Runner(plan, AttachedLocalTransport(Endpoint.all_from(inv)), record)
    runner.push()
    runner.start()
    beats = runner.heartbeats().start()  # the launcher's part of the contract, until it "dies"
    deadline = time.time() + 120
    while len(processes_of_run(plan.run_id)) < 6 and time.time() < deadline:  # 2 torchruns + 4 workers
        time.sleep(0.2)
    assert len(processes_of_run(plan.run_id)) >= 6
    beats.stop()
    runner.detach_followers()
    deadline = time.time() + 60
    while processes_of_run(plan.run_id) and time.time() < deadline:
        time.sleep(0.2)
    assert not processes_of_run(plan.run_id)


def test_gpu_reset_in_the_kernel_log_stops_the_job_and_smi_snapshots_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follower tails the kernel log (RLAUNCH_KMSG stands in for /dev/kmsg) and snapshots amd-smi."""
    import threading
    import time

    kmsg = tmp_path / "kmsg"
    kmsg.write_text("old line from before the job: amdgpu 0000:08:00.0: amdgpu: GPU reset begin!\n")
    monkeypatch.setenv("RLAUNCH_KMSG", str(kmsg))
    monkeypatch.setenv("PATH", f"{ROOT / 'tests' / 'fakebin' / 'mi300x'}:{os.environ['PATH']}")
    inv = load_inventory(ROOT / "examples" / "local.yaml")
    job = inv.job.model_copy(update={"args": ["--steps", "100000", "--sleep", "0.05"]})
    inv = inv.model_copy(update={"workdir": str(tmp_path / "work"), "job": job})
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(out=lifecycle.up(inv)), daemon=True)
    thread.start()
    deadline = time.time() + 120
    while (
        not [p for p in (records.list_run_ids() or [None]) if p and processes_of_run(p)]
        and time.time() < deadline
    ):
        time.sleep(0.2)
    time.sleep(7)  # the first amd-smi snapshot comes 5 s after the follower starts
    with kmsg.open("a") as f:
        f.write("6,1234,5678,-;amdgpu 0000:08:00.0: amdgpu: GPU reset begin!\n")
    thread.join(timeout=120)
    assert not thread.is_alive()
    run_id, outcome = result["out"]
    assert outcome.code == 1
    assert outcome.root_cause is not None and outcome.root_cause["category"] == "gpu-fault", outcome.summary
    assert "GPU reset begin" in outcome.root_cause["text"]
    snapshots = (records.RunRecord.open(run_id).root / "gpu").glob("*.jsonl")
    assert any('"tool": "amd-smi"' in p.read_text() for p in snapshots)
    assert not processes_of_run(run_id)


@pytest.mark.slow
def test_end_of_run_abort_is_told_apart_from_a_failure(tmp_path: Path) -> None:
    inv = load_inventory(ROOT / "examples" / "local.yaml")
    job = inv.job.model_copy(
        update={"script": str(ROOT / "tests" / "jobs" / "end_of_run_abort.py"), "args": []}
    )
    inv = inv.model_copy(update={"workdir": str(tmp_path / "work"), "job": job})
    run_id, outcome = lifecycle.up(inv)
    assert outcome.end_of_run_abort, outcome.summary
    assert outcome.code == 0, outcome.summary
    assert "end-of-run abort" in outcome.summary
    assert not processes_of_run(run_id)


def test_detached_run_followed_with_logs_f(run_home: Path) -> None:
    env = {**os.environ, "RLAUNCH_HOME": str(run_home)}

    def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "launcher.cli", *args], cwd=ROOT, capture_output=True, text=True,
            timeout=timeout, env=env,
        )  # fmt: skip

    up = cli("up", "examples/local.yaml", "--detach", "--no-doctor", "--json")
    assert up.returncode == 0, up.stderr
    run_id = json.loads(up.stdout.strip().splitlines()[-1])["run_id"]
    follow = cli("logs", "-f", run_id, timeout=300)  # returns when the job ends
    assert follow.returncode == 0, follow.stderr
    assert "training complete" in follow.stdout and "step=30 loss=" in follow.stdout
    status = cli("status", run_id, "--json")
    assert json.loads(status.stdout)["state"] == "succeeded"
    assert not processes_of_run(run_id)


@pytest.mark.slow
def test_restart_excludes_the_failed_node_when_asked(tmp_path: Path) -> None:
    inv = load_inventory(ROOT / "examples" / "local.yaml")
    args = [
        "--steps",
        "8",
        "--ckpt-every",
        "2",
        "--fail-at-step",
        "5",
        "--fail-rank",
        "3",
    ]  # rank 3: sim-node1
    job = inv.job.model_copy(update={"args": args, "checkpoint_dir": str(tmp_path / "ckpt")})
    restart = inv.restart.model_copy(update={"max_restarts": 1, "backoff": 0, "exclude_failed_node": True})
    inv = inv.model_copy(update={"workdir": str(tmp_path / "work"), "job": job, "restart": restart})
    lines: list[str] = []
    run_id, outcome = lifecycle.up(inv, on_line=lambda h, r, t: lines.append(f"{h} {t}"))
    assert outcome.code == 0, outcome.summary
    record = records.RunRecord.open(run_id)
    assert [n["host"] for n in record.plan_json()["nodes"]] == ["sim-node0"]  # the second attempt's plan
    first = json.loads((record.root / "outcome-0.json").read_text())
    assert first["root_cause"]["node"] == "sim-node1"
    assert any("resumed from step-4" in line for line in lines)
    assert not processes_of_run(run_id) and not processes_of_run(f"{run_id}-r1")
