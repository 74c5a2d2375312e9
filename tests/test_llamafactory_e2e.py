"""job.kind: llamafactory — rendering (fast) and real LLaMA-Factory LoRA SFT under ZeRO-3 through `rlaunch up`
on simulated SSH nodes (slow): to completion on 3 nodes, and a kill of one node's ranks mid-run on 2 nodes after
which rlaunch resumes and the per-step losses equal an uninterrupted run's, bitwise.

Real parts only: torch CPU + gloo, DeepSpeed ZeRO-3, LLaMA-Factory 0.9.5, the tiny local model of tests/assets.py.
The only stand-in is tests/stubs/torchaudio (LLaMA-Factory imports it at module level; see its docstring).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from assets import TinyAssets, build_tiny_assets

from cluster.inventory import from_mapping
from launcher import plan as planning

ROOT = Path(__file__).resolve().parents[1]
STUBS = ROOT / "tests" / "stubs"
# DeepSpeed JIT-builds deepspeed_shm_comm on first use (~24 s); one cache for every run, kept between sessions.
TORCH_EXTENSIONS = ROOT / ".cache" / "torch_extensions"
TEMPLATE = ROOT / "templates" / "llamafactory_lora_sft.yaml"


@pytest.fixture(scope="module")
def shared_dir() -> Iterator[Path]:
    """Seen by every simulated node: they mount a private tmpfs over /tmp, so not under /tmp."""
    path = Path(tempfile.mkdtemp(prefix="rlaunch-lf-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def tiny(shared_dir: Path) -> TinyAssets:
    return build_tiny_assets(shared_dir / "assets")


def lf_yaml(tiny: TinyAssets, dest: Path, **overrides: Any) -> Path:
    """The shipped template, pointed at the tiny assets and shortened for CPU."""
    config = yaml.safe_load(TEMPLATE.read_text())
    config.update(
        model_name_or_path=str(tiny.model_dir),
        dataset=tiny.dataset_name,
        dataset_dir=str(tiny.dataset_dir),
        cutoff_len=128,
        max_samples=64,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=1,
        max_steps=12,
        save_steps=4,
        seed=42,
    )
    config.update(overrides)
    dest.write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def node_env(shared_dir: Path) -> dict[str, str]:
    return {
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(STUBS),  # test-only torchaudio stand-in
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(shared_dir / "hf_home"),
        "TORCH_EXTENSIONS_DIR": str(TORCH_EXTENSIONS),
        "TOKENIZERS_PARALLELISM": "false",
        "NCCL_DEBUG": "WARN",
    }


def trainer_losses(out_dir: Path) -> dict[int, float]:
    """Per-step losses from LLaMA-Factory's trainer_log.jsonl; a step logged twice (before a kill and after the
    resume) keeps its last value, the one the finished run is made of."""
    losses: dict[int, float] = {}
    for line in (out_dir / "trainer_log.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if "loss" in entry:
            losses[entry["current_steps"]] = entry["loss"]
    return losses


# ------------------------------------------------------------------------------------------- rendering (fast)


def plain_inventory(tmp_path: Path, job: dict[str, Any], **extra: Any) -> Any:
    data = {
        "cluster": "t",
        "transport": "local",
        "nodes": [{"host": "a", "address": "127.0.0.1"}, {"host": "b", "address": "127.0.0.1"}],
        "workdir": "/w",
        "job": job,
        **extra,
    }
    return from_mapping(data, base_dir=str(tmp_path))


def rendered_yaml(plan: planning.Plan, host: str) -> dict[str, Any]:
    node = plan.node(host)
    text = next(f.content for f in node.files if f.path == "llamafactory.yaml").decode()
    return yaml.safe_load(text)


def test_render_overrides_what_rlaunch_owns(tmp_path: Path) -> None:
    user = {"model_name_or_path": "m", "bf16": True, "output_dir": "saves/x", "deepspeed": "mine.json"}
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump(user))
    job = {"kind": "llamafactory", "config": "sft.yaml", "timeout": 900, "checkpoint_dir": "/shared/ck"}
    inv = plain_inventory(tmp_path, job, profile="cpu")
    plan = planning.build_plan(inv, run_id="r1", sources=planning.load_sources(inv), head_env={})

    for node in plan.nodes:
        cfg = rendered_yaml(plan, node.host)
        assert cfg["deepspeed"] == f"{node.run_dir}/ds_config.json"
        assert cfg["ddp_timeout"] == 900
        assert cfg["output_dir"] == "/shared/ck"  # the same on every node
        assert (cfg["bf16"], cfg["fp16"]) == (False, False)  # CPU: fp32
        assert cfg["resume_from_checkpoint"] is None and cfg["overwrite_output_dir"] is True
        assert cfg["model_name_or_path"] == "m"
        ds = json.loads(next(f.content for f in node.files if f.path == "ds_config.json"))
        assert ds["zero_optimization"]["stage"] == 3 and "_comment" not in ds
        assert ds["train_micro_batch_size_per_gpu"] == "auto"  # the HF Trainer fills it
        i = node.argv.index("-m", 3)
        assert node.argv[i : i + 3] == ["-m", "llamafactory.launcher", f"{node.run_dir}/llamafactory.yaml"]
        assert f"--node-rank={node.node_rank}" in node.argv
    assert any("bf16 not supported" in n for n in plan.notes)


def test_render_bf16_offload_workers_and_resume(tmp_path: Path) -> None:
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({"model_name_or_path": "m", "fp16": True}))
    job = {
        "kind": "llamafactory",
        "config": "sft.yaml",
        "deepspeed": "zero3_offload",
        "dataloader_workers": 1,
    }
    inv = plain_inventory(tmp_path, job, profile="mi300x")
    plan = planning.build_plan(
        inv, run_id="r2", sources=planning.load_sources(inv), head_env={}, resume_from="/ck/checkpoint-8"
    )
    cfg = rendered_yaml(plan, "a")
    assert (cfg["bf16"], cfg["fp16"]) == (False, True)  # the user's fp16 runs on gfx942: kept
    assert cfg["dataloader_num_workers"] == 1
    assert cfg["dataloader_persistent_workers"] is False
    assert cfg["resume_from_checkpoint"] == "/ck/checkpoint-8" and cfg["overwrite_output_dir"] is False
    ds = json.loads(next(f.content for f in plan.node("a").files if f.path == "ds_config.json"))
    assert ds["zero_optimization"]["offload_optimizer"] == {"device": "cpu", "pin_memory": True}
    assert any("checkpoint_dir is not set" in w for w in plan.warnings)

    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({"model_name_or_path": "m", "bf16": True}))
    plan = planning.build_plan(inv, run_id="r3", sources=planning.load_sources(inv), head_env={})
    assert rendered_yaml(plan, "b")["bf16"] is True


def test_render_user_deepspeed_json_and_none(tmp_path: Path) -> None:
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({"model_name_or_path": "m", "deepspeed": "x.json"}))
    (tmp_path / "z2.json").write_text(json.dumps({"_comment": "mine", "zero_optimization": {"stage": 2}}))
    inv = plain_inventory(tmp_path, {"kind": "llamafactory", "config": "sft.yaml", "deepspeed": "z2.json"})
    plan = planning.build_plan(inv, run_id="r4", sources=planning.load_sources(inv), head_env={})
    ds = json.loads(next(f.content for f in plan.node("a").files if f.path == "ds_config.json"))
    assert ds == {"zero_optimization": {"stage": 2}}

    # `none` is not a file: plan.load_sources does not know that yet, so reuse the sources loaded above.
    sources = planning.load_sources(inv)
    inv = plain_inventory(tmp_path, {"kind": "llamafactory", "config": "sft.yaml", "deepspeed": "none"})
    plan = planning.build_plan(inv, run_id="r5", sources=sources, head_env={})
    assert "deepspeed" not in rendered_yaml(plan, "a")
    assert all(f.path != "ds_config.json" for f in plan.node("a").files)


# ----------------------------------------------------------------------------------- real runs (slow, SSH)


def up(inv: Any, monkeypatch: pytest.MonkeyPatch, home: Path, statuses: list[str] | None = None) -> Any:
    from launcher import lifecycle

    monkeypatch.setenv("RLAUNCH_HOME", str(home))
    say = statuses.append if statuses is not None else None
    return lifecycle.up(inv, on_status=say, head_env={})


def lf_inventory(cluster: Any, shared_dir: Path, config: Path, ckpt: Path, **extra: Any) -> Any:
    job = {
        "kind": "llamafactory",
        "config": str(config),
        "deepspeed": "zero3",
        "nproc_per_node": 1,
        "timeout": 300,
        "checkpoint_dir": str(ckpt),
        "dataloader_workers": 0,
    }
    data = cluster.inventory_dict(job=job, env=node_env(shared_dir), profile="cpu", **extra)
    return from_mapping(data)


@pytest.mark.slow
@pytest.mark.ssh
def test_lora_sft_zero3_three_nodes_to_completion(
    sim3: Any, shared_dir: Path, tiny: TinyAssets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ckpt = shared_dir / "three-nodes"
    config = lf_yaml(tiny, shared_dir / "three.yaml", max_steps=6, save_steps=3)
    _, outcome = up(lf_inventory(sim3, shared_dir, config, ckpt), monkeypatch, tmp_path / "home")

    assert outcome.code == 0, outcome.summary
    losses = trainer_losses(ckpt)
    assert sorted(losses) == list(range(1, 7))
    assert all(0 < v < 100 for v in losses.values())
    assert (ckpt / "adapter_model.safetensors").is_file()  # the LoRA adapter of the finished run
    assert (ckpt / "checkpoint-6" / "global_step6" / "zero_pp_rank_2_mp_rank_00_optim_states.pt").is_file()


def kill_ranks(cluster: Any, node: str, marker: str) -> list[int]:
    """SIGKILL the node's training ranks (not torchrun, not the guard), by PID."""
    killed = []
    for pid, cmd in cluster.node_pids(node):
        if marker in cmd and "torch.distributed.run" not in cmd and "guard.py" not in cmd:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def wait_for(path: Path, timeout: float, while_alive: threading.Thread) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and while_alive.is_alive():
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()


@pytest.mark.slow
@pytest.mark.ssh
def test_kill_one_node_mid_run_resumes_with_identical_losses(
    sim_cluster: Any, shared_dir: Path, tiny: TinyAssets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = sim_cluster(2)
    steps = 24
    config = lf_yaml(tiny, shared_dir / "two.yaml", max_steps=steps, save_steps=4)

    reference = shared_dir / "reference"
    _, outcome = up(lf_inventory(cluster, shared_dir, config, reference), monkeypatch, tmp_path / "ref")
    assert outcome.code == 0, outcome.summary
    expected = trainer_losses(reference)
    assert sorted(expected) == list(range(1, steps + 1))

    resumed = shared_dir / "resumed"
    inv = lf_inventory(cluster, shared_dir, config, resumed, restart={"max_restarts": 1, "backoff": 0})
    statuses: list[str] = []
    result: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: result.update(out=up(inv, monkeypatch, tmp_path / "kill", statuses)), daemon=True
    )
    runner.start()
    # After the first checkpoint is complete (trainer_state.json is written after DeepSpeed's closing barrier,
    # then each rank's RNG state), kill node2's rank: a crash mid-run, like a GPU falling off the bus.
    assert wait_for(resumed / "checkpoint-4" / "rng_state_1.pth", 300, runner), "no first checkpoint"
    time.sleep(0.2)
    assert kill_ranks(cluster, "node2", "llamafactory.launcher"), "node2 had no training rank to kill"
    runner.join(600)
    assert not runner.is_alive(), "rlaunch up did not return"

    run_id, outcome = result["out"]
    assert outcome.code == 0, outcome.summary
    first = json.loads((tmp_path / "kill" / "runs" / run_id / "outcome-0.json").read_text())
    assert first["code"] != 0  # the kill was seen as a failure ...
    assert any(s.startswith("resuming from") and "checkpoint-" in s for s in statuses), (
        statuses
    )  # ... resumed
    assert trainer_losses(resumed) == expected  # bitwise: floats compared exactly
