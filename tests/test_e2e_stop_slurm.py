"""Preemption under a real one-node Slurm 22.05 (tests/slurm_fixture.py; docs/preemption.md, "Under Slurm").

A real batch job runs ops/slurm/rlaunch-batch `up --from-slurm` (torchrun/gloo, 2 ranks, examples/train.py
--stop-aware, srun steps). The notice is what `--signal=B:USR1` sends: SIGUSR1 to the batch shell only
(`scancel --batch --signal=USR1`). The trap runs `rlaunch stop --save`, which picks this job's run by
$SLURM_JOB_ID, records "stopped for preemption at step N, saved", and `scontrol requeue`s the job. The requeued
job runs the same script; its `up` resumes from step-N (lost_steps 0) and finishes. Nothing of the job is left
(its marker variable in /proc/PID/environ).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import health, scaled, wait_for
from slurm_fixture import OneNodeSlurm, slurm_missing, start_one_node_slurm

from launcher import records
from launcher.attempts import read_progress

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
pytestmark = [
    pytest.mark.skipif(slurm_missing() is not None, reason=str(slurm_missing())),
    pytest.mark.xdist_group("slurm"),
]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneNodeSlurm]:
    cluster = start_one_node_slurm(tmp_path_factory.mktemp("slurm-preempt"))
    try:
        yield cluster
    finally:
        cluster.stop()


def inventory(path: Path, work: Path, ckpt: Path, steps: int, marker: str) -> None:
    path.write_text(
        json.dumps(
            {
                "cluster": "slurm-preempt",
                "transport": "slurm",
                "python": PYTHON,
                "workdir": str(work),
                "profile": "cpu",
                "master": {"port": "auto"},
                "env": {"RLAUNCH_PREEMPT_TEST": marker, "OMP_NUM_THREADS": "1"},
                "job": {
                    "kind": "torchrun",
                    "script": str(ROOT / "examples" / "train.py"),
                    "args": [
                        "--steps",
                        str(steps),
                        "--sleep",
                        "0.05",
                        "--ckpt-every",
                        "1000",
                        "--stop-aware",
                    ],
                    "nproc_per_node": 2,
                    "checkpoint_dir": str(ckpt),
                    "timeout": scaled(60),
                },
                "health": health(heartbeat_timeout=10, grace=3, stall_timeout=120),
            }
        )
    )


def subprocess_run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def pids_with(assignment: str) -> list[int]:
    needle = assignment.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def runs(home: Path) -> list[dict]:
    out = []
    for rid in records.list_run_ids(home):
        state = json.loads((home / "runs" / rid / "state.json").read_text())
        out.append({**state, "run_id": rid})
    return sorted(out, key=lambda s: s.get("started_at", 0))


@pytest.mark.slow
def test_the_batch_notice_saves_requeues_and_the_requeued_job_resumes(
    slurm: OneNodeSlurm, tmp_path: Path
) -> None:
    home, ckpt, marker = tmp_path / "home", tmp_path / "ckpt", uuid.uuid4().hex
    rl = tmp_path / "rl"  # RLAUNCH_BIN: this checkout's CLI
    rl.write_text(f'#!/bin/bash\nexec {PYTHON} -m launcher.cli "$@"\n')
    rl.chmod(0o755)
    # The batch script: the first run's inventory now, the requeued run's once the test has written it.
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        "n=${SLURM_RESTART_COUNT:-0}\n"
        f"while [ ! -f {tmp_path}/cluster-$n.yaml ]; do sleep 0.2; done\n"
        f"exec {ROOT}/ops/slurm/rlaunch-batch up --from-slurm --no-doctor {tmp_path}/cluster-$n.yaml\n"
    )
    inventory(tmp_path / "cluster-0.yaml", tmp_path / "work", ckpt, 100000, marker)
    deadline = round(scaled(60))  # the save's deadline; a loaded machine saves slower
    env = {**slurm.env, "RLAUNCH_HOME": str(home), "RLAUNCH_BIN": str(rl), "PYTHONPATH": str(ROOT),
           "RLAUNCH_STOP_DEADLINE": str(deadline)}  # fmt: skip
    minutes = min(10, math.ceil(scaled(5)))  # each run's limit; the partition's MaxTime is 10
    out = tmp_path / "slurm-%j.out"
    sub = subprocess_run(
        [
            "sbatch",
            "--parsable",
            "--requeue",
            "--open-mode=append",
            "-N1",
            "-t",
            str(minutes),
            f"--output={out}",
            f"--chdir={ROOT}",
            str(script),
        ],
        env,
    )
    job = sub.stdout.strip().split(";")[0]
    assert re.fullmatch(r"\d+", job), sub.stdout + sub.stderr
    log = tmp_path / f"slurm-{job}.out"
    try:
        wait_for(lambda: [p for p in read_progress(home / "runs" / runs(home)[0]["run_id"]) if p.get("step", 0) >= 5]
                 if runs(home) else None, 180, "five steps of the first run")  # fmt: skip
        first = runs(home)[0]
        assert first["slurm_job_id"] == job
        notice = subprocess_run(["scancel", "--batch", "--signal=USR1", job], env)
        assert notice.returncode == 0, notice.stderr
        # The save on disk and the requeue asked; then Slurm's own word that the job was requeued. rlaunch's record
        # of scontrol's answer ("ok") can be missing: the requeue ends this allocation, and the process that asked
        # may be killed with it before it writes the answer (make test, turn 8: the job was requeued, no "ok").
        wait_for(lambda: (runs(home)[0].get("preemption") or {}).get("requeue", {}).get("asked"), 120,
                 "the save and the requeue asked")  # fmt: skip
        wait_for(lambda: re.search(r"\bRestarts=[1-9]", subprocess_run(["scontrol", "show", "job", job], env).stdout),
                 60, "Slurm to requeue the job")  # fmt: skip
        assert runs(home)[0]["preemption"]["requeue"].get("ok") is not False, runs(home)[0]["preemption"]
        stopped = runs(home)[0]["preemption"]
        step = stopped["step"]
        assert stopped["saved"] and stopped["lost_steps"] == 0, stopped
        assert stopped["summary"] == f"stopped for preemption at step {step}, saved ({ckpt}/step-{step})"
        assert runs(home)[0]["state"] == "stopped"
        # The requeued job: three steps past the save, then done.
        inventory(tmp_path / "cluster-1.yaml", tmp_path / "work", ckpt, step + 3, marker)
        wait_for(lambda: len(runs(home)) == 2 and runs(home)[1]["state"] in ("succeeded", "failed"), 240,
                 "the requeued job's run to end")  # fmt: skip
        second = runs(home)[1]
        assert second["state"] == "succeeded", log.read_text(errors="replace")[-3000:]
        assert second["slurm_job_id"] == job  # the same job, requeued
        resumed = second["resumed_after_preemption"]
        assert resumed["checkpoint"] == f"{ckpt}/step-{step}" and resumed["lost_steps"] == 0
        steps2 = [p["step"] for p in read_progress(home / "runs" / second["run_id"]) if p.get("step")]
        assert min(steps2) == step + 1 and max(steps2) == step + 3
        text = log.read_text(errors="replace")
        assert f"rlaunch-batch: USR1 received: rlaunch stop --save --deadline {deadline}s" in text
        assert f"requeueing Slurm job {job}" in text
        wait_for(lambda: not pids_with(f"RLAUNCH_PREEMPT_TEST={marker}"), 60, "no process of the job left")
    finally:
        subprocess_run(["scancel", job], env)
        for pid in pids_with(f"RLAUNCH_PREEMPT_TEST={marker}"):  # only if the test failed half-way
            os.kill(pid, 9)
