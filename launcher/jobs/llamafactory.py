"""`job.kind: llamafactory` — the user's LLaMA-Factory yaml, trained under torchrun on every node.

Each node runs `torchrun … <run_dir>/rlaunch_lf.py <run_dir>/llamafactory.yaml`: that wrapper calls `run_exp()` as
`python -m llamafactory.launcher`'s `__main__` does (hiyouga/LLaMA-Factory src/llamafactory/launcher.py), the same
thing `llamafactory-cli train` runs under the torchrun it spawns from PATH — but here rlaunch owns the rendezvous and
the process tree — with one callback added through run_exp's `callbacks` argument: the save on `rlaunch stop --save`
(launcher/node/rlaunch_lf.py, docs/preemption.md).

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

"Runs as written" is literal: when nothing changes the pushed yaml is the user's file byte for byte; otherwise the
keys above are edited with a round-trip YAML library (ruamel.yaml), so comments, blank lines, key order and the way
values are written (`1.0e-4`, `null`) stay as the user wrote them, and only the changed keys' lines differ.

Relative paths: LLaMA-Factory opens every path-valued argument relative to its working directory, which on the
nodes is the node's job directory (the `cwd` of the plan's job.json), not where the user ran rlaunch. `plan` names
each such key with what it becomes there (PATH_KEYS); `up` checks on every node that what must exist does
(launcher/node/lfpaths.py, run between push and start).
"""

from __future__ import annotations

import io
import json
import os
import posixpath
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError as RoundTripError

from cluster import yamlpos
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
from launcher.jobs.lfdata import names

LF_CONFIG_FILE = "llamafactory.yaml"
# torchrun runs rlaunch's entry wrapper from the run directory: `python -m llamafactory.launcher`'s run_exp(), plus
# the stop callback through run_exp's own `callbacks` argument (launcher/node/rlaunch_lf.py, docs/preemption.md).
LF_WRAPPER = "rlaunch_lf.py"
LF_WRAPPER_SOURCE = f"<rlaunch>/{LF_WRAPPER}"
NO_DEEPSPEED = "none"
# Head-side copy of the json the yaml's `deepspeed:` names, and the path it was found at (plan.load_sources).
YAML_DS = "<llamafactory.yaml deepspeed>"
YAML_DS_PATH = "<llamafactory.yaml deepspeed path>"
PRETOKENIZE = "lf_pretokenize.py"
PRETOKENIZE_SOURCE = f"<rlaunch>/{PRETOKENIZE}"
RUN_DIR_DS = f"<run dir>/{DS_CONFIG_FILE}"  # how the per-node path of the pushed json is shown in the plan
# HF TrainingArguments defaults, used when the yaml leaves them out.
_HF_MICRO, _HF_ACCUM = 8, 1
# A collective timeout longer than this blocks a hung job for good (LLaMA-Factory's examples: 180000000 s).
LONG_TIMEOUT_S = 7 * 24 * 3600


@dataclass(frozen=True)
class PathKey:
    """A path-valued LLaMA-Factory argument: `must_exist` when LLaMA-Factory reads it at start (a missing one fails
    on every node); `hub` when the value may also be a Hugging Face hub id ("org/name"), which is no path at all."""

    key: str
    must_exist: bool
    hub: bool = False
    source: str = ""


# LLaMA-Factory 0.9.5's path-valued arguments (hiyouga/LLaMA-Factory v0.9.5, src/llamafactory/hparams/), and two of
# older releases that users' yamls still carry. `deepspeed` and `output_dir` are handled on their own (the json is
# pushed; output_dir has its own warning).
PATH_KEYS: tuple[PathKey, ...] = (
    PathKey("dataset_dir", True, source="data_args.py, default 'data'; ONLINE and REMOTE: are hubs"),
    PathKey("media_dir", False, source="data_args.py, defaults to dataset_dir"),
    PathKey("tokenized_path", False, source="data_args.py: loaded when it exists, else written there"),
    PathKey("model_name_or_path", True, hub=True, source="model_args.py"),
    PathKey("adapter_name_or_path", True, hub=True, source="model_args.py, comma-separated"),
    PathKey("reward_model", True, hub=True, source="finetuning_args.py"),
    PathKey("cache_dir", False, source="model_args.py"),
    PathKey("kt_weight_path", True, source="model_args.py"),
    PathKey("kt_optimize_rule", True, source="model_args.py of LLaMA-Factory 0.9.4"),
    PathKey("ray_storage_path", False, source="training_args.py of LLaMA-Factory 0.9.2-0.9.4"),
)
DEFAULT_DATASET_DIR = "data"


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


def line_of(raw: bytes, key: str) -> int | None:
    """The 1-based line of a top-level key in the user's yaml (cluster/yamlpos.py), None when not there."""
    try:
        return yamlpos.load(raw.decode("utf-8")).line_of((key,)) if key else None
    except (yamlpos.YamlError, UnicodeDecodeError):
        return None


def _where(job: JobSpec, ctx: NodeContext, key: str) -> str:
    """`file:line: ` of a key of the user's yaml, for warnings that point at it like errors do."""
    assert job.config is not None
    line = line_of(ctx.sources[job.config], key)
    return f"{job.config}:{line}: " if line else f"{job.config}: "


def _looks_local(value: str, hub: bool) -> bool:
    """A value of a key that also takes hub ids is a path when it cannot be one: hub ids are "name" or "org/name"
    (huggingface_hub validate_repo_id), so an absolute path, ./ ../ ~, or more than one slash is local."""
    if not hub:
        return True
    return value.startswith(("/", ".", "~")) or value.count("/") > 1


def local_paths(config: dict[str, Any]) -> list[tuple[PathKey, str, bool]]:
    """(key, value, defaulted) for every local path the yaml makes LLaMA-Factory open, hub ids and hub dataset
    dirs (ONLINE, REMOTE:<repo>: data/parser.py get_dataset_list) left out; `defaulted`: the yaml leaves
    dataset_dir unset while naming datasets, so LLaMA-Factory's default `data` applies."""
    out: list[tuple[PathKey, str, bool]] = []
    for spec in PATH_KEYS:
        raw = config.get(spec.key)
        defaulted = False
        if spec.key == "dataset_dir" and raw is None and names(config):
            raw, defaulted = DEFAULT_DATASET_DIR, True
        if not isinstance(raw, str) or not raw.strip():
            continue
        if spec.key == "dataset_dir" and (raw == "ONLINE" or raw.startswith("REMOTE:")):
            continue
        parts = [p.strip() for p in raw.split(",")] if spec.key == "adapter_name_or_path" else [raw.strip()]
        out += [(spec, p, defaulted) for p in parts if p and _looks_local(p, spec.hub)]
    return out


def is_relative(value: str) -> bool:
    """Relative to the working directory (a `~` path is the node's home: absolute, if not shared)."""
    return not posixpath.isabs(value) and not value.startswith("~")


def job_dir_shown(ctx: NodeContext) -> str:
    """The node's job directory (the plan's cwd) with the node's name as `<node>`, one text for every node."""
    parts = ctx.run_dir.split("/")
    return "/".join("<node>" if p == ctx.node.host else p for p in parts)


def startup_paths(raw: bytes) -> dict[str, Any] | None:
    """What every node must be able to open when LLaMA-Factory starts with this yaml (launcher/node/lfpaths.py
    checks it there, relative paths from the job directory as LLaMA-Factory resolves them): dataset_dir's
    dataset_info.json and the named datasets' files (unless a tokenized_path may stand in for them), and the
    must-exist keys. None when there is nothing to check."""
    try:
        config = parse_yaml(raw, LF_CONFIG_FILE)
    except LlamaFactoryConfigError:
        return None
    found = local_paths(config)
    dataset_dir = next((v for k, v, _ in found if k.key == "dataset_dir"), None)
    spec: dict[str, Any] = {
        "dataset_dir": dataset_dir if dataset_dir and not config.get("tokenized_path") else None,
        "names": names(config),
        "paths": [[k.key, v] for k, v, _ in found if k.must_exist and k.key != "dataset_dir"],
    }
    return spec if spec["dataset_dir"] or spec["paths"] else None


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
    found: dict[str, bytes] = {}
    if job.kind == "llamafactory" and job.pretokenize:
        found[PRETOKENIZE_SOURCE] = resources.files("launcher.jobs").joinpath(PRETOKENIZE).read_bytes()
    if job.kind == "llamafactory":
        found[LF_WRAPPER_SOURCE] = resources.files("launcher.node").joinpath(LF_WRAPPER).read_bytes()
    return {**found, **_yaml_deepspeed(inv)}


def _yaml_deepspeed(inv: Inventory) -> dict[str, bytes]:
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
    elif (own := _long_timeout(config.get("ddp_timeout"))) is not None:
        # envrules warns about a long job.timeout; the yaml's own ddp_timeout is the same risk (issue: 30 of
        # LLaMA-Factory's example yamls carry ddp_timeout: 180000000).
        warnings.append(
            f"{_where(job, ctx, 'ddp_timeout')}ddp_timeout {config['ddp_timeout']} ({own}) means a hung rank blocks "
            "the job for that long; rlaunch's stall detection (health.stall_timeout) is then the only guard: set "
            "job.timeout (rlaunch writes it as ddp_timeout on every rank) or a ddp_timeout of minutes"
        )

    if job.checkpoint_dir:
        why = "job.checkpoint_dir: the directory rlaunch resumes from on restart"
        _set(rendered, changes, "output_dir", job.checkpoint_dir, why)
    out = rendered.get("output_dir")
    if isinstance(out, str) and not posixpath.isabs(out):
        warnings.append(
            f"llamafactory: output_dir {out} is relative: on each node it lands in that node's job directory "
            f"({posixpath.join(job_dir_shown(ctx), out)}), not one place; write an absolute path on storage every "
            "node shares"
        )
    warnings += _relative_path_warnings(job, ctx, rendered)
    if inv.restart.max_restarts and not job.checkpoint_dir:
        warnings.append(
            f"llamafactory: restart.max_restarts is {inv.restart.max_restarts} but job.checkpoint_dir is not set, so "
            f"a restart starts over: set job.checkpoint_dir to the yaml's output_dir ({out or 'unset'}) on storage "
            "every node shares"
        )

    _check_precision(job, inv, ctx, config)
    _workers(job, inv, ctx, config, rendered, changes, warnings)

    if job.pretokenize:
        _tokenized_path(job, rendered, changes)

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


def _long_timeout(value: Any) -> str | None:
    """A ddp_timeout (seconds) past LONG_TIMEOUT_S, shown in days or years; None for anything shorter."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= LONG_TIMEOUT_S:
        return None
    year = 365 * 86400
    return f"{value / year:.1f} years" if value >= year else f"{value / 86400:.0f} days"


def _relative_path_warnings(job: JobSpec, ctx: NodeContext, config: dict[str, Any]) -> list[str]:
    """Each relative path-valued key, with what it becomes on the nodes: LLaMA-Factory opens it from its working
    directory, the node's job directory, which holds only what rlaunch pushed."""
    out = []
    for spec, value, defaulted in local_paths(config):
        if not is_relative(value):
            continue
        where = f"{job.config}: " if defaulted else _where(job, ctx, spec.key)
        said = f"{spec.key} {value}" + (" (unset: LLaMA-Factory's default)" if defaulted else "")
        need = "; it must exist there when training starts (`up` checks)" if spec.must_exist else ""
        out.append(
            f"{where}{said} is relative: LLaMA-Factory opens it from its working directory, on each node the "
            f"node's job directory ({posixpath.join(job_dir_shown(ctx), value)}){need}; make it absolute on "
            "shared storage"
        )
    return out


def _tokenized_path(job: JobSpec, rendered: dict[str, Any], changes: list[Change]) -> None:
    """Where the Arrow dataset goes: the yaml's tokenized_path, else next to output_dir (both shared storage)."""
    given = rendered.get("tokenized_path")
    out = rendered.get("output_dir")
    if given is None and isinstance(out, str) and posixpath.isabs(out):
        why = "job.pretokenize: tokenized once before training; every rank loads it instead of tokenizing"
        _set(rendered, changes, "tokenized_path", out.rstrip("/") + "-tokenized", why)
    elif not (isinstance(given, str) and posixpath.isabs(given)):
        raise LlamaFactoryConfigError(
            "job.pretokenize needs an absolute tokenized_path (or output_dir) on storage every node shares",
            file=job.config,
            field="tokenized_path",
        )


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
            line=line_of(ctx.sources[job.config], wants[0]) if job.config else None,
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


def _round_trip() -> YAML:
    """ruamel.yaml's round-trip mode keeps comments, blank lines, key order, quotes and the text of numbers
    (`1.0e-4` stays `1.0e-4`); wide lines are not re-wrapped, and null stays `null` (ruamel writes an empty value
    by default)."""
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 1 << 16
    rt.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return rt


def render_text(raw: bytes, rendered: dict[str, Any], changes: list[Change]) -> tuple[bytes, str | None]:
    """The yaml to push: the user's bytes when rlaunch changes nothing in it, else the user's text with only the
    changed keys edited (set in place, added at the end, or removed). The edit is proven against the arguments
    rlaunch means (parsed back as LLaMA-Factory's OmegaConf/PyYAML loader reads it); should it ever differ, the
    arguments are written plainly instead, with the reason (the second value) for a warning."""
    keys = list(dict.fromkeys(c.key for c in changes if c.where == LF_CONFIG_FILE))
    if not keys:
        return raw, None
    rt = _round_trip()
    try:
        doc = rt.load(raw.decode("utf-8"))
        for key in keys:
            if key in rendered:
                doc[key] = rendered[key]
            else:
                doc.pop(key, None)
        buffer = io.StringIO()
        rt.dump(doc, buffer)
        text = buffer.getvalue().encode()
        if yaml.safe_load(text) == rendered:
            return text, None
        why = "the comment-keeping edit did not read back as intended"
    except (RoundTripError, UnicodeDecodeError, AttributeError, TypeError) as exc:
        why = f"comments could not be kept ({type(exc).__name__})"
    plain = yaml.safe_dump(rendered, sort_keys=False, allow_unicode=True).encode()
    return plain, f"{why}: pushed as plain YAML without your comments"


class LlamaFactoryJob:
    """Arguments after the yaml in `job.args` reach LLaMA-Factory as `key=value` overrides (its read_args)."""

    def render(self, job: JobSpec, inv: Inventory, ctx: NodeContext) -> JobRender:
        rendered, files, changes, notes, warnings = render_config(job, inv, ctx)
        assert job.config is not None
        text, fallback = render_text(ctx.sources[job.config], rendered, changes)
        if fallback:
            warnings.append(f"llamafactory: {job.config}: {fallback}")
        files = [
            *files,
            FileSpec(LF_CONFIG_FILE, text),
            FileSpec(LF_WRAPPER, ctx.sources[LF_WRAPPER_SOURCE]),
            *extra_files(job, ctx),
        ]
        env = {"RLAUNCH_OUTPUT_DIR": str(rendered["output_dir"])} if rendered.get("output_dir") else {}
        argv = torchrun_argv(ctx, [ctx.remote(LF_WRAPPER), ctx.remote(LF_CONFIG_FILE), *job.args])
        notes.append(
            f"llamafactory: torchrun runs {LF_WRAPPER} (`-m llamafactory.launcher`'s run_exp() plus the callback "
            "that saves on `rlaunch stop --save`: docs/preemption.md); the yaml is not changed for it"
        )
        if job.pretokenize:
            # Node rank 0 tokenizes (or reuses), the others wait for it and compare fingerprints, then torchrun.
            wait = max(600.0, inv.health.startup_timeout or inv.health.stall_timeout)
            head = [ctx.python, ctx.remote(PRETOKENIZE), ctx.remote(LF_CONFIG_FILE), str(ctx.node_rank)]
            argv = [*head, ctx.node.host, f"{wait:g}", "--", *argv]
            files.append(FileSpec(PRETOKENIZE, ctx.sources[PRETOKENIZE_SOURCE]))
            if ctx.node_rank == 0:
                notes.append(
                    f"llamafactory: job.pretokenize: {ctx.node.host} tokenizes once (or reuses a tokenized_path "
                    "whose fingerprint matches); the other nodes wait for it and compare dataset fingerprints"
                )
        return JobRender(
            argv=argv,
            env=env,
            files=files,
            warnings=warnings,
            notes=[*map(str, changes), *notes],
        )
