"""Datasets as LLaMA-Factory sees them: `dataset:` names resolved through dataset_info.json (file and folder
entries, alpaca/sharegpt, column and tag mappings) by `rlaunch data check <yaml>` and by doctor, which compares
their sha256 across nodes and names the file that differs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_helpers import scaled

from cluster.inventory import from_mapping
from cluster.transport import make_transport
from launcher import doctor
from launcher.jobs import lfdata
from launcher.node import facts as node_facts

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / "launcher" / "node" / "facts.py").read_bytes()


def write_data(data: Path, extra_record: bool = False) -> None:
    """An alpaca file with mapped columns and a sharegpt folder with OpenAI-style tags."""
    (data / "chat").mkdir(parents=True, exist_ok=True)
    rows = [{"q": "Add 1 and 2.", "a": "3"}, {"q": "Add 2 and 2.", "a": "4"}]
    if extra_record:
        rows.append({"q": "Add 3 and 3.", "a": "6"})
    (data / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    chat = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}]
    (data / "chat" / "part-0.json").write_text(json.dumps(chat))
    info = {
        "qa": {"file_name": "qa.jsonl", "columns": {"prompt": "q", "response": "a"}},
        "chat": {
            "file_name": "chat",
            "formatting": "sharegpt",
            "columns": {"messages": "messages"},
            "tags": {
                "role_tag": "role",
                "content_tag": "content",
                "user_tag": "user",
                "assistant_tag": "assistant",
            },
        },
        "hub": {"hf_hub_url": "org/some-dataset"},
    }
    (data / "dataset_info.json").write_text(json.dumps(info))


def test_resolve_through_dataset_info(tmp_path: Path) -> None:
    write_data(tmp_path / "data")
    entries = lfdata.resolve(
        {"dataset": "qa, chat", "eval_dataset": "hub"}, tmp_path
    )  # default dataset_dir "data"
    assert [(e.name, e.formatting, [p.name for p in e.files]) for e in entries] == [
        ("qa", "alpaca", ["qa.jsonl"]),
        ("chat", "sharegpt", ["part-0.json"]),
        ("hub", "alpaca", []),
    ]
    assert entries[2].remote == "org/some-dataset"
    with pytest.raises(lfdata.DatasetSpecError, match="'nope' is not in"):
        lfdata.resolve({"dataset": "nope"}, tmp_path)
    remapped = lfdata.remap({"q": "x", "a": "y"}, entries[0])
    assert (remapped["instruction"], remapped["output"]) == ("x", "y")


def rlaunch_data_check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launcher.cli", "data", "check", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=scaled(120),
    )


def test_data_check_a_llamafactory_yaml(tmp_path: Path) -> None:
    write_data(tmp_path / "data")
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({"dataset": "qa,chat,hub", "dataset_dir": "data"}))
    proc = rlaunch_data_check(tmp_path, "sft.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "data/qa.jsonl: alpaca format (jsonl), 2 records, 2 valid, 0 bad" in proc.stdout
    assert "data/chat/part-0.json: sharegpt format (json), 1 records, 1 valid, 0 bad" in proc.stdout
    assert "hub: org/some-dataset is not a local file, not checked" in proc.stdout

    (tmp_path / "data" / "qa.jsonl").write_text('{"q": "Add 1 and 2.", "a": ""}\n')
    proc = rlaunch_data_check(tmp_path, "sft.yaml")
    assert proc.returncode == 1 and "data/qa.jsonl:1: record 0: empty `output`" in proc.stdout

    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({"dataset": "missing"}))
    proc = rlaunch_data_check(tmp_path, "sft.yaml")
    assert proc.returncode == 2 and "'missing' is not in" in proc.stderr and "Traceback" not in proc.stderr


def test_node_probe_hashes_every_file_and_doctor_names_the_one_that_differs(tmp_path: Path) -> None:
    same, odd = tmp_path / "same" / "data", tmp_path / "odd" / "data"
    write_data(same)
    write_data(odd, extra_record=True)
    spec = {"names": ["qa", "chat"]}
    probes = {
        h: node_facts.dataset_probe({**spec, "dataset_dir": str(d)}) for h, d in (("a", same), ("c", odd))
    }
    assert (
        probes["a"]["error"] is None and len(probes["a"]["files"]) == 3
    )  # dataset_info.json, qa, chat/part-0
    # b sees the same bytes as a (its own copy at the same path, as on real nodes).
    raws = {
        "a": probes["a"],
        "b": probes["a"],
        "c": {
            **probes["c"],
            "files": {k.replace(str(odd), str(same)): v for k, v in probes["c"]["files"].items()},
        },
    }
    checks = doctor.checks(
        {h: doctor.parse_facts(h, {"rlaunch_facts": 1, "node": h, "dataset": p}) for h, p in raws.items()}
    )
    check = next(c for c in checks if c.name == "dataset_same")
    assert check.failed and check.nodes == ("c",)
    assert str(same / "qa.jsonl") in check.message and "part-0" not in check.message

    missing = node_facts.dataset_probe({"dataset_dir": str(same), "names": ["nope"]})
    assert missing["sha256"] is None and "nope is not in" in missing["error"]


def test_job_dataset_spec_comes_from_the_llamafactory_yaml(tmp_path: Path) -> None:
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({"dataset": "qa, chat", "dataset_dir": "/data/lf"}))
    job: dict[str, Any] = {"kind": "llamafactory", "config": "sft.yaml"}
    inv = from_mapping({"nodes": [{"host": "a"}], "job": job}, base_dir=str(tmp_path))
    assert lfdata.job_dataset_spec(inv) == {"dataset_dir": "/data/lf", "names": ["qa", "chat"]}


@pytest.mark.slow
@pytest.mark.ssh
def test_doctor_names_the_node_whose_dataset_differs(sim3: Any, tmp_path: Path) -> None:
    """Each simulated node has its own /tmp: the same dataset_dir path, node3's copy has one more record."""
    if not sim3.namespaces:
        pytest.skip("simulated nodes share /tmp here")
    data_dir = "/tmp/rlaunch-lf-data"
    for node in ("node1", "node2", "node3"):
        write_data(sim3.node_path(node, data_dir), extra_record=node == "node3")
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({"dataset": "qa,chat", "dataset_dir": data_dir}))
    inv = from_mapping(
        sim3.inventory_dict(job={"kind": "llamafactory", "config": str(tmp_path / "sft.yaml")})
    )
    with make_transport(inv) as transport:
        report = doctor.run_doctor(
            inv,
            transport,
            SCRIPT,
            dataset=lfdata.job_dataset_spec(inv),
            timeout=scaled(90),
            tool_timeout=5,
            torch_timeout=30,
        )
    check = next(c for c in report.checks if c.name == "dataset_same")
    assert check.failed and check.nodes == ("node3",), doctor.format_report(report)
    assert f"{data_dir}/qa.jsonl" in check.message
