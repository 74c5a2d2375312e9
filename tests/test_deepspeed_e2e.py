"""job.kind: deepspeed — rendering (fast) and a real DeepSpeed ZeRO-3 script (examples/ds_train.py) through
`rlaunch up` on simulated SSH nodes (slow): to completion on 3 nodes, and a kill of one node's rank mid-run on 2
nodes after which rlaunch relaunches, the script resumes from its latest COMPLETE checkpoint, and the per-step
losses equal an uninterrupted run's, bitwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import TORCH_EXTENSIONS, scaled

from cluster.inventory import from_mapping
from launcher import plan as planning
from launcher.jobs.deepspeed import resolve_auto, strip_comments

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "ds_train.py"
PREFIX = "DS_TRAIN "


@pytest.fixture(scope="module")
def shared_dir() -> Iterator[Path]:
    """Seen by every simulated node: they mount a private tmpfs over /tmp, so not under /tmp."""
    path = Path(tempfile.mkdtemp(prefix="rlaunch-ds-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------------------------- rendering (fast)


def test_resolve_auto_for_a_plain_script() -> None:
    template = strip_comments(json.loads((ROOT / "templates" / "ds_z3.json").read_text()))
    config, notes = resolve_auto(template, "bf16")
    assert "auto" not in json.dumps(config)
    assert "train_batch_size" not in config  # DeepSpeed derives micro × accumulation × world size
    assert config["train_micro_batch_size_per_gpu"] == 1 and config["gradient_accumulation_steps"] == 1
    assert config["bf16"]["enabled"] is True and config["fp16"]["enabled"] is False
    assert config["zero_optimization"]["stage"] == 3
    assert "reduce_bucket_size" not in config["zero_optimization"]
    expected = "ds_config.json bf16.enabled: auto → true (the GPU architecture computes in bf16)"
    assert expected in map(str, notes)
    assert template["train_batch_size"] == "auto"  # the input is not modified


def test_render_torchrun_with_deepspeed_config(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    inv = from_mapping(
        {
            "cluster": "t",
            "transport": "local",
            "nodes": [{"host": "a", "address": "127.0.0.1"}, {"host": "b", "address": "127.0.0.1"}],
            "profile": "cpu",
            "job": {"kind": "deepspeed", "script": "train.py", "args": ["--steps", 3], "timeout": 120},
        },
        base_dir=str(tmp_path),
    )
    plan = planning.build_plan(inv, run_id="r1", sources=planning.load_sources(inv), head_env={})
    for node in plan.nodes:
        assert node.argv[1:3] == ["-m", "torch.distributed.run"]  # torchrun, never the pdsh runner
        assert node.argv[-5:] == [
            f"{node.run_dir}/train.py",
            "--steps",
            "3",
            "--deepspeed_config",
            f"{node.run_dir}/ds_config.json",
        ]
        config = json.loads(next(f.content for f in node.files if f.path == "ds_config.json"))
        assert config["bf16"]["enabled"] is False and config["fp16"]["enabled"] is False  # CPU: fp32
        assert node.env["DEEPSPEED_TIMEOUT"] == "2"  # minutes, from job.timeout
        assert node.env["RLAUNCH_DS_CONFIG"] == f"{node.run_dir}/ds_config.json"


# ----------------------------------------------------------------------------------- real runs (slow, SSH)


def ds_inventory(cluster: Any, ckpt: Path, steps: int, **extra: Any) -> Any:
    job = {
        "kind": "deepspeed",
        "script": str(SCRIPT),
        # No --ckpt-dir: the script takes $RLAUNCH_CKPT_DIR (job.checkpoint_dir) and, on a restart,
        # $RLAUNCH_RESUME_FROM — the resume contract rlaunch offers every script.
        "args": ["--steps", steps, "--save-every", 3, "--step-sleep", 0.3],
        "deepspeed": "zero3",
        "nproc_per_node": 1,
        "timeout": 300,
        "checkpoint_dir": str(ckpt),
    }
    env = {"OMP_NUM_THREADS": "1", "TORCH_EXTENSIONS_DIR": str(TORCH_EXTENSIONS), "NCCL_DEBUG": "WARN"}
    return from_mapping(cluster.inventory_dict(job=job, env=env, profile="cpu", **extra))


class Events:
    """DS_TRAIN lines of rank 0 as they stream in through `rlaunch up`'s line callback."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.first_checkpoint = threading.Event()

    def __call__(self, host: str, rank: int | None, text: str) -> None:
        if PREFIX in text:
            event = json.loads(text.split(PREFIX, 1)[1])
            self.items.append(event)
            if "checkpoint" in event:
                self.first_checkpoint.set()

    def losses(self) -> dict[int, float]:
        """Step → loss; a step run twice (before a kill, after the resume) keeps its last value."""
        return {e["step"]: e["loss"] for e in self.items if "loss" in e}


def up(inv: Any, home: Path, monkeypatch: pytest.MonkeyPatch, events: Events) -> tuple[str, Any]:
    from launcher import lifecycle

    monkeypatch.setenv("RLAUNCH_HOME", str(home))
    return lifecycle.up(inv, on_line=events, head_env={})


@pytest.mark.slow
@pytest.mark.ssh
def test_zero3_script_three_nodes(
    sim3: Any, shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = Events()
    ckpt = shared_dir / "three"
    _, outcome = up(ds_inventory(sim3, ckpt, steps=6), tmp_path, monkeypatch, events)
    assert outcome.code == 0, outcome.summary
    assert sorted(events.losses()) == list(range(1, 7))
    assert {e["world_size"] for e in events.items if "loss" in e} == {3}
    assert (ckpt / "step-00000006" / "COMPLETE").is_file()
    assert (ckpt / "step-00000006" / "zero_pp_rank_2_mp_rank_00_optim_states.pt").is_file()


@pytest.mark.slow
@pytest.mark.ssh
def test_kill_one_node_mid_run_resumes_with_identical_losses(
    sim_cluster: Any, shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = sim_cluster(2)
    steps = 12
    reference = Events()
    _, outcome = up(
        ds_inventory(cluster, shared_dir / "ref", steps), tmp_path / "ref", monkeypatch, reference
    )
    assert outcome.code == 0, outcome.summary
    expected = reference.losses()
    assert sorted(expected) == list(range(1, steps + 1))

    events = Events()
    inv = ds_inventory(cluster, shared_dir / "kill", steps, restart={"max_restarts": 1, "backoff": 0})
    result: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: result.update(out=up(inv, tmp_path / "kill", monkeypatch, events)), daemon=True
    )
    runner.start()
    assert events.first_checkpoint.wait(300), "no checkpoint before the kill"
    killed = [
        pid
        for pid, cmd in cluster.node_pids("node2")
        if "ds_train.py" in cmd and "torch.distributed.run" not in cmd and "guard.py" not in cmd
    ]
    assert killed, "node2 had no training rank to kill"
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    runner.join(scaled(600))
    assert not runner.is_alive(), "rlaunch up did not return"

    run_id, outcome = result["out"]
    assert outcome.code == 0, outcome.summary
    first = json.loads((tmp_path / "kill" / "runs" / run_id / "outcome-0.json").read_text())
    assert first["code"] != 0
    assert any("resumed_from" in e for e in events.items)
    assert events.losses() == expected  # bitwise: floats compared exactly
