"""Remove older finished runs' directories under a node's workdir; run as
`python -c <this file> WORKDIR KEEP [--dry-run] [--protect RUN_ID]...`, protocol.py sent with it.

Standard library only (imports nothing outside launcher/node/). Prints one JSON object: removed, kept, running,
freed_bytes, errors.

Why it is safe:
- Only direct children of WORKDIR whose names are run ids (`YYYYMMDD-HHMMSS-xxxx`, launcher/records.py
  `new_run_id`), with or without an attempt suffix (`-rN`), are considered: both layouts, one directory per attempt
  (`<run>-rN/<host>/`) and one per run, group by the run id prefix. Symbolic links are never followed or removed
  (lstat), and every path removed is checked to resolve inside WORKDIR.
- A run is running when any of its host directories' `guard.lock` is held: the live guard holds an flock on it for
  its whole life and the kernel releases it on any death (guard.py `cmd_start`). A lock we cannot test (cannot open)
  counts as running. Such runs, and `--protect`ed ones, are never removed and do not use up KEEP.
- Of the finished runs, the KEEP newest (run ids sort by their start time) stay.
"""

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import sys

if (
    __name__ == "__main__"
):  # on a node: protocol.py is sent with this code (launcher/nodecall.py with_modules)
    import protocol
else:  # imported by the head or tests
    from launcher.node import protocol
RUN_DIR = re.compile(r"^(\d{8}-\d{6}-[0-9a-f]{4})(?:-r\d{1,4})?$")


def lock_held(path):
    """True when another process holds an flock on path (a live guard); False when free or absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: keep the run
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def is_running(run_dir):
    try:
        hosts = os.listdir(run_dir)
    except OSError:
        return True
    for host in hosts:
        host_dir = os.path.join(run_dir, host)
        try:
            if not stat.S_ISDIR(os.lstat(host_dir).st_mode):
                continue
        except OSError:
            continue
        if lock_held(os.path.join(host_dir, "guard.lock")):
            return True
        # Since one run directory serves every attempt, each attempt's guard holds its lock in
        # <host dir>/.rlaunch/attempt-N/ (protocol.ATTEMPTS_DIR).
        attempts = os.path.join(host_dir, protocol.ATTEMPTS_DIR)
        try:
            names = os.listdir(attempts) if stat.S_ISDIR(os.lstat(attempts).st_mode) else []
        except FileNotFoundError:
            names = []
        except OSError:
            return True  # cannot tell: keep the run
        for name in names:
            if name.startswith("attempt-") and lock_held(os.path.join(attempts, name, "guard.lock")):
                return True
    return False


def ignore_gone(_function, _path, exc_info):
    if not isinstance(exc_info[1], FileNotFoundError):
        raise exc_info[1]


def size_of(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def main(argv):
    workdir, keep = argv[0], int(argv[1])
    dry_run = "--dry-run" in argv
    protect = {argv[i + 1] for i, a in enumerate(argv) if a == "--protect" and i + 1 < len(argv)}
    out = {"removed": [], "kept": [], "running": [], "freed_bytes": 0, "errors": []}
    real_workdir = os.path.realpath(workdir)
    try:
        names = sorted(os.listdir(workdir))
    except FileNotFoundError:
        print(json.dumps(out))
        return 0
    groups = {}
    for name in names:
        m = RUN_DIR.match(name)
        if not m:
            continue
        path = os.path.join(workdir, name)
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                continue  # a symlink or file with a run id's name: not ours to follow
        except OSError:
            continue
        groups.setdefault(m.group(1), []).append(name)
    finished = []
    for run_id in sorted(groups):
        if run_id in protect or any(is_running(os.path.join(workdir, n)) for n in groups[run_id]):
            out["running" if run_id not in protect else "kept"].append(run_id)
        else:
            finished.append(run_id)
    doomed = finished[: max(0, len(finished) - keep)]
    out["kept"] += finished[len(doomed) :]
    for run_id in doomed:
        for name in groups[run_id]:
            path = os.path.join(workdir, name)
            if os.path.dirname(os.path.realpath(path)) != real_workdir:
                out["errors"].append(f"{path}: resolves outside {workdir}; left alone")
                continue
            size = size_of(path)
            if not dry_run:
                try:
                    # Nodes of the local transport share one workdir: another node's gc may remove files first.
                    shutil.rmtree(path, onerror=ignore_gone)
                except OSError as exc:
                    out["errors"].append(f"{path}: {exc.strerror or exc}")
                    continue
            out["freed_bytes"] += size
        out["removed"].append(run_id)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
