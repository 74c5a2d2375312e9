"""Preflight and push in one round trip, run on a node as `python -c <this file> RUN_DIR` with a JSON payload on stdin.

Standard library only (the node has just the user's Python). Checks the interpreter, that the run directory can be
created and written, free disk, and (on the master) that the rendezvous port is free; then writes every file
atomically (temp name + fsync + rename, with its mode) and verifies its sha256 by reading it back.
Prints one JSON object: {"ok": true, ...facts} or {"ok": false, "error": "..."}; exit 0 either way unless crashed.
"""

import base64
import hashlib
import json
import os
import socket
import sys
import tempfile


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


def write_file(run_dir, spec):
    data = base64.b64decode(spec["data"])
    path = os.path.join(run_dir, spec["path"])
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
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
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != spec["sha256"]:
        fail("sha256 mismatch after writing {}".format(spec["path"]))


def main():
    run_dir = sys.argv[1]
    payload = json.loads(sys.stdin.buffer.read() or b"{}")
    try:
        os.makedirs(run_dir, mode=0o700, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create run directory {run_dir}: {exc.strerror}")
    if not os.access(run_dir, os.W_OK):
        fail(f"run directory {run_dir} is not writable")
    st = os.statvfs(run_dir)
    free_mb = st.f_bavail * st.f_frsize // (1 << 20)
    if free_mb < payload.get("min_free_mb", 0):
        fail(f"only {free_mb} MB free under {run_dir}", free_mb=free_mb)
    port = payload.get("check_port")
    if port and not port_free(port):
        fail(f"master port {port} is already in use (another job? set master.port or use `auto`)")
    try:
        for spec in payload.get("files", []):
            write_file(run_dir, spec)
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


main()
