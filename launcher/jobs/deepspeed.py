"""`job.kind: deepspeed` — a user script calling `deepspeed.initialize`, started by torchrun on every node.

Not through DeepSpeed's own `deepspeed`/pdsh runner: it forwards only NCCL*/PYTHON*/MLFLOW*/MV2*/UCX* variables
(plus `.deepspeed_env`), dropping HIP_*, HSA_* and RCCL_* settings, and its Ctrl-C path runs `pkill -f` on the nodes
(DeepSpeed #6807). torchrun gives each rank RANK/LOCAL_RANK/WORLD_SIZE/MASTER_* and DeepSpeed reads them.

The ZeRO-3 config (template `zero3` / `zero3_offload` or the user's json) is rendered once per job and pushed as
`ds_config.json`; the script receives `--deepspeed_config <path>` (what `deepspeed.add_config_arguments` parses).
The helpers at the top are shared with the llamafactory adapter.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from cluster.inventory import Inventory, JobSpec
from launcher.jobs.base import FileSpec, JobRender, NodeContext, extra_files, script_entry, torchrun_argv

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


class DeepSpeedConfigError(ValueError):
    """The DeepSpeed json cannot be used (not JSON, not an object)."""


def arch_precision(ctx: NodeContext) -> Precision:
    """What the node's GPUs compute in: bf16 where supported, fp16 on other known GPUs, fp32 on CPU/unknown.

    fp32 on CPU also because bf16 there needs the HF Trainer's `use_cpu`, which breaks DeepSpeed runs
    (measured here, docs/facts.md).
    """
    if ctx.bf16:
        return "bf16"
    return "fp16" if ctx.arch else "fp32"


def load_ds_config(job: JobSpec, ctx: NodeContext) -> tuple[dict[str, Any], str]:
    """The chosen DeepSpeed config as a dict (template comments stripped) and where it came from."""
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
        raise DeepSpeedConfigError(f"{origin}: not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise DeepSpeedConfigError(f"{origin}: expected a JSON object")
    return strip_comments(config), origin


def strip_comments(config: dict[str, Any]) -> dict[str, Any]:
    """Drop our `_comment` keys (JSON has no comments; sub-sections are strict pydantic models in DeepSpeed)."""
    return {
        k: strip_comments(v) if isinstance(v, dict) else v
        for k, v in config.items()
        if not k.startswith("_comment")
    }


def resolve_auto(config: dict[str, Any], precision: Precision) -> tuple[dict[str, Any], list[str]]:
    """Replace the HF-Trainer-only "auto" values so that plain `deepspeed.initialize` accepts the config.

    Batch sizes: micro batch 1 and accumulation 1 unless given, `train_batch_size` left to DeepSpeed (it derives
    micro × accumulation × world size). Clipping 1.0 (the HF default). Model-sized buckets: DeepSpeed's defaults.
    """
    out = json.loads(json.dumps(config))  # deep copy
    notes: list[str] = []
    resolved: list[str] = []
    if out.get("train_batch_size") == "auto":
        del out["train_batch_size"]
        resolved.append("train_batch_size → derived by DeepSpeed")
    for key, value in (("train_micro_batch_size_per_gpu", 1), ("gradient_accumulation_steps", 1)):
        if out.get(key) == "auto":
            out[key] = value
            resolved.append(f"{key} → {value}")
    if out.get("gradient_clipping") == "auto":
        out["gradient_clipping"] = 1.0
        resolved.append("gradient_clipping → 1.0")
    zero = out.get("zero_optimization")
    if isinstance(zero, dict):
        for key in _MODEL_SIZED_AUTO:
            if zero.get(key) == "auto":
                del zero[key]
                resolved.append(f"zero_optimization.{key} → DeepSpeed default")
    for section in ("fp16", "bf16"):
        block = out.get(section)
        if isinstance(block, dict) and block.get("enabled") == "auto":
            block["enabled"] = precision == section
    if resolved:
        notes.append("DeepSpeed config 'auto' values resolved for a plain script: " + ", ".join(resolved))
    notes.append(f"DeepSpeed precision: {precision} (from the GPU architecture)")
    return out, notes


def ds_config_file(config: dict[str, Any]) -> FileSpec:
    return FileSpec(DS_CONFIG_FILE, (json.dumps(config, indent=2, sort_keys=True) + "\n").encode())


def has_flag(args: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


class DeepSpeedJob:
    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender:
        config, origin = load_ds_config(job, ctx)
        config, notes = resolve_auto(config, arch_precision(ctx))
        entry, files = script_entry(job, ctx)
        config_path = ctx.remote(DS_CONFIG_FILE)
        if not has_flag(job.args, CONFIG_FLAG):
            entry = [*entry, CONFIG_FLAG, config_path]
        # The plan adds RLAUNCH_CKPT_DIR / RLAUNCH_RESUME_FROM (the resume contract examples/ds_train.py follows).
        env = {"RLAUNCH_DS_CONFIG": config_path}
        return JobRender(
            argv=torchrun_argv(ctx, entry),
            env=env,
            files=[*files, ds_config_file(config), *extra_files(job, ctx)],
            notes=[f"DeepSpeed config from {origin}, pushed as {DS_CONFIG_FILE}", *notes],
        )
