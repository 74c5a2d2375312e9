"""The contract between the head and the node guard, defined once: verbs and their argv, the records of the
follow stream, the guard's states and exit codes, and how a verb's reply is read.

Pushed beside guard.py into every run directory (the guard imports it from there) and imported by the head
(launcher/guardctl.py), so both sides speak the same words. Standard library only, Python >= 3.8.

A verb prints its reply as one JSON object on the last line of stdout (`reply_of` reads it). `follow` (and `run`)
stream one JSON object per line, each with "k" (a record kind below) and "t" (the node's clock).
"""

from __future__ import annotations

import json
import os
import sys

GUARD_FILE = "guard.py"
PROTOCOL_FILE = "protocol.py"
RULES_FILE = "rules.py"  # the head's launcher/health/rules.py, which edge.py loads from the run directory
VOCABULARY_FILE = "vocabulary.py"  # launcher/health/vocabulary.py: rules.py builds its emitter rules from it
HEALTH_FILES = (RULES_FILE, VOCABULARY_FILE)  # pushed from launcher/health, not launcher/node
# What the head's load of those two files derived (launcher/health/rules.py INDEX_FILE, index_bytes): written by the
# head for each push, not a file of the package; rules.py on the node uses it only if it was derived from the files
# beside it.
RULES_INDEX_FILE = "rules_index.json.gz"
# Every file the guard runs from, pushed into each attempt's directory (launcher/plan.py reads this list, and only
# this one): the entry and the modules it imports beside itself (launcher/node/guard.py), the edge rules.
GUARD_BUNDLE = (
    GUARD_FILE,
    PROTOCOL_FILE,
    "edge.py",
    RULES_FILE,
    VOCABULARY_FILE,
    RULES_INDEX_FILE,
    "gpuact.py",
    "procs.py",
    "rundir.py",
    "daemon.py",
    "follower.py",
    "teelines.py",  # torchrun's cut lines joined, for the follower and edge.py
    "gpuwatch.py",
    "stopreq.py",  # stop requests (rlaunch stop --save): the daemon's hook, docs/preemption.md
)

# Each attempt's guard files live in <run dir>/ATTEMPTS_DIR/attempt-N (launcher/plan.py attempt_dir; node/gc.py
# looks there for a live guard's lock).
ATTEMPTS_DIR = ".rlaunch"

# ---- verbs -------------------------------------------------------------------------------------------------
START = "start"  # daemonize, run job.json's argv; reply {"guard_pid", "job_pid"} or {"error"}
RUN = "run"  # start as a child and stream like follow (for srun steps, whose scheduler tracks processes)
FOLLOW = "follow"  # stream records from --offset (--show: whose healthy lines to forward); stdin "hb", "stop"
# Daemonize as start does, then stay on the same channel as its follower from offset 0 (--show as follow): a
# foreground run's one channel per node. At 250 simulated nodes the separate follower channel was the step that failed
# ("cannot follow: Timeout opening channel" on a node whose guard had just started through that same sshd).
START_FOLLOW = "start-follow"
STOP = "stop"  # tear down (--grace S); reply: the final state, plus "remaining" pids
STATUS = "status"  # reply: the state, plus "alive" and "descendants"
VERBS = (START, RUN, FOLLOW, START_FOLLOW, STOP, STATUS)

# ---- words the head writes to a follower's stdin, one a line ---------------------------------------------------
HEARTBEAT = "hb"  # the head is alive: the follower touches RUNDIR/heartbeat
STOP_WORD = "stop"  # SIGTERM the guard (the same as the stop verb, over the open channel)
# The head beats this many times per heartbeat_timeout, from a thread of its own (launcher/guardctl.Heartbeats):
# the guard gives up only after that many beats in a row went missing, so one late beat is never a lost head.
BEATS_PER_TIMEOUT = 4


def first_beat_window(heartbeat_timeout: float, first_heartbeat_timeout: float | None) -> float:
    """How long a guard waits for its first beat (health.first_heartbeat_timeout, never less than
    heartbeat_timeout): the guard's limit (daemon.head_lost) and the pushed job spec (plan) both read it here. At
    hundreds of nodes a busy node's sshd can take long to open the channel the first beat comes on (docs/scale.md)."""
    return max(float(heartbeat_timeout), float(first_heartbeat_timeout or 0))


# ---- records of the follow stream ("k") ---------------------------------------------------------------------
K_STARTED = "started"  # run and start-follow only: {"guard_pid", "job_pid"}
K_ERROR = "error"  # run and start-follow only: {"error"}: the job could not be started
K_LINE = (
    "line"  # {"off": byte offset after the line in out.log, "text"}; "f" when a filtering follower sent it
)
# A filtering follower's "f" on a line record (launcher/node/edge.py Forwarder): None for a healthy line it forwards
# for the terminal, else {"rule": the rule id it matched (launcher/health/rules.py names, or one of the two below),
# "severity", "lr": the local rank it read from the line's prefix (None without one)}. The head takes the rule
# instead of classifying the line again (health/watch.py Watcher.observe_line).
F_COMPLETION = "completion"  # a completion marker (training finished), no rule matched
F_NET_INIT = "net-init"  # a collective library's transport line, no rule matched
MAX_LINE_BYTES = 8192  # a line record's text is at most this long (the rest of an over-long line is skipped)
# {"procs": [{"pid", "state", "rank", "cpu", "io", "gpu"?}]}: the job's process tree, about once a second; "gpu"
# ({"id", "gfx", "umc", "w", "idle_w"}) rides on a rank's entries once per fresh amd-smi/rocm-smi reading
K_PROCS = "procs"
K_KERNEL = "kernel"  # {"text"}: a kernel log line about the GPUs, or the OOM killer's about a job process
K_GPU = "gpu"  # amd-smi / rocm-smi snapshot
K_ACTIVITY = (
    "activity"  # per-local-rank line counts, last progress, consumed offset: instead of healthy lines
)
K_EXIT = "exit"  # {"state": final state.json}: always the last record

# ---- out.log's time index (RUNDIR/out.idx) ----------------------------------------------------------------------
# "TIME SIZE" lines appended by the guard when it sees out.log grow, at most one per OUT_INDEX_EVERY_S: the job
# writes out.log itself, so its lines carry no time; logcat.py reads the index for `rlaunch logs --since`.
OUT_INDEX = "out.idx"
OUT_INDEX_EVERY_S = 1.0

# ---- guard states (state.json "state") ----------------------------------------------------------------------
RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
STOPPED = "stopped"  # stop requested (down, teardown by the head)
LOST_LAUNCHER = "lost-launcher"  # the head's heartbeat stopped: the guard tore the job down by itself
GUARD_LOST = "guard-lost"  # reported, never written: the guard died (SIGKILL, OOM) without a final word
TERMINAL_STATES = frozenset({SUCCEEDED, FAILED, STOPPED, LOST_LAUNCHER, GUARD_LOST})

# ---- exit codes of guard.py itself ----------------------------------------------------------------------------
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INFRA = 0, 1, 2, 3


# How rlaunch starts Python on a node (docs/security.md, issue 21). `python -c CODE` and `python -` put the current
# directory first on sys.path ('' , see the `python -c` entry of the `sys.path` docs), and srun and the local
# transport run in the submit/caller's directory: a `json.py` planted there ran as root in push, facts and the env
# probe. Standard-library node scripts therefore run isolated (`-I`: neither cwd nor the script's directory on
# sys.path, PYTHON* variables and the user site ignored; Python >= 3.4, unlike `-P`, which is 3.11+).
ISOLATED = "-I"
# Code that must import the job's own packages (torch) as the job would, PYTHONPATH included, starts with this line
# instead: it drops '' and every relative entry before any import can look there (`sys` is built in).
SAFE_PATH = "import sys; sys.path[:] = [p for p in sys.path if p.startswith('/')]\n"


def find_tool(name: str):
    """A node tool (amd-smi, rocm-smi, py-spy): beside the node's python, then in /opt/rocm/bin, then on PATH with
    empty, `.` and relative entries dropped (they mean the current directory; issue 21). The copy beside the python
    and ROCm's own are what the job uses; a PATH lookup first ran whatever an earlier PATH directory held."""
    import shutil

    for folder in (os.path.dirname(sys.executable), "/opt/rocm/bin"):
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p))
    return shutil.which(name, path=path) if path else None


def script_argv(python: str, *rest: str) -> list:
    """`python -I ARGS...`: the argv for a standard-library node script (`-c CODE ...`, `- ...`)."""
    return [python, ISOLATED, *rest]


def guard_argv(
    python: str,
    run_dir: str,
    verb: str,
    *,
    offset: int | None = None,
    grace: float | None = None,
    show: str | None = None,
    unbuffered: bool = False,
) -> list:
    """The argv that runs `verb` of the guard in `run_dir` with the node's `python`."""
    if verb not in VERBS:
        raise ValueError(f"unknown guard verb {verb!r}")
    argv = [python, ISOLATED] + (["-u"] if unbuffered else []) + [f"{run_dir}/{GUARD_FILE}", verb, run_dir]
    if offset is not None:
        argv += ["--offset", str(int(offset))]
    if grace is not None:
        argv += ["--grace", str(float(grace))]
    if show is not None:
        argv += ["--show", show]
    return argv


def reply_of(stdout: str, tag: str | None = None):
    """The JSON object on the last non-empty line of a verb's stdout, or None. With `tag` (a script that may print
    other JSON first: doctor's probe, the route probe): the last line that holds `tag` and starts with "{"."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if not line or (tag is not None and (tag not in line or not line.startswith("{"))):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None
    return None


def parse_record(line: str):
    """One follow-stream record, or None for a line that is not one (a Python warning, a stray print)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("k"), str):
        return None
    return data
