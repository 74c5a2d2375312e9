"""A LLaMA-Factory job's datasets as LLaMA-Factory sees them: `dataset:` names looked up in
`<dataset_dir>/dataset_info.json`, each entry a file or a folder (`file_name`), with its `formatting`
(alpaca / sharegpt) and `columns` / `tags` mappings (hiyouga/LLaMA-Factory data/README.md, data/parser.py).

Used by `rlaunch data check <llamafactory yaml>` (on the head) and by doctor, which sends `job_dataset_spec` to
every node so that each resolves and hashes the same entries (launcher/node/facts.py) and the sha256 are compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cluster.inventory import Inventory

# Alpaca columns → the keys launcher/data.py validates (LLaMA-Factory's defaults: data/parser.py DatasetAttr).
ALPACA_COLUMNS = {
    "prompt": "instruction",
    "query": "input",
    "response": "output",
    "system": "system",
    "history": "history",
}
# ShareGPT tags → the default tag values the checker knows.
SHAREGPT_TAGS = {
    "role_tag": "from",
    "content_tag": "value",
    "user_tag": "human",
    "assistant_tag": "gpt",
    "observation_tag": "observation",
    "function_tag": "function_call",
    "system_tag": "system",
}


class DatasetSpecError(ValueError):
    """The yaml's datasets cannot be resolved (no dataset_info.json, an unknown name)."""


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    files: tuple[Path, ...]  # the file, or every file of the folder; empty for hub/script entries
    formatting: str = "alpaca"
    columns: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    remote: str | None = None  # hf_hub_url / ms_hub_url / script_url: not a local file


def names(config: dict[str, Any]) -> list[str]:
    return [
        n.strip()
        for key in ("dataset", "eval_dataset")
        for n in str(config.get(key) or "").split(",")
        if n.strip()
    ]


def resolve(config: dict[str, Any], cwd: Path) -> list[DatasetEntry]:
    """The yaml's datasets through dataset_info.json (dataset_dir default "data", relative to `cwd`)."""
    data_dir = cwd / str(config.get("dataset_dir") or "data")
    info_path = data_dir / "dataset_info.json"
    try:
        info = json.loads(info_path.read_text())
    except OSError as exc:
        raise DatasetSpecError(f"{info_path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise DatasetSpecError(f"{info_path}: not valid JSON ({exc})") from None
    out = []
    for name in names(config):
        entry = info.get(name)
        if not isinstance(entry, dict):
            raise DatasetSpecError(f"dataset {name!r} is not in {info_path}")
        common = {
            "formatting": str(entry.get("formatting") or "alpaca"),
            "columns": dict(entry.get("columns") or {}),
            "tags": dict(entry.get("tags") or {}),
        }
        remote = next(
            (entry[k] for k in ("hf_hub_url", "ms_hub_url", "om_hub_url", "script_url") if k in entry), None
        )
        if remote or not entry.get("file_name"):
            out.append(DatasetEntry(name, (), remote=str(remote), **common))
            continue
        target = data_dir / str(entry["file_name"])
        files = tuple(sorted(p for p in target.rglob("*") if p.is_file())) if target.is_dir() else (target,)
        out.append(DatasetEntry(name, files, **common))
    return out


def remap(record: Any, entry: DatasetEntry) -> Any:
    """A record with the entry's column and tag names turned into the defaults launcher/data.py checks."""
    if not isinstance(record, dict):
        return record
    if entry.formatting == "alpaca":
        out = dict(record)
        for column, default in ALPACA_COLUMNS.items():
            source = entry.columns.get(column)
            if source and source != default:
                out.pop(default, None)
                if source in record:
                    out[default] = record[source]
        return out
    messages = entry.columns.get("messages", "conversations")
    if messages not in record or not isinstance(record[messages], list):
        return record
    tags = {**SHAREGPT_TAGS, **entry.tags}
    roles = {
        tags[k]: SHAREGPT_TAGS[k]
        for k in SHAREGPT_TAGS
        if k.endswith("_tag") and k not in ("role_tag", "content_tag")
    }
    turns = [
        {
            "from": roles.get(str(t.get(tags["role_tag"])), t.get(tags["role_tag"])),
            "value": t.get(tags["content_tag"]),
        }
        if isinstance(t, dict)
        else t
        for t in record[messages]
    ]
    return {"conversations": turns}


def job_dataset_spec(inv: Inventory) -> dict[str, Any] | None:
    """What doctor asks every node to resolve and hash: the llamafactory yaml's dataset_dir and names."""
    if inv.job.kind != "llamafactory" or not inv.job.config:
        return None
    try:
        config = yaml.safe_load(inv.resolve(inv.job.config).read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(config, dict) or not names(config):
        return None
    return {"dataset_dir": str(config.get("dataset_dir") or "data"), "names": names(config)}


def check_yaml_datasets(yaml_path: str, cwd: Path) -> tuple[list[Any], list[str]]:
    """Reports for every local dataset file of a LLaMA-Factory yaml, and notes for entries not checked here."""
    from launcher.data import check_dataset

    try:
        config = yaml.safe_load(Path(yaml_path).read_text())
    except OSError as exc:
        raise DatasetSpecError(f"{yaml_path}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError:
        raise DatasetSpecError(f"{yaml_path}: not valid YAML") from None
    if not isinstance(config, dict) or not names(config):
        raise DatasetSpecError(f"{yaml_path}: no `dataset:` to check")
    reports, notes = [], []
    for entry in resolve(config, cwd):
        if entry.remote:
            notes.append(f"{entry.name}: {entry.remote} is not a local file, not checked")
            continue
        fmt = entry.formatting if entry.formatting in ("alpaca", "sharegpt") else None
        for path in entry.files:
            reports.append(check_dataset(path, fmt, lambda r, e=entry: remap(r, e)))  # type: ignore[arg-type]
    return reports, notes
