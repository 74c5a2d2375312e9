"""`status` and `down` through a detached run's supervisor, on simulated SSH nodes (issue 23).

The proof that a verb touched no node is each node's own sshd log (tests/simnodes.py runs sshd with LogLevel
INFO: one "Accepted publickey" line per new SSH connection): the supervisor's connections were opened before
the count starts, so every new line is a connection the verb opened. `status --probe` is the control: it must
add one per node. Nothing left behind is read from the nodes' process tables (assert_nothing_left).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_helpers import assert_nothing_left, rlaunch, wait_for

from cluster.inventory import from_mapping
from launcher import lifecycle, records, supervise

pytestmark = [pytest.mark.ssh, pytest.mark.usefixtures("run_home")]

LONG_JOB = ["sh", "-c", "while true; do echo tick; sleep 1; done"]


def logins(cluster: Any) -> dict[str, int]:
    """New SSH connections each node's sshd accepted so far."""
    return {
        node.name: (node.state_dir / "sshd.log").read_text(errors="replace").count("Accepted publickey")
        for node in cluster.nodes
    }


def detached(cluster: Any) -> str:
    """A long command job on every node, detached; returns once the supervisor's view covers every node."""
    inv = from_mapping(cluster.inventory_dict(job={"kind": "command", "command": LONG_JOB}))
    run_id, started = lifecycle.up(inv, detach=True)
    assert started.code == 0 and "supervisor pid" in started.summary, started.summary

    def every_node_in_view() -> bool:
        info = lifecycle.status(run_id)
        view = info.get("view") or {}
        heard = all(node.get("last_heard_age_s") is not None for node in info["nodes"].values())
        # The job's processes, not only the guard's first procs record: the supervisor follows from the start, so
        # that record may come before the job's shell has started.
        job = all(
            any("tick" in p["cmd"] or "sh" in p["cmd"] for p in node.get("descendants") or ())
            for node in info["nodes"].values()
        )
        return (
            view.get("source") == "supervisor"
            and not view.get("asked")
            and len(info["nodes"]) == 3
            and heard
            and job
        )

    # Followed, and each follower's procs record shows the job's processes.
    wait_for(every_node_in_view, 60, "the supervisor's live view of every node")
    return run_id


def test_status_through_the_supervisor_touches_no_node(sim3: Any) -> None:
    run_id = detached(sim3)
    try:
        before = logins(sim3)
        done = rlaunch("status", run_id, "--json", timeout=60)
        after = logins(sim3)
        assert done.returncode == 0, done.stderr
        info = json.loads(done.stdout)
        assert after == before, f"status opened SSH connections: {before} -> {after}"
        assert info["view"]["source"] == "supervisor" and info["view"]["asked"] == [], info["view"]
        assert 0 <= info["view"]["age_s"] <= records.LIVE_STALE_S
        for host, node in info["nodes"].items():
            # The direct path's fields (state, alive, descendants), from what the supervisor's follower sent.
            assert node["state"] == "running" and node["alive"] is True, (host, node)
            assert any("tick" in p["cmd"] or "sh" in p["cmd"] for p in node["descendants"]), (host, node)
            assert node["last_heard_age_s"] <= records.NODE_SILENT_S
        shown = rlaunch("status", run_id, timeout=60)
        assert shown.returncode == 0 and "the supervisor's live view" in shown.stdout, shown.stdout
        # The control: --probe asks every node itself, one new connection each.
        probed = rlaunch("status", run_id, "--json", "--probe", timeout=60)
        assert probed.returncode == 0, probed.stderr
        assert json.loads(probed.stdout)["view"] == {"source": "nodes", "why": "--probe"}
        counted = logins(sim3)
        assert all(counted[h] == after[h] + 1 for h in after), (after, counted)
        assert {h: n["state"] for h, n in json.loads(probed.stdout)["nodes"].items()} == {
            h: "running" for h in after
        }
    finally:
        rlaunch("down", run_id, timeout=120)
    assert_nothing_left(sim3)


def test_down_through_the_supervisor_asks_no_node_again_and_leaves_nothing(sim3: Any) -> None:
    run_id = detached(sim3)
    before = logins(sim3)
    done = rlaunch("down", run_id, "--json", timeout=120)
    after = logins(sim3)
    assert done.returncode == 0, done.stdout + done.stderr
    replies = json.loads(done.stdout)["nodes"]
    assert {h: r["via"] for h, r in replies.items()} == {h: "supervisor" for h in before}, replies
    assert all(r["error"] is None and r["final"]["remaining"] == [] for r in replies.values()), replies
    assert after == before, (
        f"down opened SSH connections after the supervisor's teardown: {before} -> {after}"
    )
    assert_nothing_left(sim3)  # the nodes' own process tables, not the supervisor's word
    state = records.RunRecord.open(run_id).read_state()
    assert state["state"] == "stopped" and not supervise.supervisor_alive(state), state
