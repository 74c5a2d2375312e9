"""Doctor, step 3: gathering facts, one round trip per node, in parallel through the transport."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cluster.transport import Result, Transport
from launcher import nodecall
from launcher.doctor.facts import Facts, parse_facts

# ---------------------------------------------------------------------------------------------------------
# Gathering (one round trip per node, in parallel through the transport)


FACTS_TAG = '"rlaunch_facts"'


def decode_reply(result: Result) -> dict[str, Any] | str:
    """The node script's JSON (last tagged line of stdout), or why there is none."""
    if result.error:
        return result.error
    data = nodecall.reply_of(result.stdout, FACTS_TAG)
    return data if data is not None else f"no facts in the probe's output ({result.why()})"


# Node modules the probe imports, sent with it (each becomes a module of that name before facts.py runs).
PROBE_MODULES = ("netfacts.py", "protocol.py", "push.py")


def with_args(script: bytes, args: Mapping[str, Any]) -> bytes:
    """The probe plus its arguments as one program for `python -` on stdin. The arguments hold the inventory's
    `env:` values (tokens, passwords): on the command line any local user on the node could read them in `ps`."""
    loader = (
        nodecall.module_preamble(PROBE_MODULES) + f"sys.argv[1:] = ['--json-args', {json.dumps(args)!r}]\n"
        f"exec(compile({script!r}, 'facts.py', 'exec'), {{'__name__': '__main__'}})\n"
    )
    return loader.encode()


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

    replies = nodecall.call_all(
        transport,
        hosts,
        lambda host: (python_for or {}).get(host, "python3"),
        None,
        stdin_for=stdin_for,
        timeout=timeout,
    )
    group_results = {host: reply.result for host, reply in replies.items()}
    for host, result in group_results.items():
        sent = sent_at.get(host, 0.0)
        times[host] = (sent, sent + result.seconds if result.seconds else time.time())

    out: dict[str, Facts] = {}
    for host, result in group_results.items():
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
    python_of = python_for or {}
    replies = nodecall.call_all(
        transport,
        hosts,
        lambda h: python_of.get(h, "python3"),
        None,
        lambda h: ["--json-args", json.dumps({**args, "node": h})],
        stdin_for=lambda h: script,
        timeout=timeout,
    )
    out: dict[str, list[str] | str] = {}
    for host, reply in replies.items():
        decoded = decode_reply(reply.result)
        if isinstance(decoded, str):
            out[host] = decoded
        elif decoded.get("error"):
            out[host] = str(decoded["error"])
        else:
            out[host] = [str(s) for s in decoded.get("seen") or []]
    return out
