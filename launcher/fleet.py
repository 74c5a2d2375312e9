"""Ad-hoc work on every node of an inventory: `rlaunch exec` (pdsh / `sky exec`) and `rlaunch gc` (node hygiene).

Both go through the Transport's `run_all` (one round trip per node, in parallel, bounded by ssh.max_parallel) and
return plain data for the CLI to render.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import hostlist

from cluster.inventory import Inventory
from cluster.transport import TIMEOUT, GroupResult, Result, Transport, make_transport
from launcher import nodecall
from launcher.errors import BadInput, ExitCode


def select_nodes(inv: Inventory, nodes: str | None) -> list[str]:
    """The inventory's nodes, or those named by `--nodes` (a comma list or a Slurm-style range: node[1-3],gpu07);
    a name the inventory does not hold is bad input."""
    known = [n.host for n in inv.nodes]
    if not nodes:
        return known
    try:
        wanted = hostlist.expand_hostlist(nodes)
    except hostlist.BadHostlist as exc:
        raise BadInput(f"--nodes: cannot read {nodes!r}: {exc}") from None
    spare_names = {s.host for s in inv.spares}
    unknown = [h for h in wanted if h not in known and h not in spare_names]
    if unknown:
        raise BadInput(f"--nodes: {', '.join(unknown)} not in the inventory (have {', '.join(known)})")
    return list(dict.fromkeys(wanted))


def exec_argv(command: Sequence[str], shell: bool) -> list[str]:
    """The argv each node runs: the words as given (quoted by the transport, never re-split by a shell), or with
    `--shell` one string for `sh -c` (pipes, globs, `$VARS` of the node)."""
    if not command:
        raise BadInput("exec: no command (write it after `--`: rlaunch exec cluster.yaml -- uptime)")
    return ["sh", "-c", " ".join(command)] if shell else list(command)


def exec_all(
    inv: Inventory,
    command: Sequence[str],
    *,
    nodes: str | None = None,
    shell: bool = False,
    timeout: float | None = 60.0,
    transport: Transport | None = None,
) -> GroupResult:
    hosts = select_nodes(inv, nodes)
    argv = exec_argv(command, shell)
    own = transport is None
    transport = transport or make_transport(inv)
    try:
        return transport.run_all(hosts, argv, timeout=timeout)
    finally:
        if own:
            transport.close()


def exec_code(group: GroupResult) -> ExitCode:
    """3 when a node could not be reached (or the command not started), else 1 when any node failed or timed out."""
    failed = group.failed.values()
    if any(r.error and r.failure != TIMEOUT for r in failed):
        return ExitCode.INFRA
    return ExitCode.FAILED if failed else ExitCode.OK


def summary_line(group: GroupResult) -> str:
    n = len(group.results)
    failed = group.failed
    if not failed:
        return f"{n} node{'s' * (n != 1)}: all exited 0"
    why = ", ".join(f"{h}: {_why(r)}" for h, r in failed.items())
    return f"{n} node{'s' * (n != 1)}: {n - len(failed)} ok, {len(failed)} failed ({why})"


def _why(r: Result) -> str:
    return r.error if r.error else f"exit {r.exit_code}"


def collate(group: GroupResult) -> list[tuple[str, str]]:
    """(host list, output) for each distinct output, as `dshbak -c` shows them: identical output once."""
    by_output: dict[str, list[str]] = {}
    for host, r in group.results.items():
        text = r.stdout + r.stderr + (f"rlaunch: {r.error}\n" if r.error else "")
        by_output.setdefault(text, []).append(host)
    return [(hostlist.collect_hostlist(hosts), text) for text, hosts in by_output.items()]


def exec_json(group: GroupResult) -> dict[str, Any]:
    return {
        "nodes": {
            h: {
                "exit_code": r.exit_code,
                "stdout": r.stdout,
                "stderr": r.stderr,
                "error": r.error,
                "seconds": round(r.seconds, 3),
            }
            for h, r in group.results.items()
        },
        "ok": sorted(group.succeeded),
        "failed": sorted(group.failed),
        "summary": summary_line(group),
    }


# ---------------------------------------------------------------------------------------------------------
# gc: older finished runs' directories on the nodes


@dataclass
class NodeGc:
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    freed_bytes: int = 0
    errors: list[str] = field(default_factory=list)


def gc_all(
    inv: Inventory,
    *,
    keep: int,
    protect: Sequence[str] = (),
    dry_run: bool = False,
    nodes: str | None = None,
    transport: Transport | None = None,
) -> dict[str, NodeGc]:
    """Run launcher/node/gc.py on every node: finished runs beyond the `keep` newest go; running ones never."""
    hosts = select_nodes(inv, nodes)
    python = {n.host: inv.python_for(n) for n in (*inv.nodes, *inv.spares)}
    extra = [*(["--dry-run"] if dry_run else []), *(a for rid in protect for a in ("--protect", rid))]
    script = nodecall.with_modules(nodecall.node_script("gc.py"), "gc.py", ("protocol.py",))
    own = transport is None
    transport = transport or make_transport(inv)
    try:
        replies = nodecall.call_all(
            transport, hosts, python, script, [inv.workdir, str(keep), *extra], timeout=120
        )
    finally:
        if own:
            transport.close()
    out: dict[str, NodeGc] = {}
    for host, reply in replies.items():
        r = reply.result
        if not r.ok:
            out[host] = NodeGc(errors=[r.why()])
            continue
        try:
            data = reply.data
            if data is None:
                raise ValueError("no reply")
            out[host] = NodeGc(
                **{k: data[k] for k in ("removed", "kept", "running", "freed_bytes", "errors")}
            )
        except (ValueError, KeyError, TypeError):
            out[host] = NodeGc(errors=[f"unreadable reply: {r.stdout[-200:]!r}"])
    return out
