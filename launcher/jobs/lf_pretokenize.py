"""Node side of `job.pretokenize: true`: tokenize once, then every rank loads the Arrow dataset.

Pushed to every node and run before torchrun (`python lf_pretokenize.py YAML NODE_RANK HOST WAIT_S -- TORCHRUN…`);
standard library only until the tokenizing child imports LLaMA-Factory. Every node computes the dataset
fingerprint (the data files it sees, the tokenizer files, the arguments that shape tokenization). Node rank 0
reuses `tokenized_path` when its stored fingerprint matches, else runs LLaMA-Factory's own preprocessing
(`get_dataset`, the call its workflows make) once in a single process with `tokenized_path` set, which saves the
Arrow dataset (data/loader.py), and writes the fingerprint last. The other nodes wait for that fingerprint on the
shared `tokenized_path` and refuse to start when theirs differs, naming what differs. Then each node execs torchrun;
LLaMA-Factory finds `tokenized_path` and logs "Loaded tokenized dataset from …" instead of tokenizing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FINGERPRINT = "rlaunch-fingerprint.json"  # what the Arrow dataset was made from (reuse across runs)
READY = "rlaunch-ready.json"  # written by node rank 0 of this run when the dataset is ready: the others wait for it
PREFIX = "rlaunch pretokenize:"
# Arguments that change the tokenized result (hparams/data_args.py, model_args.py, finetuning_args.py).
SHAPING_KEYS = (
    "stage",
    "dataset",
    "eval_dataset",
    "template",
    "cutoff_len",
    "max_samples",
    "val_size",
    "packing",
    "neat_packing",
    "train_on_prompt",
    "mask_history",
    "tool_format",
    "default_system",
    "enable_thinking",
    "mix_strategy",
    "interleave_probs",
    "streaming",
    "buffer_size",
    "seed",
)
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "added_tokens.json",
    "chat_template.jinja",
)
# Stage → the `stage` get_dataset is called with by LLaMA-Factory's workflows (train/*/workflow.py).
DATASET_STAGE = {"pt": "pt", "sft": "sft", "rm": "rm", "dpo": "rm", "kto": "kto", "ppo": "ppo"}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dataset_files(config: dict[str, Any]) -> dict[str, str]:
    """name → sha256 of each local file behind the yaml's datasets, resolved through dataset_info.json."""
    data_dir = Path(str(config.get("dataset_dir") or "data"))
    names = [n.strip() for key in ("dataset", "eval_dataset") for n in str(config.get(key) or "").split(",")]
    info_path = data_dir / "dataset_info.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    out: dict[str, str] = {}
    if info_path.is_file():
        out[str(info_path)] = sha256_file(info_path)
    for name in filter(None, names):
        entry = info.get(name) or {}
        file_name = entry.get("file_name")
        if not file_name:
            out[f"<{name}>"] = json.dumps(entry, sort_keys=True)  # hub or script entries: their settings only
            continue
        target = data_dir / file_name
        files = sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]
        for path in files:
            out[str(path)] = sha256_file(path) if path.is_file() else "missing"
    return out


def fingerprint(config: dict[str, Any]) -> dict[str, Any]:
    model = Path(str(config.get("model_name_or_path") or ""))
    tokenizer = (
        {n: sha256_file(model / n) for n in TOKENIZER_FILES if (model / n).is_file()}
        if model.is_dir()
        else {}
    )
    parts = {
        "args": {k: config.get(k) for k in SHAPING_KEYS if k in config},
        "data": dataset_files(config),
        "tokenizer": tokenizer or {"model_name_or_path": str(model)},
    }
    parts["id"] = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return parts


def differences(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    out = []
    for part in ("args", "data", "tokenizer"):
        a, b = mine.get(part, {}), theirs.get(part, {})
        out += [f"{part} {k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return out


# The child imports LLaMA-Factory with the job's PYTHONPATH, so it cannot run with -I: its first line drops '' and
# relative sys.path entries (launcher/node/protocol.py SAFE_PATH), and its arguments (the whole yaml, tokens
# included) come from a 0600 file, not the command line every local user can read in `ps` (issue 21).
TOKENIZE = """import sys; sys.path[:] = [p for p in sys.path if p.startswith('/')]
import json, os
from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
from llamafactory.hparams import get_train_args
from llamafactory.model import load_tokenizer
with open(sys.argv[1], encoding="utf-8") as f:
    args = json.load(f)
os.unlink(sys.argv[1])
model_args, data_args, training_args, finetuning_args, _ = get_train_args(args)
tokenizer_module = load_tokenizer(model_args)
template = get_template_and_fix_tokenizer(tokenizer_module["tokenizer"], data_args)
get_dataset(template, model_args, data_args, training_args, stage=sys.argv[2], **tokenizer_module)
"""


def tokenize(config: dict[str, Any], path: Path, scratch: Path) -> None:
    """LLaMA-Factory's preprocessing in one plain process: no DeepSpeed (it needs a distributed launch), no
    resume, a scratch output_dir; `tokenized_path` makes get_dataset save the Arrow dataset."""
    args = {k: v for k, v in config.items() if k not in ("deepspeed", "resume_from_checkpoint")}
    args.update(
        tokenized_path=str(path), output_dir=str(scratch), overwrite_output_dir=True, report_to="none"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")
    }
    stage = DATASET_STAGE.get(str(config.get("stage") or "sft"), "sft")
    scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, args_file = tempfile.mkstemp(dir=scratch, prefix="args-", suffix=".json")  # 0600, O_EXCL
    with os.fdopen(fd, "w") as f:
        json.dump(args, f)
    try:
        code = subprocess.run([sys.executable, "-c", TOKENIZE, args_file, stage], env=env).returncode
    finally:
        Path(args_file).unlink(missing_ok=True)
    if code:
        sys.exit(f"{PREFIX} LLaMA-Factory's preprocessing failed (exit {code}); its output is above")


def stored(path: Path, name: str = FINGERPRINT) -> dict[str, Any] | None:
    try:
        return json.loads((path / name).read_text())
    except (OSError, ValueError):
        return None


def write(path: Path, name: str, value: dict[str, Any]) -> None:
    tmp = path / (name + ".tmp")
    tmp.write_text(json.dumps(value, sort_keys=True))
    os.replace(tmp, path / name)


def unsafe_path(path: Path) -> str | None:
    """The checkpoint_dir rule (launcher/node/ckpt.py, docs/security.md) for tokenized_path: every component owned
    by us or root and not group/world-writable unless root-owned and sticky. A dataset another user can write is
    what the job trains on (issue 21: a planted dataset with a computed fingerprint was reused)."""
    me = os.geteuid()
    for full in (os.path.abspath(path), os.path.realpath(path)):
        current = "/"
        for part in [""] + [p for p in full.split("/") if p]:
            current = os.path.join(current, part) if part else "/"
            try:
                st = os.lstat(current)
            except OSError:
                break
            writable = st.st_mode & 0o022 and not stat.S_ISLNK(st.st_mode)
            if st.st_uid not in (me, 0) or (writable and not (st.st_uid == 0 and st.st_mode & stat.S_ISVTX)):
                return (
                    f"refusing tokenized_path {path}: {current} is owned by uid {st.st_uid}, mode "
                    f"{stat.S_IMODE(st.st_mode):04o} (it must be yours or root's and not writable by others)"
                )
    return None


def produced(path: Path) -> str:
    """One sha256 over every file LLaMA-Factory saved under `path` (names and contents; ours excluded): stored
    with the fingerprint and verified before a reuse, so files changed after the save are never trained on."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = file.relative_to(path).as_posix()
        if rel in (FINGERPRINT, READY) or rel.endswith(".tmp"):
            continue
        digest.update(f"{rel}\0{sha256_file(file)}\n".encode())
    links = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_symlink())
    digest.update(json.dumps(links).encode())
    return digest.hexdigest()


def reusable(path: Path, mine: dict[str, Any]) -> bool:
    """The stored dataset matches this run's inputs *and* its files are the ones that were saved."""
    old = stored(path)
    return old is not None and old.get("id") == mine["id"] and old.get("produced") == produced(path)


def first_node(config: dict[str, Any], path: Path, mine: dict[str, Any]) -> None:
    old = stored(path)
    if old is not None and old.get("id") == mine["id"] and not reusable(path, mine):
        print(f"{PREFIX} {path}: its files changed since they were saved: tokenizing again", flush=True)
        old = {**old, "id": None}
    if old is not None and old.get("id") == mine["id"]:
        print(
            f"{PREFIX} reusing {path} (fingerprint {mine['id'][:12]} matches: data, tokenizer and cutoff unchanged)"
        )
        write(path, READY, {**mine, "run": os.environ.get("RLAUNCH_RUN_ID")})
        return
    if path.exists():
        if old is None and any(path.iterdir()):
            sys.exit(
                f"{PREFIX} {path} exists and was not written by rlaunch: move it or set another tokenized_path"
            )
        print(f"{PREFIX} {path} is stale ({', '.join(differences(mine, old or {}))[:300]}): tokenizing again")
        shutil.rmtree(path)
    print(f"{PREFIX} tokenizing once into {path} (fingerprint {mine['id'][:12]})", flush=True)
    scratch = Path(os.environ.get("RLAUNCH_RUN_DIR", ".")) / "pretokenize-output"
    tokenize(config, path, scratch)
    write(path, FINGERPRINT, {**mine, "produced": produced(path)})
    write(path, READY, {**mine, "run": os.environ.get("RLAUNCH_RUN_ID")})  # last: the other nodes start on it
    print(f"{PREFIX} saved {path}", flush=True)


def other_node(path: Path, mine: dict[str, Any], host: str, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    next_note = 0.0
    run = os.environ.get("RLAUNCH_RUN_ID")
    while (theirs := stored(path, READY)) is None or theirs.get("run") != run:
        if time.monotonic() > deadline:
            sys.exit(
                f"{PREFIX} {path} did not appear on {host} within {wait_s:g} s: put tokenized_path on storage every "
                "node shares"
            )
        if time.monotonic() >= next_note:
            print(f"{PREFIX} waiting for node rank 0 to tokenize into {path}", flush=True)
            next_note = time.monotonic() + 30
        time.sleep(0.5)
    if theirs.get("id") != mine["id"]:
        sys.exit(
            f"{PREFIX} {host} sees a different dataset than node rank 0: {', '.join(differences(mine, theirs))}"
        )
    print(f"{PREFIX} fingerprint {mine['id'][:12]} matches node rank 0's", flush=True)


def main(argv: list[str]) -> None:
    import yaml  # LLaMA-Factory's dependency: present wherever it is installed

    yaml_path, node_rank, host, wait_s, sep, *torchrun = argv
    assert sep == "--", argv
    config = yaml.safe_load(Path(yaml_path).read_text())
    path = Path(config["tokenized_path"])
    refused = unsafe_path(path)
    if refused:
        sys.exit(f"{PREFIX} {refused}")
    mine = fingerprint(config)
    if int(node_rank) == 0:
        first_node(config, path, mine)
    else:
        other_node(path, mine, host, float(wait_s))
    sys.stdout.flush()
    os.execvp(torchrun[0], torchrun)


if __name__ == "__main__":
    main(sys.argv[1:])
