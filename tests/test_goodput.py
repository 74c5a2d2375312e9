"""Goodput, the node ledger, spares and the run report, on plain data (no nodes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import scaled

from cluster.inventory import InventoryError, from_mapping
from launcher import attempts, goodput, ledger, records, runreport, spares
from launcher import plan as planning
from launcher.health.progress import Progress, ProgressLine, parse_progress, progress_step
from launcher.run.attempt import LaunchError

pytestmark = pytest.mark.usefixtures("run_home")

ROOT = Path(__file__).resolve().parents[1]


def inv_data(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "nodes": [{"host": f"node{i}", "gpus": 0} for i in (1, 2, 3)],
        "spares": [{"host": "node4", "gpus": 0}],
        "job": {"kind": "command", "command": ["true"]},
        "health": {"max_strikes": 1},
    }
    data.update(over)
    return data


# --------------------------------------------------------------------------------------------- progress lines
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("step=8 loss=0.123", (8, 0.123)),
        ("[Rank 0] step=10, skipped=0, lr=[0.001]", (10, None)),
        ("{'loss': 1.5, 'grad_norm': 2.0, 'epoch': 0.3}", (None, 1.5)),
        (" 12/100 [00:10<01:20,  1.20it/s]", (12, None)),
        ("resumed from step-6 at step 6", None),  # prose, not progress
        ("NCCL WARN socket closed", None),
        # issue 20: the shapes real programs print, read by the hang rule's parser (launcher/health/progress.py)
        ("step 12 loss 0.5", (12, 0.5)),
        ("[GPU1] Epoch 7 | Batchsize: 32 | Steps: 64", (7, None)),  # pytorch/examples DDP tutorial
        ("Epoch 7 | Training snapshot saved at snapshot.pt", None),
        ("Resuming training from snapshot at Epoch 7", None),
        ("iter 30 loss: 1e-3", (30, 0.001)),
        ("Epoch [1/10], Step [100/600], Loss: 0.2", (100, 0.2)),
        ("[ 3/100] loss 1.0", (3, 1.0)),
        ("steps: 40", (40, None)),
        ("  3%|▎         | 12/400 [00:10<05:20,  1.21it/s]", (12, None)),
        (
            "Running tokenizer on dataset (num_proc=16): 100%|██████████| 1090/1091 [00:02<00:00, 45 examples/s]",
            None,
        ),
        ("Converting format of dataset (num_proc=16): 6/91 [00:00<00:01, 50.0 examples/s]", None),
        ("Map: 100%|████| 50/50 [00:00<00:00, 50.0 examples/s]", None),
        ("Filter: 100%|████| 50/50 [00:00<00:00, 50.0 examples/s]", None),
        ("Loading checkpoint shards: 100%|██████████| 2/2 [00:01<00:00,  1.50it/s]", None),
        # tqdm redraws with \r and torchrun's tee prefixes each partial chunk: the last bar state and the dict
        (
            "\r 10%|█ | 1/10 [00:01<00:09]\r[default0]: 20%|██ | 2/10 [00:02<00:08][default0]:{'loss': 2.3}",
            (2, 2.3),
        ),
        ("step " + "9" * 40, None),  # digit runs are bounded: no int() of a 40-digit number
        (
            "{'train_runtime': 3.1, 'train_loss': 1.9, 'epoch': 1.0}",
            (None, None),
        ),  # the summary: no curve point
    ],
)
def test_progress_lines(line: str, expected: Any) -> None:
    parsed = parse_progress(line)
    assert (parsed if parsed is None else (parsed.step, parsed.loss)) == expected


# HF Trainer's start-up banner, as posted in huggingface/open-r1 issue #483 (transformers' trainer.py:2405-2414, the
# "[LEVEL|file:line] time >> " format of transformers/utils/logging.py): counts, never steps.
HF_BANNER = """\
[INFO|trainer.py:2405] 2025-03-06 12:04:09,913 >> ***** Running training *****
[INFO|trainer.py:2406] 2025-03-06 12:04:09,913 >>   Num examples = 5,498
[INFO|trainer.py:2407] 2025-03-06 12:04:09,914 >>   Num Epochs = 1
[INFO|trainer.py:2408] 2025-03-06 12:04:09,914 >>   Instantaneous batch size per device = 8
[INFO|trainer.py:2411] 2025-03-06 12:04:09,914 >>   Total train batch size (w. parallel, distributed & accumulation) = 224
[INFO|trainer.py:2412] 2025-03-06 12:04:09,914 >>   Gradient Accumulation steps = 4
[INFO|trainer.py:2413] 2025-03-06 12:04:09,914 >>   Total optimization steps = 196
[INFO|trainer.py:2414] 2025-03-06 12:04:09,915 >>   Number of trainable parameters = 7,615,616,512"""


@pytest.mark.parametrize(
    "line",
    [
        *HF_BANNER.splitlines(),
        # hiyouga/LlamaFactory issue #736 (the same banner through LLaMA-Factory, a count with a thousands comma)
        "[INFO|trainer.py:1694] 2023-08-30 08:35:32,933 >>   Total optimization steps = 792",
        # transformers 5.6 trainer.py (Trainer._inner_training_loop) prints these two more, with "{:,}" counts
        "  Num update steps per epoch = 1,250",
        "  Total optimization steps = 10,000",
        # LLaMA-Factory 0.9.5's PPO trainer (train/ppo/trainer.py) in its logger's format (extras/logging.py)
        "[INFO|2026-12-01 15:59:26] llamafactory.train.ppo.trainer:235 >>   Gradient Accumulation steps = 8",
        "[INFO|2026-12-01 15:59:26] llamafactory.train.ppo.trainer:236 >>   Num optimization epochs per batch = 4",
        "[INFO|2026-12-01 15:59:26] llamafactory.train.ppo.trainer:237 >>   Total training steps = 400",
        # transformers 4.x resumed runs: "Continuing training from epoch %d" / "from global step %d" (prose)
        "  Continuing training from epoch 1",
        "  Continuing training from global step 200",
        # through torchrun's --tee prefix
        "[default0]:[INFO|trainer.py:2413] 2025-03-06 12:04:09,914 >>   Total optimization steps = 196",
    ],
)
def test_start_up_banners_are_not_progress(line: str) -> None:
    assert parse_progress(line) is None


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("step = 8", 8),  # a one-word label is a step
        ("step = 8, loss = 0.5", 8),
        ("global_step = 12", 12),
        # DeepSpeed's PipelineEngine (runtime/pipe/engine.py): "steps: N loss: L iter time (s): ..."
        ("steps: 10 loss: 0.5000 iter time (s): 0.100 samples/sec: 80.000", 10),
        ("[GPU1] Epoch 7 | Batchsize: 32 | Steps: 64", 7),
    ],
)
def test_step_lines_beside_the_banner_shapes_still_count(line: str, step: int) -> None:
    parsed = parse_progress(line)
    assert parsed is not None and parsed.step == step


def test_a_banner_before_a_real_run_does_not_become_its_last_step() -> None:
    """The banner ahead of the real trl SFT run (tests/fixtures/corpus/trl_sft_cpu.log): goodput's max step and
    the progress the hang rule counts are the run's own 6 steps, not "Total optimization steps = 196"."""
    record = records.RunRecord.create("r-banner", {"nodes": []})
    tracker = attempts.ProgressTracker(record)
    watched = Progress()
    log = (ROOT / "tests" / "fixtures" / "corpus" / "trl_sft_cpu.log").read_text()
    lines = HF_BANNER.splitlines() + log.split("\n")
    for i, line in enumerate(lines):
        tracker.observe("node1", 0, line, now=100.0 + i)
    counted = [line for i, line in enumerate(lines) if watched.observe_line(100.0 + i, line)]
    events = [{"phase": "start", "attempt": 0, "time": 99.0}, {"phase": "end", "attempt": 0, "time": 200.0}]
    found = goodput.attempts_from(events, attempts.read_progress(record.root))
    assert found[0].max_step == 6
    assert not set(counted) & set(HF_BANNER.splitlines())
    steps = [p["step"] for p in attempts.read_progress(record.root) if p.get("step") is not None]
    assert steps and max(steps) == 6 and steps == sorted(steps)


def test_progress_regex_is_honoured_by_goodput_and_the_hang_rule() -> None:
    custom = re.compile(r"it=(\d+)")
    assert parse_progress("it=5 l=0.3") is None
    assert parse_progress("it=5 l=0.3", custom) == ProgressLine(5, None)
    assert progress_step("it=5 l=0.3", custom) == 5


def test_log_dict_losses_are_placed_at_the_latest_step(tmp_path: Path) -> None:
    """HF Trainer prints the loss in a dict without a step: the loss curve places it at the bar's step."""
    record = records.RunRecord.create("r-dict", {"nodes": []})
    tracker = attempts.ProgressTracker(record)
    lines = [" 10%|█ | 1/10 [00:01<00:09]", "{'loss': 2.5, 'epoch': 0.1}", " 20%|██ | 2/10 [00:02<00:08]"]
    lines += ["{'loss': 2.25, 'epoch': 0.2}", "{'loss': 2.25, 'epoch': 0.2}"]  # a second rank's copy
    for i, line in enumerate(lines):
        tracker.observe("n1", 0, line, now=100.0 + i)
    events = [{"phase": "start", "attempt": 0, "time": 99.0}, {"phase": "end", "attempt": 0, "time": 120.0}]
    found = goodput.attempts_from(events, attempts.read_progress(record.root))
    assert goodput.loss_curve(found) == [(0, 1, 2.5), (0, 2, 2.25)]
    assert found[0].max_step == 2


def test_checkpoint_steps() -> None:
    assert goodput.checkpoint_step("/ck/step-6") == 6
    assert goodput.checkpoint_step("/ck/checkpoint-8/") == 8
    assert goodput.checkpoint_step("/ck/global_step12") == 12
    assert goodput.checkpoint_step("/ck/latest") is None


# ------------------------------------------------------------------------------------------------ goodput
def mark(t: float, k: int, phase: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "info", "severity": "info", "time": t, "attempt": k, "phase": phase, "text": "", **extra}


def restarted_run() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Up at 0; attempt 0 trains steps 1-7 (t 10-16), node3 dies, teardown 18-20; attempt 1 resumes from step-6."""
    hosts0, hosts1 = ["node1", "node2", "node3"], ["node1", "node2", "node4"]
    events = [
        mark(2, 0, "start", hosts=hosts0),
        {"kind": "exit", "severity": "fatal", "time": 17.5, "node": "node3", "signal": "SIGKILL"},
        {"kind": "info", "severity": "info", "time": 18, "text": "tearing down: rank 2 killed"},
        mark(20, 0, "end", code=1),
        mark(21, 1, "start", hosts=hosts1, resume_from="/ck/step-6"),
        mark(40, 1, "end", code=0),
    ]
    progress = [{"t": 9 + s, "a": 0, "step": s, "loss": 1.0 / s} for s in range(1, 8)]
    progress += [{"t": 25 + (s - 7), "a": 1, "step": s, "loss": 1.0 / s} for s in range(7, 13)]
    return events, progress


def test_goodput_cuts_the_wall_time_into_parts_that_add_up() -> None:
    events, progress = restarted_run()
    gp = goodput.compute(0.0, 41.0, events, progress)
    data = gp.to_json()
    assert data["total_s"] == 41
    assert sum(data[p] for p in goodput.PARTS) == pytest.approx(41)
    assert data["startup_s"] == 10  # up → step 1
    assert data["productive_s"] == pytest.approx(6 + 5)  # steps 1→7, then 7 (redone) → 12
    assert data["detect_s"] == 2  # last progress 16 → tearing down at 18
    assert data["teardown_s"] == pytest.approx(2 + 10 + 1)  # 18→20, last step 30→end 40, closing 40→41
    assert data["restart_s"] == pytest.approx(5)  # 20 → step 7 again at 25
    assert data["lost_steps"] == 1 and data["attempts"] == 2
    assert 0 < data["ratio"] < 1
    assert gp.by_node["node3"]["productive_s"] == pytest.approx(6)
    assert gp.by_node["node4"]["productive_s"] == pytest.approx(5)
    assert gp.by_node["node1"]["total_s"] == pytest.approx(41)


def test_goodput_of_a_run_without_progress_is_all_startup_and_teardown() -> None:
    events = [mark(1, 0, "start", hosts=["a"]), mark(5, 0, "end", code=0)]
    data = goodput.compute(0.0, 6.0, events, []).to_json()
    assert data["productive_s"] == 0 and data["ratio"] == 0
    assert data["startup_s"] == 5 and data["teardown_s"] == 1


def test_goodput_tolerates_clock_disorder_and_still_sums() -> None:
    events, progress = restarted_run()
    progress.append({"t": -50, "a": 0, "step": 0, "loss": None})  # a bogus early time
    data = goodput.compute(0.0, 30.0, events, progress).to_json()  # ended before the last records
    assert sum(data[p] for p in goodput.PARTS) == pytest.approx(30)


def test_progress_tracker_writes_one_record_per_new_step(tmp_path: Path) -> None:
    record = records.RunRecord.create("r1", {"nodes": []})
    tracker = attempts.ProgressTracker(record)
    seen: list[str] = []
    sink = tracker.wrap(lambda h, r, t: seen.append(t))
    for rank in (0, 1):
        sink("node1", rank, "step=1 loss=0.5")  # every rank prints the step: noted once
    sink("node1", 0, "hello")
    tracker.attempt = 1
    sink("node1", 0, "step=1 loss=0.4")
    rows = attempts.read_progress(record.root)
    assert [(r["a"], r["step"], r["loss"]) for r in rows] == [(0, 1, 0.5), (1, 1, 0.4)]
    assert len(seen) == 4


# ------------------------------------------------------------------------------------------------ ledger
@pytest.mark.parametrize(
    ("root", "cause"),
    [
        ({"node": "n", "kind": "lost"}, "lost"),
        ({"node": "n", "kind": "line", "category": "gpu-fault"}, "gpu-fault"),
        (
            {"node": "n", "kind": "gpu", "category": "gpu-fault", "text": "amdgpu: GPU reset begin!"},
            "gpu-fault",
        ),
        ({"node": "n", "kind": "stall", "category": "straggler"}, "straggler"),
        ({"node": "n", "kind": "lost", "rule": "unresponsive"}, "lost"),
        # The kernel's OOM killer on that node: the rank it names, or a SIGKILL blamed on its log line.
        ({"node": "n", "kind": "line", "category": "oom", "rule": "host-oom-killer"}, "oom-kill"),
        (
            {
                "node": "n",
                "kind": "exit",
                "category": "oom",
                "signal": "SIGKILL",
                "text": "killed by SIGKILL — out of memory, per the kernel log: Out of memory: Killed process 7",
            },
            "oom-kill",
        ),
        # No node-level evidence: a rank SIGKILLed from outside, a signal alone, a Python exception.
        (
            {
                "node": "n",
                "kind": "exit",
                "category": "crash",
                "signal": "SIGKILL",
                "text": "killed by SIGKILL",
            },
            None,
        ),
        ({"node": "n", "kind": "line", "category": "crash", "rule": "rank-sigkill"}, None),
        ({"node": "n", "kind": "exit", "signal": "SIGSEGV"}, None),
        (
            {
                "node": "n",
                "kind": "line",
                "category": "crash",
                "rule": "python-traceback",
                "text": "IndexError: index out of range in self",
            },
            None,
        ),
        ({"node": "n", "kind": "exit", "signal": "SIGTERM"}, None),  # a teardown signal: a consequence
        ({"node": "n", "kind": "line", "category": "oom", "rule": "gpu-out-of-memory"}, None),  # the job's
        ({"node": "n", "kind": "line", "category": "config"}, None),
        (None, None),
    ],
)
def test_which_root_causes_strike_the_node(root: Any, cause: str | None) -> None:
    assert ledger.node_fault(root) == cause


def test_ledger_counts_strikes_in_the_window_and_after_the_last_clear(tmp_path: Path) -> None:
    root = {"node": "node3", "kind": "exit", "signal": "SIGKILL", "text": "x" * 5000}
    ledger.append([ledger.strike("node3", "r1", "gpu-fault", root, now=100.0)])
    ledger.append([ledger.strike("node3", "r2", "lost", root, now=1000.0)])
    with ledger.path().open("a") as f:
        f.write('{"torn": \n')  # a crash mid-write never breaks reading
    entries = ledger.read()
    assert len(entries) == 2 and len(entries[0]["text"]) == ledger.MAX_LINE
    assert ledger.summarize(entries, now=1001.0)["node3"].strikes == 2
    assert ledger.summarize(entries, window_s=10, now=1001.0)["node3"].strikes == 1
    ledger.append([ledger.clear("node3", now=1002.0)])
    node = ledger.summarize(ledger.read(), now=1003.0)["node3"]
    assert (
        node.strikes == 0 and node.strikes_total == 2 and node.last_cause == "lost" and node.last_run == "r2"
    )


# ------------------------------------------------------------------------------------------------ spares
def test_inventory_spares_must_not_repeat_a_node() -> None:
    with pytest.raises(InventoryError) as err:
        from_mapping(inv_data(spares=[{"host": "node2"}]))
    assert err.value.field == "spares.0.host" and "duplicate host 'node2'" in str(err.value)


def test_plan_shows_spares_and_a_swap_keeps_node_rank_and_world_size() -> None:
    inv = from_mapping(inv_data(master={"node": "node3"}))
    plan = planning.build_plan(inv, run_id="r", sources=planning.load_sources(inv), head_env={})
    assert plan.to_json()["spares"] == ["node4"] and any("spares node4" in n for n in plan.notes)
    swapped = spares.swap(inv, "node3", inv.spares[0])
    after = planning.build_plan(swapped, run_id="r", sources=planning.load_sources(swapped), head_env={})
    assert [(n.host, n.node_rank) for n in after.nodes] == [("node1", 0), ("node2", 1), ("node4", 2)]
    assert after.world_size == plan.world_size and after.master_addr == "node4" and after.spares == []


def test_up_replaces_a_struck_node_by_a_spare_or_refuses() -> None:
    root = {"node": "node3", "kind": "lost", "text": "lost the connection"}
    entries = [ledger.strike("node3", "r1", "lost", root)]
    inv, replaced = spares.admit(from_mapping(inv_data()), entries)
    assert replaced == {"node3": "node4"} and [n.host for n in inv.nodes] == ["node1", "node2", "node4"]
    with pytest.raises(LaunchError) as err:
        spares.admit(from_mapping(inv_data(spares=[])), entries)
    assert err.value.code == 3
    assert "node3" in str(err.value) and "rlaunch nodes --clear node3" in str(err.value)
    # without max_strikes nothing is refused
    assert spares.admit(from_mapping(inv_data(spares=[], health={})), entries)[1] == {}


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launcher.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=scaled(60),
        env={"PATH": "/usr/bin:/bin", "RLAUNCH_HOME": str(home)},
    )  # fmt: skip


def test_nodes_verb_lists_and_clears(run_home: Path) -> None:
    ledger.append([ledger.strike("node3", "r1", "gpu-fault", {"category": "gpu-fault", "text": "GPU reset"})])
    listed = cli(run_home, "nodes", "--json")
    assert listed.returncode == 0, listed.stderr
    (node,) = json.loads(listed.stdout)
    assert node["host"] == "node3" and node["strikes"] == 1 and node["last_cause"] == "gpu-fault"
    assert "node3" in cli(run_home, "nodes").stdout
    unknown = cli(run_home, "nodes", "--clear", "nodeX")
    assert (
        unknown.returncode == 2 and "no node 'nodeX'" in unknown.stderr and "Traceback" not in unknown.stderr
    )
    assert cli(run_home, "nodes", "--clear", "node3").returncode == 0
    assert json.loads(cli(run_home, "nodes", "--json").stdout)[0]["strikes"] == 0


# ------------------------------------------------------------------------------------------------ report
def synthetic_record() -> records.RunRecord:
    events, progress = restarted_run()
    record = records.RunRecord.create("20260101-000000-abcd", {"nodes": []})
    for e in events:
        record.append_event(e)
    with (record.root / attempts.PROGRESS).open("w") as f:
        f.writelines(json.dumps(p) + "\n" for p in progress)
    root = {
        "node": "node3",
        "rank": 2,
        "kind": "line",
        "category": "oom",
        "rule": "rank-sigkill",
        "time": 17.5,
        "text": "exitcode  : -9 (pid: 123) <script>alert(1)</script>",
    }
    (record.root / "outcome-0.json").write_text(
        json.dumps({"attempt": 0, "code": 1, "summary": "node3 died", "root_cause": root})
    )
    (record.root / "outcome-1.json").write_text(
        json.dumps({"attempt": 1, "code": 0, "summary": "ok", "root_cause": None})
    )
    record.append_log("node3", "step=7 loss=0.1")
    record.append_log("node3", root["text"])
    record.close()
    record.update_state(
        state="succeeded", cluster="sim4", started_at=0.0, ended_at=41.0,
        replaced=[{"attempt": 1, "node": "node3", "spare": "node4", "cause": "crash (SIGKILL)"}],
    )  # fmt: skip
    ledger.append([ledger.strike("node3", record.run_id, "crash (SIGKILL)", root, now=17.5)])
    return record


def test_report_is_one_self_contained_page(tmp_path: Path) -> None:
    record = synthetic_record()
    html = runreport.render(record)
    assert "<script" not in html.lower().replace("&lt;script", "")  # the log line's markup is escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "http://" not in html and "https://" not in html and "src=" not in html
    assert html.count("<svg") == 3
    assert "node4 replaced node3" in html and "crash (SIGKILL)" in html and "1 step(s) lost" in html


@pytest.mark.skipif(
    not __import__("shutil").which("chromium"), reason="chromium not installed (scripts/setup.sh)"
)
def test_report_renders_in_headless_chromium(tmp_path: Path, run_home: Path) -> None:
    import browser

    record = synthetic_record()
    page = tmp_path / "run.html"
    made = cli(run_home, "report", record.run_id, "--html", str(page))
    assert made.returncode == 0, made.stderr
    result = browser.open_page(page)
    assert result.console_errors == []
    assert result.svg_count == 3 and result.title == f"rlaunch run {record.run_id}"
    colours, ink = browser.non_blank(result.png)
    assert colours > 8 and ink > 0.02, (colours, ink)
    assert cli(run_home, "report", "nope", "--html", str(page)).returncode == 2


def test_goodput_textfile_for_prometheus(tmp_path: Path) -> None:
    record = synthetic_record()
    gp = attempts.goodput_of(record)
    assert gp is not None
    path = tmp_path / "metrics" / "rlaunch_run.prom"
    attempts.write_prometheus(path, record.run_id, "sim4", gp)
    text = path.read_text()
    assert f'rlaunch_run_goodput_ratio{{cluster="sim4",run_id="{record.run_id}"}} {gp.ratio}' in text
    assert "rlaunch_run_restart_seconds" in text and "rlaunch_run_lost_steps" in text


def test_a_real_hf_trainer_log_gives_its_steps_and_loss_curve() -> None:
    """What trl's SFTTrainer (a transformers Trainer; tests/corpus/trl_sft) printed here on CPU, 6 steps, logging
    every step: the training bar counts, the datasets bars ("Tokenizing train dataset", ...) do not, and each
    {'loss': '5.477', ...} dict (transformers 5 quotes the values) is a point at its step although tqdm drew the
    bar's last count late."""
    record = records.RunRecord.create("r-trl", {"nodes": []})
    tracker = attempts.ProgressTracker(record)
    log = (ROOT / "tests" / "fixtures" / "corpus" / "trl_sft_cpu.log").read_text()
    printed = [float(m) for m in re.findall(r"\{'loss': '([\d.]+)'", log)]
    for i, line in enumerate(log.split("\n")):
        tracker.observe("node1", 0, line, now=100.0 + i)
    events = [{"phase": "start", "attempt": 0, "time": 99.0}, {"phase": "end", "attempt": 0, "time": 200.0}]
    found = goodput.attempts_from(events, attempts.read_progress(record.root))
    assert found[0].max_step == 6
    assert goodput.loss_curve(found) == [(0, step, loss) for step, loss in enumerate(printed, start=1)]
    assert len(printed) == 6
