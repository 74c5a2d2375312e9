"""Generate the reference pages from the code: docs/inventory.md from the pydantic schema (cluster/inventory.py)
and docs/cli.md from the click commands (launcher/cli/). `tests/test_cli_everyday.py` fails when either page is stale
or when a schema key has no meaning below, so the reference cannot drift from the code.

Usage: python scripts/gen_docs.py [--check]   (writes both pages; --check only compares, exit 1 if stale)
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import click  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from pydantic_core import PydanticUndefined  # noqa: E402

from cluster.inventory import Inventory  # noqa: E402

INTERNAL = {"base_dir", "source"}  # set by rlaunch itself (refused in a file)

# What each key means. A schema key missing here fails tests/test_docs.py.
MEANING: dict[str, str] = {
    "cluster": "A name for the cluster, shown in plans, records and metrics.",
    "ssh": "How to reach the nodes over SSH (transport `ssh`).",
    "ssh.user": "Login user on every node (a node's `user` wins).",
    "ssh.port": "SSH port on every node (a node's `port` wins).",
    "ssh.identity_file": "Private key file on the head.",
    "ssh.known_hosts": "known_hosts file the nodes' host keys are checked against.",
    "ssh.host_key_policy": "`strict` rejects unknown and changed keys; `accept-new` stores first-seen keys.",
    "ssh.connect_timeout": "Seconds to wait for a node's SSH connection.",
    "ssh.connection_attempts": "Tries per connection when a node accepted but its SSH handshake or authentication "
    "timed out (a busy sshd; OpenSSH's ConnectionAttempts). Silence, refusals and key errors are not retried.",
    "ssh.keepalive": "Seconds between SSH keepalives (a cut link is noticed).",
    "ssh.max_parallel": "Nodes contacted at once.",
    "nodes": "The nodes that run the job, in node-rank order (or `--hostfile` / `--from-slurm`).",
    "nodes[].host": "The node's name in logs, plans and `--nodes`; also the address when `address` is unset.",
    "nodes[].address": "What to connect to (IP or DNS name).",
    "nodes[].gpus": 'GPUs: a count (8), a list ([0, 1]) or a range ("0-3"); 0 = a CPU node.',
    "nodes[].port": "This node's SSH port.",
    "nodes[].user": "This node's login user.",
    "nodes[].identity_file": "This node's private key file.",
    "nodes[].python": "This node's interpreter (over the top-level `python`).",
    "nodes[].cpus": "Physical cores: caps dataloader workers per rank.",
    "nodes[].env": "Environment for this node only (over the top-level `env`).",
    "spares": "Stand-by nodes (same keys as `nodes`): one takes a failed node's place and node rank.",
    "master": "The rendezvous master.",
    "master.node": "The master node's `host` (default: the first node).",
    "master.port": 'Rendezvous port, or "auto" (derived from the run id, checked free at preflight).',
    "workdir": "Node-side root: run directories `<workdir>/<run id>/<host>/` (default $RLAUNCH_WORKDIR or "
    "/var/tmp/rlaunch-<user>).",
    "python": "The nodes' interpreter (relative paths: from the inventory's directory, transport local).",
    "transport": "`ssh`, `local` (processes on this machine) or `slurm` (srun steps in the allocation).",
    "profile": "GPU family: loads templates/env_<profile>.env as defaults and decides bf16 support.",
    "env": "Environment on every node; values are quoted, never executed (`--env K=V` adds to it).",
    "secrets": "Names read from the head's environment and sent to the nodes (0600 files, shown as ***). "
    "Never on the command line.",
    "keep_runs": "Finished runs whose directories stay on each node; older ones are removed at the next `up` "
    "(`rlaunch gc` by hand). Running runs are never removed; null keeps everything.",
    "sync": "A head-node directory pushed to every node's `<workdir>/sync/<cluster>/` before the job starts "
    "(SkyPilot's `workdir`); only changed files are sent; the job finds it as `RLAUNCH_SYNC_DIR`.",
    "sync.src": "The directory to push, relative to the inventory's directory.",
    "sync.exclude": "gitignore-style patterns left out (`.git/` always is).",
    "sync.gitignore": "Also leave out what `<src>/.gitignore` ignores.",
    "job": "What runs on every node.",
    "job.kind": "`torchrun`, `deepspeed`, `llamafactory` or `command`.",
    "job.script": "Head-node path of the script (pushed to every node).",
    "job.module": "A module to run instead of a script (`python -m`).",
    "job.config": "kind llamafactory: the LLaMA-Factory yaml (head-node path).",
    "job.command": "kind command: the argv run once per node.",
    "job.args": "Arguments after the script, module or command (`-- ARGS...` on the command line replaces "
    "them).",
    "job.nproc_per_node": "Ranks per node (default: the node's GPU count, 1 on CPU; `--nproc-per-node`).",
    "job.timeout": "Collective (process-group) timeout in seconds; `NCCL_TIMEOUT` in `env` is mapped here.",
    "job.deepspeed": '"zero3", "zero3_offload" (templates) or a head-node json path.',
    "job.files": "Extra head-node files pushed next to the job (files, not directories).",
    "job.stop_signal": (
        "Signal the node guard sends, besides the stop file, to the job processes that catch it on `rlaunch stop "
        "--save` or a preemption notice (`RLAUNCH_STOP_SIGNAL`); never SIGTERM/SIGINT, torchrun kills its workers on "
        "those (docs/preemption.md)."
    ),
    "job.checkpoint_dir": "Shared checkpoint directory: enables resume on restart (`RLAUNCH_CKPT_DIR`).",
    "job.dataloader_workers": "Dataloader workers per rank (capped at half the node's cores per rank).",
    "job.pretokenize": "kind llamafactory: tokenize once on node rank 0 before training.",
    "health": "When a job counts as failed or hung (docs/design.md).",
    "health.stall_timeout": "Seconds without any output from a rank before it counts as hung (last resort).",
    "health.startup_timeout": "Silence allowed before the job's first line (default: stall_timeout).",
    "health.heartbeat_timeout": "Seconds without the launcher's heartbeat before a node's guard tears down.",
    "health.first_heartbeat_timeout": "Seconds a node's guard waits for the head's first heartbeat after it starts "
    "(start-up at hundreds of nodes: set 120); unset, heartbeat_timeout.",
    "health.grace": "Seconds between SIGTERM and SIGKILL at teardown.",
    "health.max_strikes": "A node with this many strikes within strike_window is replaced by a spare at `up`, "
    "or `up` refuses.",
    "health.strike_window": "Seconds over which strikes count.",
    "health.hang_floor": "Hang: no progress for at least this many seconds …",
    "health.hang_factor": "… and for this many learned step intervals, with every rank idle.",
    "health.progress_regex": "An extra progress-line pattern; group 1, if any, is the step number.",
    "health.stack_budget": "Seconds for dumping every rank's stack before a hang's teardown.",
    "health.straggler": "What to do about a node slower per step than the others.",
    "health.straggler.action": "`warn`, or `restart-without` (fatal; the restart leaves the node out).",
    "restart": "Restarts after a failure.",
    "restart.max_restarts": "Restarts from the latest complete checkpoint after a failure.",
    "restart.backoff": "Seconds before a restart.",
    "restart.exclude_failed_node": "Restart without the node that failed (when no spare is healthy).",
    "restart.budgets": "Restarts allowed per root-cause kind (docs/restarts.md); each also bounded by max_restarts.",
    "restart.budgets.code": "Restarts after a code error (a Python exception, a bad config): a bug repeats.",
    "restart.budgets.node": "Restarts after a node fault (lost node, GPU/kernel fault, a death by a signal).",
    "restart.budgets.network": "Restarts after a network or collective error (RCCL, c10d, gloo).",
    "restart.budgets.hang": "Restarts after a hang or stall.",
    "restart.budgets.other": "Restarts after a failure of no other kind.",
    "restart.no_progress": "End the run after this many attempts in a row without a newer checkpoint (0: off).",
    "restart.on_exit_codes": "Worker exit codes that ask for a restart, counted against no budget.",
    "restart.never_on": "Worker exit codes that end the run at once.",
    "restart.storm": "Restart-storm guard across runs of this cluster, from the node ledger.",
    "restart.storm.restarts": "This many restarts of the cluster within `window` stop further restarts.",
    "restart.storm.window": "The storm guard's window in seconds.",
    "net": "The fabric the job should use (docs/network.md); `net: auto` is short for `{socket_ifname: auto}`.",
    "net.transport": "`ib`: RDMA expected, a rank that says NET/Socket fails the start; `socket`; `auto`: no expectation.",
    "net.socket_ifname": "`auto`: each node's NCCL_SOCKET_IFNAME is the interface that routes to the master.",
}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(repr(a) for a in args)
    if origin in (types.UnionType, typing.Union):
        return " \\| ".join(_type_name(a) for a in args)
    if origin in (tuple, list):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "mapping"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


def _default(info: Any) -> str:
    if info.default is PydanticUndefined:
        if info.default_factory is not None:
            try:
                value = info.default_factory()
            except TypeError:
                return "(computed)"
            if isinstance(value, BaseModel):
                return "(see below)"
            return f"`{value!r}`" if value not in ({}, [], ()) else "empty"
        return "**required**"
    value = info.default
    if value is None:
        return "unset"
    if value in ((), []):
        return "empty"
    return f"`{value!r}`" if not isinstance(value, str) else f"`{value}`"


def schema_keys(model: type[BaseModel] = Inventory, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, field info) for every key of the inventory, nested ones after their parent."""
    out: list[tuple[str, Any]] = []
    for name, info in model.model_fields.items():
        if not prefix and name in INTERNAL:
            continue
        key = f"{prefix}{name}"
        out.append((key, info))
        sub = _model_of(info.annotation)
        if sub is not None:
            is_list = typing.get_origin(info.annotation) in (tuple, list)
            out += schema_keys(sub, f"{key}[]." if is_list else f"{key}.")
    return out


def inventory_md() -> str:
    rows = []
    for key, info in schema_keys():
        if key.startswith("spares[]."):
            continue  # the same keys as nodes[]
        rows.append(
            f"| `{key}` | {_type_name(info.annotation)} | {_default(info)} | {MEANING.get(key, '')} |"
        )
    return (
        "# Inventory reference (cluster.yaml)\n\n"
        "<!-- generated by scripts/gen_docs.py from cluster/inventory.py; tests/test_cli_everyday.py keeps it current -->\n\n"
        "Every key of `cluster.yaml`, with its type, default and meaning. Unknown keys are errors that name the "
        "file, line and the closest known key. `spares[]` take the same keys as `nodes[]`. Command-line overrides "
        "(`up`/`plan`): `--env K=V` adds to `env`, `--nproc-per-node N` sets `job.nproc_per_node`, `-- ARGS...` "
        "replaces `job.args`; names that look like secrets are refused on the command line.\n\n"
        "| key | type | default | meaning |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def cli_md() -> str:
    from launcher.cli import main

    parts = [
        "# Command reference\n\n"
        "<!-- generated by scripts/gen_docs.py from launcher/cli/; tests/test_cli_everyday.py keeps it current -->\n"
    ]
    ctx = click.Context(main, info_name="rlaunch", max_content_width=110, terminal_width=110)
    parts.append(f"## rlaunch\n\n```text\n{main.get_help(ctx)}\n```\n")
    for name in sorted(main.commands):
        cmd = main.commands[name]
        sub = click.Context(
            cmd, info_name=f"rlaunch {name}", parent=None, max_content_width=110, terminal_width=110
        )
        parts.append(f"## rlaunch {name}\n\n```text\n{cmd.get_help(sub)}\n```\n")
        if isinstance(cmd, click.Group):
            for sname in sorted(cmd.commands):
                scmd = cmd.commands[sname]
                ssub = click.Context(scmd, info_name=f"rlaunch {name} {sname}", max_content_width=110,
                                     terminal_width=110)  # fmt: skip
                parts.append(f"### rlaunch {name} {sname}\n\n```text\n{scmd.get_help(ssub)}\n```\n")
    return "\n".join(parts)


PAGES = {"docs/inventory.md": inventory_md, "docs/cli.md": cli_md}


def main(argv: list[str]) -> int:
    stale = []
    for rel, make in PAGES.items():
        text = make()
        path = ROOT / rel
        if "--check" in argv:
            if not path.is_file() or path.read_text() != text:
                stale.append(rel)
        else:
            path.write_text(text)
    if stale:
        print(f"stale: {', '.join(stale)} (run python scripts/gen_docs.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
