"""The embedded default (local transport, simulated nodes on this machine) and the attached-guard mode.

Process-table checks look for the run id that the plan puts into every job process's environment."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_helpers import fail_args, processes_of_run, rlaunch, scaled, scaled_inventory, scaled_model, wait_for

from cluster.inventory import load_inventory
from cluster.local import LocalTransport
from cluster.transport import Endpoint
from launcher import lifecycle, records

pytestmark = pytest.mark.usefixtures("run_home")

ROOT = Path(__file__).resolve().parents[1]


def local_inventory(tmp_path: Path, **job: object) -> Any:
    """examples/local.yaml with this test's own workdir (not the demo's shared /tmp/rlaunch-demo), the job's
    fields in `job` replaced, and its limits scaled to the machine's load (e2e_helpers.scaled)."""
    inv = load_inventory(ROOT / "examples" / "local.yaml")
    inv = inv.model_copy(update={"workdir": str(tmp_path / "work"), "job": inv.job.model_copy(update=job)})
    return scaled_model(inv)


def local_yaml(tmp_path: Path) -> str:
    """The same as a file for the CLI: examples/local.yaml's paths made absolute, its own workdir, scaled limits."""
    data = yaml.safe_load((ROOT / "examples" / "local.yaml").read_text())
    data["python"] = os.path.normpath(ROOT / "examples" / data["python"])  # the venv's link, not its target
    data["job"]["script"] = str(ROOT / "examples" / data["job"]["script"])
    data["workdir"] = str(tmp_path / "work")
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump(scaled_inventory(data)))
    return str(path)


def test_embedded_default_through_the_cli(run_home: Path, tmp_path: Path) -> None:
    """What `make demo` runs: two simulated nodes × two ranks, real torchrun over gloo."""
    proc = rlaunch("up", local_yaml(tmp_path), "--no-doctor", home=run_home, timeout=300)
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

    cli = functools.partial(rlaunch, home=run_home)

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
    inv = local_inventory(tmp_path)
    transport = AttachedLocalTransport(Endpoint.all_from(inv))
    lines: list[str] = []
    run_id, outcome = lifecycle.up(inv, transport=transport, on_line=lambda h, r, t: lines.append(t))
    assert outcome.code == 0, outcome.summary
    assert any(t.startswith("step=30") for t in lines)
    assert not processes_of_run(run_id)


def test_detach_is_refused_for_attached_transports(tmp_path: Path) -> None:
    inv = local_inventory(tmp_path)
    transport = AttachedLocalTransport(Endpoint.all_from(inv))
    with pytest.raises(lifecycle.LaunchError) as info:
        lifecycle.up(inv, transport=transport, detach=True)
    assert info.value.code == 2


def test_attached_guard_ends_with_its_channel(tmp_path: Path) -> None:
    """When the launcher's channel goes (srun step ended, launcher killed), the attached guard cleans up."""
    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    inv = local_inventory(tmp_path, args=["--steps", "100000", "--sleep", "0.05"])
    health = inv.health.model_copy(update={"heartbeat_timeout": scaled(2.0), "grace": 1.0})
    inv = inv.model_copy(update={"health": health})
    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    record = records.RunRecord.create(plan.run_id, plan.to_json())
    runner = Runner(plan, AttachedLocalTransport(Endpoint.all_from(inv)), record)
    runner.push()
    runner.start()
    beats = runner.heartbeats().start()  # the launcher's part of the contract, until it "dies"
    wait_for(lambda: len(processes_of_run(plan.run_id)) >= 6, 120, "2 torchruns + 4 workers")
    beats.stop()
    runner.detach_followers()
    wait_for(lambda: not processes_of_run(plan.run_id), 60, "the attached guards to end the job")


def test_gpu_reset_in_the_kernel_log_stops_the_job_and_smi_snapshots_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follower tails the kernel log (RLAUNCH_KMSG stands in for /dev/kmsg) and snapshots amd-smi."""
    import threading

    kmsg = tmp_path / "kmsg"
    kmsg.write_text("old line from before the job: amdgpu 0000:08:00.0: amdgpu: GPU reset begin!\n")
    monkeypatch.setenv("RLAUNCH_KMSG", str(kmsg))
    monkeypatch.setenv("PATH", f"{ROOT / 'tests' / 'fakebin' / 'mi300x'}:{os.environ['PATH']}")
    inv = local_inventory(tmp_path, args=["--steps", "100000", "--sleep", "0.05"])
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(out=lifecycle.up(inv)), daemon=True)
    thread.start()

    def snapshotted() -> bool:  # the first amd-smi snapshot comes 5 s after the follower starts
        for run_id in records.list_run_ids():
            snapshots = (records.RunRecord.open(run_id).root / "gpu").glob("*.jsonl")
            if any('"tool": "amd-smi"' in p.read_text() for p in snapshots):
                return True
        return False

    wait_for(snapshotted, 120, "an amd-smi snapshot in the record", result)
    with kmsg.open("a") as f:
        f.write("6,1234,5678,-;amdgpu 0000:08:00.0: amdgpu: GPU reset begin!\n")
    thread.join(timeout=scaled(120))
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
    inv = local_inventory(tmp_path, script=str(ROOT / "tests" / "jobs" / "end_of_run_abort.py"), args=[])
    run_id, outcome = lifecycle.up(inv)
    assert outcome.end_of_run_abort, outcome.summary
    assert outcome.code == 0, outcome.summary
    assert "end-of-run abort" in outcome.summary
    assert not processes_of_run(run_id)


def test_detached_run_followed_with_logs_f(run_home: Path, tmp_path: Path) -> None:
    cli = functools.partial(rlaunch, home=run_home, timeout=120)

    up = cli("up", local_yaml(tmp_path), "--detach", "--no-doctor", "--json")
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
    args = fail_args(rank=3)  # rank 3: sim-node1
    inv = local_inventory(tmp_path, args=args, checkpoint_dir=str(tmp_path / "ckpt"))
    restart = inv.restart.model_copy(update={"max_restarts": 1, "backoff": 0, "exclude_failed_node": True})
    inv = inv.model_copy(update={"restart": restart})
    lines: list[str] = []
    run_id, outcome = lifecycle.up(inv, on_line=lambda h, r, t: lines.append(f"{h} {t}"))
    assert outcome.code == 0, outcome.summary
    record = records.RunRecord.open(run_id)
    assert [n["host"] for n in record.plan_json()["nodes"]] == ["sim-node0"]  # the second attempt's plan
    first = json.loads((record.root / "outcome-0.json").read_text())
    assert first["root_cause"]["node"] == "sim-node1"
    assert any("resumed from step-4" in line for line in lines)
    assert not processes_of_run(run_id) and not processes_of_run(f"{run_id}-r1")


def test_sigterm_the_moment_every_guard_started_still_stops_every_node(tmp_path: Path) -> None:
    """A signal between the guards' start and the watch loop (the first beat not yet sent) once took no teardown
    path: the launcher exited 130 with the job running on every node until the guards' heartbeat ran out (turn 8,
    test_e2e_ssh's SIGTERM test beside a busy worker). The signal here is real, sent as the start is reported."""
    import signal

    from launcher.run.signals import interrupt_once

    inv = local_inventory(tmp_path, args=["--steps", "100000", "--sleep", "0.05"])
    inv = inv.model_copy(update={"health": inv.health.model_copy(update={"first_heartbeat_timeout": 600})})
    run_ids: list[str] = []

    def on_event(event: dict[str, Any]) -> None:
        if str(event.get("text", "")).startswith("started on"):
            run_ids.extend(records.list_run_ids())
            os.kill(os.getpid(), signal.SIGTERM)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    interrupt_once(note=lambda text: None)
    try:
        run_id, outcome = lifecycle.up(inv, on_event=on_event)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert run_ids and run_id == run_ids[-1]
    assert outcome.code == 130, outcome.summary
    assert records.RunRecord.open(run_id).read_state()["state"] == "stopped"
    wait_for(lambda: not processes_of_run(run_id), 10, "nothing of the run left on the nodes")
