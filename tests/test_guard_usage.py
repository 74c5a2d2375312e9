"""The guard's per-rank usage fields (rank, CPU seconds, I/O bytes) read from a real process's /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from launcher.node import guard

BURN = "import sys, time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
BURN += "sys.stdout.write('x' * 4096); sys.stdout.flush(); time.sleep(30)\n"


def test_usage_reports_rank_cpu_and_io_of_a_rank_process() -> None:
    env = dict(os.environ, RANK="5")
    proc = subprocess.Popen([sys.executable, "-c", BURN], env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        info: dict = {}
        while time.monotonic() < deadline:
            st = guard.read_stat(proc.pid)
            assert st is not None
            info = guard.usage(st)
            if info.get("cpu", 0) >= 0.3 and info.get("io", 0) >= 4096:
                break
            time.sleep(0.1)
        assert info["rank"] == 5 and info["cpu"] >= 0.3 and info["io"] >= 4096, info
        record = guard.describe_with_usage([st])[0]
        assert record["pid"] == proc.pid and record["rank"] == 5 and "cpu" in record
    finally:
        proc.kill()
        proc.wait()


def test_a_process_without_rank_gets_no_usage_fields() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RANK"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    try:
        st = guard.read_stat(proc.pid)
        assert st is not None
        assert guard.usage(st) == {"rank": None}
    finally:
        proc.kill()
        proc.wait()
