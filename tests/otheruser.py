"""A second, real local user for the trust-boundary tests (docs/security.md): `rlaunch-other` plays the attacker.

Created once with useradd (idempotent: an existing account is reused); processes act as it through setpriv, which
execs directly, so the PID a test holds is the stranger's process itself. Needs root; tests skip without it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NAME = "rlaunch-other"


def ensure() -> pwd.struct_passwd:
    """The other user's passwd entry, creating the account if needed; skips the test where that is impossible."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create and act as a second local user")
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(NAME)
    if not shutil.which("useradd"):
        pytest.skip("useradd is not installed")
    done = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 9):  # 9: created meanwhile by a concurrent test session
        pytest.skip(f"useradd failed: {done.stderr.strip()}")
    return pwd.getpwnam(NAME)


def as_other(argv: list[str]) -> list[str]:
    """argv run as the other user (no supplementary groups, no capabilities)."""
    user = ensure()
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--", *argv]


def run_as_other(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(as_other(argv), capture_output=True, text=True, timeout=30, check=True)


@contextlib.contextmanager
def shared_sticky_dir() -> Iterator[Path]:
    """A root-owned 1777 directory like /tmp, reachable by the other user (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="rlaunch-sec-", dir="/var/tmp"))
    try:
        path.chmod(0o1777)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
