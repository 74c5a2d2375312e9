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


def _open_private(path: Path) -> TextIO:
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


def write_atomic(path: Path, data: bytes | str, mode: int = 0o600) -> None:
    _private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


PROGRESS_FILE = "progress.jsonl"


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
                self._events = _open_private(self.events_path)
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
                f = self._logs[host] = _open_private(self.log_path(host))
            f.write(line + "\n")
            f.flush()

    def append_gpu(self, host: str, snapshot: dict[str, Any]) -> None:
        """Periodic amd-smi / rocm-smi snapshots, kept for post-mortems (gpu/<host>.jsonl)."""
        with self._lock:
            path = self.gpu_path(host)
            _private_dir(path.parent)
            with _open_private(path) as f:
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
