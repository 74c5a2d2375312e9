"""One `up` at a time per node on this head: an flock per host name under RLAUNCH_HOME/locks.

`check_lock` reads the run records, and `up` then writes its own: without a lock two concurrent `up`s both
found nothing and both started on the same nodes. The flock is held from the check until the new record says
"starting", and the kernel drops it if the launcher dies, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterable, Iterator

from launcher import records

WAIT_S = 30.0  # how long a second `up` waits for the first to write its record


class HostBusy(Exception):
    """Another `up` on this head holds a host's lock for longer than WAIT_S."""


@contextlib.contextmanager
def hold(hosts: Iterable[str], wait_s: float | None = None) -> Iterator[None]:
    wait_s = WAIT_S if wait_s is None else wait_s
    directory = records.home() / "locks"
    records._private_dir(directory)  # 0700 for the home too, when this creates it (records.trusted checks it)
    fds: list[int] = []
    try:
        for host in sorted({h.lower() for h in hosts}):  # one order everywhere: two `up`s never deadlock
            name = re.sub(r"[^a-z0-9_.:-]", "_", host)
            path = directory / f"{name}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            fds.append(fd)
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise HostBusy(f"another rlaunch on this head is starting a run on {host}") from None
                    time.sleep(0.1)
        yield
    finally:
        for fd in fds:
            os.close(fd)
