"""Doctor, step 2: the raw facts of one node (launcher/node/facts.py's JSON) → parsed, comparable facts."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from launcher.doctor.parse import (
    GPU_GROUPS,
    Fact,
    Gpu,
    _json_in,
    _text,
    parse_amd_smi_static,
    parse_amd_smi_version,
    parse_rocm_smi,
    parse_rocm_version_file,
    parse_rocminfo,
    unknown,
)

# ---------------------------------------------------------------------------------------------------------
# Raw facts of one node → parsed facts


@dataclass
class Facts:
    """Everything doctor knows about one node. `error` is set when no facts came back at all."""

    host: str
    values: dict[str, Fact] = field(default_factory=dict)
    gpus: list[Gpu] | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    sent_at: float = 0.0
    received_at: float = 0.0

    def get(self, name: str) -> Fact:
        return self.values.get(name) or unknown(self.error or "not collected")

    def probe(self, name: str) -> dict[str, Any] | None:
        value = self.raw.get(name)
        return value if isinstance(value, dict) else None


TABLE_FACTS = (
    "hostname",
    "os",
    "kernel",
    "rocm",
    "gpu_count",
    "gpu_arch",
    "gpu_name",
    "gpu_vram_gib",
    "torch",
    "torch_build",
    "rccl",
    "python",
    "deepspeed",
    "transformers",
    "llamafactory",
    "groups",
    "disk_free_gib",
    "mem_available_gib",
    "clock_offset_s",
)


def _tool_reason(tool: dict[str, Any] | None, what: str) -> str:
    if not tool:
        return f"{what}: not run"
    if tool.get("error"):
        return str(tool["error"])
    if tool.get("rc") not in (0, None):
        tail = (str(tool.get("stderr") or "").strip().splitlines() or [""])[-1]
        return f"{what}: exit {tool.get('rc')}" + (f": {tail[:120]}" if tail else "")
    return f"{what}: unrecognised output"


def _tool_out(tool: dict[str, Any] | None) -> str | None:
    return str(tool.get("stdout") or "") if tool and not tool.get("error") and tool.get("rc") == 0 else None


def parse_facts(host: str, raw: Mapping[str, Any], sent_at: float = 0.0, received_at: float = 0.0) -> Facts:
    """Turn the node script's JSON into Facts. Pure; tolerant of any missing or odd field."""
    facts = Facts(host=host, raw=dict(raw), sent_at=sent_at, received_at=received_at)
    if raw.get("fatal"):
        facts.error = f"fact probe failed: {raw['fatal']}"
        return facts
    v = facts.values
    tools = raw.get("tools") if isinstance(raw.get("tools"), dict) else {}

    for name in ("hostname", "os", "kernel", "python"):
        text = _text(raw.get(name))
        v[name] = Fact(text) if text else unknown(f"{name} not reported")

    # ROCm: the version file first; newer installs lack it, so `amd-smi version --json` next.
    file_probe = raw.get("rocm_version_file") if isinstance(raw.get("rocm_version_file"), dict) else {}
    rocm = parse_rocm_version_file(file_probe.get("text"))
    if rocm:
        v["rocm"] = Fact(rocm, source=".info/version")
    else:
        rocm = parse_amd_smi_version(_tool_out(tools.get("amd_smi_version")))
        reasons = [
            file_probe.get("error") or ".info/version unreadable",
            _tool_reason(tools.get("amd_smi_version"), "amd-smi version"),
        ]
        v["rocm"] = Fact(rocm, source="amd-smi version") if rocm else unknown("; ".join(reasons))

    # GPUs: amd-smi, then rocm-smi, then rocminfo; the first that answers in a shape we know wins.
    reasons = []
    for key, label, parser in (
        ("amd_smi_static", "amd-smi static", parse_amd_smi_static),
        ("rocm_smi", "rocm-smi", parse_rocm_smi),
        ("rocminfo", "rocminfo", parse_rocminfo),
    ):
        gpus = parser(_tool_out(tools.get(key)))
        if gpus is not None:
            facts.gpus = gpus
            source = label
            break
        reasons.append(_tool_reason(tools.get(key), label))
    if facts.gpus is None:
        why = "; ".join(reasons)
        for name in ("gpu_count", "gpu_arch", "gpu_name", "gpu_vram_gib"):
            v[name] = unknown(why)
    else:
        gpus = facts.gpus
        v["gpu_count"] = Fact(len(gpus), source=source)
        v["gpu_arch"] = _summary([g.arch for g in gpus], source, "gfx arch")
        v["gpu_name"] = _summary([g.name or g.product for g in gpus], source, "marketing name")
        vram = [round(g.vram_bytes / 1024**3) if g.vram_bytes else None for g in gpus]
        v["gpu_vram_gib"] = _summary(vram, source, "VRAM")

    _torch_facts(v, tools.get("torch"))
    if _cpu_node(v, tools, file_probe):
        # No ROCm at all and a torch without GPU support: one clear "none" per row, not five "unknown (amd-smi:
        # not found on PATH; rocm-smi: ...)" that look like a broken GPU node. gpu_count 0 still fails gpu_count
        # for a node the inventory lists GPUs on.
        why = "a CPU node: no ROCm, no amd-smi/rocm-smi/rocminfo, torch without GPU support"
        v["rocm"] = Fact("none", source=why)
        v["gpu_count"] = Fact(0, source=why)
        for name in ("gpu_arch", "gpu_name", "gpu_vram_gib"):
            v[name] = Fact("-", source=why)

    packages = raw.get("packages") if isinstance(raw.get("packages"), dict) else {}
    for name in ("deepspeed", "transformers", "llamafactory"):
        version = _text(packages.get(name))
        v[name] = Fact(version) if version else unknown("not installed")

    groups = raw.get("groups") if isinstance(raw.get("groups"), dict) else {}
    names = groups.get("groups")
    if groups.get("uid") == 0:
        v["groups"] = Fact("root")  # root opens /dev/kfd and /dev/dri without video/render
    elif isinstance(names, list):
        v["groups"] = Fact(",".join(g for g in GPU_GROUPS if g in names) or "-")
    else:
        v["groups"] = unknown("not reported")
    disk = raw.get("disk_free")
    v["disk_free_gib"] = (
        Fact(round(disk / 1024**3, 1)) if isinstance(disk, int | float) else unknown("not reported")
    )
    mem = (raw.get("memory") or {}).get("available") if isinstance(raw.get("memory"), dict) else None
    v["mem_available_gib"] = (
        Fact(round(mem / 1024**3, 1)) if isinstance(mem, int | float) else unknown("not reported")
    )
    v["clock_offset_s"] = _clock_offset(raw.get("time_start"), sent_at, received_at)
    return facts


def _summary(values: list[Any], source: str, what: str) -> Fact:
    """One value when all GPUs agree, 'a/b' when a node mixes them, unknown when none reported it."""
    known = [x for x in values if x is not None]
    if not values:
        return unknown("no GPUs found")
    if not known:
        return unknown(f"{source} reports no {what}")
    distinct = list(dict.fromkeys(known))
    return Fact(distinct[0] if len(distinct) == 1 else "/".join(str(x) for x in distinct), source=source)


def _torch_facts(v: dict[str, Fact], tool: dict[str, Any] | None) -> None:
    probe = _json_in(_tool_out(tool)) if tool else None
    if not isinstance(probe, dict):
        why = _tool_reason(tool, "torch probe")
        for name in ("torch", "torch_build", "rccl"):
            v[name] = unknown(why)
        return
    if probe.get("import_error"):
        why = f"import torch failed: {probe['import_error']}"
        for name in ("torch", "torch_build", "rccl"):
            v[name] = unknown(why)
        return
    source = torch_source(tool)
    v["torch"] = (
        Fact(_text(probe.get("version")), source=source)
        if _text(probe.get("version"))
        else unknown("no __version__")
    )
    if _text(probe.get("hip")):
        v["torch_build"] = Fact(f"rocm (hip {probe['hip']})", source=source)
    elif _text(probe.get("cuda")):
        v["torch_build"] = Fact(f"cuda {probe['cuda']}", source=source)
    else:
        v["torch_build"] = Fact("cpu", source=source)
    rccl = _text(probe.get("rccl"))
    v["rccl"] = Fact(rccl, source=source) if rccl else unknown(str(probe.get("rccl_error") or "not reported"))


def torch_source(tool: Mapping[str, Any] | None) -> str | None:
    """Where the node's torch facts came from when it was not a fresh `import torch` (launcher/node/facts.py):
    its per-node cache (with the time it was learnt) or torch/version.py read as text by the fast checks."""
    if not tool:
        return None
    if isinstance(tool.get("cached_at"), int | float):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(tool["cached_at"])))
        return f"cached (learnt {when})"
    if tool.get("from_files"):
        return "torch/version.py (not imported)"
    return None


def _cpu_node(v: dict[str, Fact], tools: Mapping[str, Any], rocm_file: Mapping[str, Any]) -> bool:
    """Every GPU tool is absent (not found on PATH: not failing, not timing out), there is no ROCm version file,
    and torch is a CPU build that sees no device: nothing GPU-like to report, as opposed to GPU facts unknown."""
    absent = all(
        "not found on PATH" in str((tools.get(k) or {}).get("error") or "")
        for k in ("amd_smi_static", "amd_smi_version", "rocm_smi")
    )
    rocminfo = tools.get("rocminfo")
    absent = absent and (rocminfo is None or "not found on PATH" in str(rocminfo.get("error") or ""))
    return absent and not rocm_file.get("text") and v.get("torch_build", unknown("")).value == "cpu"


def _clock_offset(node_start: Any, sent_at: float, received_at: float) -> Fact:
    """The node read its clock between our send and our receive: any offset outside that window is real skew.

    Reported as the smallest offset consistent with the timings (0.0 when the clocks may agree), so slow SSH
    or a slow probe never shows up as skew.
    """
    if not isinstance(node_start, int | float) or not sent_at or not received_at:
        return unknown("no timestamps")
    if node_start > received_at:
        return Fact(round(node_start - received_at, 3))
    if node_start < sent_at:
        return Fact(round(node_start - sent_at, 3))
    return Fact(0.0)
