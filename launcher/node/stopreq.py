"""Raise a stop request on this node: `python -c <this file> RUN_DIR DEADLINE REASON` (rlaunch stop --save).

Writes RUN_DIR/stop-request.json (`{"deadline": EPOCH, "reason": ..., "time": EPOCH}`) atomically, which the job
reads through rlaunch_job.should_stop (docs/preemption.md). Standard library only. The run directory must be a real
directory of ours (lstat: no symlink, our uid), as every other run-dir file the head asks a node to write.
Prints one JSON line: {"ok": true, "path": ...} or {"ok": false, "error": ...}.
"""

import json
import os
import stat
import sys
import time

STOP_FILE = "stop-request.json"


def main(argv):
    if len(argv) != 4:
        return {"ok": False, "error": "usage: stopreq.py RUN_DIR DEADLINE REASON"}
    run_dir, deadline, reason = argv[1], float(argv[2]), argv[3][:500]
    try:
        st = os.lstat(run_dir)
    except OSError as exc:
        return {"ok": False, "error": f"{run_dir}: {exc.strerror}"}
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return {"ok": False, "error": f"{run_dir}: not a directory owned by uid {os.geteuid()}"}
    path = os.path.join(run_dir, STOP_FILE)
    tmp = os.path.join(run_dir, f".{STOP_FILE}.{os.getpid()}")
    data = json.dumps({"deadline": deadline, "reason": reason, "time": time.time()}).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return {"ok": True, "path": path}


if __name__ == "__main__":
    try:
        reply = main(sys.argv)
    except (OSError, ValueError) as exc:
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(reply))
