"""Run records on the head node: `.rlaunch/runs/<id>/` holds plan.json, state.json, events.jsonl, logs/<host>.log.

State files are written atomically (temp + rename) so a crash of the launcher never leaves a torn file;
events and logs are append-only JSON lines / text, flushed per write.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import re
import secrets
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from cluster.inventory import Inventory
from launcher.errors import Infra
from launcher.states import RunState

# What `new_run_id` makes, and what a user may type for one (a prefix included): a run id names a directory
# under RLAUNCH_HOME/runs, so "../x" or "/x" would open a record (and run its plan's commands) from elsewhere.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class BadRunId(FileNotFoundError):
    """Not a run id: a FileNotFoundError so every verb reports it like an unknown run (exit 2)."""


def check_run_id(run_id: str) -> str:
    if not RUN_ID.match(run_id) or ".." in run_id:
        raise BadRunId(
            f"'{run_id}' is not a run id (letters, digits, '-', '_' and '.'; see `rlaunch status --all`)"
        )
    return run_id


def _private_dir(path: Path) -> None:
    """mkdir -p with 0700 on every directory created: records hold environments and logs."""
    if not path.is_dir():
        _private_dir(path.parent)
        path.mkdir(mode=0o700, exist_ok=True)


def open_private(path: Path) -> TextIO:
    """Append-open a record file, created 0600."""
    return open(
        os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600), "a", encoding="utf-8"
    )


class UnsafeRecord(Infra):
    """A record directory someone else controls (exit 3): its targets.json names the python `status` and `down`
    run, and its state.json the supervisor `down` signals."""


RECORD_RULE = (
    "a record directory must be a real directory owned by you or root and not group/world-writable; "
    "remove it or set RLAUNCH_HOME to a directory you own (docs/security.md)"
)


def trusted(path: Path) -> Path:
    """`path` itself, once its lstat shows a directory we may trust (or nothing yet: we create it 0700).

    Like git's `safe.directory` (git-config(1)): a record home, its runs/ or a run directory that another user
    owns, can write, or has swapped for a symlink is refused with one line, before anything in it is read. Before
    issue 21 a planted `.rlaunch` in a shared directory had `status` run its targets' python and `down` signal its
    supervisor_pid."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise UnsafeRecord(f"cannot inspect the run record {path}: {exc.strerror}") from None
    why = None
    if stat.S_ISLNK(st.st_mode):
        why = "is a symlink"
    elif not stat.S_ISDIR(st.st_mode):
        why = "is not a directory"
    elif st.st_uid not in (os.geteuid(), 0):
        try:
            name = f"{pwd.getpwuid(st.st_uid).pw_name} (uid {st.st_uid})"
        except KeyError:
            name = f"uid {st.st_uid}"
        why = f"is owned by {name}"
    elif st.st_mode & 0o022:
        why = "is writable by others"
    if why:
        raise UnsafeRecord(
            f"refusing the run record {path}: dubious ownership: it {why}, mode {stat.S_IMODE(st.st_mode):04o} "
            f"({RECORD_RULE})"
        )
    return path


def home() -> Path:
    """Where run records live: $RLAUNCH_HOME, else ./.rlaunch (next to the user's project, like .git); refused
    (UnsafeRecord, exit 3) when another user controls it."""
    return trusted(Path(os.environ.get("RLAUNCH_HOME") or ".rlaunch"))


def runs_dir(base: Path | None = None) -> Path:
    """`<home>/runs`, checked like the home."""
    return trusted(trusted(base or home()) / "runs")


def write_crash_report(text: str) -> Path:
    """Save a traceback where only we can read it: a fresh 0600 file (mkstemp: O_EXCL, no symlink followed)
    under RLAUNCH_HOME/crash, or $TMPDIR when that is not writable. A predictable name in a shared /tmp let
    another user plant a symlink there and have us overwrite its target."""
    in_home = Path(os.environ.get("RLAUNCH_HOME") or ".rlaunch") / "crash"
    for parent in (in_home, Path(tempfile.gettempdir())):
        try:
            if parent == in_home:  # a home another user controls is no place for our traceback either
                trusted(trusted(parent.parent) / "crash")
            _private_dir(parent)
            fd, name = tempfile.mkstemp(prefix="rlaunch-crash-", suffix=".txt", dir=parent)
        except (OSError, UnsafeRecord):
            continue
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return Path(name)
    raise OSError("no writable directory for a crash report")


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{secrets.token_hex(2)}"


def write_atomic(path: Path, data: bytes | str, mode: int = 0o600, *, durable: bool = True) -> None:
    """temp + rename (never a torn file); `durable=False` skips the fsync, for a file rewritten every second that
    nobody needs after a crash (the supervisor's live view)."""
    _private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


PROGRESS_FILE = "progress.jsonl"

# ---------------------------------------------------------------------------------------------------------
# The supervisor's live view (issue 23): what `status` and `down` read instead of asking every node.
#
# A detached run's supervisor holds one connection per node and follows every guard, so it already knows what
# `status` would ask each node over a fresh SSH handshake (at 250 simulated nodes, 292 s and 120 ms of head CPU
# per node, nearly all handshakes). It shares what it knows through two files in the run record:
#
#   live.json      rewritten about once a second (LIVE_EVERY_S):
#                  {"v": 1, "written_at", "writer_pid", "writer_starttime", "attempt", "plan_run_id",
#                   "nodes": {host: {"state", "alive", "guard_pid", "descendants", "ranks_alive", "last_heard",
#                                    "reason", "error"?, "exit_code"?}}}
#   teardown.json  written as the supervisor exits, with each node's reply to its last teardown:
#                  {"v": 1, "written_at", "writer_pid", "writer_starttime", "attempt", "stopped_at",
#                   "nodes": {host: {"run_dir", "ok", "exit_code", "remaining", "error", "final"}}}
#
# Files, not a unix socket served by the supervisor: the record directory is already private (0700, checked by
# `trusted` above) and in the user's own RLAUNCH_HOME, every verb already reads the record, a file needs no
# serving thread in the supervisor (which a busy watch loop could not starve either way), and `down` must read
# the teardown replies AFTER the supervisor has exited, when no socket would answer. A socket with an
# SO_PEERCRED check (unix(7)) would buy freshness to the millisecond, which a 1 s snapshot with its age shown
# does not need.
#
# Other local users are attackers (docs/security.md): a view is read only from a regular file that is not a
# symlink (O_NOFOLLOW), owned by us and readable or writable by nobody else (fstat of the open descriptor, so
# the file checked is the file read), of bounded size, holding the layout above. A view that fails any of this,
# or is older than LIVE_STALE_S (a hung supervisor), or whose writer is not the run's recorded supervisor, is
# not used: `status` asks the nodes as before (launcher/lifecycle.py).

LIVE_VERSION = 1
LIVE_EVERY_S = 1.0
# Older than this and the view is a hung supervisor's: several missed rewrites, with room for a loaded head
# (load 100+ at 250 simulated nodes on 2 cores delays a 1 s timer by seconds).
LIVE_STALE_S = 10.0
# A node the supervisor follows but has not heard from for this long (its follower sends the job's processes every
# second) may be hung or cut off while its connection still looks open: `status` asks it directly.
NODE_SILENT_S = 15.0
VIEW_MAX_BYTES = 64 << 20


class ViewRefused(ValueError):
    """A live view or teardown record that must not be trusted; the message says why, for the fallback's line."""


def read_own_json(path: Path, max_bytes: int = VIEW_MAX_BYTES) -> dict[str, Any]:
    """The JSON object in `path`, a regular file we own that nobody else may read or write; ViewRefused (or
    FileNotFoundError) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symlink planted in its place
        raise ViewRefused(f"{path.name}: cannot open: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ViewRefused(f"{path.name}: not a regular file")
        if st.st_uid != os.geteuid():
            raise ViewRefused(f"{path.name}: owned by uid {st.st_uid}, not by us")
        if st.st_mode & 0o077:
            raise ViewRefused(
                f"{path.name}: mode {stat.S_IMODE(st.st_mode):04o} lets others in (we write 0600)"
            )
        if st.st_size > max_bytes:
            raise ViewRefused(f"{path.name}: {st.st_size} bytes, more than {max_bytes}")
        raw = f.read(max_bytes + 1)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ViewRefused(f"{path.name}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ViewRefused(f"{path.name}: not a JSON object")
    return data


def _writer_fields(now: float | None = None) -> dict[str, Any]:
    from launcher.node.procs import read_stat

    st = read_stat(os.getpid())
    return {
        "v": LIVE_VERSION,
        "written_at": time.time() if now is None else now,
        "writer_pid": os.getpid(),
        "writer_starttime": int(st["starttime"]) if st else None,
    }


def _checked_view(data: dict[str, Any], name: str, writer: tuple[int, int] | None) -> dict[str, Any]:
    """The layout's fields present and typed, the nodes a mapping of objects, the writer the expected one."""
    if data.get("v") != LIVE_VERSION:
        raise ViewRefused(f"{name}: layout version {data.get('v')!r}, not {LIVE_VERSION}")
    written = data.get("written_at")
    if type(written) not in (int, float):
        raise ViewRefused(f"{name}: no written_at")
    nodes = data.get("nodes")
    if not isinstance(nodes, dict) or not all(
        isinstance(h, str) and isinstance(n, dict) for h, n in nodes.items()
    ):
        raise ViewRefused(f"{name}: nodes is not an object of node objects")
    if writer is not None and (data.get("writer_pid"), data.get("writer_starttime")) != writer:
        raise ViewRefused(
            f"{name}: written by pid {data.get('writer_pid')}, not by the run's supervisor (pid {writer[0]})"
        )
    return data


def read_live(
    record: RunRecord, writer: tuple[int, int] | None, now: float | None = None, max_age: float = LIVE_STALE_S
) -> dict[str, Any]:
    """The supervisor's live view with "age_s" added, when it is ours, whole, fresh and written by `writer`
    ((pid, start time) of the run's recorded supervisor); ViewRefused or FileNotFoundError saying why not."""
    data = _checked_view(read_own_json(record.live_path), record.live_path.name, writer)
    age = (time.time() if now is None else now) - float(data["written_at"])
    if age > max_age:
        raise ViewRefused(f"{record.live_path.name} is {age:.1f} s old (the supervisor is hung or gone)")
    return {**data, "age_s": round(max(0.0, age), 2)}


def write_live(record: RunRecord, nodes: dict[str, dict[str, Any]], **fields: Any) -> None:
    """The supervisor's per-node view (layout above), atomically, 0600, without fsync (rewritten every second)."""
    data = {**_writer_fields(), **fields, "nodes": nodes}
    write_atomic(record.live_path, json.dumps(data, separators=(",", ":")), durable=False)


def write_teardown(record: RunRecord, nodes: dict[str, dict[str, Any]], **fields: Any) -> None:
    """Each node's reply to the supervisor's teardown (layout above), for `down` to trust the clean ones."""
    data = {**_writer_fields(), **fields, "nodes": nodes}
    write_atomic(record.teardown_path, json.dumps(data, separators=(",", ":")))


def read_teardown(record: RunRecord, writer: tuple[int, int] | None, since: float) -> dict[str, Any]:
    """The supervisor's teardown record, when it is ours, whole, by `writer` and of a teardown that ended at or
    after `since` (when `down` signalled it: an earlier attempt's teardown says nothing about later guards)."""
    data = _checked_view(read_own_json(record.teardown_path), record.teardown_path.name, writer)
    stopped = data.get("stopped_at")
    if type(stopped) not in (int, float) or stopped < since:
        raise ViewRefused(f"{record.teardown_path.name}: a teardown from before this `down`")
    return data


class RecordFile:
    """A file directly inside the run record: `record.state_path` is `record.root / "state.json"`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, record: RunRecord, owner: type | None = None) -> Path:
        return record.root / self.name


class RunRecord:
    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Lock()
        self._logs: dict[str, TextIO] = {}
        self._events: TextIO | None = None

    @property
    def run_id(self) -> str:
        return self.root.name

    # --- creation and lookup -------------------------------------------------------------------------
    @classmethod
    def create(cls, run_id: str, plan_json: dict[str, Any], base: Path | None = None) -> RunRecord:
        runs = runs_dir(base)
        _private_dir(runs)
        root = runs / check_run_id(run_id)
        root.mkdir(mode=0o700)
        (root / "logs").mkdir(mode=0o700)
        rec = cls(root)
        write_atomic(rec.plan_path, json.dumps(plan_json, indent=1))
        rec.write_state({"run_id": run_id, "state": RunState.PLANNED.value, "created_at": time.time()})
        return rec

    @classmethod
    def open(cls, run_id: str | None = None, base: Path | None = None) -> RunRecord:
        runs = runs_dir(base)
        if run_id is None:
            ids = list_run_ids(base)
            if not ids:
                raise FileNotFoundError(f"no runs recorded under {runs} (start one with `rlaunch up`)")
            run_id = ids[-1]
        root = runs / check_run_id(run_id)
        if not (root / "state.json").is_file():
            matches = [r for r in list_run_ids(base) if r.startswith(run_id)]
            if len(matches) != 1:
                raise FileNotFoundError(f"no run '{run_id}' under {runs} (see `rlaunch status --all`)")
            root = runs / matches[0]
        return cls(trusted(root))

    # --- state ---------------------------------------------------------------------------------------
    def read_state(self) -> dict[str, Any]:
        return json.loads(self.state_path.read_text())

    def write_state(self, state: dict[str, Any]) -> None:
        with self._lock:
            write_atomic(self.state_path, json.dumps(state, indent=1, sort_keys=True))

    def set_state(self, state: RunState, **changes: Any) -> dict[str, Any]:
        """The one writer of the run's state (launcher/states.py's vocabulary), with the fields that go with it."""
        return self.update_state(state=RunState(state).value, **changes)

    def update_state(self, **changes: Any) -> dict[str, Any]:
        """Merge `changes` into state.json; write the run's "state" itself with `set_state`."""
        if "state" in changes:
            changes["state"] = RunState(changes["state"]).value  # a word outside the vocabulary fails here
        # The lock file serialises read-modify-write across processes too: a detached run's supervisor, `status`
        # and `down` may update the same state.json at once.
        with self._lock, open(self.root / ".state.lock", "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            state = json.loads(self.state_path.read_text())
            state.update(changes)
            write_atomic(self.state_path, json.dumps(state, indent=1, sort_keys=True))
            return state

    def plan_json(self) -> dict[str, Any]:
        return json.loads(self.plan_path.read_text())

    # --- append-only streams ---------------------------------------------------------------------------
    def append_event(self, event: dict[str, Any]) -> None:
        with self._lock:
            if self._events is None:
                self._events = open_private(self.events_path)
            self._events.write(json.dumps(event, sort_keys=True) + "\n")
            self._events.flush()

    def events(self) -> list[dict[str, Any]]:
        path = self.events_path
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def append_log(self, host: str, line: str) -> None:
        with self._lock:
            f = self._logs.get(host)
            if f is None:
                f = self._logs[host] = open_private(self.log_path(host))
            f.write(line + "\n")
            f.flush()

    def append_gpu(self, host: str, snapshot: dict[str, Any]) -> None:
        """Periodic amd-smi / rocm-smi snapshots, kept for post-mortems (gpu/<host>.jsonl)."""
        with self._lock:
            path = self.gpu_path(host)
            _private_dir(path.parent)
            with open_private(path) as f:
                f.write(json.dumps(snapshot, sort_keys=True) + "\n")

    def artifact_path(self, host: str, rel: object) -> Path | None:
        """Where a file collected from `host` goes (artifacts/<host>/<rel>), or None when `rel` is not a plain
        relative path or would resolve outside that directory."""
        if not isinstance(rel, str) or not rel or "\0" in rel or rel.startswith("/"):
            return None
        if any(part in ("", ".", "..") for part in rel.split("/")):
            return None
        base = (self.root / "artifacts" / host).resolve()
        target = (base / rel).resolve()
        return target if target.is_relative_to(base) and target != base else None

    # --- the record's file layout (known here only: every other module asks for a path) ----------------
    # One file each, directly in the record (RecordFile below): state, plan, events; the inventory the run was
    # started with (restarts and spares read it back); progress.jsonl, one record per new step (launcher/attempts.py);
    # hang forensics: every host's stack dumps as collected, the flight-recorder summaries, straggler metrics in
    # node_exporter's textfile format.
    state_path = RecordFile("state.json")
    plan_path = RecordFile("plan.json")
    events_path = RecordFile("events.jsonl")
    inventory_path = RecordFile("inventory.json")
    progress_path = RecordFile(PROGRESS_FILE)
    stacks_json_path = RecordFile("stacks.json")
    fr_path = RecordFile("fr.json")
    metrics_path = RecordFile("metrics.prom")
    # The supervisor's live view and teardown replies (layout: "The supervisor's live view" above).
    live_path = RecordFile("live.json")
    teardown_path = RecordFile("teardown.json")

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def log_path(self, host: str) -> Path:
        return self.logs_dir / f"{host}.log"

    def log_paths(self) -> dict[str, Path]:
        """host → its log, for every host that logged."""
        return {p.stem: p for p in self.logs_dir.glob("*.log")}

    def gpu_path(self, host: str) -> Path:
        return self.root / "gpu" / f"{host}.jsonl"

    def targets_path(self, attempt: int | None = None) -> Path:
        """The typed node targets (guardctl.GuardTarget) of the current attempt, or of attempt `attempt`."""
        return self.root / ("targets.json" if attempt is None else f"targets-{attempt}.json")

    def targets_paths(self) -> list[Path]:
        """Every attempt's targets file, in attempt order."""
        return self._numbered("targets")

    def outcome_path(self, attempt: int) -> Path:
        """What attempt `attempt` ended with (restart_policy.AttemptResult's JSON)."""
        return self.root / f"outcome-{attempt}.json"

    def outcome_paths(self) -> list[Path]:
        """Every attempt's outcome file, in attempt order."""
        return self._numbered("outcome")

    def stacks_dir(self) -> Path:
        """Hang forensics: one text file of stack dumps per host (stacks/<host>.txt)."""
        return self.root / "stacks"

    def stacks_path(self, host: str) -> Path:
        return self.stacks_dir() / f"{host}.txt"

    def _numbered(self, prefix: str) -> list[Path]:
        found = []
        for path in self.root.glob(f"{prefix}-*.json"):
            number = path.stem.rsplit("-", 1)[1]
            if number.isdigit():
                found.append((int(number), path))
        return [path for _, path in sorted(found)]

    def close(self) -> None:
        with self._lock:
            for f in self._logs.values():
                f.close()
            self._logs.clear()
            if self._events:
                self._events.close()
                self._events = None


def open_run(run_id: str | None) -> tuple[RunRecord, Inventory, dict[str, Any]]:
    """A run's record (default: the latest), the inventory it was started from, and its current plan (plan.json)."""
    record = RunRecord.open(run_id)
    inv = Inventory.model_validate_json(record.inventory_path.read_text())
    return record, inv, record.plan_json()


def list_run_ids(base: Path | None = None) -> list[str]:
    runs = runs_dir(base)
    if not runs.is_dir():
        return []
    return sorted(p.name for p in runs.iterdir() if (p / "state.json").is_file() and _is_trusted(p))


def _is_trusted(path: Path) -> bool:
    try:
        trusted(path)
    except UnsafeRecord:
        return False
    return True
