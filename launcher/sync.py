"""`sync:` — the local project directory pushed to every node, only what changed (SkyPilot's `workdir`).

The inventory's `workdir:` already names the node-side root, so the key is `sync: {src: ., exclude: [...]}`. Each
node gets the tree in one stable directory, `<workdir>/sync/<cluster>/`, which the job finds as `RLAUNCH_SYNC_DIR`
and which outlives runs (gc leaves it: it is not named like a run id), so the next `up` sends only what changed:

1. the head walks `src` (regular files only; `.git/`, the tree's top `.gitignore` patterns and `exclude` left out,
   matched as git does through `pathspec`, the library pip and black use for gitignore semantics) into a manifest
   of (path, size, mode, sha256);
2. one round trip per node (launcher/node/sync.py `plan`): the node deletes what is not in the manifest and
   answers the paths it lacks or holds with other content, from stat calls when its index says a file is unchanged;
3. only when a node needs files, a second round trip streams exactly those (`recv`), checked by sha256.

An unchanged tree therefore costs one round trip per node and sends the manifest only.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cluster.inventory import Inventory
from cluster.transport import Transport, zip_hosts
from launcher import nodecall
from launcher.errors import BadInput

ALWAYS_EXCLUDED = (".git/",)
MAX_FILES = 200_000


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    mode: int
    sha256: str


@dataclass
class NodeSync:
    sent_files: int = 0
    sent_bytes: int = 0
    deleted: int = 0
    round_trips: int = 0
    error: str | None = None


@dataclass
class SyncResult:
    dest: str
    files: int
    total_bytes: int
    nodes: dict[str, NodeSync] = field(default_factory=dict)


def dest_of(inv: Inventory) -> str:
    return inv.sync_dir


def manifest(src: Path, exclude: Sequence[str] = (), gitignore: bool = True) -> list[Entry]:
    """The tree under src as it will be on the nodes, sorted; symbolic links and special files are left out."""
    import pathspec

    if not src.is_dir():
        raise BadInput(f"sync.src: {src} is not a directory")
    lines = [*ALWAYS_EXCLUDED, *exclude]
    ignore_file = src / ".gitignore"
    if gitignore and ignore_file.is_file():
        lines += ignore_file.read_text(errors="replace").splitlines()
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    out: list[Entry] = []
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        rel_root = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
        dirs[:] = sorted(d for d in dirs if not spec.match_file(f"{rel_root}{d}/"))
        for name in sorted(files):
            rel = f"{rel_root}{name}"
            if spec.match_file(rel):
                continue
            full = os.path.join(root, name)
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode):
                continue
            out.append(Entry(rel, st.st_size, 0o755 if st.st_mode & 0o100 else 0o644, _sha256(full)))
            if len(out) > MAX_FILES:
                raise BadInput(f"sync.src: more than {MAX_FILES} files under {src}; add `exclude:` patterns")
    return out


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def push_all(
    inv: Inventory, transport: Transport, hosts: Sequence[str] | None = None, *, timeout: float = 600.0
) -> SyncResult:
    """Push inv.sync's tree to every node (in parallel); per node what was sent."""
    assert inv.sync is not None
    src = inv.resolve(inv.sync.src)
    entries = manifest(src, inv.sync.exclude, inv.sync.gitignore)
    by_path = {e.path: e for e in entries}
    dest = dest_of(inv)
    script = nodecall.with_modules(nodecall.node_script("sync.py"), "sync.py", ("push.py",))
    body = json.dumps({"files": [[e.path, e.size, e.mode, e.sha256] for e in entries]}).encode()
    python = {n.host: inv.python_for(n) for n in (*inv.nodes, *inv.spares)}
    hosts = list(hosts) if hosts is not None else [n.host for n in inv.nodes]

    def one(host: str) -> NodeSync:
        done = NodeSync(round_trips=1)
        reply = nodecall.call(
            transport, host, python[host], script, "plan", dest, stdin=body, timeout=timeout
        )
        if not reply.ok or "need" not in reply.data:
            done.error = reply.get("error") or reply.why()
            return done
        done.deleted = int(reply.get("deleted", 0))
        need = [by_path[p] for p in reply.data["need"] if p in by_path]
        if not need:
            return done
        stream = b"".join(
            json.dumps({"p": e.path, "n": e.size, "m": e.mode, "h": e.sha256}).encode()
            + b"\n"
            + (src / e.path).read_bytes()
            for e in need
        )
        done.round_trips += 1
        reply = nodecall.call(
            transport, host, python[host], script, "recv", dest, stdin=stream, timeout=timeout
        )
        if not reply.ok or "received" not in reply.data:
            done.error = reply.get("error") or reply.why()
            return done
        done.sent_files, done.sent_bytes = int(reply.data["received"]), int(reply.data["bytes"])
        return done

    result = SyncResult(dest, len(entries), sum(e.size for e in entries))
    result.nodes = dict(zip_hosts(hosts, one, transport.max_parallel))
    return result
