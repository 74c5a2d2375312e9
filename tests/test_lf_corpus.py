"""LLaMA-Factory's own example yamls (tests/corpus/llamafactory, v0.9.5, unedited) through `rlaunch plan`.

Every training yaml of the release is planned as a user would run it from a LLaMA-Factory checkout (its relative
`deepspeed: examples/deepspeed/…` found from there), and the plan is checked for what issue 20 asks:
- item 5: each relative path-valued key is named with what it becomes on the nodes (the node's job directory);
- item 6: the pushed yaml is the user's file byte for byte when rlaunch changes nothing in it; otherwise only the
  changed keys' lines differ, every comment and blank line is kept, and the file reads back as intended;
  `ddp_timeout: 180000000` is warned about with file:line.
Pure: plans only, no nodes (cheap enough to run for all 50 files).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.inventory import from_mapping
from launcher import plan as planning
from launcher.jobs.llamafactory import LF_CONFIG_FILE, local_paths

CORPUS = Path(__file__).resolve().parent / "corpus" / "llamafactory"
YAMLS = sorted(p.relative_to(CORPUS).as_posix() for p in (CORPUS / "examples").rglob("*.yaml"))
WORKDIR = "/w/rl"
DS_PUSHED = f"{WORKDIR}/r1/node1/ds_config.json"


def test_the_corpus_is_the_release_unedited() -> None:
    source = (CORPUS / "SOURCE.md").read_text()
    assert "7af909522a951e3ad9f022ea6f88b6755257eaa5" in source and "v0.9.5" in source
    assert "Apache License" in (CORPUS / "LICENSE").read_text()[:200]
    assert len(YAMLS) == 50 and all("stage:" in (CORPUS / y).read_text() for y in YAMLS)
    assert len(list((CORPUS / "examples" / "deepspeed").glob("*.json"))) == 7
    # As released: 42 of them carry the years-long timeout.
    assert sum("ddp_timeout: 180000000" in (CORPUS / y).read_text() for y in YAMLS) == 42


def plan_of(config: str, job: dict[str, Any] | None = None, resume_from: str | None = None) -> planning.Plan:
    data = {
        "nodes": [{"host": "node1", "cpus": 8}, {"host": "node2", "cpus": 8}],
        "transport": "local",
        "workdir": WORKDIR,
        "job": {"kind": "llamafactory", "config": str(CORPUS / config), **(job or {})},
    }
    inv = from_mapping(data, base_dir=str(CORPUS))
    sources = planning.load_sources(inv)
    return planning.build_plan(inv, run_id="r1", sources=sources, head_env={}, resume_from=resume_from)


def pushed(plan: planning.Plan, host: str = "node1") -> bytes:
    return next(f.content for f in plan.node(host).files if f.path == LF_CONFIG_FILE)


def changed_keys(plan: planning.Plan) -> set[str]:
    return {n.split(":")[0].split(" ", 1)[1] for n in plan.notes if n.startswith(f"{LF_CONFIG_FILE} ")}


def assert_only_keys_changed(raw: bytes, out: bytes, keys: set[str], expected: dict[str, Any]) -> None:
    """Only the lines of `keys` differ (set in place, appended, or removed); comments and blank lines all kept."""
    before, after = raw.decode().splitlines(), out.decode().splitlines()
    for line in difflib.unified_diff(before, after, lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        assert line[1:].split(":", 1)[0] in keys, f"a line rlaunch did not mean to change: {line!r}"

    def kept(lines: list[str]) -> list[str]:
        return [line for line in lines if line.lstrip().startswith("#") or not line.strip()]

    assert kept(before) == kept(after)
    assert yaml.safe_load(out) == expected


@pytest.fixture(autouse=True)
def from_a_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Users run `llamafactory-cli train examples/…yaml` from the checkout: relative deepspeed paths start there."""
    monkeypatch.chdir(CORPUS)


@pytest.mark.parametrize("config", YAMLS)
def test_every_example_yaml_is_pushed_as_written_and_its_relative_paths_are_named(config: str) -> None:
    raw = (CORPUS / config).read_bytes()
    user = yaml.safe_load(raw)
    plan = plan_of(config)
    keys = changed_keys(plan)
    out = pushed(plan)
    # item 6: byte for byte unless rlaunch changes a key; then only that key's line.
    if not keys:
        assert out == raw
    else:
        assert keys == {"deepspeed"}, plan.notes  # the json's path: its copy is pushed beside the yaml
        assert_only_keys_changed(raw, out, keys, {**user, "deepspeed": DS_PUSHED})
    # ddp_timeout of years: warned about, pointing at its line.
    lines = raw.decode().splitlines()
    if "ddp_timeout: 180000000" in lines:
        where = f"{CORPUS / config}:{lines.index('ddp_timeout: 180000000') + 1}: "
        assert any(w.startswith(f"{where}ddp_timeout 180000000 (5.7 years)") for w in plan.warnings)
    # item 5: every relative path-valued key is named, with what it becomes in the node's job directory.
    for key, value in [(k.key, v) for k, v, _ in local_paths(user) if not v.startswith(("/", "~"))]:
        said = [w for w in plan.warnings if f" {key} {value}" in w and "is relative" in w]
        assert len(said) == 1, (key, value, plan.warnings)
        assert f"({WORKDIR}/r1/<node>/{value})" in said[0] and "make it absolute on shared storage" in said[0]
    if user.get("dataset") and "dataset_dir" not in user:
        assert any("dataset_dir data (unset: LLaMA-Factory's default)" in w for w in plan.warnings)
    if isinstance(user.get("output_dir"), str) and not user["output_dir"].startswith("/"):
        assert any(f"output_dir {user['output_dir']} is relative" in w for w in plan.warnings)


def test_hub_ids_and_hub_dataset_dirs_are_not_paths() -> None:
    user = yaml.safe_load((CORPUS / "examples/train_lora/qwen3_lora_sft_ray.yaml").read_bytes())
    assert user["dataset_dir"].startswith("REMOTE:") and user["model_name_or_path"].startswith("Qwen/")
    assert local_paths(user) == []
    predict = yaml.safe_load((CORPUS / "examples/extras/nlg_eval/llama3_lora_predict.yaml").read_bytes())
    found = [(k.key, v) for k, v, _ in local_paths(predict)]
    assert ("adapter_name_or_path", "saves/llama3-8b/lora/sft") in found


@pytest.mark.parametrize(
    "config", ["examples/train_lora/qwen3_lora_sft_ds3.yaml", "examples/train_lora/qwen3_lora_sft.yaml"]
)
def test_rlaunchs_own_changes_edit_only_their_lines(config: str) -> None:
    """job.timeout, job.checkpoint_dir, job.dataloader_workers and a resume: the docs' config-change rows."""
    raw = (CORPUS / config).read_bytes()
    user = yaml.safe_load(raw)
    job = {"timeout": 900, "checkpoint_dir": "/shared/ck", "dataloader_workers": 1}
    plan = plan_of(config, job, resume_from="/shared/ck/checkpoint-8")
    keys = changed_keys(plan)
    assert keys - {"deepspeed"} == {
        "ddp_timeout",
        "output_dir",
        "dataloader_num_workers",
        "resume_from_checkpoint",
        "overwrite_output_dir",
    }
    expected = {
        **user,
        "ddp_timeout": 900,
        "output_dir": "/shared/ck",
        "dataloader_num_workers": 1,
        "resume_from_checkpoint": "/shared/ck/checkpoint-8",
        "overwrite_output_dir": False,
        **({"deepspeed": DS_PUSHED} if "deepspeed" in keys else {}),
    }
    out = pushed(plan)
    assert_only_keys_changed(raw, out, keys, expected)
    assert (
        b"learning_rate: 1.0e-4" in out and b"# eval_dataset: alpaca_en_demo" in out
    )  # as the user wrote them
    # ddp_timeout now comes from job.timeout: the yaml's years-long value is gone, and so is its warning.
    assert not any("ddp_timeout 180000000" in w for w in plan.warnings)


def config_table() -> tuple[Path, list[str]]:
    """The user docs' table of what rlaunch changes in the user's config (README, or the doc it moved to)."""
    root = Path(__file__).resolve().parents[1]
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text()
        if "## What rlaunch changes in your config" in text:
            section = text.split("## What rlaunch changes in your config", 1)[1].split("\n## ", 1)[0]
            return doc, [line for line in section.splitlines() if line.startswith("| yaml `")]
    raise AssertionError("no 'What rlaunch changes in your config' table in README.md or docs/")


def test_the_docs_config_change_table_names_exactly_the_keys_the_pushed_bytes_change() -> None:
    """The table ends "Anything else reaches the nodes unchanged": the tests above compare pushed bytes for its
    rows; here its rows' keys are exactly the ones rlaunch edits (bf16 is refused, never edited)."""
    doc, rows = config_table()
    named = {k for row in rows for k in re.findall(r"`([a-z_0-9]+):?`", row.split("|")[1])}
    edited = {
        "deepspeed",
        "ddp_timeout",
        "output_dir",
        "dataloader_num_workers",
        "resume_from_checkpoint",
        "overwrite_output_dir",
        "tokenized_path",  # job.pretokenize (tests/test_job_configs.py)
    }
    assert named - {"bf16", "pure_bf16"} == edited, (doc, named)
