"""Pure parts of validation: parsers, checks, baselines, reports (JUnit and Prometheus parsed back)."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from launcher.validate.baseline import (
    Metric,
    allreduce_metrics,
    compare_to_baseline,
    load_baseline,
    probe_metrics,
    save_baseline,
)
from launcher.validate.checks import (
    Check,
    check_allreduce_correct,
    check_busbw,
    check_loss_decreases,
    check_losses_equal,
    check_resume,
    parse_allreduce,
    parse_probe,
)
from launcher.validate.lossplot import loss_svg
from launcher.validate.report import (
    StageResult,
    exit_code,
    render_table,
    to_json,
    to_junit_xml,
    write_json,
    write_junit,
    write_prometheus,
)


def steps(losses: dict[int, float], **extra: float) -> list[dict]:
    return [{"step": s, "loss": v, "samples_per_s": 100.0, **extra} for s, v in losses.items()]


REFERENCE = steps({1: 1.0, 2: 0.9, 3: 0.8, 4: 0.7, 5: 0.6, 6: 0.5})


# ---------------------------------------------------------------- parsers


def test_parsers_find_prefixed_json_anywhere_and_skip_torn_lines() -> None:
    lines = [
        "[node1] [rank0]: RLAUNCH_PROBE " + json.dumps({"step": 1, "loss": 0.1 + 0.2}),
        "unrelated log line",
        'RLAUNCH_PROBE {"step": 2, "lo',  # the last line of a SIGKILLed process
        'RLAUNCH_ALLREDUCE {"bytes": 4, "correct": true}',
    ]
    records = parse_probe(lines)
    assert records == [{"step": 1, "loss": 0.30000000000000004}]  # full precision survives
    assert parse_allreduce(lines) == [{"bytes": 4, "correct": True}]


# ---------------------------------------------------------------- probe checks


def test_loss_decreases_passes_fails_on_rise_and_on_nan() -> None:
    assert check_loss_decreases(REFERENCE).status == "pass"
    assert check_loss_decreases(steps({1: 0.5, 2: 0.6, 3: 0.7, 4: 0.8})).status == "fail"
    nan = check_loss_decreases(steps({1: 1.0, 2: math.nan, 3: 0.1}))
    assert nan.status == "fail" and "non-finite" in nan.message
    assert check_loss_decreases(steps({1: 1.0})).status == "fail"


def test_losses_equal_within_tolerance_and_missing_steps_fail() -> None:
    near = steps({s: v + 5e-7 for s, v in {1: 1.0, 2: 0.9}.items()})
    assert check_losses_equal(steps({1: 1.0, 2: 0.9}), near, tolerance=1e-6).status == "pass"
    far = check_losses_equal(steps({1: 1.0, 2: 0.9}), steps({1: 1.0, 2: 0.8}), tolerance=1e-6)
    assert far.status == "fail" and far.value == pytest.approx(0.1)
    assert check_losses_equal(steps({1: 1.0, 2: 0.9}), steps({1: 1.0})).status == "fail"


def interrupted_at(last_step: int, checkpoint: int) -> list[dict]:
    return [r for r in REFERENCE if r["step"] <= last_step] + [{"checkpoint": checkpoint}]


def test_resume_bitwise_passes() -> None:
    resumed = [{"resumed_from": 2}, *(r for r in REFERENCE if r["step"] > 2)]
    checks = check_resume(REFERENCE, resumed, interrupted_at(3, 2))
    assert [(c.name, c.status) for c in checks] == [
        ("resume_losses_match", "pass"),
        ("resume_jump", "pass"),
        ("resume_from_latest", "pass"),
    ]


def test_resume_with_a_jump_fails_and_reports_it() -> None:
    resumed = [{"resumed_from": 2}, *steps({3: 0.95, 4: 0.7, 5: 0.6, 6: 0.5})]
    by_name = {c.name: c for c in check_resume(REFERENCE, resumed, interrupted_at(3, 2), tolerance=1e-6)}
    assert by_name["resume_jump"].status == "fail"
    assert by_name["resume_jump"].value == pytest.approx(0.15)
    assert by_name["resume_losses_match"].status == "fail"


def test_resume_from_older_checkpoint_or_unfinished_run_fails() -> None:
    from_older = [{"resumed_from": 2}, *(r for r in REFERENCE if r["step"] > 2)]
    by_name = {c.name: c for c in check_resume(REFERENCE, from_older, interrupted_at(5, 4))}
    assert by_name["resume_from_latest"].status == "fail"
    unfinished = [{"resumed_from": 2}, *steps({3: 0.8})]
    by_name = {c.name: c for c in check_resume(REFERENCE, unfinished, interrupted_at(3, 2))}
    assert (
        by_name["resume_losses_match"].status == "fail"
        and "never run" in by_name["resume_losses_match"].message
    )
    # Without the interrupted run the checkpoint step cannot be judged: a visible skip.
    assert check_resume(REFERENCE, from_older)[-1].status == "skip"


ALLREDUCE = [
    {"bytes": 1024, "time_us": 10.0, "algbw_gbps": 0.1, "busbw_gbps": 0.15, "correct": True},
    {"bytes": 2048, "time_us": 12.0, "algbw_gbps": 0.2, "busbw_gbps": 0.3, "correct": True},
    {"done": True, "world_size": 4},
]


def test_allreduce_correctness_and_busbw_threshold() -> None:
    assert check_allreduce_correct(ALLREDUCE).status == "pass"
    wrong = [{**ALLREDUCE[0], "correct": False}, ALLREDUCE[1]]
    assert check_allreduce_correct(wrong).status == "fail"
    assert check_allreduce_correct([]).status == "fail"
    assert check_busbw(ALLREDUCE, 0.25).status == "pass"  # judged at the largest size
    low = check_busbw(ALLREDUCE, 0.5)
    assert low.status == "fail" and low.value == 0.3 and low.unit == "GB/s"
    assert check_busbw(ALLREDUCE, None).status == "skip"


# ---------------------------------------------------------------- baselines


def test_baseline_roundtrip_and_regressions(tmp_path: Path) -> None:
    good = [*probe_metrics(REFERENCE, "n1"), *allreduce_metrics(ALLREDUCE, "n1"), Metric("odd", "n2", 1.0)]
    path = tmp_path / "b" / "baseline.json"
    save_baseline(path, good)
    baseline = load_baseline(path)
    assert baseline["allreduce.busbw_gbps@n1"] == Metric("allreduce.busbw_gbps", "n1", 0.3)
    assert {c.status for c in compare_to_baseline(good[:-1], baseline)} == {"pass", "skip"}

    current = [
        Metric("allreduce.busbw_gbps", "n1", 0.3 * 0.96),  # −4 %: within 5 %
        Metric("probe.samples_per_s", "n1", 100.0 * 0.85),  # −15 %: regression
        Metric("probe.final_loss", "n1", 0.5 + 1e-3),  # a loss that moved
        Metric("new.metric", "n3", 1.0),
    ]
    by_key = {(c.name, c.node): c for c in compare_to_baseline(current, baseline)}
    assert by_key[("regression:allreduce.busbw_gbps", "n1")].status == "pass"
    slow = by_key[("regression:probe.samples_per_s", "n1")]
    assert slow.status == "fail" and "n1" in slow.message and "samples_per_s" in slow.message
    assert by_key[("regression:probe.final_loss", "n1")].status == "fail"
    assert by_key[("regression:new.metric", "n3")].status == "skip"  # no baseline
    assert by_key[("regression:odd", "n2")].status == "skip"  # in the baseline, not measured


def test_faster_is_never_a_regression_and_bad_files_are_named(tmp_path: Path) -> None:
    base = {"allreduce.busbw_gbps@n1": Metric("allreduce.busbw_gbps", "n1", 1.0)}
    assert compare_to_baseline([Metric("allreduce.busbw_gbps", "n1", 9.0)], base)[0].status == "pass"
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 99}')
    with pytest.raises(ValueError, match=r"bad\.json"):
        load_baseline(bad)


# ---------------------------------------------------------------- reports


STAGES = [
    StageResult(
        "collectives",
        [
            Check("allreduce_correct", "n1", "pass", 0.0, 0.0, "sizes", "7 sizes correct"),
            Check("allreduce_busbw", "n1", "fail", 0.3, 0.5, "GB/s", "busbw at 2048 bytes"),
        ],
        values={"busbw_gbps": 0.3},
        duration_s=1.5,
    ),
    StageResult("resume", [Check("resume_from_latest", "", "skip", message="interrupted run not given")]),
]


def test_json_report_and_exit_code(tmp_path: Path) -> None:
    body = to_json(STAGES, timestamp=1.0)
    assert body["verdict"] == "fail" and exit_code(STAGES) == 1
    assert [s["verdict"] for s in body["stages"]] == ["fail", "pass"]
    assert body["stages"][0]["checks"][1]["threshold"] == 0.5
    write_json(tmp_path / "r.json", STAGES)
    assert json.loads((tmp_path / "r.json").read_text())["stages"][0]["values"] == {"busbw_gbps": 0.3}
    assert exit_code(STAGES[1:]) == 0  # skips alone do not fail a run


def test_junit_xml_parses_back(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(path, STAGES)
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "1"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    cases = suites["collectives"].findall("testcase")
    assert [c.get("name") for c in cases] == ["allreduce_correct[n1]", "allreduce_busbw[n1]"]
    assert cases[1].find("failure").get("message") == "busbw at 2048 bytes"
    assert suites["resume"].find("testcase/skipped") is not None and suites["resume"].get("skipped") == "1"
    assert to_junit_xml([]).startswith("<?xml")


def test_prometheus_textfile_parses_back(tmp_path: Path) -> None:
    path = tmp_path / "rlaunch.prom"
    write_prometheus(path, STAGES, timestamp=1700000000.0)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(path.read_text())
        for s in family.samples
    }

    def get(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    where = {"stage": "collectives", "node": "n1"}
    assert get("rlaunch_validate_check_ok", check="allreduce_correct", **where) == 1.0
    assert get("rlaunch_validate_check_ok", check="allreduce_busbw", **where) == 0.0
    assert get("rlaunch_validate_value", check="allreduce_busbw", unit="GB/s", **where) == 0.3
    assert get("rlaunch_validate_threshold", check="allreduce_busbw", unit="GB/s", **where) == 0.5
    assert get("rlaunch_validate_last_run_timestamp") == 1700000000.0
    assert get("rlaunch_validate_ok") == 0.0
    assert get("rlaunch_validate_stage_ok", stage="resume") == 1.0
    assert not any(
        name == "rlaunch_validate_check_ok" and ("stage", "resume") in labels for name, labels in samples
    )


def test_table_renders_every_check() -> None:
    console = Console(record=True, width=200)
    console.print(render_table(STAGES))
    text = console.export_text()
    assert "validation: FAIL" in text and "allreduce_busbw" in text and "resume_from_latest" in text


def test_loss_svg_is_well_formed_with_nan_and_marker() -> None:
    svg = loss_svg({1: 1.0, 2: 0.5, 3: 0.25}, {2: 0.5, 3: math.nan}, resume_step=2, title="a < b")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "a < b" in texts and "resumed from step 2" in texts and "resumed (1 non-finite)" in texts
    assert len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) == 2
    ET.fromstring(loss_svg({}, {}))  # nothing to plot still renders
