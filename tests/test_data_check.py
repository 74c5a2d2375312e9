"""rlaunch data check: LLaMA-Factory alpaca / sharegpt datasets, JSON Lines or a JSON array, line numbers kept.

Record shapes follow LLaMA-Factory data/README.md (alpaca: instruction/input/output/system/history; sharegpt:
conversations with from/value, or messages with role/content).
"""

from __future__ import annotations

import hashlib
import json

from launcher.data import check_dataset

GOOD_ALPACA = {"instruction": "Add", "input": "1 + 1", "output": "2"}
GOOD_SHAREGPT = {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
GOOD_MESSAGES = {
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
}


def write_jsonl(path, lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_good_alpaca_jsonl(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [GOOD_ALPACA, {**GOOD_ALPACA, "history": [["q", "a"]]}])
    report = check_dataset(path)
    assert (report.ok, report.format, report.container, report.total, report.exit_code) == (
        True,
        "alpaca",
        "jsonl",
        2,
        0,
    )
    assert report.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_bad_alpaca_records_have_line_numbers(tmp_path):
    path = write_jsonl(
        tmp_path / "a.jsonl",
        [
            GOOD_ALPACA,
            {"instruction": "", "input": "", "output": "x"},
            '{"instruction": "broken',
            {"instruction": "q"},
            {"instruction": "q", "output": ["chosen"]},
            {"instruction": "q", "output": "a", "history": [["only one"]]},
        ],
    )
    report = check_dataset(path)
    assert [b.line for b in report.bad] == [2, 3, 4, 5, 6]
    assert "empty prompt" in report.bad[0].reason and "not valid JSON" in report.bad[1].reason
    assert "missing `output`" in report.bad[2].reason
    assert (report.total, report.valid, report.exit_code) == (6, 1, 1)
    assert report.lines()[0].startswith(f"{path}:2: record 1:")


def test_sharegpt_json_array_both_styles(tmp_path):
    bad_roles = {"conversations": [{"from": "gpt", "value": "x"}, {"from": "human", "value": "y"}]}
    ends_on_user = {"messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "s.json"
    path.write_text(
        "[\n"
        + ",\n".join(json.dumps(r, indent=1) for r in [GOOD_SHAREGPT, GOOD_MESSAGES, bad_roles, ends_on_user])
        + "\n]"
    )
    report = check_dataset(path)
    assert (report.format, report.container, report.total) == ("sharegpt", "json", 4)
    lines = path.read_text().splitlines()
    assert [lines[b.line - 1].strip() for b in report.bad] == ["{", "{"]  # each bad record's own first line
    assert "turn 1 has role 'gpt'" in report.bad[0].reason
    assert "ends on a user turn" in report.bad[1].reason


def test_forced_format_and_unusable_files(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [GOOD_ALPACA])
    assert check_dataset(path, format="sharegpt").bad[0].reason.startswith("missing `conversations`")
    missing = check_dataset(tmp_path / "nope.json")
    assert (missing.ok, missing.exit_code) == (False, 2)
    broken = tmp_path / "b.json"
    broken.write_text('[\n{"instruction": "a", "output": "b"},\n{"oops"\n]')
    report = check_dataset(broken)
    assert report.exit_code == 2 and report.error.startswith("line 3:")
    unknown = write_jsonl(tmp_path / "u.jsonl", [{"text": "pretraining?"}])
    assert check_dataset(unknown).exit_code == 2
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    assert (check_dataset(empty).error, check_dataset(empty).exit_code) == ("no records", 2)
    assert json.loads(check_dataset(path).to_json())["valid"] == 1
