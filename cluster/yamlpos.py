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
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
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
    out.value = _convert(root, (), out.lines)
    return out


def load_file(path: Path) -> Located:
    return load(path.read_text())


def _convert(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> Any:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if key in result:
                raise YamlError(f"duplicate key '{key}'", key_node.start_mark.line + 1)
            child = (*loc, key)
            result[key] = _convert(value_node, child, lines)
            lines[child] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*loc, i), lines) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()
