"""Issue 20 items 4-7 outside the corpus: LLaMA-Factory from the project's own venv and doctor's import of its
entry, the path check `up` runs on the nodes before start, and the noise rlaunch itself made.

Real parts: the venv's python importing llamafactory (no stub anywhere), the node scripts (facts.py's import probe,
lfpaths.py) run as processes through the real LocalTransport; the push below the check is done by writing the
plan's files (the layer under test is the check).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.inventory import from_mapping
from cluster.transport import make_transport
from launcher import doctor, envrules, goodput, lifecycle
from launcher import plan as planning
from launcher.cli.run import _event_printer, finish_line
from launcher.health.events import Event
from launcher.health.watch import State, Watcher
from launcher.jobs.lfpaths import check_paths_on_nodes
from launcher.node import facts as node_facts
from launcher.nodecall import node_script
from launcher.run.attempt import LaunchError

ROOT = Path(__file__).resolve().parents[1]
VENV_PY = str(ROOT / ".venv" / "bin" / "python")


# ---------------------------------------------------------------------------------------------- item 4


def test_no_test_stub_stands_in_for_anything() -> None:
    assert not (ROOT / "tests" / "stubs").exists()
    stub = "tests" + "/stubs"  # not written out, so that this file does not match itself
    here = Path(__file__).resolve()
    files = [*ROOT.glob("tests/*.py"), ROOT / "Makefile", *ROOT.glob("scripts/*.sh"), ROOT / "pyproject.toml"]
    assert [p for p in files if p != here and stub in p.read_text()] == []


@pytest.mark.slow
def test_llamafactorys_entry_imports_from_the_projects_venv() -> None:
    """What doctor runs on every node (facts.py IMPORT_PROBE), here with the project's venv and no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [VENV_PY, "-c", node_facts.IMPORT_PROBE, "llamafactory.train.tuner", "no_such_module_rlaunch"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd="/",
    )
    reply = json.loads(proc.stdout.strip().splitlines()[-1])
    assert reply["llamafactory.train.tuner"]["ok"] is True, reply
    assert reply["no_such_module_rlaunch"]["error"].startswith("ModuleNotFoundError"), reply


def tool(stdout: str = "", rc: int | None = 0, error: str | None = None) -> dict[str, Any]:
    return {"argv": [], "rc": rc, "stdout": stdout, "stderr": "", "error": error}


def imports_reply(ok: bool) -> str:
    error = None if ok else "ModuleNotFoundError: No module named 'torchaudio'"
    return "noise\n" + json.dumps({"llamafactory.train.tuner": {"ok": ok, "error": error, "seconds": 3.2}})


def test_doctor_fails_the_node_whose_llamafactory_does_not_import() -> None:
    raws = {
        "node1": {"rlaunch_facts": 1, "tools": {"imports": tool(imports_reply(True))}},
        "node2": {"rlaunch_facts": 1, "tools": {"imports": tool(imports_reply(False))}},
        "node3": {
            "rlaunch_facts": 1,
            "tools": {"imports": tool(error="python: no answer after 110s (killed)")},
        },
    }
    facts = {h: doctor.parse_facts(h, r, 1.0, 2.0) for h, r in raws.items()}
    check = next(c for c in doctor.checks(facts) if c.name == "entry_import")
    assert check.failed and check.severity == "error" and check.nodes == ("node2",)
    assert "No module named 'torchaudio'" in check.message and "torchaudio" in (check.fix or "")
    del raws["node2"]
    facts = {h: doctor.parse_facts(h, r, 1.0, 2.0) for h, r in raws.items()}
    passed = next(c for c in doctor.checks(facts) if c.name == "entry_import")
    assert passed.status == "pass" and "not finished: node3" in passed.message  # slow is not broken


def test_doctor_asks_every_node_to_import_the_entry_of_a_llamafactory_job_only() -> None:
    def args(kind: str) -> dict[str, Any]:
        job = (
            {"kind": kind, "config": "x.yaml"}
            if kind == "llamafactory"
            else {"kind": kind, "command": ["true"]}
        )
        inv = from_mapping({"nodes": [{"host": "a"}, {"host": "b"}], "job": job})
        return doctor.doctor_args(inv, "t")("b")

    assert args("llamafactory")["imports"] == ["llamafactory.train.tuner"]
    assert "imports" not in args("command")
    inv = from_mapping({"nodes": [{"host": "a"}], "job": {"kind": "llamafactory", "config": "x.yaml"}})
    assert "imports" not in doctor.doctor_args(inv, "t", fast=True)("a")  # `up`'s fast checks import no torch


def test_a_cpu_node_shows_none_instead_of_five_unknown_gpu_rows() -> None:
    absent = {
        k: tool(error=f"{k}: not found on PATH") for k in ("amd_smi_static", "amd_smi_version", "rocm_smi")
    }
    cpu_torch = json.dumps({"version": "2.13.0+cpu", "hip": None, "cuda": None, "device_count": 0})
    raw = {
        "rlaunch_facts": 1,
        "rocm_version_file": {"text": None, "error": "no such file"},
        "tools": {**absent, "rocminfo": tool(error="rocminfo: not found on PATH"), "torch": tool(cpu_torch)},
    }
    facts = {"n1": doctor.parse_facts("n1", raw, 1.0, 2.0)}
    report = doctor.DoctorReport(["n1"], facts, [])
    rows = {name: cells["n1"] for name, cells, _ in report.rows()}
    assert [rows[k] for k in ("rocm", "gpu_count", "gpu_arch", "gpu_name", "gpu_vram_gib")] == [
        "none",
        "0",
        *"---",
    ]
    assert not any(v.startswith("unknown") and "amd-smi" in v for v in rows.values())
    # A GPU node whose tools are missing is not called a CPU node: its facts stay unknown, with the reason.
    rocm_torch = json.dumps({"version": "2.5.1+rocm6.2", "hip": "6.2", "cuda": None, "device_count": 8})
    gpu = doctor.parse_facts("g", {**raw, "tools": {**raw["tools"], "torch": tool(rocm_torch)}}, 1.0, 2.0)
    assert not gpu.get("gpu_count").known and "not found on PATH" in (gpu.get("gpu_count").reason or "")


# ---------------------------------------------------------------------------------------------- item 5


def lf_plan(tmp: Path, config: dict[str, Any], files: list[str] | None = None) -> planning.Plan:
    (tmp / "sft.yaml").write_text(yaml.safe_dump({"model_name_or_path": "m", "stage": "sft", **config}))
    job = {"kind": "llamafactory", "config": "sft.yaml", "files": files or []}
    data = {"nodes": [{"host": "node1"}, {"host": "node2"}], "transport": "local", "workdir": str(tmp / "w")}
    inv = from_mapping({**data, "job": job}, base_dir=str(tmp))
    return planning.build_plan(inv, run_id="r1", sources=planning.load_sources(inv), head_env={})


def write_pushed(plan: planning.Plan) -> None:
    """What the push writes: every file of the plan in its node's run directory (local transport: this disk)."""
    for node in plan.nodes:
        for f in node.files:
            target = Path(node.run_dir) / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.content)


def check(plan: planning.Plan) -> tuple[int, list[str]]:
    inv = from_mapping({"nodes": [{"host": "node1"}, {"host": "node2"}], "transport": "local",
                        "job": {"kind": "command", "command": ["true"]}})  # fmt: skip
    with make_transport(inv) as transport:
        return check_paths_on_nodes(plan, transport, node_script("lfpaths.py"))


def dataset(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qa.json").write_text(json.dumps([{"instruction": "hi", "output": "hello"}]))
    (folder / "dataset_info.json").write_text(json.dumps({"qa": {"file_name": "qa.json"}}))
    return folder


def test_the_default_relative_dataset_dir_is_bad_input_naming_key_node_path_and_fix(tmp_path: Path) -> None:
    dataset(tmp_path / "data")  # beside the yaml on the head: LLaMA-Factory will not look there
    plan = lf_plan(tmp_path, {"dataset": "qa"})
    assert any("dataset_dir data (unset: LLaMA-Factory's default) is relative" in w for w in plan.warnings)
    write_pushed(plan)
    code, lines = check(plan)
    assert code == 2 and len(lines) == 2, lines
    for node in ("node1", "node2"):
        line = next(x for x in lines if f": {node}: " in x)
        assert line.startswith(f"dataset_dir data: {node}: {tmp_path}/w/r1/{node}/data/dataset_info.json: ")
        assert line.endswith("make it absolute on shared storage")


def test_an_absolute_path_missing_on_the_nodes_is_infra_and_pushed_files_count(tmp_path: Path) -> None:
    shared = dataset(tmp_path / "shared")
    plan = lf_plan(
        tmp_path, {"dataset": "qa", "dataset_dir": str(shared), "adapter_name_or_path": "/gone/lora"}
    )
    write_pushed(plan)
    code, lines = check(plan)
    assert code == 3 and all(x.startswith("adapter_name_or_path /gone/lora: node") for x in lines), lines
    assert "put it on storage every node mounts" in lines[0]
    # dataset_dir "." with job.files pushing dataset_info.json and the data: relative, and there on every node.
    here = dataset(tmp_path / "local")
    files = [str(here / "dataset_info.json"), str(here / "qa.json")]
    plan = lf_plan(tmp_path, {"dataset": "qa", "dataset_dir": "."}, files=files)
    write_pushed(plan)
    assert check(plan) == (0, [])
    # A name dataset_info.json lacks is the yaml's mistake.
    plan = lf_plan(tmp_path, {"dataset": "qa,nope", "dataset_dir": str(shared)})
    write_pushed(plan)
    code, lines = check(plan)
    assert code == 2 and "no dataset 'nope'" in lines[0] and "fix `dataset:`" in lines[0]


def test_up_stops_before_start_when_the_nodes_cannot_open_the_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    (tmp_path / "sft.yaml").write_text(
        yaml.safe_dump({"model_name_or_path": "m", "stage": "sft", "dataset": "qa"})
    )
    data = {"nodes": [{"host": "node1"}, {"host": "node2"}], "transport": "local", "workdir": str(tmp_path / "w"),
            "python": VENV_PY, "job": {"kind": "llamafactory", "config": "sft.yaml"}}  # fmt: skip
    inv = from_mapping(data, base_dir=str(tmp_path))
    with pytest.raises(LaunchError) as err:
        lifecycle.up(inv, run_id="r1")
    assert err.value.code == 2 and "nothing was started" in str(err.value)
    assert "dataset_dir data: node2: " in str(err.value)
    assert not list((tmp_path / "w" / "r1").glob("*/guard.pid")) and not list(
        (tmp_path / "w").rglob("out.log")
    )


# ---------------------------------------------------------------------------------------------- item 7


def test_only_the_flight_recorder_name_current_torch_reads_is_set() -> None:
    env = envrules.apply_rules({}, gpus=(), nproc=1, job_timeout=None, job_kind="torchrun").env
    assert env["TORCH_FR_BUFFER_SIZE"] == "2000" and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in env
    own = envrules.apply_rules(
        {"TORCH_NCCL_TRACE_BUFFER_SIZE": "500"}, gpus=(), nproc=1, job_timeout=None, job_kind="torchrun"
    ).env
    assert own["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "500" and "TORCH_FR_BUFFER_SIZE" not in own


def test_the_verdict_is_not_said_twice() -> None:
    assert finish_line(True, 14.71, "succeeded") == "succeeded in 14.7 s"
    assert finish_line(True, 3, "succeeded (1 end-of-run abort(s) ignored)") == (
        "succeeded in 3.0 s (1 end-of-run abort(s) ignored)"
    )
    assert finish_line(False, 9.1, "node2: crash — exit 1") == "FAILED in 9.1 s: node2: crash — exit 1"


def test_the_benign_c10d_hostname_warning_is_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        "[W1201 10:00:02 socket.cpp:204] [c10d] The hostname of the client socket cannot be retrieved. err=-2"
    )
    for node in ("node1", "node2"):
        watcher = Watcher({node: [0]}, stall_timeout=600)
        event = watcher.observe_line(1.0, node, 0, text)
        assert event is not None and event.rule == "store-hostname-unresolved" and event.severity == "warning"
        _event_printer(event.to_dict())
    _event_printer(
        Event(2.0, "node1", 0, "line", "network", "warning", "NCCL WARN retrying", rule="x").to_dict()
    )
    err = capsys.readouterr().err
    assert "hostname" not in err and err.count("warning network") == 1


def test_a_deliberate_stop_is_no_failure_no_marker_and_no_detection_time() -> None:
    watcher = Watcher({"node1": [0, 1]}, stall_timeout=600)
    watcher.observe_line(1.0, "node1", 0, "{'loss': 0.5, 'epoch': 0.1}")
    watcher.request_stop(5.0, "requested")  # `rlaunch down`, or Ctrl-C
    died = watcher.observe_line(
        5.5,
        "node1",
        0,
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 42 got signal: 15",
    )
    # What torchrun prints after its workers died of the stop's SIGTERM: fatal-looking, but the stop's doing.
    after = watcher.observe_line(
        5.8, "node1", None, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
    )
    assert (
        after is not None and after.severity == "info" and after.text.startswith("while stopping on request")
    )
    watcher.observe_exit(6.0, "node1", None, "SIGTERM", rank=0)
    watcher.observe_exit(6.1, "node1", 143)
    assert died is None or not died.is_fatal
    assert not [e for e in watcher.events if e.is_fatal] and watcher.first_failure is None
    assert watcher.verdict().state is State.STOPPED
    events = [
        {"phase": "start", "attempt": 0, "time": 0.0},
        {"phase": "end", "attempt": 0, "time": 8.0, "code": 130},
    ]
    progress = [{"a": 0, "t": 1.0, "step": 1, "loss": 0.5}, {"a": 0, "t": 4.0, "step": 4, "loss": 0.4}]
    parts = goodput.compute(0.0, 8.0, events, progress).parts
    assert parts["detect_s"] == 0 and parts["teardown_s"] == 4.0 and parts["productive_s"] == 3.0
    failed = [*events[:1], {**events[1], "code": 1}]
    assert goodput.compute(0.0, 8.0, failed, progress).parts["detect_s"] > 0  # a failure still is one


# ---------------------------------------------------------------------------------------------- item 6: file:line


def test_job_files_errors_name_the_inventory_line(tmp_path: Path) -> None:
    from cluster.inventory import load_inventory

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.json").write_text("{}")
    (tmp_path / "b" / "x.json").write_text("{}")
    text = (
        'nodes:\n  - host: n1\ntransport: local\njob:\n  kind: command\n  command: ["true"]\n'
        "  files:\n    - a/x.json\n    - b/x.json\n    - c/missing.json\n"
    )
    (tmp_path / "cluster.yaml").write_text(text)
    inv = load_inventory(tmp_path / "cluster.yaml")
    with pytest.raises(planning.PlanError) as missing:
        planning.load_sources(inv)
    assert str(missing.value).startswith(f"{tmp_path}/cluster.yaml:10: job.files[2]: file not found")
    (tmp_path / "cluster.yaml").write_text(text.replace("    - c/missing.json\n", ""))
    inv = load_inventory(tmp_path / "cluster.yaml")
    with pytest.raises(planning.PlanError) as twice:
        planning.build_plan(inv, run_id="r1", sources=planning.load_sources(inv), head_env={})
    assert str(twice.value).startswith(
        f"{tmp_path}/cluster.yaml:9: job.files[1]: two files would be pushed as"
    )
