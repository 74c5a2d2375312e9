"""The node side of `sync:` (launcher/sync.py); run as `python -c <this file> plan|recv DEST`.

Standard library only. `plan` reads the head's manifest (JSON on stdin: {"files": [[path, size, mode, sha256]]}),
deletes what DEST holds beyond it, and answers which paths it lacks or holds with other content: {"need": [...],
"deleted": n}. A file whose size and mtime match this node's index (DEST/.rlaunch-sync.json, written by the last
sync) keeps its recorded sha256, so an unchanged tree is answered from stat calls alone, in this one round trip.
`recv` reads the needed files as a stream (per file one JSON header line {"p", "n", "m", "h"} then n bytes),
writes each atomically (temporary file + rename), checks its sha256 and updates the index.

Paths are checked, never trusted: relative, no "..", no empty or "." parts, and no symbolic link on the way in
DEST (lstat of every parent), so nothing is written or deleted outside DEST. DEST itself follows the run files'
path rule and is created 0700, both push.py's (docs/security.md), sent with this script (launcher/sync.py).
"""

import contextlib
import hashlib
import json
import os
import stat
import sys

if (
    __name__ == "__main__"
):  # on a node: push.py is sent with this script (launcher/sync.py, nodecall.with_modules)
    import push
else:  # imported by the head or tests
    from launcher.node import push

INDEX = ".rlaunch-sync.json"


def fail(message):
    print(json.dumps({"error": message}))
    sys.exit(2)


def safe(dest, rel):
    """DEST/rel when rel is a plain relative path whose parents inside DEST are real directories, else None."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\0" in rel:
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts) or rel == INDEX:
        return None
    path = dest
    for part in parts[:-1]:
        path = os.path.join(path, part)
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
        except FileNotFoundError:
            pass
    return os.path.join(dest, *parts)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_index(dest):
    try:
        with open(os.path.join(dest, INDEX)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def write_index(dest, index):
    tmp = os.path.join(dest, INDEX + ".tmp")
    with open(tmp, "w") as f:
        json.dump(index, f)
    os.replace(tmp, os.path.join(dest, INDEX))


def makedirs(dest):
    why = push.unsafe_path(dest)
    if why:
        fail(why)
    with contextlib.suppress(FileExistsError):  # a file there: refused just below
        push.makedirs_private(dest)
    if os.path.islink(dest) or not os.path.isdir(dest):
        fail(f"{dest} is not a directory")


def plan(dest):
    makedirs(dest)
    try:
        manifest = json.load(sys.stdin)["files"]
    except (ValueError, KeyError, TypeError):
        fail("unreadable manifest")
    wanted = {}
    for entry in manifest:
        path, size, mode, digest = entry
        if safe(dest, path) is None:
            fail(f"refused path {path!r}")
        wanted[path] = (int(size), int(mode), str(digest))
    index = read_index(dest)
    new_index = {}
    need = []
    for rel, (size, mode, digest) in wanted.items():
        path = safe(dest, rel)
        try:
            st = os.lstat(path)
        except OSError:
            need.append(rel)
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            need.append(rel)
            continue
        known = index.get(rel)
        if isinstance(known, list) and known[:2] == [st.st_size, st.st_mtime_ns]:
            have = known[2]
        else:
            have = sha256_of(path)
        if have != digest:
            need.append(rel)
            continue
        if stat.S_IMODE(st.st_mode) != mode:
            os.chmod(path, mode)
        new_index[rel] = [st.st_size, st.st_mtime_ns, have]
    deleted = 0
    for root, dirs, files in os.walk(dest, topdown=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, dest).replace(os.sep, "/")
            if rel in wanted or rel in (INDEX, INDEX + ".tmp"):
                continue
            os.unlink(full)
            deleted += 1
        for name in dirs:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                with contextlib.suppress(OSError):
                    os.rmdir(full)  # only empty ones
    write_index(dest, new_index)
    print(json.dumps({"need": need, "deleted": deleted}))


def recv(dest):
    makedirs(dest)
    index = read_index(dest)
    stream = sys.stdin.buffer
    received = total = 0
    while True:
        header = stream.readline()
        if not header:
            break
        try:
            meta = json.loads(header)
            rel, size, mode, digest = meta["p"], int(meta["n"]), int(meta["m"]), meta["h"]
        except (ValueError, KeyError, TypeError):
            fail("unreadable file header")
        path = safe(dest, rel)
        if path is None:
            fail(f"refused path {rel!r}")
        push.makedirs_private(os.path.dirname(path))
        if safe(dest, rel) is None:
            fail(f"refused path {rel!r}")
        tmp = f"{path}.rlaunch-tmp"
        h = hashlib.sha256()
        with open(tmp, "wb") as f:
            left = size
            while left:
                block = stream.read(min(left, 1 << 20))
                if not block:
                    fail(f"{rel}: input ended early")
                h.update(block)
                f.write(block)
                left -= len(block)
        if h.hexdigest() != digest:
            os.unlink(tmp)
            fail(f"{rel}: sha256 mismatch")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        st = os.lstat(path)
        index[rel] = [st.st_size, st.st_mtime_ns, digest]
        received += 1
        total += size
    write_index(dest, index)
    print(json.dumps({"received": received, "bytes": total}))


if __name__ == "__main__":
    os.umask(0o077)
    if len(sys.argv) != 3 or sys.argv[1] not in ("plan", "recv"):
        fail("usage: sync.py plan|recv DEST")
    (plan if sys.argv[1] == "plan" else recv)(sys.argv[2])
