"""SlurmTransport (cluster/slurm.py) against a real one-node Slurm 22.05 (tests/slurm_fixture.py).

An allocation is made with `salloc --no-shell` (no shell: the test process itself plays the batch script, with
SLURM_JOB_ID set), then every command goes through `srun --jobid ... --overlap`. Checked: stdin forwarding (a
multi-MB push payload, streamed heartbeat lines), exit codes, srun's own failures as one line naming the node, a
long-lived step ended by close() (the remote pid gone from /proc), and `lifecycle.up`/`down` of real jobs through
srun: a `command` job, a 2-rank torchrun/gloo job, and a long job stopped with `down` with nothing left behind
(found by its marker variable in /proc/PID/environ, never by name).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import wait_for
from slurm_fixture import OneNodeSlurm, slurm_missing, start_one_node_slurm

from cluster.inventory import load_inventory
from cluster.slurm import SlurmTransport
from cluster.transport import Endpoint, make_transport
from launcher import lifecycle, records
from launcher.run.attempt import LaunchError

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable  # the venv's interpreter: the single node is this machine
TRAIN = str(ROOT / "examples" / "train.py")

pytestmark = pytest.mark.skipif(slurm_missing() is not None, reason=str(slurm_missing()))


class Allocation:
    """A running one-node cluster plus a job allocation on it; `env` is what a batch script would see."""

    def __init__(self, cluster: OneNodeSlurm, job_id: str):
        self.cluster = cluster
        self.job_id = job_id
        self.node = cluster.node
        self.env = {**cluster.env, "SLURM_JOB_ID": job_id, "SLURM_JOB_NODELIST": cluster.node}

    def transport(self, *extra_nodes: str) -> SlurmTransport:
        hosts = (self.node, *extra_nodes)
        return SlurmTransport({h: Endpoint(h, h) for h in hosts}, environ=self.env)


@pytest.fixture(scope="module")
def alloc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Allocation]:
    cluster = start_one_node_slurm(tmp_path_factory.mktemp("slurm-transport"))
    job_id = None
    try:
        done = cluster.run("salloc", "--no-shell", "-N1", "-t", "10", "--job-name=rlaunch-test", timeout=60)
        m = re.search(r"Granted job allocation (\d+)", done.stderr)
        assert m, done.stderr + cluster.logs()
        job_id = m.group(1)
        yield Allocation(cluster, job_id)
    finally:
        if job_id:
            cluster.run("scancel", job_id, timeout=30)
        cluster.stop()


@pytest.fixture
def in_allocation(alloc: Allocation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Allocation:
    """Run records in tmp, and the process environment of a batch script (lifecycle.down builds its own
    transport from os.environ, as the CLI does)."""
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "rlaunch-home"))
    for name in ("SLURM_CONF", "SLURM_JOB_ID", "SLURM_JOB_NODELIST", "PATH"):
        monkeypatch.setenv(name, alloc.env[name])
    return alloc


# ---------------------------------------------------------------------------------------------- run()


def test_run_forwards_stdin_and_exit_code(alloc: Allocation) -> None:
    payload = b"x" * (3 * 1024 * 1024)  # bigger than any pipe buffer: srun must stream it
    result = alloc.transport().run(
        alloc.node, ["bash", "-c", "wc -c; echo $SLURMD_NODENAME; echo oops >&2; exit 3"], stdin=payload
    )
    assert result.error is None, result.why()
    assert result.exit_code == 3
    assert result.stdout.split() == [str(len(payload)), alloc.node]
    assert result.stderr == "oops\n"  # srun's own "task 0: Exited with exit code 3" is not the command's


def test_missing_program_reads_127_like_a_shell(alloc: Allocation) -> None:
    result = alloc.transport().run(alloc.node, ["/nonexistent/python3", "-c", "pass"])
    assert result.error is None and result.exit_code == 127
    assert "/nonexistent/python3: No such file or directory" in result.stderr


def test_node_outside_the_allocation_is_one_line_naming_it(alloc: Allocation) -> None:
    result = alloc.transport("ghost").run("ghost", ["true"])
    assert result.exit_code is None and result.error is not None
    assert result.error.startswith("srun on ghost: Unable to create step"), result.error
    assert "\n" not in result.error


def test_no_allocation_and_wrong_job_id(alloc: Allocation) -> None:
    env = {k: v for k, v in alloc.env.items() if k not in ("SLURM_JOB_ID", "SLURM_JOBID")}
    outside = SlurmTransport({alloc.node: Endpoint(alloc.node, alloc.node)}, environ=env)
    result = outside.run(alloc.node, ["true"])
    assert result.error and "SLURM_JOB_ID is not set" in result.error
    wrong = SlurmTransport({alloc.node: Endpoint(alloc.node, alloc.node)}, environ=env, job_id="999999")
    result = wrong.run(alloc.node, ["true"])
    assert result.error and result.error.startswith(f"srun on {alloc.node}: ") and "999999" in result.error


def test_timeout_cancels_the_step(alloc: Allocation) -> None:
    marker = f"RLAUNCH_SLURM_TEST={uuid.uuid4().hex}"
    result = alloc.transport().run(alloc.node, ["env", marker, "sleep", "300"], timeout=1)
    assert result.error and result.error.startswith("timed out after 1s running env on")
    wait_for(lambda: not pids_with(marker), 30, "the timed-out step's process to end")


# -------------------------------------------------------------------------------------------- start()


def test_long_lived_step_streams_stdin_and_close_ends_it(alloc: Allocation) -> None:
    code = "import os,sys\nprint('pid', os.getpid(), flush=True)\nfor l in sys.stdin: print('got', l.strip(), flush=True)"
    lines: list[tuple[str, str]] = []
    proc = alloc.transport().start(alloc.node, [PYTHON, "-u", "-c", code], lambda s, t: lines.append((s, t)))
    try:
        first = wait_for(lambda: [t for s, t in lines if t.startswith("pid ")], 30, "the remote pid")
        remote_pid = int(first[0].split()[1])
        for i in range(3):  # heartbeats arrive one by one, not when stdin closes
            proc.write(f"hb{i}\n".encode())
            wait_for(lambda i=i: ("stdout", f"got hb{i}") in lines, 30, f"heartbeat {i} echoed")
        assert Path(f"/proc/{remote_pid}").exists() and proc.poll() is None
    finally:
        proc.close()
    wait_for(lambda: not alive(remote_pid), 30, "the remote process to end with its step")
    assert proc.poll() is not None
    assert not [t for s, t in lines if s == "stderr" and t.startswith("srun: ")]


# ------------------------------------------------------------------------------------ lifecycle over srun


def write_inventory(tmp_path: Path, job: dict[str, Any], **over: Any) -> Path:
    data = {
        "cluster": "slurm-test",
        "transport": "slurm",
        "python": PYTHON,
        "workdir": str(tmp_path / "work"),
        "profile": "cpu",
        "master": {"port": "auto"},
        "job": job,
        "health": {"heartbeat_timeout": 6, "grace": 2, "stall_timeout": 120},
        **over,
    }
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def test_up_command_job_through_srun(in_allocation: Allocation, tmp_path: Path) -> None:
    path = write_inventory(tmp_path, {"kind": "command", "command": [PYTHON, "-c", "print('hi from slurm')"]})
    # --from-slurm: the nodes come from the allocation's SLURM_JOB_NODELIST
    inv = load_inventory(path, from_slurm=in_allocation.env)
    assert [n.host for n in inv.nodes] == [in_allocation.node]
    assert isinstance(make_transport(inv), SlurmTransport)
    lines: list[tuple[str, int | None, str]] = []
    run_id, outcome = lifecycle.up(inv, on_line=lambda h, r, t: lines.append((h, r, t)))
    assert outcome.code == 0, outcome.summary
    assert any(t == "hi from slurm" for _, _, t in lines), lines
    record = records.RunRecord.open(run_id)
    assert record.read_state()["state"] == "succeeded"
    # The follower steps ended with the run: no process still reads this run's directory (assertion only).
    run_dir = record.plan_json()["nodes"][0]["run_dir"]
    wait_for(lambda: not pids_mentioning(run_dir), 30, "the follower steps to end")


@pytest.mark.slow
def test_up_torchrun_two_ranks_through_srun(in_allocation: Allocation, tmp_path: Path) -> None:
    job = {"kind": "torchrun", "script": TRAIN, "args": ["--steps", "3"], "nproc_per_node": 2, "timeout": 60}
    inv = load_inventory(write_inventory(tmp_path, job), from_slurm=in_allocation.env)
    lines: list[tuple[str, int | None, str]] = []
    run_id, outcome = lifecycle.up(inv, on_line=lambda h, r, t: lines.append((h, r, t)))
    assert outcome.code == 0, outcome.summary + "\n" + "\n".join(t for _, _, t in lines[-30:])
    assert any(r == 0 and t.startswith("step=3 loss=") for _, r, t in lines), lines[-30:]
    assert records.RunRecord.open(run_id).plan_json()["world_size"] == 2


def test_long_job_stopped_with_down_leaves_nothing(in_allocation: Allocation, tmp_path: Path) -> None:
    marker_value = uuid.uuid4().hex
    marker = f"RLAUNCH_SLURM_TEST={marker_value}"
    job = {"kind": "command", "command": [PYTHON, "-c", "import time\nwhile True: time.sleep(0.2)"]}
    inv = load_inventory(
        write_inventory(tmp_path, job, env={"RLAUNCH_SLURM_TEST": marker_value}), from_slurm=in_allocation.env
    )
    # Attached (the only mode under srun): `up` runs in one thread, `rlaunch down` comes from "another terminal".
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(out=lifecycle.up(inv)), daemon=True)
    thread.start()
    try:
        wait_for(lambda: pids_with(marker), 60, "the job's process")
        run_id = records.list_run_ids()[-1]
        assert lifecycle.status(run_id)["nodes"][in_allocation.node]["state"] == "running"
        _, results = lifecycle.down(run_id)
        assert all(r.ok for r in results.values()), results
        wait_for(lambda: not pids_with(marker), 30, "no process carrying the job's marker")
        thread.join(timeout=60)
        assert not thread.is_alive()
        run_dir = records.RunRecord.open(run_id).plan_json()["nodes"][0]["run_dir"]
        wait_for(lambda: not pids_mentioning(run_dir), 30, "the guard and its steps to end")
    finally:
        for pid in pids_with(marker):  # only if down failed: the job's own pids, found by our marker
            os.kill(pid, signal.SIGKILL)
    _, outcome = result["out"]
    assert outcome.code != 0  # stopped from outside: not a success


def test_detach_is_refused_under_srun(in_allocation: Allocation, tmp_path: Path) -> None:
    job = {"kind": "command", "command": [PYTHON, "-c", "print(1)"]}
    inv = load_inventory(write_inventory(tmp_path, job), from_slurm=in_allocation.env)
    with pytest.raises(LaunchError) as info:
        lifecycle.up(inv, detach=True)
    assert info.value.code == 2 and "sbatch" in str(info.value)


# ------------------------------------------------------------------------------------------------ helpers


def alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def pids_mentioning(text: str) -> list[int]:
    """Live pids with text among their argv words (to assert that a run's guard and followers are gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if text in argv and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def pids_with(assignment: str) -> list[int]:
    """Live pids whose environment holds NAME=VALUE exactly (our marker; never a match on command lines)."""
    needle = assignment.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in env and alive(int(entry.name)):
            found.append(int(entry.name))
    return found
