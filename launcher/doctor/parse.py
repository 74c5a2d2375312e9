"""Doctor, step 1: values that may be unknown, and parsers over real tool outputs (tests/fixtures/smi).

Each parser returns None when the text is not what it expects; a tool that is missing, hangs or prints garbage
yields a fact that is "unknown" with a reason, never an exception.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from launcher.rocm import ARCH_PRODUCT, ROCM_SMI_ARCH

_NA = {"", "n/a", "na", "none", "null", "unknown", "not supported", "unsupported"}
GPU_GROUPS = ("video", "render")


# ---------------------------------------------------------------------------------------------------------
# Values that may be unknown


@dataclass(frozen=True)
class Fact:
    """One fact about one node: a value, or None with the reason it is unknown."""

    value: Any = None
    reason: str | None = None
    source: str | None = None

    @property
    def known(self) -> bool:
        return self.value is not None

    def show(self) -> str:
        return str(self.value) if self.known else f"unknown ({self.reason or 'no data'})"


def unknown(reason: str) -> Fact:
    return Fact(None, reason)


@dataclass(frozen=True)
class Gpu:
    arch: str | None
    name: str | None
    vram_bytes: int | None = None

    @property
    def product(self) -> str | None:
        return ARCH_PRODUCT.get(self.arch or "")


def _is_na(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in _NA)


def _text(value: Any) -> str | None:
    return None if _is_na(value) or isinstance(value, dict | list) else str(value).strip()


def normalize_arch(arch: Any) -> str | None:
    """'gfx90a:sramecc+:xnack-' → 'gfx90a'; rocm-smi's 'gfx9010' → 'gfx90a'; garbage → None."""
    text = _text(arch)
    if not text:
        return None
    m = re.search(r"gfx[0-9a-f]+", text.lower())
    if not m:
        return None
    return ROCM_SMI_ARCH.get(m.group(0), m.group(0))


_UNITS = {"b": 1, "kb": 1024, "kib": 1024, "mb": 1024**2, "mib": 1024**2, "gb": 1024**3, "gib": 1024**3}


def _bytes(value: Any, default_unit: str = "b") -> int | None:
    """amd-smi sizes: {"value": 196592, "unit": "MB"}, a bare number, "N/A", or "196592 MB"."""
    if isinstance(value, dict):
        return _bytes(value.get("value"), str(value.get("unit") or default_unit))
    if isinstance(value, bool) or _is_na(value):
        return None
    if isinstance(value, int | float):
        return int(value * _UNITS.get(default_unit.strip().lower(), 1)) if value >= 0 else None
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(value))
    if not m:
        return None
    try:
        number = float(m.group(1))
    except ValueError:
        return None
    return int(number * _UNITS.get((m.group(2) or default_unit).lower(), 1))


# ---------------------------------------------------------------------------------------------------------
# Parsers over real tool outputs (tests/fixtures/smi). Each returns None when the text is not what it expects.


def _json_in(text: str | None) -> Any:
    """JSON that may follow banner lines ("WARNING: ..."), as amd-smi prints them."""
    if not text or not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    for m in re.finditer(r"^[\[{]", text, re.M):
        try:
            return json.JSONDecoder().raw_decode(text[m.start() :])[0]
        except ValueError:
            continue
    return None


def parse_rocm_smi(text: str | None) -> list[Gpu] | None:
    """`rocm-smi --showproductname --showmeminfo vram --json`: {"card0": {"Card Series": ..., ...}, "system": ...}."""
    data = _json_in(text)
    if not isinstance(data, dict):
        return None
    cards = sorted(
        (
            (int(k[4:]), v)
            for k, v in data.items()
            if re.fullmatch(r"card\d+", str(k)) and isinstance(v, dict)
        ),
        key=lambda kv: kv[0],
    )
    if not cards and data:
        return None  # JSON, but no card keys: another shape we don't know
    gpus = []
    for _, card in cards:
        lower = {str(k).lower(): v for k, v in card.items()}
        name = next(
            (_text(lower[k]) for k in ("card series", "device name", "card model") if _text(lower.get(k))),
            None,
        )
        arch = normalize_arch(lower.get("gfx version"))
        vram = _bytes(lower.get("vram total memory (b)"))
        gpus.append(Gpu(arch=arch, name=name, vram_bytes=vram))
    return gpus


def parse_amd_smi_static(text: str | None) -> list[Gpu] | None:
    """`amd-smi static --json`: a list of GPUs (amd-smi < 26) or {"gpu_data": [...]} (≥ 26)."""
    data = _json_in(text)
    if isinstance(data, dict):
        data = data.get("gpu_data", data.get("gpus"))
    if not isinstance(data, list):
        return None
    gpus = []
    for entry in data:
        if not isinstance(entry, dict):
            continue
        asic = entry.get("asic") if isinstance(entry.get("asic"), dict) else {}
        board = entry.get("board") if isinstance(entry.get("board"), dict) else {}
        vram = entry.get("vram") if isinstance(entry.get("vram"), dict) else {}
        size = next((vram[k] for k in ("size", "vram_size", "vram_size_mb") if k in vram), None)
        gpus.append(
            Gpu(
                arch=normalize_arch(asic.get("target_graphics_version")),
                name=_text(asic.get("market_name")) or _text(board.get("product_name")),
                vram_bytes=_bytes(size, "MB"),
            )
        )
    return gpus


def parse_amd_smi_version(text: str | None) -> str | None:
    """ROCm version from `amd-smi version --json` ([{"rocm_version": ...}]) or its text form ("ROCm version: X")."""
    data = _json_in(text)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict):
        return _version(data.get("rocm_version"))
    m = re.search(r"ROCm version:\s*([^\s|]+)", text or "")
    return _version(m.group(1)) if m else None


def parse_rocm_version_file(text: str | None) -> str | None:
    """/opt/rocm/.info/version: '6.2.0-66' → '6.2.0'."""
    return _version((text or "").strip().splitlines()[0] if (text or "").strip() else None)


def _version(value: Any) -> str | None:
    text = _text(value)
    if not text:
        return None
    m = re.match(r"\d+(\.\d+)+", text)
    return m.group(0) if m else None


def parse_rocminfo(text: str | None) -> list[Gpu] | None:
    """`rocminfo`: one block per HSA agent; GPUs have `Device Type: GPU`, `Name: gfxNNN`, a GLOBAL pool size in KB."""
    if not text or "Agent" not in text:
        return None
    gpus = []
    for block in re.split(r"^\*+\s*\n\s*Agent \d+\s*\n\*+\s*$", text, flags=re.M)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if (
                sep and key not in fields
            ):  # the first Name/Size wins: agent name, then the first (GLOBAL) pool
                fields[key] = value.strip()
        if fields.get("Device Type", "").upper() != "GPU":
            continue
        size = re.match(r"(\d+)", fields.get("Size", ""))
        gpus.append(
            Gpu(
                arch=normalize_arch(fields.get("Name")),
                name=_text(fields.get("Marketing Name")),
                vram_bytes=int(size.group(1)) * 1024 if size else None,
            )
        )
    return gpus
