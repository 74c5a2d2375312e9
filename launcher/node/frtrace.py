"""Read this run's PyTorch flight-recorder dumps on a node; run as `python -c <this file> BUDGET_SECONDS` with stdin
{"dump": PREFIX, "pipe": PIPE_STEM or null, "ranks": [R, ...]}. Standard library only; imports nothing of ours.

The flight recorder (TORCH_FR_BUFFER_SIZE > 0) keeps the last collectives of every rank; a rank's dump is the file
PREFIX<rank> (TORCH_FR_DUMP_TEMP_FILE). ProcessGroupNCCL writes it on a collective timeout and whenever a byte is
written to its named pipe PIPE_STEM<rank>.pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE), so the ranks of a hung NCCL/RCCL
job are asked for a fresh dump first and given until BUDGET_SECONDS to write it; gloo records but never dumps by
itself (only a job that calls torch's dump function leaves a file). See docs/facts.md (flight recorder).

A dump is a pickle (or JSON) written by the job: it is read with an unpickler that cannot look up any global, so
it can build only dicts, lists, tuples, strings, numbers, booleans and None, never call anything. A file that is
not such a dump is reported as unreadable.

Prints one JSON object {"ranks": [summary, ...], "poked": N}; a summary holds the rank's position in each process
group (last collective enqueued / started / completed, the one it is in) and its recent collectives
[pg, seq, name, time_created_ns, state] for the head's arrival-lag and naming (launcher/health/flight.py).
"""

import io
import json
import math
import os
import pickle
import pickletools
import re
import stat
import sys
import time

MAX_BYTES = 64 << 20  # a 2000-entry dump with stacks is a few MB
RECENT = 256  # collectives per rank sent back to the head
# Counted before unpickling (issue 21: 2 MiB of EMPTY_SET opcodes peaked at 503 MiB): a real 2000-entry dump builds
# tens of thousands of containers; no dump holds a set (ProcessGroupNCCL writes dicts, lists, strings, numbers).
MAX_CONTAINERS = 1_000_000
CONTAINER_OPS = frozenset(
    {"EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "DICT", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "MARK"}
)
SET_OPS = frozenset({"EMPTY_SET", "ADDITEMS", "FROZENSET"})
CLAMP = 1 << 62  # integers sent to the head stay machine-sized


class NoGlobals(pickle.Unpickler):
    """Builds plain data only: every class or function lookup (how a pickle runs code) is refused."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"refused global {module}.{name}")

    def persistent_load(self, pid: object) -> object:
        raise pickle.UnpicklingError("refused persistent id")


def check_opcodes(data: bytes) -> None:
    """Walk the pickle's opcodes (pickletools.genops builds nothing) and refuse what would build too much."""
    containers = 0
    for op, _arg, _pos in pickletools.genops(data):
        if op.name in SET_OPS:
            raise ValueError(f"a set ({op.name}): not a flight-recorder dump")
        if op.name in CONTAINER_OPS:
            containers += 1
            if containers > MAX_CONTAINERS:
                raise ValueError(f"more than {MAX_CONTAINERS} containers")
        if op.name == "STOP":
            return


def load(data: bytes) -> dict:
    if data.lstrip()[:1] == b"{":
        dump = json.loads(data)
    else:
        check_opcodes(data)
        dump = NoGlobals(io.BytesIO(data)).load()
    if not isinstance(dump, dict) or not isinstance(dump.get("entries", []), list):
        raise ValueError("not a flight-recorder dump (no entries list)")
    return dump


def number(value: object) -> int | None:
    # JSON dumps write 0 where the pickle has None (a time not yet discovered). Clamped: int(inf) raises, and a
    # 4300-digit integer would reach the head.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return max(-CLAMP, min(CLAMP, int(value)))


def small(value: object) -> int | None:
    """A plain int field (a process group's last collective), clamped, or None."""
    return max(-CLAMP, min(CLAMP, value)) if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: object) -> str:
    # Only strings, and short: a crafted dump could point every field at one huge shared list.
    return value[:200] if isinstance(value, str) and value else "?"


def summarise(rank: int, dump: dict) -> dict:
    entries = []
    for e in dump.get("entries") or []:
        if not isinstance(e, dict) or e.get("is_p2p") or number(e.get("collective_seq_id")) is None:
            continue
        pg_id = small(e.get("pg_id", 0))
        pg = str(pg_id) if pg_id is not None else "?"
        name, state = text(e.get("profiling_name")), text(e.get("state"))
        done = state == "completed" or bool(e.get("retired"))
        entries.append(
            [pg, number(e["collective_seq_id"]), name, number(e.get("time_created_ns")), state, done]
        )
    pgs: dict[str, dict] = {}
    status = dump.get("pg_status") if isinstance(dump.get("pg_status"), dict) else {}
    for pg in sorted({e[0] for e in entries} | {str(k) for k in status if isinstance(k, (str, int))}):
        mine = [e for e in entries if e[0] == pg]
        st = status.get(pg) if isinstance(status.get(pg), dict) else {}
        enqueued = small(st.get("last_enqueued_collective"))
        completed = small(st.get("last_completed_collective"))
        if enqueued is None:
            enqueued = max((e[1] for e in mine), default=-1)
        if completed is None:
            completed = max((e[1] for e in mine if e[5]), default=-1)
        started = small(st.get("last_started_collective"))
        # The collective the rank is in: the last it entered, not seen completing. (Not completed + 1: the record
        # of a finished collective is retired a moment after the call returns, so `completed` can lag by one.)
        current = (
            next((e for e in reversed(mine) if e[1] == enqueued), None) if enqueued > completed else None
        )
        pgs[pg] = {
            "enqueued": enqueued,
            "started": started if started is not None else -1,
            "completed": completed,
            "in": [current[1], current[2]] if current else None,
            "last": next(([e[1], e[2]] for e in reversed(mine) if e[1] == enqueued), None),
        }
    return {
        "rank": rank,
        "version": text(dump.get("version")),
        "pgs": pgs,
        "entries": [e[:5] for e in entries[-RECENT:]],
    }


def read_dump(path: str) -> bytes:
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    if st.st_size > MAX_BYTES:
        raise ValueError(f"{st.st_size} bytes, over {MAX_BYTES}")
    with open(path, "rb") as f:
        return f.read(MAX_BYTES + 1)


def dump_files(prefix: str) -> dict[int, str]:
    folder, base = os.path.split(prefix)
    pattern = re.compile(re.escape(base) + r"(\d{1,9})$")
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return {}
    found = {}
    for name in names:
        m = pattern.match(name)
        if m:
            found[int(m.group(1))] = os.path.join(folder, name)
    return found


def mtime(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def poke(stem: str, ranks: list[int]) -> list[int]:
    """Write one byte to each rank's dump pipe (only a FIFO, never blocking): the ranks that were asked."""
    asked = []
    for rank in ranks:
        path = f"{stem}{rank}.pipe"
        try:
            if not stat.S_ISFIFO(os.lstat(path).st_mode):
                continue
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO when no process reads it: nothing to ask
        except OSError:
            continue
        try:
            os.write(fd, b"1")
            asked.append(rank)
        except OSError:
            pass
        finally:
            os.close(fd)
    return asked


def main() -> None:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    deadline = time.time() + budget
    args = json.loads(sys.stdin.read() or "{}")
    prefix, stem = str(args.get("dump") or ""), args.get("pipe")
    ranks = [int(r) for r in args.get("ranks") or []]
    before = {r: mtime(f"{prefix}{r}") for r in ranks}
    asked = poke(str(stem), ranks) if stem else []
    # A dump is written by a thread of the rank: wait until each asked rank's file changed and stopped growing.
    pending = set(asked)
    sizes: dict[int, int] = {}
    while pending and time.time() < deadline - 0.3:
        time.sleep(0.1)
        for r in list(pending):
            path = f"{prefix}{r}"
            if mtime(path) != before.get(r):
                size = os.lstat(path).st_size
                if sizes.get(r) == size:
                    pending.discard(r)
                sizes[r] = size
    out = []
    for rank, path in sorted(dump_files(prefix).items()):
        if rank not in ranks:  # only this job's ranks on this node: another file under the prefix is not ours
            continue
        try:
            summary = summarise(rank, load(read_dump(path)))
        except Exception as exc:  # a hostile or torn file: say so, never fail the whole answer
            out.append({"rank": rank, "error": f"unreadable: {type(exc).__name__}: {str(exc)[:160]}"})
            continue
        summary["fresh"] = rank in asked and rank not in pending
        # An old dump (left by an earlier collective timeout, not asked for now) shows where the ranks were then.
        summary["age_s"] = round(time.time() - mtime(path) / 1e9, 1)
        out.append(summary)
    print(json.dumps({"ranks": out, "poked": len(asked)}))


if __name__ == "__main__":
    main()
