"""`rlaunch validate` end to end: real CLI, real torchrun/gloo probes on this machine (--local) and on simulated
SSH nodes (tests/simnodes.py). Every run is judged from its JSON report and its exit code; afterwards the nodes'
process tables (read from /proc of each node's PID namespace) must hold nothing of ours."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import TORCH_EXTENSIONS, assert_nothing_left, scaled

from launcher.validate.stages import bad_from_pairs, fail_step, round_robin_pairs, stages_to_run

ROOT = Path(__file__).resolve().parents[1]
PROLOG = ROOT / "ops" / "slurm" / "rlaunch-prolog"
NO_TORCH_PYTHON = "/usr/bin/python3"  # Debian's python: no torch installed (checked by the test)
RUN_TIMEOUT = 900


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "rlaunch-home"


@pytest.fixture
def shared_ckpt() -> Iterator[Path]:
    """Checkpoints every simulated node sees: /var/tmp is not private per node (their /tmp is)."""
    path = Path("/var/tmp") / f"rlaunch-validate-test-{os.getpid()}-{time.time_ns()}"
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def validate(*args: str, home: Path, timeout: float = RUN_TIMEOUT) -> tuple[int, dict | None, str]:
    """Run `rlaunch validate ... --json` in its own session; returns (exit code, report, stderr). Its stall limit
    (hidden --stall-timeout, 120 s by default) follows the machine's load like every e2e limit (e2e_helpers)."""
    if "--stall-timeout" not in args:
        args = (*args, "--stall-timeout", f"{scaled(120):.0f}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "launcher.cli", "validate", *args],
        cwd=ROOT,
        env={**os.environ, "RLAUNCH_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=scaled(timeout))
    except (
        BaseException
    ):  # our timeout, pytest-timeout's, Ctrl-C: its runs must not hold the nodes for the next test
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise
    report = json.loads(out) if "--json" in args and out.strip() else None
    return proc.returncode, report, err


def checks_of(report: dict, stage: str | None = None) -> list[dict]:
    return [c for s in report["stages"] if stage in (None, s["name"]) for c in s["checks"]]


def status_of(report: dict, stage: str, name: str, node: str = "") -> str:
    found = [c["status"] for c in checks_of(report, stage) if c["name"] == name and c["node"] == node]
    assert found, f"no check {stage}/{name}[{node}] in {checks_of(report, stage)}"
    return found[0]


def failed(report: dict) -> list[tuple[str, str]]:
    return [(c["name"], c["node"]) for c in checks_of(report) if c["status"] == "fail"]


def write_inventory(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def sim_inventory(cluster: Any, tmp_path: Path, nodes: int | None = None, **node_over: dict) -> Path:
    data = cluster.inventory_dict(
        health={"heartbeat_timeout": 4, "grace": 2},
        env={"TORCH_EXTENSIONS_DIR": str(TORCH_EXTENSIONS)},
    )
    data["nodes"] = data["nodes"][:nodes] if nodes else data["nodes"]
    for node in data["nodes"]:
        node.update(node_over.get(node["host"], {}))
    return write_inventory(tmp_path, data)


# ------------------------------------------------------------------------------------------ pure helpers


def test_pair_rounds_cover_every_pair_once_without_sharing_a_node() -> None:
    for n in range(2, 8):
        hosts = [f"n{i}" for i in range(n)]
        rounds = round_robin_pairs(hosts)
        pairs = [frozenset(p) for r in rounds for p in r]
        assert len(pairs) == len(set(pairs)) == n * (n - 1) // 2
        for r in rounds:
            used = [h for p in r for h in p]
            assert len(used) == len(set(used))


def test_a_node_failing_with_every_partner_is_named() -> None:
    ok = {("a", "b"): True, ("a", "c"): False, ("b", "c"): False, ("a", "d"): True, ("b", "d"): True}
    ok[("c", "d")] = False
    assert bad_from_pairs(["a", "b", "c", "d"], ok) == ["c"]
    assert bad_from_pairs(["a", "b", "c"], {("a", "b"): False, ("a", "c"): True, ("b", "c"): True}) == []


def test_stage_order_and_fault_step() -> None:
    assert stages_to_run("cluster", only=False) == ["single", "dual", "cluster"]
    assert stages_to_run("dual", only=True) == ["dual"]
    assert 2 < fail_step(4) <= 4 and 2 < fail_step(8) <= 8


# ------------------------------------------------------------------------------------------ bad input


def test_bad_input_exits_2(tmp_path: Path, home: Path) -> None:
    one_gpu = write_inventory(
        tmp_path, {"nodes": [{"host": "gpu1", "gpus": 1}], "job": {"kind": "command", "command": ["true"]}}
    )
    code, _, err = validate(str(one_gpu), "--stage", "triple", home=home)
    assert code == 2 and "triple" in err
    code, _, err = validate(str(one_gpu), "--stage", "dual", "--device", "cuda", home=home)
    assert code == 2 and "gpu1" in err and "1 GPU" in err  # 2 ranks, 1 GPU: refused before any SSH
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = validate(str(one_gpu), "--baseline", str(tmp_path / "bad.json"), home=home)
    assert code == 2 and "baseline" in err
    code, _, err = validate(str(one_gpu), "--baseline", str(tmp_path / "missing.json"), home=home)
    assert code == 2
    code, _, err = validate("--stage", "single", home=home)
    assert code == 2 and "--local" in err
    code, _, err = validate("--local", "--stage", "cluster", home=home)
    assert code == 2
    code, _, err = validate("--local", "--steps", "2", home=home)
    assert code == 2 and "--steps" in err


# ------------------------------------------------------------------------------------------ this machine


@pytest.mark.slow
def test_local_single_passes_with_junit_and_prometheus(tmp_path: Path, home: Path) -> None:
    junit, prom = tmp_path / "v.xml", tmp_path / "v.prom"
    code, report, err = validate(
        "--local", "--stage", "single", "--budget", f"{scaled(300):.0f}", "--junit", str(junit), "--prom", str(prom), "--json",
        home=home,
    )  # fmt: skip
    assert code == 0, err
    assert report is not None and report["verdict"] == "pass"
    names = {c["name"]: c["status"] for c in checks_of(report, "single")}
    assert names["torch_import"] == names["loss_decreases"] == names["dataloader_matches"] == "pass"
    assert names["gpus_visible"] == "skip"  # --device cpu
    assert 'failures="0"' in junit.read_text()
    assert "rlaunch_validate_ok 1.0" in prom.read_text()


@pytest.mark.slow
def test_local_resume_from_a_wrong_checkpoint_fails_the_resume_check(home: Path) -> None:
    code, report, err = validate(
        "--local", "--stage", "dual", "--only", "--inject", "wrong-checkpoint", "--json", home=home
    )
    assert code == 1, err
    assert report is not None
    assert status_of(report, "dual", "fault_injected", report["stages"][0]["checks"][0]["node"]) == "pass"
    assert [name for name, _ in failed(report)] == ["resume_from_latest"]
    plots = report["stages"][0]["artifacts"]
    assert plots and all(Path(p).is_file() and Path(p).read_text().startswith("<svg") for p in plots.values())
    assert all(str(home) in p for p in plots.values())  # in the resumed run's record


@pytest.mark.slow
def test_slurm_prolog_runs_the_real_validate(tmp_path: Path, home: Path) -> None:
    (tmp_path / "textfiles").mkdir()  # node_exporter's directory exists on a real node
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "RLAUNCH_DEFAULTS": "/dev/null",
        "RLAUNCH_PROLOG_DRAIN": "0",
        "RLAUNCH_PROLOG_BUDGET": f"{scaled(300):.0f}",
        "RLAUNCH_TEXTFILE_DIR": str(tmp_path / "textfiles"),
        "RLAUNCH_HOME": str(home),
    }
    proc = subprocess.run(
        ["bash", str(PROLOG)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(RUN_TIMEOUT),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rlaunch_ops_last_success" in (tmp_path / "textfiles" / "rlaunch_prolog.prom").read_text()


# ------------------------------------------------------------------------------------------ simulated nodes


@pytest.mark.slow
def test_node_without_torch_fails_single_naming_it(sim3: Any, tmp_path: Path, home: Path) -> None:
    assert subprocess.run([NO_TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode != 0
    inv = sim_inventory(sim3, tmp_path, node2={"python": NO_TORCH_PYTHON})
    code, report, err = validate(str(inv), "--stage", "single", "--json", home=home)
    assert code == 1, err
    assert report is not None
    assert failed(report) == [("torch_import", "node2")]
    assert status_of(report, "single", "probe_completed", "node2") == "skip"
    assert status_of(report, "single", "loss_decreases", "node1") == "pass"
    assert_nothing_left(sim3)


@pytest.mark.slow
def test_dual_passes_and_baseline_round_trip_flags_a_regression(
    sim3: Any, tmp_path: Path, home: Path, shared_ckpt: Path
) -> None:
    inv = sim_inventory(sim3, tmp_path)
    saved = tmp_path / "baseline.json"
    common = ["--ckpt-dir", str(shared_ckpt), "--json"]
    code, report, err = validate(
        str(inv), "--stage", "dual", "--save-baseline", str(saved), *common, home=home
    )
    assert code == 0, err
    assert report is not None and {s["name"] for s in report["stages"]} == {"single", "dual"}
    for name in ("allreduce_correct", "ddp_matches_single", "resume_losses_match", "resume_from_latest"):
        assert status_of(report, "dual", name, "node1") == "pass"
    assert Path(report["stages"][1]["artifacts"]["dual.loss_plot"]).is_file()
    metrics = json.loads(saved.read_text())["metrics"]
    assert {"dual.allreduce.busbw_gbps@node1", "single.probe.final_loss@node3"} <= set(metrics)

    # The same numbers back (losses are deterministic; throughput gets a wide tolerance on a shared machine),
    # except a busbw the cluster no longer reaches.
    metrics["dual.allreduce.busbw_gbps@node1"]["value"] *= 1000
    faked = tmp_path / "faked.json"
    faked.write_text(json.dumps({**json.loads(saved.read_text()), "metrics": metrics}))
    loose = ["--tolerance", "samples_per_s=0.95", "--tolerance", "busbw_gbps=0.5"]
    # --no-fault: kill + resume was proven above; the regression check needs the measurements only.
    code, report, err = validate(
        str(inv),
        "--stage",
        "dual",
        "--only",
        "--no-fault",
        "--baseline",
        str(faked),
        *loose,
        *common,
        home=home,
    )
    assert code == 1, err
    assert report is not None
    assert failed(report) == [("regression:dual.allreduce.busbw_gbps", "node1")]
    assert status_of(report, "dual", "fault_injected", "node1") == "skip"
    assert status_of(report, "baseline", "regression:dual.ddp.final_loss", "node1") == "pass"
    assert_nothing_left(sim3)


@pytest.mark.slow
def test_cluster_stage_passes_on_two_nodes(sim3: Any, tmp_path: Path, home: Path, shared_ckpt: Path) -> None:
    inv = sim_inventory(sim3, tmp_path, nodes=2)
    # --only: single and dual (and their chaining) are covered above; this keeps the test to the cluster work.
    code, report, err = validate(
        str(inv), "--stage", "cluster", "--only", "--ckpt-dir", str(shared_ckpt), "--json", home=home
    )
    assert code == 0, err
    assert report is not None
    for name in ("allreduce_correct", "zero3_completed", "zero3_loss_decreases", "fault_injected"):
        assert status_of(report, "cluster", name) == "pass"
    assert status_of(report, "cluster", "resume_losses_match") == "pass"
    assert not any(Path(shared_ckpt).glob("*/*"))  # checkpoints removed afterwards
    assert_nothing_left(sim3)


@pytest.mark.slow
def test_node_cut_off_from_the_others_is_named_by_pairwise_isolation(
    sim_cluster: Any, tmp_path: Path, home: Path
) -> None:
    """Every run with node3 fails on c10d's unreachable-store retries (launcher/health/watch.py
    STORE_UNREACHABLE_RULE), not on the stall limit it used to wait out per pair (365 s in CI, 600+ at load 17)."""
    cluster = sim_cluster(3)
    node3 = cluster.node("node3")
    if not node3.netns:
        pytest.skip("needs network namespaces")
    # node3 keeps its directly connected link to the head (SSH works) but loses its route to the other nodes.
    subprocess.run(["ip", "-n", node3.netns, "route", "del", "default"], check=True)
    inv = sim_inventory(cluster, tmp_path)
    code, report, err = validate(
        str(inv), "--stage", "cluster", "--only", "--stall-timeout", f"{scaled(30):.0f}", "--json", home=home
    )
    assert code == 1, err
    assert report is not None
    assert status_of(report, "cluster", "allreduce_correct") == "fail"
    assert status_of(report, "cluster", "pair_allreduce[node1+node2]") == "pass"
    assert status_of(report, "cluster", "pairwise_isolation", "node3") == "fail"
    with_node3 = [
        c
        for c in checks_of(report, "cluster")
        if c["name"].startswith("pair_allreduce[") and "node3" in c["name"]
    ]
    assert with_node3 and all("cannot reach the master's store" in c["message"] for c in with_node3), (
        with_node3
    )
    assert ("pairwise_isolation", "node1") not in failed(report)
    assert status_of(report, "cluster", "zero3_completed") == "skip"
    assert_nothing_left(cluster, timeout=60)


@pytest.mark.slow
def test_unreachable_node_exits_3_naming_it(sim_cluster: Any, tmp_path: Path, home: Path) -> None:
    cluster = sim_cluster(2)
    cluster.kill_node("node2")
    inv = sim_inventory(cluster, tmp_path)
    code, report, err = validate(str(inv), "--stage", "single", "--json", home=home)
    assert code == 3, err
    assert "unreachable: node2" in err
    assert report is not None and status_of(report, "single", "reachable", "node2") == "fail"
    assert status_of(report, "single", "loss_decreases", "node1") == "pass"
    assert_nothing_left(cluster)
