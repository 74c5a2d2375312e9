"""rlaunch doctor: parsers over captured tool outputs, checks over node facts, and the real probe end to end.

Fixtures: tests/fixtures/smi (sources in SOURCES.md); fake tools and torch packages: tests/fakebin (README.md).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import scaled

from cluster.inventory import from_mapping
from cluster.transport import Result, make_transport
from launcher import doctor
from launcher.doctor.gather import with_args

HERE = Path(__file__).parent
SMI = HERE / "fixtures" / "smi"
FAKEBIN = HERE / "fakebin"
SCRIPT = (HERE.parent / "launcher" / "node" / "facts.py").read_bytes()


def fixture(name: str) -> str:
    return (SMI / name).read_text()


# ------------------------------------------------------------------------------------------------ parsers


def test_rocm_smi_mi250x_reports_gfx9010_which_is_gfx90a():
    (gpu,) = doctor.parse_rocm_smi(fixture("rocm-smi_mi250x.json"))
    assert (gpu.arch, gpu.product) == ("gfx90a", "MI250")
    assert gpu.name.startswith("AMD INSTINCT MI200")
    assert gpu.vram_bytes is None  # --showproductname alone carries no VRAM


def test_rocm_smi_radeon_with_vram_and_a_shape_without_gfx():
    (gpu,) = doctor.parse_rocm_smi(fixture("rocm-smi_rx7900xt.json"))
    assert (gpu.arch, gpu.product, gpu.vram_bytes) == ("gfx1100", "RX 7900", 21458059264)
    (navi,) = doctor.parse_rocm_smi(fixture("rocm-smi_navi31_nogfx.json"))
    assert navi.arch is None and navi.name.startswith("Navi 31")


@pytest.mark.parametrize(
    "text", ["", "garbage", '{"card0": {"Card Series": trunc', "[1, 2]", '{"system": {}}']
)
def test_rocm_smi_garbage_is_none(text):
    assert doctor.parse_rocm_smi(text) is None


def test_amd_smi_static_list_shape_nested_units_and_banner():
    gpus = doctor.parse_amd_smi_static("WARNING: banner\n" + fixture("amd-smi_static_mi300x.json"))
    assert [(g.arch, g.product, g.vram_bytes) for g in gpus] == [("gfx942", "MI300X", 196592 * 1024**2)] * 2


def test_amd_smi_static_gpu_data_shape_with_na():
    (gpu,) = doctor.parse_amd_smi_static(fixture("amd-smi_static_mi350x_gpu_data.json"))
    assert (gpu.arch, gpu.product, gpu.name, gpu.vram_bytes) == (
        "gfx950",
        "MI350X",
        "AMD Instinct MI350X",
        None,
    )
    assert doctor.parse_amd_smi_static("not json") is None
    assert doctor.parse_amd_smi_static('[{"asic": "N/A"}]')[0].arch is None


def test_amd_smi_version_json_text_and_na():
    assert doctor.parse_amd_smi_version(fixture("amd-smi_version_rocm702.json")) == "7.0.2"
    assert doctor.parse_amd_smi_version(fixture("amd-smi_version_rocm640.txt")) == "6.4.0"
    assert doctor.parse_amd_smi_version('[{"rocm_version": "N/A"}]') is None
    assert doctor.parse_amd_smi_version("Segmentation fault") is None
    assert doctor.parse_rocm_version_file("6.2.0-66\n") == "6.2.0"
    assert doctor.parse_rocm_version_file("") is None


def test_rocminfo_counts_gpu_agents_only():
    gpus = doctor.parse_rocminfo(fixture("rocminfo_mi300x.txt"))
    assert [(g.arch, g.name) for g in gpus] == [("gfx942", "AMD Instinct MI300X")] * 2
    assert gpus[0].vram_bytes == 201310208 * 1024
    assert {g.product for g in doctor.parse_rocminfo(fixture("rocminfo_mi250.txt"))} == {"MI250"}
    assert doctor.parse_rocminfo("ROCk module is NOT loaded, possibly no GPU devices") is None


# ------------------------------------------------------------------------------------------------ checks


def tool(stdout: str = "", rc: int | None = 0, error: str | None = None) -> dict[str, Any]:
    return {"argv": [], "rc": rc, "stdout": stdout, "stderr": "", "error": error}


def raw_node(name: str, **over: Any) -> dict[str, Any]:
    """A healthy MI300X node's probe output, built from captured fixtures."""
    torch = {
        "version": "2.5.1+rocm6.2",
        "hip": "6.2.41133",
        "cuda": None,
        "rccl": "2.21.5",
        "python": "3.11.7",
    }
    raw: dict[str, Any] = {
        "rlaunch_facts": 1,
        "node": name,
        "time_start": 1000.5,
        "hostname": name,
        "os": "Ubuntu 22.04.4 LTS",
        "kernel": "5.15.0-119-generic",
        "cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt",
        "python": "3.11.7",
        "rocm_version_file": {"text": None, "error": "/opt/rocm/.info/version: No such file or directory"},
        "tools": {
            "amd_smi_static": tool(fixture("amd-smi_static_mi300x.json")),
            "amd_smi_version": tool(fixture("amd-smi_version_rocm702.json")),
            "rocm_smi": tool(error="rocm-smi: not found on PATH"),
            "torch": tool(json.dumps(torch)),
        },
        "packages": {"deepspeed": "0.15.4", "transformers": "4.46.1", "llamafactory": "0.9.1"},
        "groups": {"user": "alice", "uid": 1000, "groups": ["alice", "video", "render"]},
        "memory": {"total": 2 * 1024**4, "available": 1024**4},
        "disk_free": 500 * 1024**3,
        "env": {"HSA_FORCE_FINE_GRAIN_PCIE": "1"},
        "workdir": {"path": "/tmp/rlaunch", "ok": True, "error": None},
    }
    raw.update(over)
    return raw


def inventory(gpus: int = 2, hosts: tuple[str, ...] = ("a", "b", "c")):
    return from_mapping(
        {"nodes": [{"host": h, "gpus": gpus} for h in hosts], "job": {"kind": "command", "command": ["true"]}}
    )


def by_name(checks: list[doctor.Check]) -> dict[str, doctor.Check]:
    return {c.name: c for c in checks}


def facts_of(raws: dict[str, dict[str, Any]]) -> dict[str, doctor.Facts]:
    return {h: doctor.parse_facts(h, r, 1000.0, 1001.0) for h, r in raws.items()}


def test_healthy_nodes_pass_everything():
    facts = facts_of({h: raw_node(h) for h in "abc"})
    report = doctor.DoctorReport(list("abc"), facts, doctor.checks(facts, inventory()))
    assert report.ok, doctor.format_report(report)
    assert facts["a"].get("rocm") == doctor.Fact("7.0.2", source="amd-smi version")
    assert facts["a"].get("gpu_name").value == "AMD Instinct MI300X"
    assert json.loads(report.to_json())["ok"] is True


def test_the_odd_node_is_named():
    odd_torch = {"version": "2.5.0+cu124", "hip": None, "cuda": "12.4", "rccl": "2.21.5"}
    raws = {h: raw_node(h) for h in "abc"}
    raws["c"]["tools"] = {
        **raws["c"]["tools"],
        "amd_smi_version": tool(fixture("amd-smi_version_rocm640.txt")),
        "torch": tool(json.dumps(odd_torch)),
    }
    facts = facts_of(raws)
    checks = by_name(doctor.checks(facts, inventory()))
    assert checks["same_rocm"].nodes == ("c",) and "c has 6.4.0" in checks["same_rocm"].message
    assert checks["torch_rocm_build"].nodes == ("c",) and "cuda 12.4" in checks["torch_rocm_build"].message
    assert checks["same_torch"].nodes == ("c",)
    report = doctor.DoctorReport(list("abc"), facts, list(checks.values()))
    assert not report.ok
    differing = {name for name, _, differs in report.rows() if differs}
    assert {"rocm", "torch", "torch_build"} <= differing
    assert "FAIL [error] same_rocm" in doctor.format_report(report)


def test_node_level_checks_fail_with_fixes():
    raws = {h: raw_node(h) for h in "ab"}
    raws["b"].update(
        groups={"user": "bob", "uid": 1001, "groups": ["bob", "video"]},
        cmdline="BOOT_IMAGE=/vmlinuz quiet",
        env={},
        time_start=1009.0,  # read after we received the answer: its clock runs ≥ 8 s ahead
        net_plugin={"name": "ib", "library": "librccl-net-ib.so", "loaded": False, "error": "cannot open"},
        dataset={"path": "/d.jsonl", "sha256": "f" * 64, "size": 3, "error": None},
    )
    raws["a"]["dataset"] = {"path": "/d.jsonl", "sha256": "0" * 64, "size": 3, "error": None}
    raws["a"]["tools"]["amd_smi_static"] = tool(fixture("amd-smi_static_mi350x_gpu_data.json"))  # 1 GPU only
    checks = by_name(doctor.checks(facts_of(raws), inventory(hosts=("a", "b"))))
    for name, node in [
        ("gpu_groups", "b"),
        ("kernel_iommu", "b"),
        ("hsa_fine_grain_pcie", "b"),
        ("clock_skew", "b"),
        ("net_plugin", "b"),
        ("gpu_count", "a"),
        ("same_gpu_arch", "b"),  # a 1:1 tie: the first node is the reference
    ]:
        assert checks[name].failed and checks[name].nodes == (node,), (name, checks[name])
        assert checks[name].fix
    assert checks["dataset_same"].failed
    assert "render" in checks["gpu_groups"].message


def test_unknown_facts_skip_instead_of_crashing():
    raws = {
        "a": raw_node("a"),
        "b": raw_node("b", tools={"amd_smi_static": tool(error="amd-smi: no answer after 2s (killed)")}),
        "c": {"rlaunch_facts": 1, "fatal": "KeyError: 'x'"},
    }
    facts = facts_of(raws)
    assert not facts["b"].get("gpu_count").known
    assert "no answer after 2s" in facts["b"].get("gpu_count").reason
    assert "torch probe: not run" in facts["b"].get("torch").reason
    checks = by_name(doctor.checks(facts, inventory()))
    assert checks["reachable"].nodes == ("c",)
    assert "unknown on b" in checks["gpu_count"].message and checks["gpu_count"].status == "pass"
    assert checks["torch_rocm_build"].nodes == ("b",)  # a GPU node without a usable torch cannot train
    assert checks["same_rocm"].status == "skip"  # only a's ROCm is known: nothing to compare
    doctor.format_report(doctor.DoctorReport(list("abc"), facts, list(checks.values())))


def test_shared_checkpoint_dir_and_fast_subset():
    facts = facts_of({h: raw_node(h, marker={"ok": True, "error": None}) for h in "abc"})
    shared = doctor.shared_dir_check(facts, {"a": ["a", "b", "c"], "b": ["a", "b", "c"], "c": ["c"]})
    assert shared.failed and shared.nodes == ("c",) and "a, b" in shared.message
    assert doctor.shared_dir_check(facts, {h: ["a", "b", "c"] for h in "abc"}).status == "pass"
    fast = {c.name for c in doctor.fast_preflight_checks(facts, inventory())}
    assert fast == doctor.FAST_CHECKS


def test_odd_ones_out_majority():
    assert doctor.odd_ones_out({"a": 1, "b": 2, "c": 1}) == (1, {"b": 2})
    assert doctor.odd_ones_out({}) == (None, {})


# ------------------------------------------------------------------------------------------------ the real probe


def run_probe(tmp_path: Path, path_dirs: list[Path], pythonpath: Path | None, **args: Any) -> doctor.Facts:
    """facts.py exactly as a transport runs it (`python -` with gather.with_args), on this machine."""
    env = {**os.environ, "PATH": os.pathsep.join([*map(str, path_dirs), "/usr/bin", "/bin"])}
    env.pop("PYTHONPATH", None)
    env.setdefault("RLAUNCH_FACTS_CACHE", str(tmp_path / "facts-cache"))  # never the user's ~/.cache
    node_env = {"PYTHONPATH": str(pythonpath)} if pythonpath else {}
    full = {"node": "n1", "token": "t", "workdir": str(tmp_path / "work"), "env": node_env, **args}
    return probe_here(full, env)


def probe_here(args: dict[str, Any], env: dict[str, str]) -> doctor.Facts:
    """Node n1's facts from facts.py run as a transport runs it (`python -` with gather.with_args) on this
    machine, in env (tests/test_facts_cache.py runs it this way too)."""
    proc = subprocess.run(
        [sys.executable, "-"], input=with_args(SCRIPT, args), capture_output=True, env=env, timeout=60
    )
    result = Result(
        host="n1", exit_code=proc.returncode, stdout=proc.stdout.decode(), stderr=proc.stderr.decode()
    )
    decoded = doctor.decode_reply(result)
    assert isinstance(decoded, dict), decoded
    return doctor.parse_facts("n1", decoded, 1.0, 2.0)


def test_probe_on_a_broken_node_reports_reasons_and_does_not_hang(tmp_path):
    facts = run_probe(
        tmp_path,
        [FAKEBIN / "broken"],
        FAKEBIN / "torch_hang",
        tool_timeout=1,
        torch_timeout=2,
        rocm_path=str(tmp_path),
    )
    count = facts.get("gpu_count")
    assert not count.known
    assert "amd-smi: no answer after 1s" in count.reason and "rocm-smi: unrecognised output" in count.reason
    assert "rocminfo: not found" in count.reason
    assert "no answer after 2s" in facts.get("torch").reason
    assert facts.get("workdir") is not None and facts.raw["workdir"]["ok"]


def test_probe_on_an_mi250_node(tmp_path):
    facts = run_probe(
        tmp_path, [FAKEBIN / "mi250"], FAKEBIN / "torch_rocm", rocm_path=str(FAKEBIN / "mi250" / "rocm")
    )
    assert facts.get("rocm").value == "6.2.0"
    assert (facts.get("gpu_count").value, facts.get("gpu_arch").value) == (
        1,
        "gfx90a",
    )  # rocm-smi answers first
    assert facts.get("torch_build").value.startswith("rocm") and facts.get("rccl").value == "2.21.5"


# ------------------------------------------------------------------------------------------------ end to end


@pytest.mark.ssh
def test_doctor_on_simulated_nodes_names_the_odd_node(sim3):
    """node3 has another ROCm and a CUDA torch; the checkpoint dir is each node's private /tmp."""
    data = sim3.inventory_dict()
    profiles = {
        "node1": ("mi300x", "torch_rocm"),
        "node2": ("mi300x", "torch_rocm"),
        "node3": ("mi300x_rocm64", "torch_cuda"),
    }
    for node in data["nodes"]:
        path_dir, torch_dir = profiles[node["host"]]
        node["gpus"] = 2
        node["env"] = {"PATH": f"{FAKEBIN / path_dir}:/usr/bin:/bin", "PYTHONPATH": str(FAKEBIN / torch_dir)}
    data["env"]["HSA_FORCE_FINE_GRAIN_PCIE"] = "1"
    data["master"] = {"node": "node1", "port": random.randint(30000, 39999)}
    data["job"] = {"kind": "command", "command": ["true"], "checkpoint_dir": "/tmp/rlaunch-doctor-ckpt"}
    inv = from_mapping(data)
    with make_transport(inv) as transport:
        report = doctor.run_doctor(
            inv, transport, SCRIPT, timeout=scaled(90), tool_timeout=5, torch_timeout=30
        )
    text = doctor.format_report(report)
    checks = by_name(report.checks)
    assert checks["reachable"].status == "pass", text
    assert checks["same_rocm"].nodes == ("node3",), text
    assert checks["torch_rocm_build"].nodes == ("node3",), text
    assert checks["gpu_count"].status == "pass", text
    assert checks["workdir_writable"].status == "pass", text
    assert report.facts["node1"].get("gpu_arch").value == "gfx942"
    assert report.facts["node3"].get("rocm").value == "6.4.0"
    if sim3.namespaces:
        assert checks["checkpoint_shared"].failed, text  # private /tmp per node: ZeRO-3 resume would break
    assert not report.ok


def _smi_node(name: str, rocm_smi: str) -> dict[str, Any]:
    """A node whose only GPU tool is rocm-smi, answering with a recorded output."""
    raw = raw_node(name)
    raw["tools"] = {**raw["tools"], "amd_smi_static": tool(error="amd-smi: not found on PATH")}
    raw["tools"]["rocm_smi"] = tool(rocm_smi)
    return raw


def test_two_mi250_and_one_rx7900xt_are_told_apart_and_unknowns_warn():
    """Issue 12.6: MI250 nodes whose rocm-smi reports no gfx arch beside a Radeon RX 7900 XT."""
    mi250 = json.loads(fixture("rocm-smi_mi250x.json"))
    del mi250["card0"]["GFX Version"]  # the shape seen in the field: arch unknown on both MI250 nodes
    raws = {
        "node1": _smi_node("node1", json.dumps(mi250)),
        "node2": _smi_node("node2", json.dumps(mi250)),
        "node3": _smi_node("node3", fixture("rocm-smi_rx7900xt.json")),
    }
    checks = by_name(doctor.checks(facts_of(raws), inventory(gpus=1, hosts=("node1", "node2", "node3"))))
    name = checks["same_gpu_name"]
    assert name.failed and name.severity == "error" and name.nodes == ("node3",)
    assert "node3 has Radeon RX 7900 XT" in name.message and "AMD INSTINCT MI200" in name.message
    assert checks["same_gpu_arch"].status == "skip"  # known on node3 only ...
    known = checks["gpu_model_known"]  # ... which is a warning with the reason, not a silent pass
    assert known.failed and known.severity == "warning" and known.nodes == ("node1", "node2")
    assert (
        "gpu_arch, gpu_vram_gib unknown (rocm-smi reports no gfx arch; rocm-smi reports no VRAM)"
        in known.message
    )
    assert known.fix

    # With the gfx arch reported, the arch differs too; VRAM stays unknown on the MI250s (no --showmeminfo).
    raws["node1"] = _smi_node("node1", fixture("rocm-smi_mi250x.json"))
    raws["node2"] = _smi_node("node2", fixture("rocm-smi_mi250x.json"))
    checks = by_name(doctor.checks(facts_of(raws), inventory(gpus=1, hosts=("node1", "node2", "node3"))))
    assert (
        checks["same_gpu_arch"].nodes == ("node3",) and "node3 has gfx1100" in checks["same_gpu_arch"].message
    )
    assert checks["gpu_model_known"].nodes == ("node1", "node2")


def test_same_gpus_everywhere_pass_the_model_checks():
    facts = facts_of({h: raw_node(h) for h in "abc"})
    checks = by_name(doctor.checks(facts, inventory()))
    for name in ("same_gpu_arch", "same_gpu_name", "same_gpu_vram_gib", "gpu_model_known"):
        assert checks[name].status == "pass", checks[name]
    # CPU-only nodes (no GPUs declared, none found) have nothing to compare and nothing unknown to warn about.
    cpu = facts_of({h: raw_node(h, tools={}) for h in "ab"})
    checks = by_name(doctor.checks(cpu, inventory(gpus=0, hosts=("a", "b"))))
    assert checks["gpu_model_known"].status == "pass" and checks["same_gpu_name"].status == "skip"


def test_warnings_are_shown_but_only_errors_fail_the_doctor():
    """`rlaunch doctor --help` promises exit 0 when no check failed: an unknown GPU model is a warning, shown as
    WARN, and must not make a Slurm prolog drain the node; a GPU that differs is an error."""
    from launcher.doctor.report import DoctorReport

    mi250 = json.loads(fixture("rocm-smi_mi250x.json"))
    del mi250["card0"]["GFX Version"]
    raws = {h: _smi_node(h, json.dumps(mi250)) for h in ("node1", "node2")}
    facts = facts_of(raws)
    report = DoctorReport(
        ["node1", "node2"], facts, doctor.checks(facts, inventory(gpus=1, hosts=("node1", "node2")))
    )
    assert [c.name for c in report.failed] == ["gpu_model_known"] and report.errors == []
    assert report.ok and json.loads(report.to_json())["ok"] is True

    raws["node2"] = _smi_node("node2", fixture("rocm-smi_rx7900xt.json"))
    facts = facts_of(raws)
    report = DoctorReport(
        ["node1", "node2"], facts, doctor.checks(facts, inventory(gpus=1, hosts=("node1", "node2")))
    )
    assert "same_gpu_name" in [c.name for c in report.errors] and not report.ok
