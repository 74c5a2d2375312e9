"""Dump the Python stacks of a hung job's ranks; run as `python -c <this file> BUDGET_SECONDS` with stdin
[{"pid": N, "rank": R}, ...] (the ranks the guard reported). Standard library only, and of ours only protocol.py
(the node-tool lookup), sent with it (launcher/nodecall.py with_modules).

With py-spy (its PyPI wheel is a static binary: on PATH, or beside this python as the node extra installs it)
every rank gets `py-spy dump --pid N`: every thread's Python frames, read from outside the process, no
cooperation from the job (py-spy needs ptrace rights: the job's user with kernel.yama.ptrace_scope 0, or root).
Without it (or when it fails) the fallback reads what /proc shows of each thread: state, kernel wait channel and
the system call it sits in (proc(5)), which still tells a rank asleep in clock_nanosleep from peers blocked in
futex/poll inside a collective. All ranks are dumped in parallel and the whole dump ends by BUDGET_SECONDS.

Prints one JSON object {"ranks": [{"pid", "rank", "tool", "text", "error"}]}.
"""

import json
import os
import re
import stat
import subprocess
import sys
import time

if __name__ == "__main__":  # on a node: protocol.py is sent with this script (launcher/run/forensics.py)
    import protocol
else:  # imported by the head or tests
    from launcher.node import protocol

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
FRAME = re.compile(r"^(\s+)(\S.*) \((.+):(\d{1,9})\)\s*$")


MAX_PROC_READ = 64 << 10  # a /proc file we show (stat, comm, wchan, syscall, cmdline)
MAX_SOURCE_BYTES = 4 << 20  # a source file a frame names: read only if regular and at most this big


def find_py_spy():
    """py-spy by protocol.find_tool: beside the node's python (where the node extra installs it), /opt/rocm/bin,
    then PATH without the entries that mean the current directory."""
    return protocol.find_tool("py-spy")


def read(path: str, limit: int = MAX_PROC_READ) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def starttime(pid: int):
    """Field 22 of /proc/PID/stat (proc(5)), or None when the process is gone."""
    raw = read(f"/proc/{pid}/stat")
    fields = raw[raw.rfind(")") + 2 :].split() if ")" in raw else []
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def source_line(path: str, number: int) -> str:
    """Line `number` of `path`, read only from a regular file of bounded size: a frame naming /dev/zero (or a FIFO,
    or a huge file) once made the collector read without limit (issue 21)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return ""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES or not 0 < number <= 1_000_000:
            return ""
        with os.fdopen(fd, "rb", closefd=False) as f:
            for index, raw in enumerate(f, 1):
                if index == number:
                    return raw[:1000].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)
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
            digits = m.group(4)
            source = source_line(os.path.join(cwd, m.group(3)), int(digits)) if len(digits) < 8 else ""
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
        raw = read(f"{base}/stat")
        state = raw[raw.rfind(")") + 2 :].split(" ", 1)[0] if ")" in raw else "?"
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
    reused = set()
    for t in targets:
        if py_spy is None:
            break
        start = t.get("start")
        if isinstance(start, int) and starttime(int(t["pid"])) != start:
            reused.add(int(t["pid"]))  # gone, or its PID now names another process: never attach to that
            continue
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
        if pid in reused:
            entry.update(tool=None, error="the rank's process is gone (its PID start time changed)")
            ranks.append(entry)
            continue
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
