"""The test harness itself (tests/simnodes.py): nodes never outlive the process that started them.

A SIGKILLed test worker once left 16 namespaced sshds running and their namespaces behind. Now the kernel kills a
dead harness's nodes (parent-death signal), and the next harness reaps its namespaces, veths and state directory."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import simnodes
from e2e_helpers import wait_for

pytestmark = pytest.mark.ssh

HARNESS = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import simnodes
cluster = simnodes.SimCluster(2).start()
print(json.dumps({"pids": [n.init_pid for n in cluster.nodes], "netns": [n.netns for n in cluster.nodes],
                  "veths": [n.host_veth for n in cluster.nodes], "base": str(cluster.base)}), flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_sigkilled_harness_takes_its_nodes_along_and_the_next_one_reaps_the_rest() -> None:
    reason = simnodes.unavailable_reason()
    if reason:
        pytest.skip(reason)
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(Path(__file__).parent)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert harness.stdout is not None
        made = json.loads(harness.stdout.readline())
        # The parent-death signal follows the thread that spawned: start()'s pool threads are gone by now, and
        # the nodes must still be up a second later (they were spawned from a thread that lives on).
        time.sleep(1.0)
        assert all(alive(pid) for pid in made["pids"])
    finally:
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait()
    wait_for(lambda: not any(alive(pid) for pid in made["pids"]), 10, "the dead harness's sshds to die")
    network = made["netns"][0] is not None
    if network:
        assert set(made["netns"]) <= set(simnodes._netns_names())  # what the kernel cannot take
    with open(simnodes.ALLOC_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        removed = simnodes.reap_leftovers()
    assert Path(made["base"]).name in removed and not Path(made["base"]).exists()
    if network:
        assert not set(made["netns"]) & set(simnodes._netns_names())
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
        assert not any(f"{veth}@" in links or f"{veth}:" in links for veth in made["veths"])
    assert not (simnodes.OWNERS / f"{Path(made['base']).name}.json").exists()
