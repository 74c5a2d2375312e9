"""Doctor, step 3: gathering facts, one round trip per node, in parallel through the transport."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any

from cluster.transport import Result, Transport
from launcher.doctor.facts import Facts, parse_facts
from launcher.node.protocol import script_argv

# ---------------------------------------------------------------------------------------------------------
# Gathering (one round trip per node, in parallel through the transport)


FACTS_TAG = '"rlaunch_facts"'


def decode_reply(result: Result) -> dict[str, Any] | str:
    """The node script's JSON (last tagged line of stdout), or why there is none."""
    if result.error:
        return result.error
    for line in reversed(result.stdout.splitlines()):
        if FACTS_TAG in line and line.lstrip().startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                break
            if isinstance(data, dict):
                return data
    return f"no facts in the probe's output ({result.why()})"


# Node modules the probe imports, sent with it (each becomes a module of that name before facts.py runs).
PROBE_MODULES = ("netfacts.py",)


def with_args(script: bytes, args: Mapping[str, Any]) -> bytes:
    """The probe plus its arguments as one program for `python -` on stdin. The arguments hold the inventory's
    `env:` values (tokens, passwords): on the command line any local user on the node could read them in `ps`."""
    modules = "".join(
        f"_m = types.ModuleType({name[:-3]!r}); sys.modules[{name[:-3]!r}] = _m\n"
        f"exec(compile({_node_file(name)!r}, {name!r}, 'exec'), _m.__dict__)\n"
        for name in PROBE_MODULES
    )
    loader = (
        "import sys, types\n" + modules + f"sys.argv[1:] = ['--json-args', {json.dumps(args)!r}]\n"
        f"exec(compile({script!r}, 'facts.py', 'exec'), {{'__name__': '__main__'}})\n"
    )
    return loader.encode()


def _node_file(name: str) -> bytes:
    return resources.files("launcher.node").joinpath(name).read_bytes()


def gather(
    transport: Transport,
    hosts: Iterable[str],
    script: bytes,
    args: Mapping[str, Any] | Callable[[str], Mapping[str, Any]],
    timeout: float,
    *,
    python_for: Mapping[str, str] | None = None,
) -> dict[str, Facts]:
    """Run the fact probe on every host (in parallel) and parse what comes back. Never raises for node trouble.

    One `run_all`: under Slurm that is one job step for every node, not one per node (cluster/slurm.py)."""
    hosts = list(hosts)
    times: dict[str, tuple[float, float]] = {}
    sent_at: dict[str, float] = {}

    def stdin_for(host: str) -> bytes:
        node_args = dict(args(host) if callable(args) else args)
        node_args.setdefault("node", host)
        sent_at[host] = time.time()  # called just before the host's command starts (Transport.run_all)
        return with_args(script, node_args)

    group = transport.run_all(
        hosts,
        lambda host: script_argv((python_for or {}).get(host, "python3"), "-"),
        stdin_for=stdin_for,
        timeout=timeout,
    )
    for host, result in group.results.items():
        sent = sent_at.get(host, 0.0)
        times[host] = (sent, sent + result.seconds if result.seconds else time.time())

    out: dict[str, Facts] = {}
    for host, result in group.results.items():
        decoded = decode_reply(result)
        sent, received = times.get(host, (0.0, 0.0))
        if isinstance(decoded, str):
            out[host] = Facts(host=host, error=decoded, sent_at=sent, received_at=received)
        else:
            out[host] = parse_facts(host, decoded, sent, received)
    return out


def gather_markers(
    transport: Transport,
    hosts: Iterable[str],
    script: bytes,
    ckpt_dir: str,
    token: str,
    timeout: float,
    *,
    python_for: Mapping[str, str] | None = None,
) -> dict[str, list[str] | str]:
    """Second pass of the shared-directory test: which nodes' markers each node can read."""
    args = {"mode": "markers", "ckpt_dir": ckpt_dir, "token": token}
    group = transport.run_all(
        hosts,
        lambda h: script_argv(
            (python_for or {}).get(h, "python3"), "-", "--json-args", json.dumps({**args, "node": h})
        ),
        stdin_for=lambda h: script,
        timeout=timeout,
    )
    out: dict[str, list[str] | str] = {}
    for host, result in group.results.items():
        decoded = decode_reply(result)
        if isinstance(decoded, str):
            out[host] = decoded
        elif decoded.get("error"):
            out[host] = str(decoded["error"])
        else:
            out[host] = [str(s) for s in decoded.get("seen") or []]
    return out
