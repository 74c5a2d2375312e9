"""One error model for every verb: an expected failure is an `RlaunchError` that carries its exit code.

The exit codes are defined here and nowhere else (docs/design.md's table is tested against `ExitCode`):

    0 ok · 1 the job or a check failed · 2 bad input · 3 infrastructure (unreachable node, SSH, lost link,
    preflight) · 130 interrupted

Layers below `launcher/` keep their own exception types (`cluster/` imports nothing from here): the CLI's
`guarded` maps `InventoryError` to bad input and `TransportError` to infrastructure, in one place.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    INFRA = 3
    INTERRUPTED = 130


class RlaunchError(Exception):
    """An expected failure: one message (one line per node where nodes differ) and the exit code to leave with.

    A verb that has already shown its verdict (a summary table, `FAILED in 9.1 s: …`) raises its error with no
    message: the CLI's `guarded` then leaves with the code and prints nothing more."""

    code: ExitCode = ExitCode.INFRA

    def __init__(self, message: str, code: int | None = None, failed: dict[str, str] | None = None):
        super().__init__(message)
        if code is not None:
            self.code = ExitCode(code)
        self.failed = failed or {}


class BadInput(RlaunchError):
    """The user's input cannot work: name the file, field or node, and what to do (exit 2)."""

    code = ExitCode.BAD_INPUT


class Infra(RlaunchError):
    """A node, link or preflight check failed; nothing of the job is left running (exit 3)."""

    code = ExitCode.INFRA


class JobFailed(RlaunchError):
    """The job (or a validation check) ran and failed (exit 1)."""

    code = ExitCode.FAILED


class Interrupted(RlaunchError):
    """Ctrl-C or SIGTERM; the job was stopped on every node (exit 130)."""

    code = ExitCode.INTERRUPTED


def error_for(code: int, message: str = "") -> RlaunchError | None:
    """The typed error a verdict's exit code stands for (None for ok): an `Outcome.code` or a report's
    `exit_code` becomes a JobFailed, BadInput, Infra or Interrupted, never a bare `sys.exit(code)`."""
    if code == ExitCode.OK:
        return None
    kind = next((k for k in (JobFailed, BadInput, Infra, Interrupted) if k.code == code), None)
    if kind is None:
        raise ValueError(f"exit code {code} is not defined in launcher/errors.py")
    return kind(message)


def raise_for(code: int, message: str = "") -> None:
    """Raise the typed error for `code` unless it is ok (see `error_for`)."""
    error = error_for(code, message)
    if error is not None:
        raise error


class LaunchError(RlaunchError):
    """Nothing was started (or everything started was stopped again), one line per node: infrastructure (exit 3);
    input that cannot work is its subclass LaunchRefused (exit 2). The code comes with the type, never an argument.

    `failures`: host → the transport's failure kind (cluster/transport.py FAILURE_KINDS) for the nodes that
    could not be reached at all, as opposed to nodes that answered and failed a check."""

    code = ExitCode.INFRA

    def __init__(
        self,
        message: str,
        failed: dict[str, str] | None = None,
        failures: dict[str, str] | None = None,
    ):
        super().__init__(message, None, failed)
        self.failures = failures or {}


class LaunchRefused(BadInput, LaunchError):
    """`up` refuses before it starts anything: the input cannot work, or another run holds the nodes (exit 2).

    Both a BadInput (callers that tell bad input from a failed start catch it by that type) and a LaunchError
    (whatever catches `up`'s failures as a whole still does)."""
