"""job.kind: llamafactory — rendering (fast) and real LLaMA-Factory LoRA SFT under ZeRO-3 through `rlaunch up`
on simulated SSH nodes (slow): to completion on 3 nodes, and a kill of one node's ranks mid-run on 2 nodes after
which rlaunch resumes and the per-step losses equal an uninterrupted run's, bitwise.

Real parts only: torch CPU + gloo, DeepSpeed ZeRO-3, LLaMA-Factory 0.9.5, the tiny local model of tests/assets.py.
No stand-ins: LLaMA-Factory imports from the project's own venv (scripts/setup.sh installs its torchaudio).
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
from e2e_helpers import TORCH_EXTENSIONS, scaled

from cluster.inventory import from_mapping

ROOT = Path(__file__).resolve().parents[1]
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
        bf16=False,  # CPU nodes: fp32 (bf16 without a bf16 GPU is refused at plan time)
    )
    config.update(overrides)
    dest.write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def node_env(shared_dir: Path) -> dict[str, str]:
    return {
        "OMP_NUM_THREADS": "1",
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


# Rendering (fast) is tested in tests/test_job_configs.py.


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


def wait_for_file(path: Path, timeout: float, while_alive: threading.Thread) -> bool:
    deadline = time.monotonic() + scaled(timeout)
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
    assert wait_for_file(resumed / "checkpoint-4" / "rng_state_1.pth", 300, runner), "no first checkpoint"
    time.sleep(0.2)
    assert kill_ranks(cluster, "node2", "rlaunch_lf.py"), "node2 had no training rank to kill"
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


@pytest.mark.slow
@pytest.mark.ssh
def test_the_users_own_deepspeed_json_and_output_dir_as_written(
    sim3: Any, shared_dir: Path, tiny: TinyAssets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A yaml naming its own DeepSpeed json (relative to the yaml) and its own output_dir, no job.deepspeed and
    no job.checkpoint_dir: the json reaches every node byte for byte, DeepSpeed trains with it, and the
    checkpoints land where the yaml says."""
    own = shared_dir / "own"
    ds = json.loads((ROOT / "templates" / "ds_z3.json").read_text())
    # The top-level "_comment" stays: a copy of our template, as a user would push it.
    ds["zero_optimization"] = {
        k: v for k, v in ds["zero_optimization"].items() if not k.startswith("_comment")
    }
    ds["zero_optimization"]["stage3_max_live_parameters"] = (
        123456789  # distinctive, untouched by the HF Trainer
    )
    ds["zero_optimization"]["stage3_max_reuse_distance"] = 987654321
    (own / "ds").mkdir(parents=True)
    raw = (json.dumps(ds, indent=3) + "\n").encode()
    (own / "ds" / "own.json").write_bytes(raw)
    out = shared_dir / "own-out"
    config = lf_yaml(
        tiny, own / "sft.yaml", max_steps=4, save_steps=2, deepspeed="ds/own.json", output_dir=str(out)
    )
    job = {"kind": "llamafactory", "config": str(config), "nproc_per_node": 1, "timeout": 300}
    job["dataloader_workers"] = 0
    inv = from_mapping(sim3.inventory_dict(job=job, env=node_env(shared_dir), profile="cpu"))
    run_id, outcome = up(inv, monkeypatch, tmp_path / "home")

    assert outcome.code == 0, outcome.summary
    for node in ("node1", "node2", "node3"):
        run_dir = f"{inv.workdir.rstrip('/')}/{run_id}/{node}"
        assert sim3.node_path(node, f"{run_dir}/ds_config.json").read_bytes() == raw
        rendered = yaml.safe_load(sim3.node_path(node, f"{run_dir}/llamafactory.yaml").read_text())
        assert rendered["output_dir"] == str(out)
    assert sorted(trainer_losses(out)) == [1, 2, 3, 4]
    step = out / "checkpoint-4" / "global_step4"
    assert (step / "zero_pp_rank_2_mp_rank_00_optim_states.pt").is_file()
    import torch

    states = torch.load(
        step / "zero_pp_rank_0_mp_rank_00_model_states.pt", map_location="cpu", weights_only=False
    )
    assert states["ds_config"]["zero_optimization"]["stage3_max_live_parameters"] == 123456789
    assert states["ds_config"]["zero_optimization"]["stage3_max_reuse_distance"] == 987654321


@pytest.mark.slow
@pytest.mark.ssh
def test_pretokenize_once_then_every_rank_loads_it_and_a_second_run_reuses_it(
    sim3: Any, shared_dir: Path, tiny: TinyAssets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher import lifecycle

    out = shared_dir / "pretok-out"
    config = lf_yaml(tiny, shared_dir / "pretok.yaml", max_steps=2, save_steps=2, output_dir=str(out))
    config_data = yaml.safe_load(config.read_text())
    config_data.pop("deepspeed")  # plain DDP: the tokenizing is what this test is about
    config.write_text(yaml.safe_dump(config_data))
    job = {
        "kind": "llamafactory",
        "config": str(config),
        "nproc_per_node": 1,
        "timeout": 300,
        "pretokenize": True,
    }
    job["dataloader_workers"] = 0
    inv = from_mapping(sim3.inventory_dict(job=job, env=node_env(shared_dir), profile="cpu"))
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    tokenized = Path(f"{out}-tokenized")

    def run() -> list[tuple[str, int | None, str]]:
        lines: list[tuple[str, int | None, str]] = []
        # ranks="all": every node's lines reach on_line (by default the terminal shows the first node's rank 0).
        _, outcome = lifecycle.up(
            inv, on_line=lambda h, r, t: lines.append((h, r, t)), head_env={}, ranks="all"
        )
        assert outcome.code == 0, outcome.summary
        return lines

    first = run()
    said = [(h, t) for h, r, t in first if "rlaunch pretokenize:" in t]
    assert [h for h, t in said if "tokenizing once into" in t] == ["node1"], said
    assert sum("matches node rank 0's" in t for _, t in said) == 2  # node2 and node3 compared fingerprints
    assert any(r is not None and f"Loaded tokenized dataset from {tokenized}" in t for _, r, t in first)
    assert not any(
        r is not None and "Running tokenizer on dataset" in t for _, r, t in first
    )  # no rank tokenized
    assert (tokenized / "dataset_dict.json").is_file()
    written = (tokenized / "rlaunch-fingerprint.json").stat().st_mtime_ns

    second = run()
    assert any(h == "node1" and "rlaunch pretokenize: reusing" in t for h, _, t in second)
    assert not any("tokenizing once" in t for _, _, t in second)
    assert any(r is not None and "Loaded tokenized dataset from" in t for _, r, t in second)
    assert (
        tokenized / "rlaunch-fingerprint.json"
    ).stat().st_mtime_ns == written  # the Arrow dataset: written once
