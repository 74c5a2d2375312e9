"""`job.kind: llamafactory` — the user's LLaMA-Factory yaml, trained under torchrun on every node.

Each node runs `torchrun … -m llamafactory.launcher <run_dir>/llamafactory.yaml`: the module's `__main__` calls
`run_exp()` (hiyouga/LLaMA-Factory src/llamafactory/launcher.py), the same thing `llamafactory-cli train` runs
under the torchrun it spawns from PATH — but here rlaunch owns the rendezvous and the process tree.

The user's yaml and DeepSpeed json are the source of truth. The rendered yaml is the user's, with only these keys
added or changed, each listed in the plan as `key: before → after (why)` (launcher/jobs/changes.py):
  deepspeed               the path of the pushed copy of the user's own json (bytes unchanged), found the way
                          LLaMA-Factory finds it; `job.deepspeed` (a template or json) or `none` overrides it
  ddp_timeout             the job's collective timeout (seconds), when one is set
  output_dir              `job.checkpoint_dir` when set (the directory rlaunch resumes from); else as written
  dataloader_num_workers  `job.dataloader_workers` when set (capped by the plan's per-rank rule)
  resume_from_checkpoint  on a restart: the checkpoint the runner chose (launcher/node/ckpt.py), with
                          overwrite_output_dir false so trainer_log.jsonl keeps the steps before the restart
Values that cannot work across nodes are warnings with the fix, or bad input where the run would certainly fail.
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import Any

import yaml

from cluster.inventory import Inventory, JobSpec
from launcher import envrules
from launcher.jobs.base import FileSpec, JobConfigError, JobRender, NodeContext, extra_files, torchrun_argv
from launcher.jobs.changes import UNSET, Change
from launcher.jobs.deepspeed import (
    DS_CONFIG_FILE,
    arch_precision,
    ds_config_file,
    is_template,
    load_ds_config,
)
from launcher.jobs.dscheck import batch_error, precision_warning

LF_CONFIG_FILE = "llamafactory.yaml"
LF_ENTRY = ["-m", "llamafactory.launcher"]
NO_DEEPSPEED = "none"
# Head-side copy of the json the yaml's `deepspeed:` names, and the path it was found at (plan.load_sources).
YAML_DS = "<llamafactory.yaml deepspeed>"
YAML_DS_PATH = "<llamafactory.yaml deepspeed path>"
RUN_DIR_DS = f"<run dir>/{DS_CONFIG_FILE}"  # how the per-node path of the pushed json is shown in the plan
# HF TrainingArguments defaults, used when the yaml leaves them out.
_HF_MICRO, _HF_ACCUM = 8, 1


class LlamaFactoryConfigError(JobConfigError):
    """The user's LLaMA-Factory yaml is not a mapping of arguments."""


def parse_yaml(text: bytes, name: str) -> dict[str, Any]:
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise LlamaFactoryConfigError(f"not valid YAML ({where}{problem})", file=name) from None
    if not isinstance(config, dict):
        raise LlamaFactoryConfigError(
            f"expected a mapping of LLaMA-Factory arguments, got {type(config).__name__}", file=name
        )
    return config


def parse_user_config(job: JobSpec, ctx: NodeContext) -> dict[str, Any]:
    assert job.config is not None
    return parse_yaml(ctx.sources[job.config], job.config)


def ds_candidates(value: str, yaml_path: Path, cwd: Path) -> list[Path]:
    """Where the yaml's relative `deepspeed:` path can be, in order.

    LLaMA-Factory passes the string to the HF Trainer unchanged (hparams/parser.py read_args loads the yaml as is),
    and HfDeepSpeedConfig opens it with os.path.exists, i.e. relative to the working directory of
    `llamafactory-cli train` (accelerate/utils/deepspeed.py HfDeepSpeedConfig.__init__). Where the user ran it is
    unknown: this shell's directory first (the usual case, e.g. examples/deepspeed/ds_z3_config.json from the
    LLaMA-Factory checkout), then the yaml's own directory.
    """
    path = Path(os.path.expanduser(value))
    if path.is_absolute():
        return [path]
    return [cwd / path, yaml_path.parent / path]


def head_sources(inv: Inventory) -> dict[str, bytes]:
    """The json the yaml names under `deepspeed:` (when job.deepspeed does not override it), read on the head."""
    job = inv.job
    if job.kind != "llamafactory" or not job.config or job.deepspeed:
        return {}
    try:
        config = yaml.safe_load(inv.resolve(job.config).read_bytes())
    except (OSError, yaml.YAMLError):
        return {}  # load_sources / render report the yaml itself
    value = config.get("deepspeed") if isinstance(config, dict) else None
    if not isinstance(value, str) or value.lstrip().startswith("{"):
        return {}
    for candidate in ds_candidates(value, inv.resolve(job.config), Path.cwd()):
        if candidate.is_file():
            return {YAML_DS: candidate.read_bytes(), YAML_DS_PATH: str(candidate).encode()}
    return {}


def _set(
    rendered: dict[str, Any], changes: list[Change], key: str, value: Any, why: str, shown: Any = None
) -> None:
    """Set a key and record the change; `shown` stands for a per-node value so that every node's note is one."""
    before = rendered.get(key, UNSET)
    if before is not UNSET and before == value and type(before) is type(value):
        return
    rendered[key] = value
    changes.append(Change(LF_CONFIG_FILE, key, before, value if shown is None else shown, why))


def _deepspeed(
    job: JobSpec, inv: Inventory, ctx: NodeContext, config: dict[str, Any], rendered: dict[str, Any]
) -> tuple[dict[str, Any] | None, list[FileSpec], list[Change], list[str]]:
    """The DeepSpeed config in use (for checks), the file to push, the key changes and notes."""
    changes: list[Change] = []
    if job.deepspeed == NO_DEEPSPEED:
        if "deepspeed" in rendered:
            changes.append(
                Change(LF_CONFIG_FILE, "deepspeed", rendered.pop("deepspeed"), UNSET, "job.deepspeed: none")
            )
        return None, [], changes, []
    if job.deepspeed:  # an explicit choice in the inventory: a template or the user's json
        ds, origin = load_ds_config(job, ctx)
        why = f"job.deepspeed: {job.deepspeed}, {origin} pushed as {DS_CONFIG_FILE}"
        _set(rendered, changes, "deepspeed", ctx.remote(DS_CONFIG_FILE), why, RUN_DIR_DS)
        pushed = (
            ds_config_file(ds)
            if is_template(job.deepspeed)
            else FileSpec(DS_CONFIG_FILE, ctx.sources[origin])
        )
        return ds, [pushed], changes, []
    value = config.get("deepspeed")
    if value is None:
        return None, [], changes, []
    if isinstance(value, dict):
        return value, [], changes, ["llamafactory: deepspeed config inline in the yaml, kept as written"]
    raw = ctx.sources.get(YAML_DS)
    if raw is None:
        text = str(value)
        if text.lstrip().startswith("{"):
            return None, [], changes, []  # a JSON string: the HF Trainer parses it as is
        if posixpath.isabs(os.path.expanduser(text)):
            note = (
                f"llamafactory: deepspeed {text} is not on this machine: kept as written, so it must exist at "
                "that path on every node"
            )
            return None, [], changes, [note]
        raise LlamaFactoryConfigError(
            f"{text} not found (looked in this directory and next to the yaml, as LLaMA-Factory "
            "opens it relative to where it runs)",
            file=job.config,
            field="deepspeed",
        )
    found = ctx.sources[YAML_DS_PATH].decode()
    try:
        ds = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LlamaFactoryConfigError(f"not valid JSON ({exc})", file=found) from None
    if not isinstance(ds, dict):
        raise LlamaFactoryConfigError("expected a JSON object of DeepSpeed settings", file=found)
    why = f"your {found}, pushed byte for byte as {DS_CONFIG_FILE}: the nodes cannot see this machine's path"
    _set(rendered, changes, "deepspeed", ctx.remote(DS_CONFIG_FILE), why, RUN_DIR_DS)
    return ds, [FileSpec(DS_CONFIG_FILE, raw)], changes, []


def _int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def render_config(
    job: JobSpec, inv: Inventory, ctx: NodeContext
) -> tuple[dict[str, Any], list[FileSpec], list[Change], list[str], list[str]]:
    """The per-job LLaMA-Factory arguments, files they refer to, key changes, notes and warnings."""
    config = parse_user_config(job, ctx)
    rendered = dict(config)
    ds, files, changes, notes = _deepspeed(job, inv, ctx, config, rendered)
    warnings: list[str] = []

    if ds is not None:
        micro = _int_or(config.get("per_device_train_batch_size"), _HF_MICRO)
        accum = _int_or(config.get("gradient_accumulation_steps"), _HF_ACCUM)
        if error := batch_error(ds, ctx.world_size, micro, accum):
            raise LlamaFactoryConfigError(error, file=job.deepspeed or str(config.get("deepspeed")))
        if inv.profile and (w := precision_warning(ds, arch_precision(ctx), ctx.arch, "DeepSpeed json")):
            warnings.append(w)

    if ctx.collective_timeout is not None:
        why = "the job's collective timeout (job.timeout / NCCL_TIMEOUT), the same on every rank"
        _set(rendered, changes, "ddp_timeout", int(ctx.collective_timeout), why)

    if job.checkpoint_dir:
        why = "job.checkpoint_dir: the directory rlaunch resumes from on restart"
        _set(rendered, changes, "output_dir", job.checkpoint_dir, why)
    out = rendered.get("output_dir")
    if isinstance(out, str) and not posixpath.isabs(out):
        warnings.append(
            f"llamafactory: output_dir {out} is relative: on each node it lands in that node's run directory "
            f"({posixpath.join(posixpath.dirname(ctx.run_dir), '<node>', out)}), not one place; write an absolute path on storage every node shares"
        )
    if inv.restart.max_restarts and not job.checkpoint_dir:
        warnings.append(
            f"llamafactory: restart.max_restarts is {inv.restart.max_restarts} but job.checkpoint_dir is not set, so "
            f"a restart starts over: set job.checkpoint_dir to the yaml's output_dir ({out or 'unset'}) on storage "
            "every node shares"
        )

    _check_precision(job, inv, ctx, config)
    _workers(job, inv, ctx, config, rendered, changes, warnings)

    if ctx.resume_from:
        why = "the latest complete checkpoint rlaunch found on restart"
        _set(rendered, changes, "resume_from_checkpoint", ctx.resume_from, why)
        _set(
            rendered,
            changes,
            "overwrite_output_dir",
            False,
            "keep trainer_log.jsonl: the resumed steps append",
        )
    return rendered, files, changes, notes, warnings


def _check_precision(job: JobSpec, inv: Inventory, ctx: NodeContext, config: dict[str, Any]) -> None:
    """bf16 without a bf16 GPU fails for certain: TrainingArguments raises "Your setup doesn't support bf16/gpu"
    unless use_cpu (transformers/training_args.py __post_init__)."""
    wants = [k for k in ("bf16", "pure_bf16") if config.get(k)]
    if inv.profile and wants and not ctx.bf16 and not config.get("use_cpu"):
        hw = ctx.arch or f"profile {inv.profile} (no GPU)"
        raise LlamaFactoryConfigError(
            f"{wants[0]}: true but {hw} has no bf16, so the HF Trainer refuses to start: set {wants[0]}: false "
            "(fp16: true on a GPU)",
            file=job.config,
            field=wants[0],
        )


def _workers(
    job: JobSpec,
    inv: Inventory,
    ctx: NodeContext,
    config: dict[str, Any],
    rendered: dict[str, Any],
    changes: list[Change],
    warnings: list[str],
) -> None:
    if job.dataloader_workers is not None:
        why = "job.dataloader_workers, capped at half the node's cores per rank"
        _set(rendered, changes, "dataloader_num_workers", ctx.dataloader_workers, why)
        return
    asked = config.get("dataloader_num_workers")
    if not isinstance(asked, int) or isinstance(asked, bool):
        return
    safe = envrules.dataloader_workers(asked, ctx.node.cpus, ctx.nproc)
    if asked > safe:
        warnings.append(
            f"llamafactory: dataloader_num_workers {asked} is above the safe limit of {safe} on {ctx.node.host} "
            f"(half its {ctx.node.cpus} cores over {ctx.nproc} ranks; forked HIP loaders oversubscribe and crash): "
            f"set dataloader_num_workers: {safe} or job.dataloader_workers"
        )


class LlamaFactoryJob:
    """Arguments after the yaml in `job.args` reach LLaMA-Factory as `key=value` overrides (its read_args)."""

    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender:
        rendered, files, changes, notes, warnings = render_config(job, inv, ctx)
        text = (
            "# rendered by rlaunch from " + str(job.config) + "\n" + yaml.safe_dump(rendered, sort_keys=False)
        )
        files = [*files, FileSpec(LF_CONFIG_FILE, text.encode()), *extra_files(job, ctx)]
        env = {"RLAUNCH_OUTPUT_DIR": str(rendered["output_dir"])} if rendered.get("output_dir") else {}
        return JobRender(
            argv=torchrun_argv(ctx, [*LF_ENTRY, ctx.remote(LF_CONFIG_FILE), *job.args]),
            env=env,
            files=files,
            warnings=warnings,
            notes=[*map(str, changes), *notes],
        )
