"""Every call of a node script from the head, built and read in one place.

A node script (launcher/node/*.py other than the guard, or a short inline program) runs with the node's Python as
`python -I -c CODE ARGS...` (or `python -I -` with the program on stdin), gets its payload as JSON on stdin when
it needs one, and prints its reply as one JSON object on the last line of stdout (launcher/node/protocol.py
`reply_of`). Before this module each caller wrote that call itself, and three of them had their own "the last
line is JSON" parser. Guard verbs go through launcher/guardctl.py instead (they speak the guard's protocol).

Why `-I`: docs/security.md, issue 21 (protocol.ISOLATED). Code that must import the job's own packages (torch)
with the job's PYTHONPATH starts with protocol.SAFE_PATH and runs without it (`isolated=False`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from cluster.transport import Result, Transport
from launcher.node import protocol

STDIN_PROGRAM = "-"  # `python -I -`: the program itself comes on stdin (doctor's probe, with its arguments)


def node_script(name: str) -> str:
    """The text of launcher/node/NAME, as it is sent to a node (`-c`)."""
    return resources.files("launcher.node").joinpath(name).read_text()


def module_preamble(modules: Sequence[str]) -> str:
    """Code that makes each launcher/node module in `modules` importable on the node by its bare name (`import
    protocol`) before a script runs: a node script sent as `-c CODE` (or on stdin) has no directory to import from."""
    return "import sys, types\n" + "".join(
        f"_m = types.ModuleType({name[:-3]!r}); sys.modules[{name[:-3]!r}] = _m\n"
        f"exec(compile({node_script(name)!r}, {name!r}, 'exec'), _m.__dict__)\n"
        for name in modules
    )


def with_modules(code: str, name: str, modules: Sequence[str]) -> str:
    """`code` (the node script `name`) preceded by its `modules` (module_preamble), run as __main__."""
    if not modules:
        return code
    return (
        module_preamble(modules) + f"exec(compile({code!r}, {name!r}, 'exec'), {{'__name__': '__main__'}})\n"
    )


@dataclass(frozen=True)
class NodeReply:
    """One node's answer to a node script: its JSON reply (`data`), or None with the transport's `result` saying
    why (unreachable, timed out, crashed, or printed no JSON)."""

    host: str
    data: dict[str, Any] | None
    result: Result

    @property
    def ok(self) -> bool:
        """The script ran to its end and replied (its reply may still report a failure of its own)."""
        return self.result.ok and self.data is not None

    @property
    def reached(self) -> bool:
        """The transport reached the node and ran the command (its exit code may be anything)."""
        return self.result.error is None

    def get(self, key: str, default: Any = None) -> Any:
        return (self.data or {}).get(key, default)

    def why(self) -> str:
        """Why there is no usable reply, in the transport's words."""
        return self.result.why()


def argv(python: str, code: str | None, *args: str, isolated: bool = True) -> list[str]:
    """The argv that runs `code` (None: the program on stdin) with the node's `python`."""
    if not isolated and (code is None or not code.startswith(protocol.SAFE_PATH)):
        raise ValueError("code run without -I must start with protocol.SAFE_PATH")
    rest = [STDIN_PROGRAM] if code is None else ["-c", code]
    return protocol.script_argv(python, *rest, *args) if isolated else [python, *rest, *args]


def reply_of(stdout: str, tag: str | None = None) -> dict[str, Any] | None:
    """The script's reply: the JSON object on the last line, or the last line holding `tag` (protocol.reply_of)."""
    return protocol.reply_of(stdout, tag)


def read(result: Result, tag: str | None = None) -> NodeReply:
    """A transport Result as a NodeReply: a command the transport could not run has no reply."""
    data = reply_of(result.stdout, tag) if result.error is None else None
    return NodeReply(result.host, data, result)


def call(
    transport: Transport,
    host: str,
    python: str,
    code: str | None,
    *args: str,
    stdin: bytes | None = None,
    timeout: float | None = 60.0,
    tag: str | None = None,
    isolated: bool = True,
) -> NodeReply:
    """Run one node script on one node; never raises for node trouble (it lands in the reply)."""
    result = transport.run(host, argv(python, code, *args, isolated=isolated), stdin=stdin, timeout=timeout)
    return read(result, tag)


def call_all(
    transport: Transport,
    hosts: Iterable[str],
    python: Mapping[str, str] | Callable[[str], str],
    code: str | None,
    args: Sequence[str] | Callable[[str], Sequence[str]] = (),
    *,
    stdin_for: Callable[[str], bytes | None] | None = None,
    timeout: float | None = 60.0,
    tag: str | None = None,
) -> dict[str, NodeReply]:
    """Run one node script on every host in parallel (the transport's run_all): host → reply."""
    python_of = python if callable(python) else python.__getitem__

    def argv_for(host: str) -> list[str]:
        return argv(python_of(host), code, *(args(host) if callable(args) else args))

    group = transport.run_all(list(hosts), argv_for, stdin_for=stdin_for, timeout=timeout)
    return {host: read(result, tag) for host, result in group.results.items()}
