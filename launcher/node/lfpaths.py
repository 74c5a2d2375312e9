"""Can LLaMA-Factory open its paths here? Run on a node as `python -c <this file> '<json>'` between push and start.

Standard library only. The JSON: {"cwd": the job directory (job.json's cwd), "dataset_dir": path or null,
"names": [dataset names], "paths": [[key, path], ...]}. Relative paths are taken from `cwd`, as LLaMA-Factory takes
them from its working directory there. What is checked is what LLaMA-Factory opens at start
(hiyouga/LLaMA-Factory v0.9.5): `<dataset_dir>/dataset_info.json` as JSON (data/parser.py get_dataset_list), each
named dataset in it and, for a `file_name` entry, that file or folder under dataset_dir (data/loader.py
_load_single_dataset); hub entries (hf_hub_url, ms_hub_url, om_hub_url, script_url) are not local. Every other
path must exist. Nothing is hashed: the full doctor compares contents across nodes.
Prints {"problems": [{"key", "value", "path", "why"}, ...], "error": null or why nothing could be checked}.
"""

import json
import os
import sys

HUB_KEYS = ("hf_hub_url", "ms_hub_url", "om_hub_url", "script_url")


def problem(key, value, path, why):
    return {"key": key, "value": value, "path": path, "why": why}


def check_datasets(dataset_dir, names):
    base = os.path.abspath(os.path.expanduser(dataset_dir))
    info_path = os.path.join(base, "dataset_info.json")
    try:
        with open(info_path, encoding="utf-8") as fh:
            info = json.load(fh)
    except OSError as exc:
        return [problem("dataset_dir", dataset_dir, info_path, f"cannot open it ({exc.strerror or exc})")]
    except ValueError as exc:
        return [problem("dataset_dir", dataset_dir, info_path, f"not valid JSON ({exc})")]
    if not isinstance(info, dict):
        return [problem("dataset_dir", dataset_dir, info_path, "not a JSON object of datasets")]
    out = []
    for name in names:
        entry = info.get(name)
        if not isinstance(entry, dict):
            out.append(problem("dataset", name, info_path, f"no dataset {name!r} in it"))
            continue
        if any(k in entry for k in HUB_KEYS) or not entry.get("file_name"):
            continue
        target = os.path.join(base, str(entry["file_name"]))
        if not os.path.exists(target):
            out.append(problem("dataset", name, target, "no such file or folder (its file_name)"))
    return out


def main():
    spec = json.loads(sys.argv[1])
    cwd = spec.get("cwd")
    try:
        if cwd:
            os.chdir(os.path.expanduser(cwd))
    except OSError as exc:
        print(json.dumps({"problems": [], "error": f"cannot enter the job directory {cwd}: {exc.strerror}"}))
        return
    problems = []
    if spec.get("dataset_dir"):
        problems += check_datasets(spec["dataset_dir"], spec.get("names") or [])
    for key, value in spec.get("paths") or []:
        path = os.path.abspath(os.path.expanduser(value))
        if not os.path.exists(path):
            problems.append(problem(key, value, path, "no such file or folder"))
    print(json.dumps({"problems": problems, "error": None}))


if __name__ == "__main__":
    main()
