"""Health decisions at the edge: the node-local part of the health rules, applied by the guard itself.

Pushed beside guard.py together with the head's rule table (launcher/health/rules.py, standard library only, pushed
as RUNDIR/rules.py) and loaded by the guard from the run directory: no copy of the table exists, so the edge and the
head always judge a line alike. A run directory without these files (an older push) simply has no edge health.

What the guard decides on its own (the node-local rules; the head keeps the cross-node view: root cause, restart,
the verdict):
- a fatal line from a local rank (rules.classify), unless training already reported completion on this node
  (end-of-run aborts are forgiven, as the head's watcher does) or the job exits within LINE_CONFIRM_S (torchrun
  prints exit-barrier errors at a clean finish too: the head's Runner holds those the same way);
- a local process seen stopped (state T) twice, STOP_CONFIRM_S apart;
- no progress line from the node's ranks for stall_timeout, once the node has printed one (a node whose ranks never
  print, e.g. HF Trainer's non-main processes, is never judged by silence here: only the head sees the whole job).

While a head follows the node (its heartbeat is fresh) the guard defers every decision by HEAD_DEFER_S so that the
head, which sees every node and names the root cause across them, acts first; with no head it acts at once.
A local rank dying of a signal needs no rule here: torchrun (or the job's own launcher) prints it and exits, and the
guard ends on that exit anyway.

Standard library only, Python >= 3.8, imports nothing outside launcher/node/ (it is a file in RUNDIR on the node).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import time


def _beside(name: str):
    """A module pushed beside this file into RUNDIR (the guard loads this file by path, not as a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(__file__), name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __package__:  # imported by the head or tests as launcher.node.edge
    from launcher.node import protocol, teelines
else:  # loaded by the guard from RUNDIR: the guard's own protocol.py, else the one pushed beside this file
    protocol = sys.modules.get("protocol") or _beside("protocol")  # type: ignore[assignment]
    teelines = sys.modules.get("teelines") or _beside("teelines")  # type: ignore[assignment]

# RCCL's INIT lines naming its network transport (launcher/health/netinit.py has the same patterns; a contract test
# checks they agree): forwarded from every rank, since the rule table leaves every "NCCL INFO" line healthy.
NET_INIT = re.compile(
    r"NET/Socket\s*:\s*Using\b|\bUsing network Socket\b|NET/IB\s*:\s*Using \[|\bUsing network IB"
)

LINE_CONFIRM_S = 3.0
STOP_CONFIRM_S = 1.0
HEAD_DEFER_S = 5.0
MAX_LINE_BYTES = 8192
# torchrun's "[default3]:" prefix (the local rank); same pattern as launcher/health/classify.py's _LOCAL_PREFIX,
# which a test keeps equal.
# Bounded digit counts (issue 21): Python's int() refuses strings of more than 4300 digits (the int_max_str_digits
# limit, Python 3.11+), so one printed `[default<5000 digits>]:` ended the node's follower. A rank has at most 9.
LOCAL_PREFIX = re.compile(r"^\s*\[(?!rank\d)[A-Za-z_][\w-]{0,63}?(\d{1,9})\]:")
GLOBAL_PREFIX = re.compile(r"^\s*\[rank(\d{1,9})\]:")


def load_rules(rundir: str):
    """RUNDIR/rules.py as a module, or None when it was not pushed or does not load."""
    path = os.path.join(rundir, "rules.py")
    if not os.path.isfile(path):
        return None
    name = "rlaunch_edge_rules"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    except Exception:  # a broken table must not stop the guard: it runs without edge health
        sys.modules.pop(name, None)
        return None
    return module


def strip_prefixes(text: str) -> tuple:
    """(local rank or None, text without torchrun's and PyTorch's rank prefixes)."""
    local = None
    seen_global = False
    while True:
        found = None
        if not seen_global:
            found = GLOBAL_PREFIX.match(text)
            if found:
                seen_global = True
        if found is None and local is None:
            found = LOCAL_PREFIX.match(text)
            if found:
                local = int(found.group(1))
        if found is None:
            return local, text
        text = text[found.end() :]


def local_rank_of(pid: int):
    """LOCAL_RANK from the process's environment (torchrun sets it per worker); None if unknown."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"LOCAL_RANK="):
                    return int(item[11:])
    except (OSError, ValueError):
        pass
    return None


class LineReader:
    """New complete lines of a growing file, from a byte offset (over-long lines are cut, never fatal), torchrun's
    cut lines joined (teelines.py)."""

    def __init__(self, path: str, offset: int = 0) -> None:
        self.path = path
        self.offset = offset
        self.pending = b""
        self.join = teelines.TeeJoin()

    def read(self) -> list:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(1 << 20)
        except OSError:
            return []
        self.offset += len(data)
        data = self.pending + data
        lines = data.split(b"\n")
        self.pending = lines.pop()
        if len(self.pending) > MAX_LINE_BYTES:
            lines.append(self.pending)
            self.pending = b""
        texts = (raw[:MAX_LINE_BYTES].rstrip(b"\r").decode("utf-8", "replace") for raw in lines)
        return [line for text in texts for line in self.join.feed(text)] + self.join.bars()


class EdgeHealth:
    """Fed by the guard's loop; returns a decision dict once the node should be torn down."""

    def __init__(self, rundir: str, rules, config: dict, now: float) -> None:
        self.rules = rules
        self.stall_timeout = float(config.get("stall_timeout") or 0)
        self.head_timeout = float(config.get("head_timeout") or 10)
        self.reader = LineReader(os.path.join(rundir, "out.log"))
        self.heartbeat = os.path.join(rundir, "heartbeat")
        self.started = now
        self.first_progress = None
        self.last_progress = None
        self.completed = False
        self.pending = None  # the first finding, waiting for its confirmation / the head's deferral
        self.stopped_since: dict = {}
        self.bad_lines = 0  # lines the rules raised on: skipped one by one, never the end of edge health
        self.on_bad_line = None  # called once, with the first error's text (the guard logs it)

    def head_following(self, now: float) -> bool:
        try:
            return now - os.stat(self.heartbeat).st_mtime < self.head_timeout
        except OSError:
            return False

    def observe_lines(self, now: float) -> None:
        for raw in self.reader.read():
            try:
                self.observe_line(now, raw)
            except Exception as exc:  # one hostile line (issue 21: 4,300+ digits) must not end edge health
                self.bad_lines += 1
                if self.bad_lines == 1 and self.on_bad_line is not None:
                    why = f"{type(exc).__name__}: {str(exc)[:200]}"
                    self.on_bad_line("edge health skips lines it cannot read (counted): " + why)

    def observe_line(self, now: float, raw: str) -> None:
        """One line of out.log through the rules (the first fatal finding waits for its confirmation)."""
        local, text = strip_prefixes(raw)
        match = self.rules.classify(text)
        if self.rules.is_progress(text, match):
            self.first_progress = now if self.first_progress is None else self.first_progress
            self.last_progress = now
        if self.rules.is_completion_marker(text):
            self.completed = True
        if match is None or match.severity != "fatal" or self.completed or self.pending:
            return
        self.pending = {
            "kind": "line",
            "rule": match.rule,
            "category": match.category,
            "local_rank": local,
            "text": text.strip()[:500],
            "time": now,
            "due": now + LINE_CONFIRM_S,
        }

    def observe_procs(self, now: float, procs: list) -> None:
        """`procs`: the guard's /proc stats of the job's processes ({"pid", "state", ...})."""
        seen = set()
        for st in procs:
            if st["state"] not in ("T", "t"):
                continue
            seen.add(st["pid"])
            since = self.stopped_since.setdefault(st["pid"], now)
            if "local_rank" not in st:
                st = dict(st, local_rank=local_rank_of(st["pid"]))
            if now - since >= STOP_CONFIRM_S and not self.pending:
                self.pending = {
                    "kind": "stopped",
                    "category": None,
                    "pid": st["pid"],
                    "local_rank": st.get("local_rank"),
                    "text": "process {} stopped (state {}) for {:.0f} s".format(
                        st["pid"], st["state"], now - since
                    ),
                    "time": since,
                    "due": now,
                }
        for pid in list(self.stopped_since):
            if pid not in seen:
                del self.stopped_since[pid]

    def stalled(self, now: float) -> bool:
        """Silence is judged here only with no head following (the head applies the job-wide rule: with HF Trainer
        or DeepSpeed only global rank 0 prints, so one quiet node proves nothing), and only on a node that kept
        printing progress for at least stall_timeout: a node that printed its start-up lines and then, by design,
        nothing, is never taken for hung."""
        if self.stall_timeout <= 0 or self.last_progress is None or self.head_following(now):
            return False
        if self.last_progress - self.first_progress < self.stall_timeout:
            return False
        return now - self.last_progress >= self.stall_timeout

    def check(self, now: float, procs: list) -> dict | None:
        """One poll: the decision (with a "reason") once it is due, else None."""
        self.observe_lines(now)
        self.observe_procs(now, procs)
        if self.pending is None and self.stalled(now):
            self.pending = {
                "kind": "stall",
                "category": None,
                "local_rank": None,
                "text": f"no output from this node's ranks for {now - self.last_progress:.0f} s",
                "time": now,
                "due": now,
            }
        if self.pending is None:
            return None
        due = self.pending["due"] + (HEAD_DEFER_S if self.head_following(now) else 0.0)
        if now < due:
            return None
        decision = {k: v for k, v in self.pending.items() if k != "due"}
        decision["decided_at"] = now
        decision["head_following"] = self.head_following(now)
        what = decision["category"] or decision["kind"]
        who = "" if decision.get("local_rank") is None else " (local rank {})".format(decision["local_rank"])
        decision["reason"] = "edge health: {}{}: {}".format(what, who, decision["text"])
        return decision


def make(rundir: str, job: dict, now: float | None = None):
    """The guard's edge health for RUNDIR, or None (no rules pushed, or edge health switched off in job.json)."""
    config = job.get("edge") if isinstance(job.get("edge"), dict) else None
    if config is None or config.get("enabled") is False:
        return None
    rules = load_rules(rundir)
    if rules is None:
        return None
    return EdgeHealth(rundir, rules, config, time.time() if now is None else now)


# ---------------------------------------------------------------------------------------------------------
# Forwarding only what the head needs


def parse_show(spec: str) -> object:
    """The follower's --show: "all", "none" or comma-separated local ranks ("0,3")."""
    if spec in ("all", "none"):
        return spec
    return frozenset(int(part) for part in spec.split(",") if part.strip().isdigit())


class Forwarder:
    """Classifies the node's lines where they are printed and passes on only what the head needs: flagged lines
    (with up to `context` preceding lines), completion markers, the lines the terminal shows (`show`), and once a
    second an activity summary per local rank (lines seen, last progress, last consumed byte offset) that keeps the
    head's stall clock and re-attach offset right. Every line stays in RUNDIR/out.log for `rlaunch logs`."""

    def __init__(self, rules, show: str = "all", context: int = 5) -> None:
        self.rules = rules
        self.show = parse_show(show)
        self.context: list = []
        self.context_max = context
        self.counts: dict = {}
        self.progress: dict = {}
        self.offset = 0

    def shown(self, local: int | None) -> bool:
        if self.show == "all":
            return True
        if self.show == "none":
            return False
        return (0 if local is None else local) in self.show  # unprefixed lines go with local rank 0

    def line(self, now: float, offset: int, raw: str) -> list:
        """The records to emit for one line of out.log (often none)."""
        self.offset = offset
        local, text = strip_prefixes(raw)
        key = "-" if local is None else str(local)
        self.counts[key] = self.counts.get(key, 0) + 1
        match = self.rules.classify(text)
        if self.rules.is_progress(text, match):
            self.progress[key] = now
        record = {"k": protocol.K_LINE, "t": now, "off": offset, "text": raw}
        if match is not None:
            record["f"] = {"rule": match.rule, "severity": match.severity, "lr": local}
        elif self.rules.is_completion_marker(text):
            record["f"] = {"rule": protocol.F_COMPLETION, "severity": "info", "lr": local}
        elif ("NET/" in text or "Using network" in text) and NET_INIT.search(text):
            # the head's watcher reads the transport
            record["f"] = {"rule": protocol.F_NET_INIT, "severity": "info", "lr": local}
        elif self.shown(local):
            record["f"] = None  # healthy: the head shows and records it, without classifying it again
        else:
            self.context.append(record)
            del self.context[: -self.context_max]
            return []
        out = []
        if record["f"] is not None and match is not None:
            for ctx in self.context:
                out.append(dict(ctx, f=None, ctx=True))
        self.context.clear()
        out.append(record)
        return out

    def summary(self, now: float) -> dict | None:
        if not self.counts and not self.progress:
            return None
        record = {
            "k": protocol.K_ACTIVITY,
            "t": now,
            "off": self.offset,
            "lines": self.counts,
            "progress": self.progress,
        }
        self.counts, self.progress = {}, {}
        return record
