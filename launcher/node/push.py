"""Preflight and push in one round trip, run on a node as `python -c <this file> RUN_DIR [ATTEMPT_DIR]` with a JSON
payload on stdin. RUN_DIR is the job's working directory (the same for every attempt of a run); files marked
"attempt" go to ATTEMPT_DIR (the attempt's guard files, a folder inside RUN_DIR).

Standard library only (the node has just the user's Python). Checks the interpreter, that the run directory can be
created and written, free disk, and (on the master) that the rendezvous port is free; then writes every file
atomically (temp name + fsync + rename, with its mode) and verifies its sha256 by reading it back.
Prints one JSON object: {"ok": true, ...facts} or {"ok": false, "error": "..."}; exit 0 either way unless crashed.
"""

import base64
import hashlib
import json
import os
import pwd
import socket
import stat
import sys
import tempfile
import zlib

# Why a path is refused: another user who can write any directory on it could swap guard.py between the push and
# the start, and it would run as us (root under the Slurm prolog).
RULE = "every directory on it must be owned by you or root and not group/world-writable unless root-owned and sticky"


def fail(message, **extra):
    print(json.dumps(dict(ok=False, error=message, **extra)))
    sys.exit(0)


def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def owner(uid):
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def component_problem(st, me):
    """Why this lstat result makes a path component untrusted, or None."""
    if st.st_uid not in (me, 0):
        return "owned by " + owner(st.st_uid)
    if stat.S_ISLNK(st.st_mode):
        return None  # a link's own mode means nothing; its target is checked through realpath
    if st.st_mode & 0o022 and not (st.st_uid == 0 and st.st_mode & stat.S_ISVTX):
        return "writable by others"
    return None


def unsafe_path(path):
    """One line naming the first untrusted component of `path` (as written and as resolved), or None."""
    me = os.geteuid()
    for full in (os.path.abspath(path), os.path.realpath(path)):
        current = "/"
        for part in [""] + [p for p in full.split("/") if p]:
            current = os.path.join(current, part) if part else "/"
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                break  # created by us below, 0700
            except OSError as exc:
                return f"cannot inspect {current}: {exc.strerror}"
            why = component_problem(st, me)
            if why:
                return f"refusing {path}: {current} is {why}, mode {stat.S_IMODE(st.st_mode):04o} ({RULE})"
    return None


def makedirs_private(path):
    """os.makedirs with 0700 on every directory it creates (makedirs applies `mode` to the last one only)."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if parent != path and not os.path.isdir(parent):
        makedirs_private(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def write_file(run_dir, spec):
    # The head sends a file that zlib shrinks as "zdata" (launcher/run/attempt.py _push_entry); the sha256
    # check below holds either way.
    data = (
        zlib.decompress(base64.b64decode(spec["zdata"]))
        if "zdata" in spec
        else base64.b64decode(spec["data"])
    )
    path = os.path.join(run_dir, spec["path"])
    makedirs_private(os.path.dirname(path))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".push.")
    try:
        os.fchmod(fd, spec["mode"])  # before any byte lands: secrets are never world-readable
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != spec["sha256"]:
        fail("sha256 mismatch after writing {}".format(spec["path"]))


def main():
    run_dir = sys.argv[1]
    attempt_dir = sys.argv[2] if len(sys.argv) > 2 else run_dir
    payload = json.loads(sys.stdin.buffer.read() or b"{}")
    # Checked before creating (so nothing is made through a stranger's link) and after (a directory someone
    # created in a sticky /tmp between the two checks is caught: only its owner could change it later).
    for where in dict.fromkeys((run_dir, attempt_dir)):
        problem = unsafe_path(where)
        if problem:
            fail(problem)
        try:
            makedirs_private(where)
        except OSError as exc:
            fail(f"cannot create run directory {where}: {exc.strerror}")
        problem = unsafe_path(where)
        if problem:
            fail(problem)
        if not os.access(where, os.W_OK):
            fail(f"run directory {where} is not writable")
    st = os.statvfs(run_dir)
    free_mb = st.f_bavail * st.f_frsize // (1 << 20)
    if free_mb < payload.get("min_free_mb", 0):
        fail(f"only {free_mb} MB free under {run_dir}", free_mb=free_mb)
    port = payload.get("check_port")
    if port and not port_free(port):
        fail(f"master port {port} is already in use (another job? set master.port or use `auto`)")
    try:
        for spec in payload.get("files", []):
            write_file(attempt_dir if spec.get("attempt") else run_dir, spec)
    except OSError as exc:
        fail("cannot write {}: {}".format(getattr(exc, "filename", run_dir), exc.strerror))
    print(
        json.dumps(
            {
                "ok": True,
                "python": sys.version.split()[0],
                "free_mb": free_mb,
                "hostname": socket.gethostname(),
            }
        )
    )


if __name__ == "__main__":  # `python -I -c <this file>`; doctor's probe imports its path rule
    main()
