"""Dump the Python stacks of a hung job's ranks; run as `python -c <this file> BUDGET_SECONDS` with stdin
[{"pid": N, "rank": R}, ...] (the ranks the guard reported). Standard library only; imports nothing of ours.

With py-spy (its PyPI wheel is a static binary: on PATH, or beside this python as the node extra installs it)
every rank gets `py-spy dump --pid N`: every thread's Python frames, read from outside the process, no
cooperation from the job (py-spy needs ptrace rights: the job's user with kernel.yama.ptrace_scope 0, or root).
Without it (or when it fails) the fallback reads what /proc shows of each thread: state, kernel wait channel and
the system call it sits in (proc(5)), which still tells a rank asleep in clock_nanosleep from peers blocked in
futex/poll inside a collective. All ranks are dumped in parallel and the whole dump ends by BUDGET_SECONDS.

Prints one JSON object {"ranks": [{"pid", "rank", "tool", "text", "error"}]}.
"""

import json
import linecache
import os
import re
import shutil
import subprocess
import sys
import time

# x86_64 numbers of the calls a blocked rank sits in (arch/x86/entry/syscalls/syscall_64.tbl).
SYSCALLS = {
    "0": "read",
    "7": "poll",
    "23": "select",
    "35": "nanosleep",
    "45": "recvfrom",
    "47": "recvmsg",
    "61": "wait4",
    "202": "futex",
    "230": "clock_nanosleep",
    "232": "epoll_wait",
    "270": "pselect6",
    "271": "ppoll",
    "281": "epoll_pwait",
}
FRAME = re.compile(r"^(\s+)(\S.*) \((.+):(\d+)\)\s*$")


def find_py_spy() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    found = shutil.which("py-spy")
    if found:
        return found
    return beside if os.access(beside, os.X_OK) else None


def read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def with_source(pid: int, text: str) -> str:
    """Append the source line under the innermost frame of every thread (the line the thread is on)."""
    out, fresh = [], False
    cwd = os.readlink(f"/proc/{pid}/cwd") if os.path.exists(f"/proc/{pid}/cwd") else "/"
    for line in text.splitlines():
        out.append(line)
        if line.startswith("Thread "):
            fresh = True
            continue
        m = FRAME.match(line)
        if m and fresh:
            fresh = False
            source = linecache.getline(os.path.join(cwd, m.group(3)), int(m.group(4))).strip()
            if source:
                out.append(f"{m.group(1)}    > {source}")
    return "\n".join(out)


def proc_dump(pid: int) -> str:
    """What /proc tells about each thread without ptrace cooperation (syscall needs ptrace rights: may be empty)."""
    lines = [f"Process {pid}: {read(f'/proc/{pid}/cmdline').replace(chr(0), ' ')[:200]}", "(from /proc)"]
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return ""
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        stat = read(f"{base}/stat")
        state = stat[stat.rfind(")") + 2 :].split(" ", 1)[0] if ")" in stat else "?"
        name = "MainThread" if tid == pid else read(f"{base}/comm")
        call = read(f"{base}/syscall").split(" ", 1)[0]
        call = SYSCALLS.get(call, f"syscall {call}") if call.isdigit() else call or "?"
        wchan = read(f"{base}/wchan") or "?"
        lines.append(f'Thread {tid} ({state}): "{name}"')
        lines.append(f"    in {call} (wchan {wchan})")
    return "\n".join(lines)


def main() -> None:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    deadline = time.time() + budget
    targets = json.loads(sys.stdin.read() or "[]")
    py_spy = find_py_spy()
    running = {}
    for t in targets:
        if py_spy is None:
            break
        try:
            running[t["pid"]] = subprocess.Popen(
                [py_spy, "dump", "--pid", str(t["pid"])],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        except OSError:
            break
    ranks = []
    for t in targets:
        pid, entry = int(t["pid"]), {"pid": t["pid"], "rank": t.get("rank"), "tool": None, "text": ""}
        proc = running.get(pid)
        if proc is not None:
            try:
                out, err = proc.communicate(timeout=max(0.1, deadline - time.time() - 0.5))
                if proc.returncode == 0 and out.strip():
                    entry.update(tool="py-spy", text=with_source(pid, out.strip()))
                else:
                    entry["error"] = (err.strip() or out.strip())[-300:]
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                entry["error"] = "py-spy did not answer within the budget"
        if not entry["text"]:
            entry.update(tool="proc", text=proc_dump(pid))
        ranks.append(entry)
    print(json.dumps({"ranks": ranks, "py_spy": py_spy}))


if __name__ == "__main__":
    main()
