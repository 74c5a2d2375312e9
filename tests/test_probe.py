"""The node workloads run for real: torchrun + gloo on CPU, judged by launcher/validate/checks.py.

Every launch gets a free master port and its own process group; torchrun starts its workers in new sessions
(docs/facts.md), so teardown kills torchrun's group and every descendant it had, by PID.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from e2e_helpers import TORCH_EXTENSIONS, free_port, scaled

from launcher.validate.checks import (
    check_allreduce_correct,
    check_busbw,
    check_completed,
    check_loss_decreases,
    check_losses_equal,
    check_resume,
    last_checkpoint,
    parse_allreduce,
    parse_probe,
    step_losses,
)
from launcher.validate.lossplot import write_loss_svg

NODE_DIR = Path(__file__).resolve().parents[1] / "launcher" / "node"
PROBE, ALLREDUCE = NODE_DIR / "probe.py", NODE_DIR / "allreduce.py"
REPO = Path(__file__).resolve().parents[1]
STEPS, BATCH = 6, 8
TINY = ["--steps", str(STEPS), "--global-batch", str(BATCH)]
LAUNCH_TIMEOUT_S = 300


@dataclass
class Launch:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def kill_tree(proc: subprocess.Popen[str]) -> None:
    """Kill torchrun's process group and every descendant (workers live in their own sessions)."""
    try:
        descendants = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for child in descendants:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    proc.wait(timeout=scaled(30))


def torchrun(script: Path, nproc: int, args: list[str]) -> Launch:
    env = os.environ | {
        "OMP_NUM_THREADS": "1",
        "RLAUNCH_PG_TIMEOUT": "120",  # a hung peer fails the test in minutes, not the default 10
        "TORCH_EXTENSIONS_DIR": str(TORCH_EXTENSIONS),
        "PYTHONUNBUFFERED": "1",
    }
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(nproc)]
    cmd += ["--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--max-restarts", "0"]
    proc = subprocess.Popen(
        [*cmd, str(script), *args], env=env, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=LAUNCH_TIMEOUT_S)
    except BaseException:
        kill_tree(proc)  # still running: timeout or Ctrl-C
        raise
    return Launch(proc.returncode, out, err)


def probe(nproc: int, *args: str) -> Launch:
    return torchrun(PROBE, nproc, [*TINY, *args])


def ok_run(launch: Launch) -> list[dict]:
    assert launch.returncode == 0, launch.stderr[-3000:]
    records = parse_probe(launch.lines)
    assert check_completed(records).status == "pass"
    return records


@pytest.fixture(scope="module")
def single_rank() -> list[dict]:
    # One dataloader worker here: data generation must not depend on where it runs.
    return ok_run(probe(1, "--dataloader-workers", "1"))


@pytest.fixture(scope="module")
def two_ranks() -> list[dict]:
    return ok_run(probe(2))


def test_two_ranks_reproduce_single_rank_losses(single_rank: list[dict], two_ranks: list[dict]) -> None:
    assert sorted(step_losses(two_ranks)) == list(range(1, STEPS + 1))
    assert {r["world_size"] for r in two_ranks if "step" in r} == {2}
    assert check_loss_decreases(two_ranks).status == "pass"
    equal = check_losses_equal(single_rank, two_ranks, tolerance=1e-6)
    assert equal.status == "pass", equal
    step = next(r for r in two_ranks if "step" in r)
    assert step["samples_per_s"] > 0 and step["peak_mem_mb"] > 0 and step["grad_norm"] > 0


def test_killed_rank_then_resume_matches_uninterrupted(two_ranks: list[dict], tmp_path: Path) -> None:
    ckpt = ["--ckpt-dir", str(tmp_path / "ckpt"), "--ckpt-every", "2"]
    killed = probe(2, *ckpt, "--fail-at-step", "4", "--fail-rank", "1")
    assert killed.returncode != 0
    interrupted = parse_probe(killed.lines)
    assert last_checkpoint(interrupted) == 2
    assert not check_completed(interrupted).ok

    resumed = ok_run(probe(2, *ckpt, "--resume"))
    assert min(step_losses(resumed)) == 3
    checks = check_resume(two_ranks, resumed, interrupted, tolerance=0.0)  # bitwise on CPU
    assert [c.status for c in checks] == ["pass"] * 3, checks

    svg = tmp_path / "loss.svg"
    write_loss_svg(svg, step_losses(two_ranks), step_losses(interrupted) | step_losses(resumed), 2)
    assert svg.read_text().startswith("<svg") and "resumed from step 2" in svg.read_text()


def test_resume_from_older_checkpoint_fails_the_check(single_rank: list[dict], tmp_path: Path) -> None:
    ckpt_dir = tmp_path / "ckpt"
    ckpt = ["--ckpt-dir", str(ckpt_dir), "--ckpt-every", "2"]
    killed = probe(1, *ckpt, "--fail-at-step", "5")
    interrupted = parse_probe(killed.lines)
    assert killed.returncode != 0 and last_checkpoint(interrupted) == 4

    resumed = ok_run(probe(1, *ckpt, "--resume-from", str(ckpt_dir / "step-00000002")))
    by_name = {c.name: c for c in check_resume(single_rank, resumed, interrupted)}
    assert by_name["resume_from_latest"].status == "fail"
    assert by_name["resume_from_latest"].value == 2 and by_name["resume_from_latest"].threshold == 4


def test_allreduce_two_ranks_correct_with_bus_bandwidth() -> None:
    run = torchrun(
        ALLREDUCE, 2, ["--min-bytes", "1024", "--max-bytes", "65536", "--warmup", "1", "--iters", "3"]
    )
    assert run.returncode == 0, run.stderr[-3000:]
    records = parse_allreduce(run.lines)
    sized = [r for r in records if "bytes" in r]
    assert [r["bytes"] for r in sized] == [1024 * 2**i for i in range(7)]
    for r in sized:
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 2 * (2 - 1) / 2)
        assert r["time_us"] > 0
    assert check_allreduce_correct(records).status == "pass"
    assert check_busbw(records, min_gbps=0.0).status == "pass"
    assert check_busbw(records, min_gbps=1e9).status == "fail"


@pytest.mark.slow
def test_zero3_kill_and_resume_matches_uninterrupted(two_ranks: list[dict], tmp_path: Path) -> None:
    zero3 = ["--engine", "zero3"]
    reference = ok_run(probe(2, *zero3))
    assert check_loss_decreases(reference).status == "pass"
    # Same data and initial model as DDP: the first update agrees; later ones drift (~1e-3 by step 3, open
    # question in the report), so only the first two steps are held to DDP's losses.
    first_two = [r for r in two_ranks if r.get("step", 99) <= 2]
    assert check_losses_equal(first_two, reference, tolerance=1e-5).status == "pass"

    ckpt = [*zero3, "--ckpt-dir", str(tmp_path / "ckpt"), "--ckpt-every", "2"]
    killed = probe(2, *ckpt, "--fail-at-step", "4", "--fail-rank", "1")
    interrupted = parse_probe(killed.lines)
    assert killed.returncode != 0 and last_checkpoint(interrupted) == 2
    assert (tmp_path / "ckpt" / "step-00000002" / "COMPLETE").is_file()

    resumed = ok_run(probe(2, *ckpt, "--resume"))
    checks = check_resume(reference, resumed, interrupted, tolerance=0.0)
    assert [c.status for c in checks] == ["pass"] * 3, checks
