"""`job.kind: deepspeed` — a user script calling `deepspeed.initialize`, started by torchrun on every node.

Not through DeepSpeed's own `deepspeed`/pdsh runner: it forwards only NCCL*/PYTHON*/MLFLOW*/MV2*/UCX* variables
(plus `.deepspeed_env`), dropping HIP_*, HSA_* and RCCL_* settings, and its Ctrl-C path runs `pkill -f` on the nodes
(DeepSpeed #6807). torchrun gives each rank RANK/LOCAL_RANK/WORLD_SIZE/MASTER_* and DeepSpeed reads them.

The ZeRO-3 config (template `zero3` / `zero3_offload` or the user's json) is pushed as `ds_config.json`: the user's
json byte for byte unless it holds HF-Trainer-only "auto" values, each replacement listed as `key: before → after`.
The script receives `--deepspeed_config <path>` (what `deepspeed.add_config_arguments` parses).
The helpers at the top are shared with the llamafactory adapter.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from cluster.inventory import Inventory, JobSpec
from launcher.jobs.base import (
    FileSpec,
    JobConfigError,
    JobRender,
    NodeContext,
    extra_files,
    script_entry,
    torchrun_argv,
)
from launcher.jobs.changes import UNSET, Change
from launcher.jobs.dscheck import batch_error, precision_warning

Precision = Literal["bf16", "fp16", "fp32"]
TEMPLATES = {"zero3": "ds_z3.json", "zero3_offload": "ds_z3_offload.json"}
DS_CONFIG_FILE = "ds_config.json"
CONFIG_FLAG = "--deepspeed_config"
# Keys whose "auto" only the HF Trainer can fill (from the model's hidden size); without it DeepSpeed's own
# defaults apply (deepspeed/runtime/zero/config.py).
_MODEL_SIZED_AUTO = (
    "reduce_bucket_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
)


class DeepSpeedConfigError(JobConfigError):
    """The DeepSpeed json cannot be used (not JSON, not an object, batch sizes DeepSpeed refuses)."""


def arch_precision(ctx: NodeContext) -> Precision:
    """What the node's GPUs compute in: bf16 where supported, fp16 on other known GPUs, fp32 on CPU/unknown.

    fp32 on CPU also because bf16 there needs the HF Trainer's `use_cpu`, which breaks DeepSpeed runs
    (measured here, docs/facts.md).
    """
    if ctx.bf16:
        return "bf16"
    return "fp16" if ctx.arch else "fp32"


def is_template(choice: str | None) -> bool:
    return (choice or "zero3") in TEMPLATES


def load_ds_config(job: JobSpec, ctx: NodeContext) -> tuple[dict[str, Any], str]:
    """The chosen DeepSpeed config as a dict (template comments stripped) and where it came from.

    The user's own json is parsed as written (its keys are theirs); only our templates lose their `_comment`s.
    """
    choice = job.deepspeed or "zero3"
    if choice in TEMPLATES:
        origin = f"template {TEMPLATES[choice]}"
        raw = ctx.sources[f"<templates>/{TEMPLATES[choice]}"]
    else:
        origin = choice
        raw = ctx.sources[choice]
    try:
        config = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DeepSpeedConfigError(f"not valid JSON ({exc})", file=origin, field="job.deepspeed") from None
    if not isinstance(config, dict):
        raise DeepSpeedConfigError(
            "expected a JSON object of DeepSpeed settings", file=origin, field="job.deepspeed"
        )
    return (strip_comments(config) if choice in TEMPLATES else config), origin


def strip_comments(config: dict[str, Any]) -> dict[str, Any]:
    """Drop our `_comment` keys (JSON has no comments; sub-sections are strict pydantic models in DeepSpeed)."""
    return {
        k: strip_comments(v) if isinstance(v, dict) else v
        for k, v in config.items()
        if not k.startswith("_comment")
    }


def resolve_auto(config: dict[str, Any], precision: Precision) -> tuple[dict[str, Any], list[Change]]:
    """Replace the HF-Trainer-only "auto" values so that plain `deepspeed.initialize` accepts the config.

    DeepSpeed's pydantic config rejects the string "auto" for these numbers; only the HF Trainer fills them.
    Batch sizes: micro batch 1 and accumulation 1 unless given, `train_batch_size` left to DeepSpeed (it derives
    micro × accumulation × world size). Clipping 1.0 (the HF default). Model-sized buckets: DeepSpeed's defaults.
    Every replacement is returned as a Change for the plan.
    """
    out = json.loads(json.dumps(config))  # deep copy
    changes: list[Change] = []
    why = 'only the HF Trainer fills "auto"; deepspeed.initialize rejects it'

    def change(key: str, after: Any, reason: str = why) -> None:
        changes.append(Change(DS_CONFIG_FILE, key, "auto", after, reason))

    if out.get("train_batch_size") == "auto":
        del out["train_batch_size"]
        change("train_batch_size", UNSET, "DeepSpeed derives micro × accumulation × world size")
    for key, value in (("train_micro_batch_size_per_gpu", 1), ("gradient_accumulation_steps", 1)):
        if out.get(key) == "auto":
            out[key] = value
            change(key, value)
    if out.get("gradient_clipping") == "auto":
        out["gradient_clipping"] = 1.0
        change("gradient_clipping", 1.0, why + "; 1.0 is the HF default")
    zero = out.get("zero_optimization")
    if isinstance(zero, dict):
        for key in _MODEL_SIZED_AUTO:
            if zero.get(key) == "auto":
                del zero[key]
                change(
                    f"zero_optimization.{key}",
                    UNSET,
                    "sized from the model by the HF Trainer only: DeepSpeed's default",
                )
    for section in ("fp16", "bf16"):
        block = out.get(section)
        if isinstance(block, dict) and block.get("enabled") == "auto":
            block["enabled"] = precision == section
            change(
                f"{section}.enabled", precision == section, f"the GPU architecture computes in {precision}"
            )
    return out, changes


def ds_config_file(config: dict[str, Any]) -> FileSpec:
    return FileSpec(DS_CONFIG_FILE, (json.dumps(config, indent=2, sort_keys=True) + "\n").encode())


def has_flag(args: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


class DeepSpeedJob:
    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender:
        config, origin = load_ds_config(job, ctx)
        resolved, changes = resolve_auto(config, arch_precision(ctx))
        if not is_template(job.deepspeed) and not changes:
            pushed = FileSpec(DS_CONFIG_FILE, ctx.sources[origin])  # the user's json, byte for byte
        else:
            pushed = ds_config_file(resolved)
        if error := batch_error(resolved, ctx.world_size, None, None):
            raise DeepSpeedConfigError(error, file=origin, field="job.deepspeed")
        warnings = []
        if inv.profile and (w := precision_warning(resolved, arch_precision(ctx), ctx.arch, origin)):
            warnings.append(w)
        entry, files = script_entry(job, ctx)
        config_path = ctx.remote(DS_CONFIG_FILE)
        notes = [f"DeepSpeed config from {origin}, pushed as {DS_CONFIG_FILE}", *map(str, changes)]
        if not has_flag(job.args, CONFIG_FLAG):
            entry = [*entry, CONFIG_FLAG, config_path]
            notes.append(
                f"argv: + {CONFIG_FLAG} <run dir>/{DS_CONFIG_FILE} (what deepspeed.add_config_arguments reads)"
            )
        # The plan adds RLAUNCH_CKPT_DIR / RLAUNCH_RESUME_FROM (the resume contract examples/ds_train.py follows).
        env = {"RLAUNCH_DS_CONFIG": config_path}
        return JobRender(
            argv=torchrun_argv(ctx, entry),
            env=env,
            files=[*files, pushed, *extra_files(job, ctx)],
            warnings=warnings,
            notes=notes,
        )
