"""The `rlaunch` command line as a user meets it: help, version, plan, init, bad input → exit 2 and one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RLAUNCH = [sys.executable, "-m", "launcher.cli"]


def rlaunch(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*RLAUNCH, *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def assert_clean_error(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "rlaunch: error:" in proc.stderr
    return proc.stderr


def test_help_lists_verbs_and_examples() -> None:
    proc = rlaunch("--help")
    assert proc.returncode == 0
    for verb in ("up", "down", "status", "logs", "validate", "doctor", "plan", "init"):
        assert verb in proc.stdout
    assert "Examples:" in proc.stdout and "Exit codes" in proc.stdout


def test_version() -> None:
    proc = rlaunch("--version")
    assert proc.returncode == 0 and "rlaunch" in proc.stdout and "0.1.0" in proc.stdout


def test_plan_on_shipped_example_prints_mappings() -> None:
    proc = rlaunch("plan", "examples/cluster.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "NCCL_NET_PLUGIN=ib" in proc.stdout and "NCCL_TIMEOUT is read by neither" in proc.stdout


def test_plan_json_is_one_object() -> None:
    proc = rlaunch("plan", "examples/local.yaml", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["world_size"] == 4 and len(data["nodes"]) == 2 and isinstance(data["warnings"], list)


def test_init_writes_a_starter_that_plans(tmp_path: Path) -> None:
    proc = rlaunch("init", str(tmp_path / "cluster.yaml"))
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "train.py").write_text("print(1)\n")
    proc = rlaunch("plan", str(tmp_path / "cluster.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["world_size"] == 16
    again = rlaunch("init", str(tmp_path / "cluster.yaml"))
    assert "already exists" in assert_clean_error(again)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nodes: [{host: a}]\njob: {kind: torchrun, script: t.py}\nmaster: {port: 70000}\n", "master.port"),
        ("nodes: [{host: a, gpus: 'x-1'}]\njob: {kind: torchrun, script: t.py}\n", "nodes.0.gpus"),
        ("nodes: [{host: a}]\njob: {kind: torchrun, script: t.py}\nnodez: 1\n", "did you mean 'nodes'"),
        ("nodes: [{host: a}]\njob: {kind: torchrun, script: missing.py}\n", "file not found"),
        ("nodes: [{host: a}\n", "YAML syntax error"),
    ],
)
def test_bad_input_is_one_located_line(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    err = assert_clean_error(rlaunch("plan", str(path)))
    assert needle in err and str(path) in err


def test_missing_inventory_file() -> None:
    err = assert_clean_error(rlaunch("plan", "/nonexistent/cluster.yaml"))
    assert "file not found" in err


def test_hostfile_without_slots(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text("a slots=1\nb\n")
    err = assert_clean_error(rlaunch("plan", "examples/local.yaml", "--hostfile", str(tmp_path / "hosts")))
    assert f"{tmp_path / 'hosts'}:2" in err


def plan_from_slurm(inventory: str, nodelist: str, gpus_on_node: str) -> subprocess.CompletedProcess:
    """`rlaunch plan INVENTORY --from-slurm --json` inside a (pretend) allocation: Slurm's variables only."""
    env = {"SLURM_JOB_NODELIST": nodelist, "SLURM_GPUS_ON_NODE": gpus_on_node}
    return rlaunch("plan", inventory, "--from-slurm", "--json", env=env)


def test_from_slurm_expands_nodelist() -> None:
    proc = plan_from_slurm("examples/cluster.yaml", "gpu-[01-02]", "8")
    assert (
        proc.returncode == 2 and "master.node 'node01' is not in nodes" in proc.stderr
    )  # the example names node01
    proc = plan_from_slurm("examples/local.yaml", "gpu-[01-03]", "2")
    assert proc.returncode == 0, proc.stderr
    assert [n["host"] for n in json.loads(proc.stdout)["nodes"]] == ["gpu-01", "gpu-02", "gpu-03"]


def test_status_without_runs_is_a_clear_error(tmp_path: Path) -> None:
    err = assert_clean_error(rlaunch("status", env={"RLAUNCH_HOME": str(tmp_path)}))
    assert "no runs recorded" in err


def test_non_editable_install_finds_templates_and_node_files(tmp_path: Path) -> None:
    """`pip install .` (not editable) must ship templates/ and launcher/node/ as package data."""
    import shutil

    target = tmp_path / "site"
    # Built from a copy: setuptools keeps a build/ folder in the source tree, and a stale one hides a broken list.
    source = tmp_path / "src"
    junk = shutil.ignore_patterns(".venv", ".git", "build", ".cache", "__pycache__", "*.egg-info", ".rlaunch")
    shutil.copytree(ROOT, source, ignore=junk)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    assert (target / "launcher" / "templates" / "ds_z3.json").is_file()
    assert (target / "launcher" / "templates" / "env_mi300x.env").is_file()
    assert not (target / "templates").exists()  # package data of rlaunch, not a top-level `templates` package
    assert (target / "launcher" / "node" / "guard.py").is_file()
    env = {**os.environ, "PYTHONPATH": str(target)}
    work = tmp_path / "elsewhere"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "launcher.cli", "init", "c.yaml"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (work / "train.py").write_text("print(1)\n")
    code = "import launcher; from launcher import templates; print(launcher.__file__); print(templates.path('env_mi300x.env'))"
    where = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True)
    assert str(target) in where.stdout.splitlines()[0]
    proc = subprocess.run(
        [sys.executable, "-m", "launcher.cli", "plan", "c.yaml", "--json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "HIP_FORCE_DEV_KERNARG" in proc.stdout  # read from the installed env_mi300x.env


def test_logs_classify_json_names_line_category_severity(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "{'loss': 1.234, 'grad_norm': 0.5, 'learning_rate': 1e-4, 'epoch': 0.1}\n"
        "[rank3]: torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB.\n"
        "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    )
    proc = rlaunch("logs", "classify", str(log), "--json")
    assert proc.returncode == 1, proc.stderr  # a fatal line was found
    flags = [json.loads(line) for line in proc.stdout.splitlines()]
    assert flags == [
        {"line": 2, "category": "oom", "severity": "fatal", "text": flags[0]["text"]},
    ]
    assert "HIP out of memory" in flags[0]["text"]
    healthy = tmp_path / "ok.log"
    healthy.write_text("{'loss': 0.5}\n")
    assert rlaunch("logs", "classify", str(healthy)).returncode == 0
    assert "file not found" in assert_clean_error(rlaunch("logs", "classify", str(tmp_path / "missing.log")))


def test_data_check_cli_reports_bad_records_by_line(tmp_path: Path) -> None:
    data = tmp_path / "alpaca.jsonl"
    data.write_text(
        '{"instruction": "Say hi", "input": "", "output": "hi"}\n'
        '{"instruction": "", "output": "x"}\n'
        "not json\n"
    )
    proc = rlaunch("data", "check", str(data))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{data}:2:" in proc.stdout and f"{data}:3:" in proc.stdout
    good = tmp_path / "good.jsonl"
    good.write_text('{"instruction": "Say hi", "input": "", "output": "hi"}\n')
    assert rlaunch("data", "check", str(good)).returncode == 0


def test_doctor_local_json() -> None:
    proc = rlaunch("doctor", "--local", "--json", "--timeout", "90")
    report = json.loads(proc.stdout)
    assert proc.returncode == (0 if report["ok"] else 1), proc.stderr  # exit 1 only for a failed error check
    errors = [c for c in report["checks"] if c["status"] == "fail" and c["severity"] == "error"]
    assert report["ok"] is (errors == [])
    assert len(report["nodes"]) == 1 and report["facts"][report["nodes"][0]]["values"]["python"]["value"]
    assert any(c["name"] == "reachable" and c["status"] == "pass" for c in report["checks"])
    assert "needs an inventory" in assert_clean_error(rlaunch("doctor"))
