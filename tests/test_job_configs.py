"""The user's LLaMA-Factory yaml and DeepSpeed json, rendered faithfully: every key rlaunch adds or changes is one
plan note `file key: before → after (why)`, everything else reaches the nodes as written, and a config that would
certainly fail is bad input (exit 2, one line naming the file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.inventory import from_mapping
from launcher import plan as planning

ROOT = Path(__file__).resolve().parents[1]
# A DeepSpeed json as a user writes it: a comment key, "auto" values, a distinctive bucket size.
USER_DS = {
    "_comment": "tuned on our MI250 nodes",
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "zero_optimization": {"stage": 3, "reduce_bucket_size": 123456789, "overlap_comm": False},
    "bf16": {"enabled": "auto"},
}


def inventory(tmp_path: Path, job: dict[str, Any], **extra: Any) -> Any:
    data = {
        "cluster": "t",
        "transport": "local",
        "nodes": [{"host": "a", "address": "127.0.0.1"}, {"host": "b", "address": "127.0.0.1"}],
        "workdir": "/w",
        "job": job,
        **extra,
    }
    return from_mapping(data, base_dir=str(tmp_path))


def write_yaml(path: Path, **config: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"model_name_or_path": "m", "stage": "sft", **config}, sort_keys=False))
    return path


def write_ds(path: Path, config: dict[str, Any] = USER_DS) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps(config, indent=4) + "\n").encode()  # the user's own formatting
    path.write_bytes(raw)
    return raw


def plan_for(
    tmp_path: Path, job: dict[str, Any], resume_from: str | None = None, **extra: Any
) -> planning.Plan:
    inv = inventory(tmp_path, {"kind": "llamafactory", "config": "cfg/sft.yaml", **job}, **extra)
    return planning.build_plan(
        inv, run_id="r1", sources=planning.load_sources(inv), head_env={}, resume_from=resume_from
    )


def pushed(plan: planning.Plan, host: str, name: str) -> bytes:
    return next(f.content for f in plan.node(host).files if f.path == name)


def rendered(plan: planning.Plan, host: str) -> dict[str, Any]:
    return yaml.safe_load(pushed(plan, host, "llamafactory.yaml"))


def changed(plan: planning.Plan, key: str) -> list[str]:
    return [n for n in plan.notes if n.startswith(f"llamafactory.yaml {key}: ")]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """rlaunch runs from an empty directory unless a test puts files there (the yaml's relative paths)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return tmp_path


def test_the_yamls_own_deepspeed_json_is_pushed_byte_for_byte(in_tmp: Path) -> None:
    raw = write_ds(in_tmp / "cfg" / "ds" / "z3.json")
    user = {"deepspeed": "ds/z3.json", "output_dir": "/shared/out", "per_device_train_batch_size": 2}
    write_yaml(in_tmp / "cfg" / "sft.yaml", **user)
    plan = plan_for(in_tmp, {})
    for node in plan.nodes:
        assert (
            pushed(plan, node.host, "ds_config.json") == raw
        )  # comments, "auto", the bucket size: as written
        cfg = rendered(plan, node.host)
        assert cfg["deepspeed"] == f"{node.run_dir}/ds_config.json"
        assert cfg["output_dir"] == "/shared/out"
        # Nothing else changed: the yaml minus the listed keys is the user's.
        assert {k: v for k, v in cfg.items() if k != "deepspeed"} == {
            "model_name_or_path": "m",
            "stage": "sft",
            **{k: v for k, v in user.items() if k != "deepspeed"},
        }
    found = in_tmp / "cfg" / "ds" / "z3.json"
    assert changed(plan, "deepspeed") == [
        f"llamafactory.yaml deepspeed: ds/z3.json → <run dir>/ds_config.json (your {found}, pushed byte for byte "
        "as ds_config.json: the nodes cannot see this machine's path)"
    ]
    assert not changed(plan, "output_dir") and not changed(plan, "resume_from_checkpoint")


def test_a_relative_deepspeed_path_is_found_first_where_llamafactory_would_open_it(in_tmp: Path) -> None:
    """LLaMA-Factory opens it relative to its working directory; the yaml's directory is the fallback."""
    write_ds(in_tmp / "cfg" / "z3.json")
    cwd_raw = write_ds(in_tmp / "cwd" / "z3.json", {**USER_DS, "steps_per_print": 7})
    write_yaml(in_tmp / "cfg" / "sft.yaml", deepspeed="z3.json")
    plan = plan_for(in_tmp, {})
    assert pushed(plan, "a", "ds_config.json") == cwd_raw
    assert str(in_tmp / "cwd" / "z3.json") in changed(plan, "deepspeed")[0]


def test_a_missing_deepspeed_json_is_bad_input_unless_absolute(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", deepspeed="nowhere.json")
    with pytest.raises(planning.PlanError) as err:
        plan_for(in_tmp, {})
    assert str(err.value).startswith("cfg/sft.yaml: deepspeed: nowhere.json not found")

    write_yaml(in_tmp / "cfg" / "sft.yaml", deepspeed="/on/the/nodes/z3.json")
    plan = plan_for(in_tmp, {})
    assert rendered(plan, "a")["deepspeed"] == "/on/the/nodes/z3.json"
    assert all(f.path != "ds_config.json" for f in plan.node("a").files)
    assert any("must exist at that path on every node" in n for n in plan.notes)


def test_job_deepspeed_overrides_the_yaml_and_says_so(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", deepspeed="/x/mine.json")
    plan = plan_for(in_tmp, {"deepspeed": "zero3"})
    ds = json.loads(pushed(plan, "a", "ds_config.json"))
    assert ds["zero_optimization"]["stage"] == 3 and "_comment" not in ds  # our template, comments stripped
    assert changed(plan, "deepspeed") == [
        "llamafactory.yaml deepspeed: /x/mine.json → <run dir>/ds_config.json "
        "(job.deepspeed: zero3, template ds_z3.json pushed as ds_config.json)"
    ]

    raw = write_ds(in_tmp / "mine.json")  # job.deepspeed is relative to the inventory, like every job path
    plan = plan_for(in_tmp, {"deepspeed": "mine.json"})
    assert pushed(plan, "b", "ds_config.json") == raw

    sources = planning.load_sources(inventory(in_tmp, {"kind": "llamafactory", "config": "cfg/sft.yaml"}))
    inv = inventory(in_tmp, {"kind": "llamafactory", "config": "cfg/sft.yaml", "deepspeed": "none"})
    plan = planning.build_plan(inv, run_id="r2", sources=sources, head_env={})
    assert "deepspeed" not in rendered(plan, "a")
    assert changed(plan, "deepspeed") == [
        "llamafactory.yaml deepspeed: /x/mine.json → (unset) (job.deepspeed: none)"
    ]


def test_no_deepspeed_in_the_yaml_means_none_added(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", output_dir="/shared/o")
    plan = plan_for(in_tmp, {})
    assert "deepspeed" not in rendered(plan, "a") and not changed(plan, "deepspeed")


def test_output_dir_is_kept_or_set_from_checkpoint_dir_with_warnings(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", output_dir="saves/x")
    plan = plan_for(in_tmp, {}, restart={"max_restarts": 2})
    assert rendered(plan, "a")["output_dir"] == "saves/x" and not changed(plan, "output_dir")
    assert any("output_dir saves/x is relative" in w and "/w/r1/<node>/saves/x" in w for w in plan.warnings)
    assert any("restart.max_restarts is 2 but job.checkpoint_dir is not set" in w for w in plan.warnings)
    assert plan.node("a").env["RLAUNCH_OUTPUT_DIR"] == "saves/x"

    plan = plan_for(in_tmp, {"checkpoint_dir": "/shared/ck"}, restart={"max_restarts": 2})
    assert rendered(plan, "b")["output_dir"] == "/shared/ck"
    assert changed(plan, "output_dir") == [
        "llamafactory.yaml output_dir: saves/x → /shared/ck (job.checkpoint_dir: the directory rlaunch resumes "
        "from on restart)"
    ]
    assert not any("relative" in w or "max_restarts" in w for w in plan.warnings)


def test_ddp_timeout_follows_the_collective_timeout(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", ddp_timeout=180000000)
    plan = plan_for(in_tmp, {"timeout": 900})
    assert rendered(plan, "a")["ddp_timeout"] == 900
    assert changed(plan, "ddp_timeout") == [
        "llamafactory.yaml ddp_timeout: 180000000 → 900 (the job's collective timeout (job.timeout / NCCL_TIMEOUT), "
        "the same on every rank)"
    ]
    write_yaml(in_tmp / "cfg" / "sft.yaml", ddp_timeout=900)
    assert not changed(plan_for(in_tmp, {"timeout": 900}), "ddp_timeout")


def test_precision_is_the_users_and_bf16_without_bf16_hardware_is_bad_input(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", bf16=True)
    cfg = rendered(plan_for(in_tmp, {}, profile="mi250"), "a")
    assert cfg["bf16"] is True and "fp16" not in cfg  # kept, nothing added
    with pytest.raises(planning.PlanError) as err:
        plan_for(in_tmp, {}, profile="cpu")
    line = 1 + (in_tmp / "cfg" / "sft.yaml").read_text().splitlines().index("bf16: true")
    assert str(err.value).startswith(
        f"cfg/sft.yaml:{line}: bf16: bf16: true but profile cpu (no GPU) has no bf16"
    )
    write_yaml(in_tmp / "cfg" / "sft.yaml", bf16=True, use_cpu=True)
    assert rendered(plan_for(in_tmp, {}, profile="cpu"), "a")["bf16"] is True
    write_yaml(in_tmp / "cfg" / "sft.yaml", fp16=True)
    assert rendered(plan_for(in_tmp, {}), "a")["fp16"] is True  # unknown hardware: as written


def test_dataloader_workers_above_the_safe_limit_warn_or_follow_the_job(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", dataloader_num_workers=16)
    nodes = [
        {"host": "a", "address": "127.0.0.1", "cpus": 8},
        {"host": "b", "address": "127.0.0.1", "cpus": 8},
    ]
    plan = plan_for(in_tmp, {"nproc_per_node": 2}, nodes=nodes)
    assert rendered(plan, "a")["dataloader_num_workers"] == 16
    assert any("dataloader_num_workers 16 is above the safe limit of 2 on a" in w for w in plan.warnings)

    plan = plan_for(in_tmp, {"nproc_per_node": 2, "dataloader_workers": 1}, nodes=nodes)
    assert rendered(plan, "a")["dataloader_num_workers"] == 1
    assert changed(plan, "dataloader_num_workers") == [
        "llamafactory.yaml dataloader_num_workers: 16 → 1 (job.dataloader_workers, capped at half the node's cores "
        "per rank)"
    ]


def test_restart_sets_resume_from_checkpoint(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", output_dir="/ck", overwrite_output_dir=True)
    plan = plan_for(in_tmp, {"checkpoint_dir": "/ck"}, resume_from="/ck/checkpoint-8")
    cfg = rendered(plan, "a")
    assert cfg["resume_from_checkpoint"] == "/ck/checkpoint-8" and cfg["overwrite_output_dir"] is False
    assert changed(plan, "resume_from_checkpoint") == [
        "llamafactory.yaml resume_from_checkpoint: (unset) → /ck/checkpoint-8 (the latest complete checkpoint "
        "rlaunch found on restart)"
    ]
    assert changed(plan, "overwrite_output_dir") == [
        "llamafactory.yaml overwrite_output_dir: true → false (keep trainer_log.jsonl: the resumed steps append)"
    ]
    first = rendered(plan_for(in_tmp, {"checkpoint_dir": "/ck"}), "a")
    assert "resume_from_checkpoint" not in first and first["overwrite_output_dir"] is True  # as written


def test_batch_sizes_deepspeed_refuses_are_bad_input(in_tmp: Path) -> None:
    write_ds(in_tmp / "cwd" / "z3.json", {**USER_DS, "train_batch_size": 64})
    write_yaml(in_tmp / "cfg" / "sft.yaml", deepspeed="z3.json", per_device_train_batch_size=2)
    with pytest.raises(planning.PlanError) as err:
        plan_for(in_tmp, {})
    assert "train_batch_size 64 ≠ micro batch 2 × gradient accumulation 1 × world size 2 = 4" in str(
        err.value
    )
    write_ds(in_tmp / "cwd" / "z3.json", {**USER_DS, "train_batch_size": 4})
    plan_for(in_tmp, {})  # consistent: accepted


def test_deepspeed_json_bf16_on_cpu_warns(in_tmp: Path) -> None:
    write_ds(in_tmp / "cwd" / "z3.json", {**USER_DS, "bf16": {"enabled": True}})
    write_yaml(in_tmp / "cfg" / "sft.yaml", deepspeed="z3.json")
    plan = plan_for(in_tmp, {}, profile="cpu")
    assert any("bf16.enabled is true but CPU has no bf16" in w for w in plan.warnings)


# ------------------------------------------------------------------------------------------ job.kind: deepspeed


def ds_plan(tmp_path: Path, deepspeed: str, **extra: Any) -> planning.Plan:
    (tmp_path / "train.py").write_text("print('hi')\n")
    job = {"kind": "deepspeed", "script": "train.py", "deepspeed": deepspeed}
    inv = inventory(tmp_path, job, **extra)
    return planning.build_plan(inv, run_id="r1", sources=planning.load_sources(inv), head_env={})


def test_deepspeed_kind_pushes_a_json_without_auto_as_written(tmp_path: Path) -> None:
    config = {"_comment": "mine", "train_micro_batch_size_per_gpu": 3, "zero_optimization": {"stage": 2}}
    raw = write_ds(tmp_path / "mine.json", config)
    plan = ds_plan(tmp_path, "mine.json")
    assert pushed(plan, "a", "ds_config.json") == raw
    assert (
        "argv: + --deepspeed_config <run dir>/ds_config.json (what deepspeed.add_config_arguments reads)"
        in (plan.notes)
    )


def test_deepspeed_kind_lists_every_auto_it_resolves(tmp_path: Path) -> None:
    write_ds(tmp_path / "mine.json")
    plan = ds_plan(tmp_path, "mine.json", profile="mi250")
    ds = json.loads(pushed(plan, "a", "ds_config.json"))
    assert (
        ds["_comment"] == "tuned on our MI250 nodes"
        and ds["zero_optimization"]["reduce_bucket_size"] == 123456789
    )
    assert (
        "ds_config.json train_batch_size: auto → (unset) (DeepSpeed derives micro × accumulation × world size)"
        in (plan.notes)
    )
    assert (
        'ds_config.json train_micro_batch_size_per_gpu: auto → 1 (only the HF Trainer fills "auto"; '
        "deepspeed.initialize rejects it)" in plan.notes
    )
    assert "ds_config.json bf16.enabled: auto → true (the GPU architecture computes in bf16)" in plan.notes


def test_deepspeed_kind_batch_mismatch_is_bad_input(tmp_path: Path) -> None:
    write_ds(tmp_path / "mine.json", {"train_batch_size": 5, "train_micro_batch_size_per_gpu": 1})
    with pytest.raises(planning.PlanError) as err:
        ds_plan(tmp_path, "mine.json")
    assert str(err.value).startswith(
        "mine.json: job.deepspeed: train_batch_size 5 is not divisible by 1 × world size 2"
    )


# ------------------------------------------------------------------------------ bad input → exit 2 (issue 12.4)


@pytest.mark.parametrize(
    ("kind", "content", "expected"),
    [
        ("deepspeed", "{not json", "bad.json: job.deepspeed: not valid JSON (Expecting property name"),
        ("deepspeed", "[1, 2]", "bad.json: job.deepspeed: expected a JSON object of DeepSpeed settings"),
        ("llamafactory", "- a\n- b\n", "bad.yaml: expected a mapping of LLaMA-Factory arguments, got list"),
        ("llamafactory", "a: [1\n", "bad.yaml: not valid YAML (line 2: expected ',' or ']'"),
    ],
)
def test_invalid_job_configs_exit_2_with_one_line_naming_the_file(
    tmp_path: Path, kind: str, content: str, expected: str
) -> None:
    (tmp_path / "train.py").write_text("pass\n")
    if kind == "deepspeed":
        (tmp_path / "bad.json").write_text(content)
        job = {"kind": "deepspeed", "script": "train.py", "deepspeed": "bad.json"}
    else:
        (tmp_path / "bad.yaml").write_text(content)
        job = {"kind": "llamafactory", "config": "bad.yaml"}
    inv = {"cluster": "t", "transport": "local", "nodes": [{"host": "a", "address": "127.0.0.1"}], "job": job}
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(inv))
    proc = subprocess.run(
        [sys.executable, "-m", "launcher.cli", "plan", "inv.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr


# ---------------------------------------------------------------------------------------- job.pretokenize


def test_pretokenize_adds_tokenized_path_and_runs_before_torchrun(in_tmp: Path) -> None:
    write_yaml(in_tmp / "cfg" / "sft.yaml", output_dir="/shared/out")
    plan = plan_for(in_tmp, {"pretokenize": True})
    for node in plan.nodes:
        assert rendered(plan, node.host)["tokenized_path"] == "/shared/out-tokenized"
        assert node.argv[1:4] == [
            f"{node.run_dir}/lf_pretokenize.py",
            f"{node.run_dir}/llamafactory.yaml",
            str(node.node_rank),
        ]
        assert node.argv[4] == node.host and node.argv[6] == "--"
        assert node.argv[8:10] == ["-m", "torch.distributed.run"]
        assert any(f.path == "lf_pretokenize.py" for f in node.files)
    assert changed(plan, "tokenized_path") == [
        "llamafactory.yaml tokenized_path: (unset) → /shared/out-tokenized (job.pretokenize: tokenized once before "
        "training; every rank loads it instead of tokenizing)"
    ]
    assert any("a tokenizes once" in n for n in plan.notes)

    write_yaml(in_tmp / "cfg" / "sft.yaml", output_dir="/shared/out", tokenized_path="/shared/tok")
    plan = plan_for(in_tmp, {"pretokenize": True})
    assert rendered(plan, "a")["tokenized_path"] == "/shared/tok" and not changed(plan, "tokenized_path")

    write_yaml(in_tmp / "cfg" / "sft.yaml", output_dir="saves/out")
    with pytest.raises(planning.PlanError, match=r"job\.pretokenize needs an absolute tokenized_path"):
        plan_for(in_tmp, {"pretokenize": True})


def test_pretokenize_is_for_llamafactory_only(tmp_path: Path) -> None:
    from cluster.inventory import InventoryError

    (tmp_path / "train.py").write_text("pass\n")
    with pytest.raises(InventoryError, match=r"job\.pretokenize"):
        inventory(tmp_path, {"kind": "torchrun", "script": "train.py", "pretokenize": True})


def test_fingerprint_covers_data_files_folders_tokenizer_and_cutoff(tmp_path: Path) -> None:
    from launcher.jobs import lf_pretokenize as pt

    data = tmp_path / "data"
    (data / "shards").mkdir(parents=True)
    (data / "a.jsonl").write_text('{"instruction": "1", "output": "2"}\n')
    (data / "shards" / "0.json").write_text("[]")
    info = {
        "a": {"file_name": "a.jsonl"},
        "b": {"file_name": "shards", "formatting": "sharegpt"},
        "h": {"hf_hub_url": "x/y"},
    }
    (data / "dataset_info.json").write_text(json.dumps(info))
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer.json").write_text("{}")
    config = {
        "dataset": "a, b,h",
        "dataset_dir": str(data),
        "model_name_or_path": str(model),
        "cutoff_len": 128,
    }
    base = pt.fingerprint(config)
    assert set(base["data"]) == {
        str(data / "dataset_info.json"),
        str(data / "a.jsonl"),
        str(data / "shards" / "0.json"),
        "<h>",
    }
    assert pt.fingerprint(config) == base  # stable

    (data / "shards" / "0.json").write_text("[{}]")
    assert pt.differences(pt.fingerprint(config), base) == [f"data {data / 'shards' / '0.json'}"]
    assert pt.differences(pt.fingerprint({**config, "cutoff_len": 256}), base)[0] == "args cutoff_len"
    (model / "tokenizer.json").write_text('{"v": 2}')
    assert "tokenizer tokenizer.json" in pt.differences(pt.fingerprint(config), base)
