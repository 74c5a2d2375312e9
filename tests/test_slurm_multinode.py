"""Slurm across 4 real slurmd (tests/slurm_fixture.py `start_slurm_cluster`: munged, slurmctld, MariaDB + slurmdbd
on the head, one slurmd per simulated node in its own namespaces, hostname = NodeName).

One cluster for the module. First the ops scripts against the multi-node cluster (a prolog failing on one node
drains that node only; the epilog runs on every node; `rlaunch nodes --drain` drains the struck node and no
other), then one allocation of all 4 nodes (`salloc --no-shell`; the test plays the batch script) for the
one-step transport (`run_all` and `start_all` are ONE job step each, counted with `sacct`) and `up --from-slurm`
of a real torchrun/gloo job on 4 nodes, with a restart: job steps per run counted with `sacct`, whatever N.
After every run the process table of every node is read: nothing left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import wait_for
from slurm_fixture import (
    SlurmCluster,
    multinode_missing,
    start_slurm_cluster,
    write_standin_validate,
    write_wrapper,
)

from cluster.inventory import load_inventory
from cluster.slurm import SlurmTransport
from cluster.transport import Endpoint
from launcher import lifecycle, records

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
TRAIN = str(ROOT / "examples" / "train.py")
OPS = ROOT / "ops"
N = 4


def steps_bound(restarts: int) -> int:
    """Issue 23: job steps per run ≤ 3 + restarts, whatever the node count."""
    return 3 + restarts


pytestmark = [
    pytest.mark.skipif(multinode_missing() is not None, reason=str(multinode_missing())),
    pytest.mark.xdist_group("slurm"),
]

# Fails only on the node named as its first argument: the prolog runs it on every node, in the node's own UTS
# namespace, so `hostname` is the node's Slurm name.
FAIL_ON = """#!/bin/bash
if [[ $(hostname) == "$1" ]]; then exec "$2" fail gpu_memory; fi
exec "$2" pass
"""


class Multi:
    def __init__(self, cluster: SlurmCluster, root: Path, standin: Path):
        self.cluster, self.root, self.standin = cluster, root, standin
        self.defaults = root / "rlaunch.env"
        self.log = root / "ops.log"
        self.job_id: str | None = None

    def configure(self, **settings: str) -> None:
        base = {"RLAUNCH_LOG": str(self.log), "RLAUNCH_SYSLOG": "0", "RLAUNCH_PYTHON": PYTHON, **settings}
        self.defaults.write_text("".join(f"{k}='{v}'\n" for k, v in base.items()))

    @property
    def env(self) -> dict[str, str]:
        """What a batch script in the allocation sees."""
        assert self.job_id
        nodelist = ",".join(self.cluster.node_names)
        return {**self.cluster.env, "SLURM_JOB_ID": self.job_id, "SLURM_JOB_NODELIST": nodelist}

    def transport(self, **options: Any) -> SlurmTransport:
        hosts = self.cluster.node_names
        return SlurmTransport({h: Endpoint(h, h) for h in hosts}, environ=self.env, python=PYTHON, **options)

    def new_steps(self, since: set[str]) -> list[tuple[str, str]]:
        assert self.job_id
        return self.cluster.new_steps(self.job_id, since)

    def nothing_left(self) -> None:
        """Every node's process table (its own PID namespace) holds nothing but slurmd."""
        wait_for(
            lambda: not any(self.cluster.node_pids(n) for n in self.cluster.node_names),
            30,
            "every node's process table to be empty",
        )


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Multi]:
    root = Path(tmp_path_factory.mktemp("multi"))
    root.chmod(0o755)
    # The nodes mount their own /tmp: what they run (prolog, stand-in, defaults, log) lives under /var/tmp.
    shared = Path(
        subprocess.check_output(["mktemp", "-d", "/var/tmp/rlaunch-multi-XXXXXX"], text=True).strip()
    )
    shared.chmod(0o755)
    defaults = shared / "rlaunch.env"
    prolog = write_wrapper(shared / "prolog", OPS / "slurm" / "rlaunch-prolog", defaults)
    epilog = write_wrapper(shared / "epilog", OPS / "slurm" / "rlaunch-epilog", defaults)
    standin = write_standin_validate(shared)
    fail_on = shared / "fail-on"
    fail_on.write_text(FAIL_ON)
    fail_on.chmod(0o755)
    cluster = start_slurm_cluster(N, prolog=prolog, epilog=epilog)
    setup = Multi(cluster, shared, standin)
    setup.configure(RLAUNCH_PROLOG_CMD=f"{standin} pass")
    try:
        yield setup
    finally:
        if setup.job_id:
            cluster.run("scancel", setup.job_id, timeout=30)
        cluster.stop()
        subprocess.run(["rm", "-rf", str(shared)], check=False)


# ------------------------------------------------------------------------------------ ops, multi-node


def test_prolog_failing_on_one_node_drains_that_node_only(multi: Multi) -> None:
    multi.configure(RLAUNCH_PROLOG_CMD=f"{multi.root / 'fail-on'} sn3 {multi.standin}")
    try:
        done = multi.cluster.run("srun", f"-N{N}", "-t", "1", "true", timeout=120)
        assert done.returncode != 0
        states = multi.cluster.wait_states("drained", ["sn3"])
        assert states["sn3"][0] == "drained", multi.cluster.logs()
        assert states["sn3"][1].startswith("rlaunch: gpu_memory failed "), states
        others = multi.cluster.node_states()
        assert all(not others[n][0].startswith("drain") for n in ("sn1", "sn2", "sn4")), others
    finally:
        multi.configure(RLAUNCH_PROLOG_CMD=f"{multi.standin} pass")
        multi.cluster.resume_all()


def test_epilog_runs_on_every_node(multi: Multi) -> None:
    # Each node's own /tmp gets the epilog's metrics file: that it is there on every node says it ran there.
    textfiles = "/tmp/rlaunch-textfile"
    for node in multi.cluster.node_names:
        multi.cluster.node_path(node, textfiles).mkdir(exist_ok=True)
    multi.configure(RLAUNCH_PROLOG_CMD=f"{multi.standin} pass", RLAUNCH_TEXTFILE_DIR=textfiles)
    try:
        done = multi.cluster.run("srun", f"-N{N}", "-t", "1", "true", timeout=120)
        assert done.returncode == 0, done.stderr + multi.cluster.logs()

        def ran_on() -> set[str]:
            return {
                n
                for n in multi.cluster.node_names
                if multi.cluster.node_path(n, f"{textfiles}/rlaunch_epilog.prom").exists()
            }

        wait_for(lambda: ran_on() == set(multi.cluster.node_names), 60, "the epilog's metrics on every node")
        prom = multi.cluster.node_path("sn4", f"{textfiles}/rlaunch_epilog.prom").read_text()
        assert 'job_kind="epilog"' in prom and "rlaunch_ops_last_success" in prom, prom
        assert multi.cluster.wait_states("idle")
    finally:
        multi.configure(RLAUNCH_PROLOG_CMD=f"{multi.standin} pass")


def test_nodes_drain_drains_the_struck_node_only(multi: Multi, tmp_path: Path) -> None:
    from launcher import ledger

    home = tmp_path / "home"
    gpu = {"kind": "gpu", "category": "gpu-fault", "text": "amdgpu: page fault"}
    ledger.append([ledger.strike("sn2", f"run-{i}", "gpu-fault", gpu) for i in range(3)], base=home)
    ledger.append([ledger.strike("sn4", "run-0", "gpu-fault", gpu)], base=home)
    env = {**multi.cluster.env, "RLAUNCH_HOME": str(home), "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [PYTHON, "-m", "launcher.cli", "nodes", "--drain", "3"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "drained sn2" in done.stdout and "sn4" not in done.stdout
        states = multi.cluster.node_states()
        assert states["sn2"][0].startswith("drain") and states["sn2"][1].startswith("rlaunch: 3 strike"), (
            states
        )
        assert all(states[n][0] == "idle" for n in ("sn1", "sn3", "sn4")), states
    finally:
        multi.cluster.resume_all()


# ------------------------------------------------------------------------------- the one-step transport


@pytest.fixture(scope="module")
def alloc(multi: Multi) -> Multi:
    """All 4 nodes for the rest of the module (the ops tests above needed them free)."""
    multi.configure(RLAUNCH_PROLOG_CMD=f"{multi.standin} pass")
    multi.job_id = multi.cluster.allocate(N)
    return multi


@pytest.fixture
def in_alloc(alloc: Multi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Multi:
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "rlaunch-home"))
    for name, value in alloc.env.items():
        if name.startswith("SLURM") or name == "PATH":
            monkeypatch.setenv(name, value)
    return alloc


def test_run_all_is_one_step_whatever_the_node_count(alloc: Multi) -> None:
    seen: set[str] = set()
    alloc.new_steps(seen)
    transport = alloc.transport()
    script = "import os,sys,socket; d=sys.stdin.read(); print(os.environ['SLURMD_NODENAME'], socket.gethostname(), len(d)); sys.exit(3 if d.startswith('three') else 0)"
    payload = {
        h: (b"three" if h == "sn3" else b"x" * (200_000 + i)) for i, h in enumerate(alloc.cluster.node_names)
    }
    group = transport.run_all(alloc.cluster.node_names, [PYTHON, "-c", script], stdin_for=payload.get)
    for host, result in group.results.items():
        assert result.error is None, result.why()
        assert result.stdout.split() == [host, host, str(len(payload[host]))]  # hostname is the NodeName
        assert result.exit_code == (3 if host == "sn3" else 0)
    # Whole allocation: the bundle went by sbcast; a subset: on the step's stdin. One step each.
    two = transport.run_all(["sn2", "sn4"], ["sh", "-c", 'echo "$SLURMD_NODENAME"'])
    assert {h: r.stdout.strip() for h, r in two.results.items()} == {"sn2": "sn2", "sn4": "sn4"}
    missing = transport.run_all(alloc.cluster.node_names, ["/nonexistent/prog"])
    assert {r.exit_code for r in missing.results.values()} == {127}
    steps = alloc.new_steps(seen)
    assert len(steps) == 3, steps
    per_node = alloc.transport(one_step=False).run_all(alloc.cluster.node_names, ["true"])
    assert per_node.ok
    assert len(alloc.new_steps(seen)) == N  # today's path, for comparison: one step per node
    alloc.nothing_left()


def test_start_all_is_one_step_and_one_write_reaches_every_node(alloc: Multi) -> None:
    seen: set[str] = set()
    alloc.new_steps(seen)
    lines: list[tuple[str, str, str]] = []
    code = "import os,sys\nprint('up', os.getpid(), flush=True)\nfor l in sys.stdin: print('got', l.strip(), flush=True)"
    procs = alloc.transport().start_all(
        alloc.cluster.node_names,
        lambda h: [PYTHON, "-u", "-c", code],
        lambda h, s, t: lines.append((h, s, t)),
    )
    try:
        wait_for(lambda: {h for h, _, t in lines if t.startswith("up ")} == set(procs), 60, "every task up")
        for host in procs:  # what the heartbeat thread does: one write per node view, one write in all
            assert procs[host].try_write(b"hb1\n")
        wait_for(lambda: {h for h, _, t in lines if t == "got hb1"} == set(procs), 30, "hb1 on every node")
        assert [t for h, _, t in lines if t == "got hb1"].count("got hb1") == N  # once per node, not N times
        assert all(p.poll() is None for p in procs.values())
    finally:
        for proc in procs.values():
            proc.close()
    wait_for(lambda: all(p.poll() is not None for p in procs.values()), 30, "the step to end")
    assert len(alloc.new_steps(seen)) == 1
    alloc.nothing_left()


def write_inventory(tmp_path: Path, job: dict[str, Any], **over: Any) -> Path:
    data = {
        "cluster": "slurm-multi",
        "transport": "slurm",
        "python": PYTHON,
        "workdir": "/tmp/rlaunch",  # each node's own /tmp
        "profile": "cpu",
        "master": {"port": "auto"},
        "env": {"OMP_NUM_THREADS": "1"},
        "job": job,
        "health": {"heartbeat_timeout": 10, "grace": 2, "stall_timeout": 120},
        **over,
    }
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps(data))
    return path


def test_up_from_slurm_torchrun_on_four_nodes_in_two_steps(in_alloc: Multi, tmp_path: Path) -> None:
    seen: set[str] = set()
    in_alloc.new_steps(seen)
    job = {"kind": "torchrun", "script": TRAIN, "args": ["--steps", "3"], "nproc_per_node": 1, "timeout": 120}
    inv = load_inventory(write_inventory(tmp_path, job), from_slurm=in_alloc.env)
    assert [n.host for n in inv.nodes] == in_alloc.cluster.node_names
    lines: list[tuple[str, int | None, str]] = []
    began = time.monotonic()
    run_id, outcome = lifecycle.up(inv, on_line=lambda h, r, t: lines.append((h, r, t)))
    assert outcome.code == 0, outcome.summary + "\n" + "\n".join(t for _, _, t in lines[-30:])
    assert records.RunRecord.open(run_id).plan_json()["world_size"] == N
    assert any(r == 0 and t.startswith("step=3 loss=") for _, r, t in lines), lines[-20:]
    steps = in_alloc.new_steps(seen)
    # keep_runs' clean-up (one step for 4 nodes) + the guards' step (push, checks, guards): ≤ 3 whatever N
    assert len(steps) <= steps_bound(restarts=0), steps
    assert len(steps) == 2, steps  # as built: the clean-up + the guards' step
    print(f"\n4 nodes, clean run: {len(steps)} job steps, {time.monotonic() - began:.1f} s")
    in_alloc.nothing_left()


def test_restart_after_a_crash_costs_a_constant_number_of_steps(in_alloc: Multi, tmp_path: Path) -> None:
    seen: set[str] = set()
    in_alloc.new_steps(seen)
    # Attempt 0 crashes on sn2 (exit 1 before any work); attempt 1 runs through. A marker under /var/tmp
    # (shared by the nodes) tells the attempts apart.
    marker = in_alloc.root / f"crashed-{os.getpid()}-{time.monotonic_ns()}"
    code = (
        "import os,socket,sys,time\n"
        f"m={str(marker)!r}\n"
        "if socket.gethostname()=='sn2' and not os.path.exists(m):\n"
        "    open(m,'w').close(); print('crashing', flush=True); sys.exit(1)\n"
        "time.sleep(1); print('done', flush=True)\n"
    )
    job = {"kind": "command", "command": [PYTHON, "-c", code]}
    inv = load_inventory(
        write_inventory(tmp_path, job, restart={"max_restarts": 1, "backoff": 1}), from_slurm=in_alloc.env
    )
    lines: list[tuple[str, int | None, str]] = []
    run_id, outcome = lifecycle.up(inv, on_line=lambda h, r, t: lines.append((h, r, t)))
    assert outcome.code == 0, outcome.summary
    assert marker.exists()
    state = records.RunRecord.open(run_id).read_state()
    assert state.get("attempt") == 1, state
    steps = in_alloc.new_steps(seen)
    # keep_runs' clean-up, then ONE step per attempt: push, guards, and the failed attempt's collect in it.
    assert len(steps) <= steps_bound(restarts=1), steps
    assert len(steps) == 1 + 2, steps  # as built: the clean-up + one step per attempt
    print(f"\n4 nodes, one restart: {len(steps)} job steps: {[name for _, name in steps]}")
    in_alloc.nothing_left()
    marker.unlink()
