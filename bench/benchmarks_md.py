"""BENCHMARKS.md sections: each bench script owns one marked section and rewrites only that one."""

from __future__ import annotations

import os
import re
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def write_section(begin: str, end: str, text: str, path: Path = PATH) -> None:
    """Replace (or append) the section between the `begin` and `end` markers, leaving the rest alone; atomic."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    section = f"{begin}\n{text}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    new = (
        pattern.sub(lambda _: section, old)
        if pattern.search(old)
        else old.rstrip("\n") + "\n\n" + section + "\n"
    )
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(new)
    os.replace(tmp, path)
