"""`rlaunch data check FILE`: validate a LLaMA-Factory dataset before a job reads it on every rank.

Formats follow LLaMA-Factory's converters (src/llamafactory/data/converter.py, data/README.md):
- alpaca: {"instruction", "input"?, "output", "system"?, "history"?: [[query, response], ...]}; `output` may be a
  list of two strings for ranking (preference) data.
- sharegpt: "conversations" with {"from", "value"} (human/gpt/observation/function_call, system) or OpenAI-style
  "messages" with {"role", "content"} (user/assistant/tool/system). After an optional leading system message,
  turns alternate user-side / assistant-side and the last turn is the assistant's: LLaMA-Factory drops other
  records with "Invalid role tag" at load time, which shows up as a silently smaller dataset.

Containers: JSON Lines (one record per line) or a JSON array; line numbers are reported for both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from launcher.errors import ExitCode

Format = Literal["alpaca", "sharegpt"]

USER_SIDE = {"human", "user", "observation", "tool"}
ASSISTANT_SIDE = {"gpt", "assistant", "function_call"}
SYSTEM = {"system"}


@dataclass(frozen=True)
class BadRecord:
    line: int  # 1-based line where the record starts
    index: int  # 0-based record number
    reason: str


@dataclass
class DataReport:
    path: str
    format: str | None = None  # alpaca | sharegpt | None (undetected)
    container: str | None = None  # jsonl | json
    total: int = 0
    bad: list[BadRecord] = field(default_factory=list)
    sha256: str | None = None
    size: int | None = None
    error: str | None = None  # the file as a whole could not be read or parsed

    @property
    def valid(self) -> int:
        return self.total - len(self.bad)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.bad and self.total > 0

    @property
    def exit_code(self) -> int:
        """0 all good · 1 some records are bad · 2 the file itself is unusable or empty (bad input)."""
        if self.error is not None:
            return ExitCode.BAD_INPUT
        return ExitCode.OK if self.ok else ExitCode.FAILED

    def to_json(self) -> str:
        data = asdict(self)
        data.update(valid=self.valid, ok=self.ok)
        return json.dumps(data, indent=2)

    def lines(self, limit: int = 50) -> list[str]:
        """Human output: one line per bad record (FILE:LINE: reason), then counts."""
        out = [f"{self.path}:{b.line}: record {b.index}: {b.reason}" for b in self.bad[:limit]]
        if len(self.bad) > limit:
            out.append(f"... and {len(self.bad) - limit} more bad records")
        if self.error:
            out.append(f"{self.path}: {self.error}")
        out.append(
            f"{self.path}: {self.format or 'unknown'} format ({self.container or '?'}), {self.total} records, "
            f"{self.valid} valid, {len(self.bad)} bad, sha256 {self.sha256 or '-'}"
        )
        return out


def check_dataset(
    path: str | Path, format: Format | None = None, remap: Callable[[Any], Any] | None = None
) -> DataReport:
    """Validate every record; never raises for the file's content (the report carries the problems).

    `remap`: turns a record with dataset_info.json column/tag names into the default names checked here.
    """
    report = DataReport(path=str(path))
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        report.error = f"cannot read: {exc.strerror or exc}"
        return report
    report.sha256 = hashlib.sha256(raw).hexdigest()
    report.size = len(raw)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        report.error = f"not UTF-8 text (byte {exc.start})"
        return report

    records = _records(text, report)
    if records is None:
        return report
    if not records:
        report.error = "no records"
        return report
    if remap is not None:
        records = [(line, r if isinstance(r, str) else remap(r)) for line, r in records]
    report.total = len(records)
    report.format = format or _detect(records)
    if report.format is None:
        report.error = "cannot tell the format: no record has `instruction` (alpaca) or `conversations`/`messages` (sharegpt)"
        return report
    validate = _alpaca if report.format == "alpaca" else _sharegpt
    for index, (line, record) in enumerate(records):
        reason = record if isinstance(record, str) else validate(record)
        if reason:
            report.bad.append(BadRecord(line, index, reason))
    return report


def _records(text: str, report: DataReport) -> list[tuple[int, Any]] | None:
    """(line, record) pairs; a record that is not valid JSON becomes (line, 'reason string')."""
    stripped = text.lstrip()
    if not stripped:
        report.container = "jsonl"
        return []
    if stripped.startswith("["):
        report.container = "json"
        return _json_array(text, report)
    report.container = "jsonl"
    out: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except ValueError as exc:
            out.append((number, f"not valid JSON: {_short(exc)}"))
    return out


def _json_array(text: str, report: DataReport) -> list[tuple[int, Any]] | None:
    """Walk a JSON array element by element so each record keeps the line it starts on."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    out: list[tuple[int, Any]] = []

    def skip(p: int) -> int:
        while p < len(text) and text[p] in " \t\r\n":
            p += 1
        return p

    pos = skip(pos)
    if pos < len(text) and text[pos] == "]":
        return out
    while True:
        pos = skip(pos)
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError as exc:
            report.error = f"line {line}: not valid JSON: {_short(exc)} (stopped after {len(out)} records)"
            report.total = len(out)
            return None
        out.append((line, value))
        pos = skip(pos)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        if pos < len(text) and text[pos] == "]":
            if skip(pos + 1) < len(text):
                report.error = f"line {text.count(chr(10), 0, pos) + 1}: text after the closing ]"
                return None
            return out
        report.error = (
            f"line {text.count(chr(10), 0, pos) + 1}: expected ',' or ']' after record {len(out) - 1}"
        )
        return None


def _short(exc: ValueError) -> str:
    return str(exc).split(": line")[0]


def _detect(records: list[tuple[int, Any]]) -> Format | None:
    for _, record in records:
        if isinstance(record, dict):
            if "conversations" in record or "messages" in record:
                return "sharegpt"
            if "instruction" in record:
                return "alpaca"
    return None


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _alpaca(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    instruction, query = record.get("instruction"), record.get("input", "")
    if "instruction" not in record:
        return "missing `instruction`"
    if not _is_text(instruction) or (query is not None and not _is_text(query)):
        return "`instruction` and `input` must be strings"
    if not (instruction or "").strip() and not (query or "").strip():
        return "empty prompt: `instruction` and `input` are both empty"
    if "output" not in record:
        return "missing `output`"
    output = record["output"]
    if isinstance(output, list):
        if len(output) != 2 or not all(_is_text(o) for o in output):
            return "`output` as a list (ranking data) must hold exactly two strings: chosen, rejected"
    elif not _is_text(output):
        return f"`output` must be a string, got {type(output).__name__}"
    elif not output.strip():
        return "empty `output`"
    if "system" in record and record["system"] is not None and not _is_text(record["system"]):
        return "`system` must be a string"
    history = record.get("history")
    pairs = isinstance(history, list) and all(
        isinstance(turn, list) and len(turn) == 2 and all(_is_text(t) for t in turn) for turn in history
    )
    if history is not None and not pairs:
        return "`history` must be a list of [query, response] string pairs"
    return None


def _sharegpt(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    key = "conversations" if "conversations" in record else "messages" if "messages" in record else None
    if key is None:
        return "missing `conversations` (or `messages`)"
    turns = record[key]
    if not isinstance(turns, list) or not turns:
        return f"`{key}` must be a non-empty list"
    role_key, text_key = ("from", "value") if key == "conversations" else ("role", "content")
    if turns and isinstance(turns[0], dict) and "from" not in turns[0] and "role" in turns[0]:
        role_key, text_key = "role", "content"  # "conversations" holding OpenAI-style messages
    roles = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            return f"{key}[{i}] must be an object"
        if role_key not in turn or text_key not in turn:
            return f"{key}[{i}] needs `{role_key}` and `{text_key}`"
        if not _is_text(turn[text_key]):
            return f"{key}[{i}].{text_key} must be a string"
        roles.append(str(turn[role_key]))
    if roles and roles[0] in SYSTEM:
        roles = roles[1:]
    if not roles:
        return "only a system message, no turns"
    for i, role in enumerate(roles):
        expected = USER_SIDE if i % 2 == 0 else ASSISTANT_SIDE
        if role not in expected:
            side = "user/human/observation" if i % 2 == 0 else "assistant/gpt/function_call"
            return f"turn {i + 1} has role {role!r}, expected {side} (turns must alternate, starting with the user)"
    if len(roles) % 2:
        return "the conversation ends on a user turn: the last turn must be the assistant's"
    return None
