"""Edge health (launcher/node/edge.py): the guard's node-local rules, driven with plain data and a fake clock."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from e2e_helpers import push_guard_bundle

from launcher.health import classify, rules
from launcher.node import edge

ROOT = Path(__file__).resolve().parents[1]
FATAL = "[default1]:RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error, NCCL version 2.18.3"


def rundir(tmp_path: Path) -> Path:
    for name in ("rules.py", "vocabulary.py"):  # what a node gets (protocol.HEALTH_FILES)
        shutil.copy(ROOT / "launcher" / "health" / name, tmp_path / name)
    (tmp_path / "out.log").write_text("")
    return tmp_path


def health(tmp_path: Path, stall: float = 30.0) -> edge.EdgeHealth:
    made = edge.make(str(rundir(tmp_path)), {"edge": {"stall_timeout": stall, "head_timeout": 5}}, now=0.0)
    assert made is not None
    return made


def say(tmp_path: Path, *lines: str) -> None:
    with open(tmp_path / "out.log", "a") as f:
        f.write("".join(f"{line}\n" for line in lines))


def test_the_prefix_pattern_is_the_head_s() -> None:
    assert edge.LOCAL_PREFIX.pattern == classify._LOCAL_PREFIX.pattern
    assert edge.strip_prefixes("[default3]:[rank7]: boom") == (3, " boom")
    assert edge.strip_prefixes("[rank7]:[default3]:boom") == (3, "boom")


def test_the_pushed_table_is_the_head_s(tmp_path: Path) -> None:
    loaded = edge.load_rules(str(rundir(tmp_path)))
    assert loaded is not None and len(loaded.RULES) == len(rules.RULES)
    assert loaded.classify(FATAL.split(":", 1)[1]).rule == rules.classify(FATAL.split(":", 1)[1]).rule


def test_no_rules_pushed_means_no_edge_health(tmp_path: Path) -> None:
    assert edge.make(str(tmp_path), {"edge": {"stall_timeout": 30}}) is None
    assert edge.make(str(rundir(tmp_path)), {}) is None  # job.json without "edge": switched off


def test_a_fatal_line_ends_the_node_after_the_confirmation(tmp_path: Path) -> None:
    h = health(tmp_path)
    say(tmp_path, "[default0]:step=1 loss=0.5", FATAL)
    assert h.check(10.0, []) is None  # a clean exit may still follow (torchrun's exit-barrier errors)
    decision = h.check(10.0 + edge.LINE_CONFIRM_S, [])
    assert decision is not None and decision["kind"] == "line" and decision["local_rank"] == 1
    assert decision["category"] == "comm-error" and decision["reason"].startswith("edge health: comm-error")


def test_a_fresh_head_heartbeat_defers_the_decision(tmp_path: Path) -> None:
    h = health(tmp_path)
    say(tmp_path, FATAL)
    (tmp_path / "heartbeat").touch()
    now = os.stat(tmp_path / "heartbeat").st_mtime
    assert h.check(now, []) is None
    assert h.check(now + edge.LINE_CONFIRM_S, []) is None  # the head, seeing every node, acts first
    assert h.check(now + edge.LINE_CONFIRM_S + edge.HEAD_DEFER_S, []) is not None


def test_lines_after_training_completed_are_forgiven(tmp_path: Path) -> None:
    h = health(tmp_path)
    say(tmp_path, "[default0]:{'train_runtime': 12.3}", FATAL)
    assert h.check(100.0, []) is None


def test_a_stopped_process_is_confirmed_once_then_decided(tmp_path: Path) -> None:
    h = health(tmp_path)
    stopped = [{"pid": 4242, "state": "T", "local_rank": 0}]
    assert h.check(1.0, stopped) is None
    decision = h.check(1.0 + edge.STOP_CONFIRM_S, stopped)
    assert decision is not None and decision["kind"] == "stopped" and decision["local_rank"] == 0
    other = tmp_path / "other"
    other.mkdir()
    h2 = health(other)
    assert h2.check(1.0, stopped) is None
    assert h2.check(1.5, [{"pid": 4242, "state": "S"}]) is None  # a brief stop (a debugger) is no hang
    assert h2.check(3.0, stopped) is None


def test_silence_counts_only_on_a_node_that_kept_printing(tmp_path: Path) -> None:
    h = health(tmp_path, stall=30.0)
    say(tmp_path, "[default0]:loading model")
    h.check(1.0, [])
    assert (
        h.check(100.0, []) is None
    )  # printed at start-up only (like DeepSpeed's non-zero ranks): never hung
    for t in range(101, 140, 5):
        say(tmp_path, f"[default0]:step={t}")
        assert h.check(float(t), []) is None
    assert h.check(136.0 + 29, []) is None
    decision = h.check(136.0 + 31, [])
    assert decision is not None and decision["kind"] == "stall"


def test_the_forwarder_passes_on_flagged_lines_with_context_and_the_shown_rank(tmp_path: Path) -> None:
    fwd = edge.Forwarder(edge.load_rules(str(rundir(tmp_path))), show="0", context=2)
    out = []
    for i, text in enumerate(["[default0]:step=1", "[default1]:a", "[default1]:b", "[default1]:c", FATAL]):
        out += fwd.line(float(i), 10 * (i + 1), text)
    assert [(r["text"], r.get("ctx", False), r["f"]) for r in out[:3]] == [
        ("[default0]:step=1", False, None),
        ("[default1]:b", True, None),
        ("[default1]:c", True, None),
    ]
    assert out[3]["f"]["rule"] and out[3]["off"] == 50
    summary = fwd.summary(9.0)
    assert (
        summary["off"] == 50
        and summary["lines"] == {"0": 1, "1": 4}
        and set(summary["progress"]) == {"0", "1"}
    )
    assert fwd.summary(10.0) is None  # nothing new
    assert edge.Forwarder(fwd.rules, show="none").line(0.0, 1, "[default0]:x") == []
    assert edge.Forwarder(fwd.rules, show="all").line(0.0, 1, "[default5]:x")[0]["f"] is None


def test_ranks_option_maps_to_each_node_s_local_ranks() -> None:
    from launcher.plan import NodePlan, Plan
    from launcher.run.attempt import show_specs

    nodes = [
        NodePlan(h, h, i, 2, (), 2 * i, f"/r/{h}", "python3", [], {}, [])
        for i, h in enumerate(["node01", "node02"])
    ]
    plan = Plan("r", "c", "torchrun", "a", 1, 4, nodes, "ssh", "/r", False)
    assert show_specs(plan, None) == {"node01": "0", "node02": "none"}
    assert show_specs(plan, "all") == {"node01": "all", "node02": "all"}
    assert show_specs(plan, "0,3") == {"node01": "0", "node02": "1"}
    assert show_specs(plan, "node02:*,1") == {"node01": "1", "node02": "all"}
    for bad in ("node09:*", "7", "x", "node02:y"):
        with pytest.raises(ValueError):
            show_specs(plan, bad)


def test_the_pushed_rule_table_loads_on_a_node_without_rlaunch(tmp_path: Path) -> None:
    """A node has only the guard bundle (protocol.GUARD_BUNDLE) in its run directory, not rlaunch: rules.py must
    load from there with its vocabulary beside it. It imported `launcher.health.vocabulary`, so on a node without
    rlaunch edge health was silently off (and with another checkout installed, that checkout's table failed to
    build: KeyError 'miopen-db'). Checked by the guard's own loader in an interpreter without site-packages."""
    import json
    import subprocess
    import sys

    from launcher.plan import bundle_key

    rundir = tmp_path / "run"
    rundir.mkdir()
    for name in push_guard_bundle(rundir):
        assert bundle_key(name)  # every bundle file has its plan key
    code = (
        "import json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import edge\n"
        "table = edge.load_rules(sys.argv[1])\n"
        "match = table.classify(sys.argv[2]) if table else None\n"
        "print(json.dumps({'loaded': table is not None, 'rules': len(table.RULES) if table else 0,\n"
        "                  'rule': match.rule if match else None,\n"
        "                  'launcher': any(m.split('.')[0] == 'launcher' for m in sys.modules)}))\n"
    )
    line = "RuntimeError: CUDA error: out of memory"
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(rundir), line],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    head = rules.classify(line)
    assert got == {
        "loaded": True,
        "rules": len(rules.RULES),
        "rule": head.rule if head else None,
        "launcher": False,
    }
    assert got["rule"] is not None


# ---- the head's index of the table (rules.INDEX_FILE) ------------------------------------------------------------------


def test_the_index_and_its_sources_have_one_name_on_both_sides() -> None:
    """rules.py (loaded alone on a node) and protocol.py (the bundle's list) cannot import each other: the names of the
    index file and of the two files its digest covers are kept equal here."""
    from launcher.node import protocol

    assert rules.INDEX_FILE == protocol.RULES_INDEX_FILE
    assert rules.SOURCE_FILES == protocol.HEALTH_FILES


def _load_beside(directory: Path):  # type: ignore[no-untyped-def]
    table = edge.load_rules(str(directory))
    assert table is not None
    return table


def test_a_node_takes_what_the_head_derived_only_for_the_files_it_was_derived_from(tmp_path: Path) -> None:
    """A node's load takes each derived value (the scan, the lookahead, the families' rules) from the index the head
    pushed, instead of deriving it (0.15 CPU-seconds per guard and follower): shown by an index whose scan is a
    marker. The same index beside a table changed by one byte is not used: that table's own scan comes back."""
    import gzip
    import json

    push_guard_bundle(tmp_path)
    pushed = json.loads(gzip.decompress((tmp_path / rules.INDEX_FILE).read_bytes()))
    assert pushed["digest"] and {"needles", "family", "trie", "needle-set", "candidates"} <= set(
        pushed["derived"]
    )
    pushed["derived"]["trie"]["scan"] = "zz-marker-from-the-index"
    (tmp_path / rules.INDEX_FILE).write_bytes(gzip.compress(json.dumps(pushed).encode()))
    assert _load_beside(tmp_path)._SCAN.pattern == "zz-marker-from-the-index"

    with open(tmp_path / "vocabulary.py", "a") as f:
        f.write("# edited on the node\n")
    assert _load_beside(tmp_path)._SCAN.pattern == rules._SCAN.pattern


@pytest.mark.parametrize("index", ["pushed", "absent", "not gzip", "cut"])
def test_a_node_with_or_without_the_index_judges_every_fixture_line_as_the_head(
    tmp_path: Path, index: str
) -> None:
    from test_health_rules import CASES

    push_guard_bundle(tmp_path)
    if index == "absent":
        (tmp_path / rules.INDEX_FILE).unlink()
    elif index == "not gzip":
        (tmp_path / rules.INDEX_FILE).write_text('{"digest": ')
    elif index == "cut":
        whole = (tmp_path / rules.INDEX_FILE).read_bytes()
        (tmp_path / rules.INDEX_FILE).write_bytes(whole[: len(whole) // 2])
    node = _load_beside(tmp_path)
    assert len(node.RULES) == len(rules.RULES) and node._CANDIDATES == rules._CANDIDATES
    for _, _, _, line in CASES:
        head, there = rules.classify(line), node.classify(line)
        assert (head and (head.rule, head.category, head.severity)) == (
            there and (there.rule, there.category, there.severity)
        ), line
