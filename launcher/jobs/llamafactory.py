"""`job.kind: llamafactory` — the user's LLaMA-Factory yaml, rendered per job, trained under torchrun on every node.

Each node runs `torchrun … -m llamafactory.launcher <run_dir>/llamafactory.yaml`: the module's `__main__` calls
`run_exp()` (hiyouga/LLaMA-Factory src/llamafactory/launcher.py), the same thing `llamafactory-cli train` runs
under the torchrun it spawns from PATH — but here rlaunch owns the rendezvous and the process tree.

The rendered yaml overrides, with a plan note for each change:
  deepspeed               the pushed ZeRO-3 / ZeRO-3-offload template or the user's json (`job.deepspeed`;
                          `none` trains without DeepSpeed). "auto" values stay: the HF Trainer fills them.
  ddp_timeout             the job's collective timeout (seconds), when one is set
  output_dir              `job.checkpoint_dir` (storage every node shares: the ZeRO-3 shards of all ranks must
                          land in one checkpoint directory), else `<workdir>/<run id>/output` (no resume)
  bf16 / fp16 / pure_bf16 what the GPU architecture supports; fp32 on CPU or unknown hardware
  dataloader_num_workers  the plan's per-rank rule
  resume_from_checkpoint  the checkpoint the runner chose on restart (launcher/node/ckpt.py under
                          `job.checkpoint_dir`);
                          otherwise null with `overwrite_output_dir: true`, because LLaMA-Factory would otherwise
                          auto-resume from the highest `checkpoint-N`, complete or not (hparams/parser.py).
"""

from __future__ import annotations

import posixpath
from typing import Any

import yaml

from cluster.inventory import Inventory, JobSpec
from launcher.jobs.base import FileSpec, JobRender, NodeContext, extra_files, torchrun_argv
from launcher.jobs.deepspeed import DS_CONFIG_FILE, Precision, arch_precision, ds_config_file, load_ds_config

LF_CONFIG_FILE = "llamafactory.yaml"
LF_ENTRY = ["-m", "llamafactory.launcher"]
NO_DEEPSPEED = "none"


class LlamaFactoryConfigError(ValueError):
    """The user's LLaMA-Factory yaml is not a mapping of arguments."""


def output_dir(job: JobSpec, ctx: NodeContext) -> str:
    """Where checkpoints go: identical on every node (the run directory itself is per node)."""
    if job.checkpoint_dir:
        return job.checkpoint_dir
    return posixpath.join(posixpath.dirname(ctx.run_dir.rstrip("/")), "output")


def parse_user_config(job: JobSpec, ctx: NodeContext) -> dict[str, Any]:
    assert job.config is not None
    try:
        config = yaml.safe_load(ctx.sources[job.config])
    except yaml.YAMLError as exc:
        raise LlamaFactoryConfigError(f"{job.config}: not valid YAML ({exc})") from None
    if not isinstance(config, dict):
        raise LlamaFactoryConfigError(f"{job.config}: expected a mapping of LLaMA-Factory arguments")
    return config


def requested_precision(config: dict[str, Any]) -> Precision:
    if config.get("bf16") or config.get("pure_bf16"):
        return "bf16"
    return "fp16" if config.get("fp16") else "fp32"


def effective_precision(requested: Precision, supported: Precision) -> Precision:
    """Honour the user's choice where the hardware has it; fall back bf16 → fp16 (GPU) → fp32 (CPU)."""
    if requested == "fp32" or requested == supported:
        return requested
    if supported == "fp32":
        return "fp32"
    return "fp16" if requested == "bf16" else requested  # fp16 runs on every GPU arch rlaunch knows


def render_config(job: JobSpec, ctx: NodeContext) -> tuple[dict[str, Any], list[FileSpec], list[str]]:
    """The per-job LLaMA-Factory arguments, the files they refer to, and notes on every override."""
    config = parse_user_config(job, ctx)
    rendered = dict(config)
    files: list[FileSpec] = []
    notes: list[str] = []

    if job.deepspeed == NO_DEEPSPEED:
        rendered.pop("deepspeed", None)
        notes.append("llamafactory: no DeepSpeed (job.deepspeed: none)")
    else:
        ds_config, origin = load_ds_config(job, ctx)
        files.append(ds_config_file(ds_config))
        rendered["deepspeed"] = ctx.remote(DS_CONFIG_FILE)
        if "deepspeed" in config and not job.deepspeed:
            notes.append(
                f"llamafactory: yaml's deepspeed: {config['deepspeed']} replaced by the ZeRO-3 template "
                "(set job.deepspeed to a json path to use your own)"
            )
        notes.append(f"llamafactory: deepspeed → {origin}")

    if ctx.collective_timeout is not None:
        rendered["ddp_timeout"] = int(ctx.collective_timeout)

    rendered["output_dir"] = output_dir(job, ctx)
    if config.get("output_dir") and config["output_dir"] != rendered["output_dir"]:
        notes.append(f"llamafactory: output_dir → {rendered['output_dir']} (shared by all nodes of the run)")

    requested = requested_precision(config)
    precision = effective_precision(requested, arch_precision(ctx))
    rendered["bf16"] = precision == "bf16"
    rendered["fp16"] = precision == "fp16"
    if precision != "bf16":
        rendered.pop("pure_bf16", None)
    if precision != requested:
        notes.append(
            f"llamafactory: {requested} not supported on {ctx.arch or 'CPU/unknown arch'} → {precision}"
        )

    rendered["dataloader_num_workers"] = ctx.dataloader_workers
    # Persistent workers keep forked processes (and their HIP state) alive across epochs: off, as the plan's rule.
    rendered["dataloader_persistent_workers"] = False
    if ctx.resume_from:
        rendered["resume_from_checkpoint"] = ctx.resume_from
        rendered["overwrite_output_dir"] = False  # keep trainer_log.jsonl: the resumed steps append to it
        notes.append(f"llamafactory: resume_from_checkpoint → {ctx.resume_from}")
    else:
        rendered["resume_from_checkpoint"] = None
        rendered["overwrite_output_dir"] = True
    return rendered, files, notes


class LlamaFactoryJob:
    """Arguments after the yaml in `job.args` reach LLaMA-Factory as `key=value` overrides (its read_args)."""

    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender:
        rendered, files, notes = render_config(job, ctx)
        text = (
            "# rendered by rlaunch from " + str(job.config) + "\n" + yaml.safe_dump(rendered, sort_keys=False)
        )
        files = [*files, FileSpec(LF_CONFIG_FILE, text.encode()), *extra_files(job, ctx)]
        warnings = []
        if not job.checkpoint_dir:
            warnings.append(
                "llamafactory: job.checkpoint_dir is not set, so checkpoints stay in this run's directory and a "
                "restart starts over; set it to a directory every node shares"
            )
        return JobRender(
            argv=torchrun_argv(ctx, [*LF_ENTRY, ctx.remote(LF_CONFIG_FILE), *job.args]),
            env={"RLAUNCH_OUTPUT_DIR": rendered["output_dir"]},
            files=files,
            warnings=warnings,
            notes=notes,
        )
