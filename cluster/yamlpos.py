"""Load YAML and remember the line of every value, so errors can say file:line.

PyYAML's safe loader throws positions away; composing the node tree ourselves keeps them. Duplicate keys,
which PyYAML silently resolves to the last one, are reported as errors because they usually hide a typo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Loc = tuple[str | int, ...]

# Hostile-input caps (docs/security.md): an inventory is a few KB. Aliases make a small file expand
# exponentially (a "billion laughs") or into a cycle, so converted values are counted as well as nested.
MAX_BYTES = 4 << 20
MAX_VALUES = 200_000
MAX_DEPTH = 64


class YamlError(Exception):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass
class Located:
    """A plain Python value plus the 1-based line of every path inside it."""

    value: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest known prefix of `loc` (pydantic locs can point below what YAML saw)."""
        for cut in range(len(loc), -1, -1):
            if loc[:cut] in self.lines:
                return self.lines[loc[:cut]]
        return None


def load(text: str) -> Located:
    if len(text) > MAX_BYTES:
        raise YamlError(f"file is larger than {MAX_BYTES >> 20} MiB; an inventory is a few KB")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise YamlError(f"nested more than {MAX_DEPTH} levels deep") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise YamlError(f"YAML syntax error: {exc.problem or exc}", line) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"YAML syntax error: {exc}") from None
    out = Located(value=None)
    if root is None:
        out.value = {}
        return out
    out.value = _convert(root, (), out.lines, [0])
    return out


def load_file(path: Path) -> Located:
    with path.open("rb") as handle:
        raw = handle.read(MAX_BYTES + 1)
    return load(raw.decode("utf-8"))


def _convert(node: yaml.Node, loc: Loc, lines: dict[Loc, int], count: list[int]) -> Any:
    count[0] += 1
    if count[0] > MAX_VALUES:
        raise YamlError(f"more than {MAX_VALUES} values (aliases expanding?)", node.start_mark.line + 1)
    if len(loc) > MAX_DEPTH:
        raise YamlError(
            f"nested more than {MAX_DEPTH} levels deep (a recursive alias?)", node.start_mark.line + 1
        )
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if key in result:
                raise YamlError(f"duplicate key '{key}'", key_node.start_mark.line + 1)
            child = (*loc, key)
            result[key] = _convert(value_node, child, lines, count)
            lines[child] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*loc, i), lines, count) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()
