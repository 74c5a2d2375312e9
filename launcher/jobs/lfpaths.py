"""A LLaMA-Factory job's paths checked on the nodes, between push and start (launcher/node/lfpaths.py answers).

The head side of that check: what each node must open, from the pushed yaml (launcher/jobs/llamafactory.py
`startup_paths`, which names the datasets as launcher/jobs/lfdata.py reads them), and one line per problem. Its own
room so that the yaml's module and the datasets' module do not import each other.
"""

from __future__ import annotations

import json
from typing import Any

from launcher import nodecall
from launcher.jobs.llamafactory import LF_CONFIG_FILE, startup_paths


def node_path_specs(plan: Any) -> dict[str, dict[str, Any]]:
    """Per node of a llamafactory plan: what launcher/node/lfpaths.py checks there, from the pushed files (the yaml
    LLaMA-Factory will read, and job.json's cwd: the job directory relative paths are taken from)."""
    out: dict[str, dict[str, Any]] = {}
    for node in plan.nodes:
        files = {f.path: f.content for f in node.files}
        if LF_CONFIG_FILE not in files or "job.json" not in files:
            continue
        spec = startup_paths(files[LF_CONFIG_FILE])
        if spec is not None:
            out[node.host] = {**spec, "cwd": json.loads(files["job.json"])["cwd"]}
    return out


def _relative(value: Any) -> bool:
    text = str(value or "")
    return not text.startswith(("/", "~"))


def check_paths_on_nodes(
    plan: Any, transport: Any, script: str, timeout: float = 60.0
) -> tuple[int, list[str]]:
    """Run the path check on every node of a llamafactory plan (between push and start): (exit code, one line per
    problem naming key, node, path and the fix). 0 when every node can open everything; 2 (bad input) when the
    yaml must change: a relative path (it resolves in each node's job directory, which holds only what rlaunch
    pushed) or a dataset name dataset_info.json lacks; 3 (infrastructure) when an absolute path is missing on a
    node or a node could not be asked."""
    specs = node_path_specs(plan)
    if not specs:
        return 0, []
    python = {n.host: n.python for n in plan.nodes}
    replies = nodecall.call_all(
        transport, list(specs), python, script, lambda h: [json.dumps(specs[h])], timeout=timeout
    )
    lines: list[str] = []
    bad_input = False
    for host, answer in replies.items():
        if not answer.ok:
            lines.append(f"{host}: the path check did not answer ({answer.why()})")
            continue
        reply = answer.data
        if reply.get("error"):
            lines.append(f"{host}: {reply['error']}")
        relative_dir = _relative(specs[host].get("dataset_dir"))
        for p in reply.get("problems") or []:
            key, value = p.get("key"), p.get("value")
            if key == "dataset" and "no dataset" in str(p.get("why")):
                fix, bad = "add it to dataset_info.json or fix `dataset:` in the yaml", True
            elif (key == "dataset" and relative_dir) or (key != "dataset" and _relative(value)):
                fix, bad = (
                    "it is relative, so it resolves in the node's job directory: make it absolute on shared storage",
                    True,
                )
            else:
                fix, bad = (
                    "put it on storage every node mounts (or copy it to that path on every node)",
                    False,
                )
            bad_input |= bad
            lines.append(f"{key} {value}: {host}: {p.get('path')}: {p.get('why')}; {fix}")
    return (2 if bad_input else 3 if lines else 0), lines
