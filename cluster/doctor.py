"""`rlaunch doctor`: raw node facts → parsed facts → checks, with the odd node out named.

Most multi-node failures are one node that differs (another ROCm or RCCL, a CUDA torch wheel, a missing group
or kernel option). The node side (launcher/node/facts.py, passed in as bytes: cluster/ never imports launcher/)
returns tool outputs verbatim; everything here is pure parsing and comparison, tested against captured outputs
(tests/fixtures/smi/SOURCES.md). A tool that is missing, hangs or prints garbage yields a fact that is
"unknown" with a reason, never an exception.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from cluster.inventory import Inventory
from cluster.transport import Result, Transport, zip_hosts

Severity = Literal["error", "warning"]
Status = Literal["pass", "fail", "skip"]

ARCH_PRODUCT = {
    "gfx908": "MI100",
    "gfx90a": "MI250",
    "gfx942": "MI300X",
    "gfx950": "MI350X",
    "gfx1100": "RX 7900",
}
# rocm-smi prints KFD's gfx_target_version digit by digit: 9.0.10 comes out as "gfx9010", not "gfx90a".
_ROCM_SMI_ARCH = {"gfx9010": "gfx90a", "gfx9012": "gfx90c"}
_NA = {"", "n/a", "na", "none", "null", "unknown", "not supported", "unsupported"}
GPU_GROUPS = ("video", "render")
IOMMU_OPTIONS = ("iommu=pt", "amd_iommu=on")
CLOCK_SKEW_WARN_S = 2.0
DISK_FREE_WARN_BYTES = 10 * 1024**3


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
    return _ROCM_SMI_ARCH.get(m.group(0), m.group(0))


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
    v["torch"] = (
        Fact(_text(probe.get("version"))) if _text(probe.get("version")) else unknown("no __version__")
    )
    if _text(probe.get("hip")):
        v["torch_build"] = Fact(f"rocm (hip {probe['hip']})")
    elif _text(probe.get("cuda")):
        v["torch_build"] = Fact(f"cuda {probe['cuda']}")
    else:
        v["torch_build"] = Fact("cpu")
    rccl = _text(probe.get("rccl"))
    v["rccl"] = Fact(rccl) if rccl else unknown(str(probe.get("rccl_error") or "not reported"))


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


# ---------------------------------------------------------------------------------------------------------
# Gathering (one round trip per node, in parallel through the transport)


FACTS_TAG = '"rlaunch_facts"'


def _decode(result: Result) -> dict[str, Any] | str:
    """The node script's JSON (last tagged line of stdout), or why there is none."""
    if result.error:
        return result.error
    for line in reversed(result.stdout.splitlines()):
        if FACTS_TAG in line and line.lstrip().startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                break
            if isinstance(data, dict):
                return data
    return f"no facts in the probe's output ({result.why()})"


def gather(
    transport: Transport,
    hosts: Iterable[str],
    script: bytes,
    args: Mapping[str, Any] | Callable[[str], Mapping[str, Any]],
    timeout: float,
    *,
    python_for: Mapping[str, str] | None = None,
) -> dict[str, Facts]:
    """Run the fact probe on every host (in parallel) and parse what comes back. Never raises for node trouble."""
    hosts = list(hosts)
    times: dict[str, tuple[float, float]] = {}

    def run_one(host: str) -> Result:
        node_args = dict(args(host) if callable(args) else args)
        node_args.setdefault("node", host)
        python = (python_for or {}).get(host, "python3")
        sent = time.time()
        result = transport.run(
            host, [python, "-", "--json-args", json.dumps(node_args)], stdin=script, timeout=timeout
        )
        times[host] = (sent, time.time())
        return result

    out: dict[str, Facts] = {}
    for host, result in zip_hosts(hosts, run_one, transport.max_parallel):
        decoded = _decode(result)
        sent, received = times.get(host, (0.0, 0.0))
        if isinstance(decoded, str):
            out[host] = Facts(host=host, error=decoded, sent_at=sent, received_at=received)
        else:
            out[host] = parse_facts(host, decoded, sent, received)
    return out


def gather_markers(
    transport: Transport,
    hosts: Iterable[str],
    script: bytes,
    ckpt_dir: str,
    token: str,
    timeout: float,
    *,
    python_for: Mapping[str, str] | None = None,
) -> dict[str, list[str] | str]:
    """Second pass of the shared-directory test: which nodes' markers each node can read."""
    args = {"mode": "markers", "ckpt_dir": ckpt_dir, "token": token}
    group = transport.run_all(
        hosts,
        lambda h: [(python_for or {}).get(h, "python3"), "-", "--json-args", json.dumps({**args, "node": h})],
        stdin_for=lambda h: script,
        timeout=timeout,
    )
    out: dict[str, list[str] | str] = {}
    for host, result in group.results.items():
        decoded = _decode(result)
        if isinstance(decoded, str):
            out[host] = decoded
        elif decoded.get("error"):
            out[host] = str(decoded["error"])
        else:
            out[host] = [str(s) for s in decoded.get("seen") or []]
    return out


# ---------------------------------------------------------------------------------------------------------
# Checks


@dataclass(frozen=True)
class Check:
    name: str
    severity: Severity
    status: Status
    message: str
    nodes: tuple[str, ...] = ()
    fix: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == "fail"


def _check(
    name: str, severity: Severity, failing: dict[str, str], ok_msg: str, fix: str, skipped: str | None = None
) -> Check:
    """One check from {node: what is wrong}; no failing nodes = pass (or skip when nothing could be checked)."""
    if failing:
        msg = "; ".join(f"{h}: {why}" for h, why in failing.items())
        return Check(name, severity, "fail", msg, tuple(failing), fix)
    if skipped:
        return Check(name, severity, "skip", skipped)
    return Check(name, severity, "pass", ok_msg)


# Facts that must be identical on every node, with severity: a mismatch in these breaks or skews a job.
SAME_EVERYWHERE: tuple[tuple[str, Severity, str], ...] = (
    ("rocm", "error", "install the same ROCm release on every node"),
    ("rccl", "error", "use the same RCCL (it ships with the torch wheel or /opt/rocm) on every node"),
    ("torch", "error", "install the same torch wheel on every node (same ROCm index URL)"),
    ("python", "error", "use the same Python minor version on every node (inventory `python:`)"),
    ("deepspeed", "warning", "pin deepspeed to one version on every node"),
    ("transformers", "warning", "pin transformers to one version on every node"),
    ("llamafactory", "warning", "pin llamafactory to one version on every node"),
    ("kernel", "warning", "run the same kernel (amdgpu driver) on every node"),
)


def odd_ones_out(values: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The majority value and the nodes that differ from it (ties: the first node's value is the reference)."""
    counts = Counter(values.values())
    if not counts:
        return None, {}
    first = next(iter(values.values()))
    top = max(counts.values())
    majority = first if counts[first] == top else next(v for v, c in counts.items() if c == top)
    return majority, {h: v for h, v in values.items() if v != majority}


def _gpu_hosts(facts: Mapping[str, Facts], inv: Inventory | None) -> set[str]:
    """Nodes that should have GPUs: declared in the inventory, or found by the tools."""
    declared = {n.host for n in inv.nodes if n.gpus} if inv else set()
    found = {h for h, f in facts.items() if f.gpus}
    return (declared | found) & set(facts)


def checks(facts_by_host: Mapping[str, Facts], inventory: Inventory | None = None) -> list[Check]:
    """Every check doctor knows, in a stable order. Pure: facts (and the inventory) in, checks out."""
    facts = facts_by_host
    live = {h: f for h, f in facts.items() if not f.error}
    out: list[Check] = []
    out.append(
        _check(
            "reachable",
            "error",
            {h: f.error or "" for h, f in facts.items() if f.error},
            f"all {len(facts)} nodes answered",
            "check the link (SSH, or srun and the allocation for transport slurm: the error above names it), "
            "the node's python, and the timeout",
        )
    )
    for name, severity, fix in SAME_EVERYWHERE:
        out.append(_same_check(name, severity, fix, live))
    gpu_hosts = _gpu_hosts(live, inventory)
    out.append(_gpu_count_check(live, inventory))
    out.extend(_gpu_model_checks(live, gpu_hosts))
    out.append(_torch_build_check(live, gpu_hosts))
    out.append(_groups_check(live, gpu_hosts))
    out.append(_iommu_check(live, gpu_hosts))
    out.append(_fine_grain_check(live, gpu_hosts))
    out.append(_net_plugin_check(live))
    out.append(_master_port_check(live))
    out.append(_writable_check("workdir_writable", "workdir", live, "the inventory's `workdir`"))
    out.append(_writable_check("checkpoint_writable", "ckpt", live, "job.checkpoint_dir"))
    out.append(_clock_check(live))
    out.append(_disk_check(live))
    out.append(_dataset_check(live))
    return out


def _same_check(name: str, severity: Severity, fix: str, live: Mapping[str, Facts]) -> Check:
    known = {h: f.get(name).value for h, f in live.items() if f.get(name).known}
    missing = sorted(h for h in live if h not in known)
    if len(known) < 2:
        return Check(
            f"same_{name}", severity, "skip", f"{name}: known on {len(known)} node(s), nothing to compare"
        )
    majority, odd = odd_ones_out(known)
    note = f" (unknown on {', '.join(missing)})" if missing else ""
    if not odd:
        return Check(f"same_{name}", severity, "pass", f"{name} {majority} on every node{note}")
    msg = ", ".join(f"{h} has {v}" for h, v in odd.items()) + f"; the others have {majority}{note}"
    return Check(f"same_{name}", severity, "fail", f"{name} differs: {msg}", tuple(odd), fix)


def _gpu_count_check(live: Mapping[str, Facts], inv: Inventory | None) -> Check:
    if inv is None:
        return Check("gpu_count", "error", "skip", "no inventory to compare with")
    failing: dict[str, str] = {}
    unknown_on: list[str] = []
    declared = [n for n in inv.nodes if n.gpus and n.host in live]
    for node in declared:
        count = live[node.host].get("gpu_count")
        if not count.known:
            unknown_on.append(f"{node.host}: {count.reason}")
        elif count.value < len(node.gpus) or max(node.gpus) >= count.value:
            failing[node.host] = f"inventory lists GPUs {_ids(node.gpus)}, the node shows {count.value}"
    note = f" (unknown on {'; '.join(unknown_on)})" if unknown_on else ""
    return _check(
        "gpu_count",
        "error",
        failing,
        f"every node shows the GPUs the inventory lists{note}",
        "fix `gpus:` in cluster.yaml, or check the node (dmesg | grep amdgpu: a GPU may have fallen off the bus)",
        skipped=None
        if len(unknown_on) < len(declared)
        else f"GPU count unknown{note}"
        if declared
        else "no GPUs in the inventory",
    )


# The GPU model, compared across the nodes that have GPUs (the others have nothing to compare).
GPU_MODEL: tuple[tuple[str, Severity, str], ...] = (
    ("gpu_arch", "error", "mix only nodes of one GPU architecture in a job, or exclude the odd node"),
    (
        "gpu_name",
        "error",
        "mix only nodes of one GPU model in a job (ranks run in lockstep), or exclude the odd node",
    ),
    (
        "gpu_vram_gib",
        "warning",
        "size the batch for the smallest VRAM, or exclude the odd node: it OOMs first",
    ),
)


def _gpu_model_checks(live: Mapping[str, Facts], gpu_hosts: set[str]) -> list[Check]:
    """Product name, arch and VRAM must match on GPU nodes; one unknown there is a warning with its reason.

    Comparing only known values let a Radeon node pass beside MI250s whose rocm-smi reports no gfx arch.
    """
    on_gpus = {h: f for h, f in live.items() if h in gpu_hosts}
    out = [_same_check(name, severity, fix, on_gpus) for name, severity, fix in GPU_MODEL]
    unknown_on: dict[str, str] = {}
    for host, f in on_gpus.items():
        missing = [name for name, _, _ in GPU_MODEL if not f.get(name).known]
        if missing:
            reasons = "; ".join(dict.fromkeys(f.get(n).reason or "no data" for n in missing))
            unknown_on[host] = f"{', '.join(missing)} unknown ({reasons}), so not compared"
    out.append(
        _check(
            "gpu_model_known",
            "warning",
            unknown_on,
            "GPU name, arch and VRAM known on every GPU node" if on_gpus else "no GPU nodes",
            "install amd-smi (ROCm 6+) on the node, or make `rocm-smi --showproductname --showmeminfo vram --json` "
            "report them, so that doctor can compare the GPUs",
        )
    )
    return out


def _ids(ids: tuple[int, ...]) -> str:
    return f"0-{ids[-1]}" if list(ids) == list(range(len(ids))) else ",".join(map(str, ids))


def _torch_build_check(live: Mapping[str, Facts], gpu_hosts: set[str]) -> Check:
    failing = {}
    for host in sorted(gpu_hosts):
        build = live[host].get("torch_build")
        if not build.known:
            failing[host] = f"torch unusable: {build.reason}"
        elif not str(build.value).startswith("rocm"):
            failing[host] = f"torch {live[host].get('torch').value} is a {build.value} build on a GPU node"
    return _check(
        "torch_rocm_build",
        "error",
        failing,
        "torch is a ROCm build on every GPU node",
        "pip install torch --index-url https://download.pytorch.org/whl/rocmX.Y (match the node's ROCm)",
        skipped=None if gpu_hosts else "no GPU nodes",
    )


def _groups_check(live: Mapping[str, Facts], gpu_hosts: set[str]) -> Check:
    failing = {}
    for host in sorted(gpu_hosts):
        groups = live[host].probe("groups") or {}
        if groups.get("uid") == 0 or not isinstance(groups.get("groups"), list):
            continue  # root opens /dev/kfd without the groups; an unreported list is not proof of a problem
        missing = [g for g in GPU_GROUPS if g not in groups["groups"]]
        if missing:
            failing[host] = f"user {groups.get('user')} is not in {', '.join(missing)}"
    return _check(
        "gpu_groups",
        "error",
        failing,
        "the job user is in video and render on every GPU node",
        "sudo usermod -aG video,render $USER (then log in again)",
        skipped=None if gpu_hosts else "no GPU nodes",
    )


def _iommu_check(live: Mapping[str, Facts], gpu_hosts: set[str]) -> Check:
    failing, unknown_on = {}, []
    for host in sorted(gpu_hosts):
        cmdline = live[host].raw.get("cmdline")
        if not isinstance(cmdline, str):
            unknown_on.append(host)
        elif not any(opt in cmdline.split() for opt in IOMMU_OPTIONS):
            failing[host] = "kernel command line has neither iommu=pt nor amd_iommu=on"
    return _check(
        "kernel_iommu",
        "warning",
        failing,
        "iommu=pt or amd_iommu=on on every GPU node",
        "add iommu=pt to GRUB_CMDLINE_LINUX, update-grub, reboot (RCCL warns without it; ROCm install guide)",
        skipped=None
        if gpu_hosts and len(unknown_on) < len(gpu_hosts)
        else "no GPU nodes with a readable /proc/cmdline",
    )


def _fine_grain_check(live: Mapping[str, Facts], gpu_hosts: set[str]) -> Check:
    failing = {}
    for host in sorted(gpu_hosts):
        env = live[host].raw.get("env") if isinstance(live[host].raw.get("env"), dict) else {}
        if env.get("HSA_FORCE_FINE_GRAIN_PCIE") != "1":
            failing[host] = f"HSA_FORCE_FINE_GRAIN_PCIE={env.get('HSA_FORCE_FINE_GRAIN_PCIE', '<unset>')}"
    return _check(
        "hsa_fine_grain_pcie",
        "warning",
        failing,
        "HSA_FORCE_FINE_GRAIN_PCIE=1 on every GPU node",
        "set HSA_FORCE_FINE_GRAIN_PCIE: 1 under `env:` in cluster.yaml (RCCL warns at init without it)",
        skipped=None if gpu_hosts else "no GPU nodes",
    )


def _net_plugin_check(live: Mapping[str, Facts]) -> Check:
    failing, named = {}, set()
    for host, f in live.items():
        probe = f.probe("net_plugin")
        if not probe or probe.get("loaded") is None:
            continue
        named.add(str(probe.get("name")))
        if not probe.get("loaded"):
            failing[host] = (
                f"NCCL_NET_PLUGIN={probe.get('name')}: cannot load {probe.get('library')}: {probe.get('error')}"
            )
    return _check(
        "net_plugin",
        "error",
        failing,
        f"NCCL_NET_PLUGIN {', '.join(sorted(named))} loads on every node",
        "install the plugin (e.g. aws-ofi-rccl / librccl-net) on LD_LIBRARY_PATH, or unset NCCL_NET_PLUGIN",
        skipped=None if named else "NCCL_NET_PLUGIN not set (RCCL uses its built-in transports)",
    )


def _master_port_check(live: Mapping[str, Facts]) -> Check:
    listen = {h: f.probe("master_listen") for h, f in live.items() if f.probe("master_listen")}
    connects = {h: f.probe("master_connect") for h, f in live.items() if f.probe("master_connect")}
    if not listen and not connects:
        return Check("master_port", "error", "skip", "master port not probed (port: auto, or no master node)")
    failing = {}
    for host, probe in listen.items():
        if not probe.get("bound"):
            failing[host] = f"master port not free: {probe.get('error')}"
    for host, probe in connects.items():
        if not probe.get("ok") and host not in failing:
            failing[host] = f"cannot reach the master: {probe.get('error')}"
    return _check(
        "master_port",
        "error",
        failing,
        f"master port free and reachable from all {len(connects)} nodes",
        "pick another master.port, stop whatever holds it, or open it in the firewall between the nodes",
    )


def _writable_check(name: str, key: str, live: Mapping[str, Facts], what: str) -> Check:
    failing, seen = {}, False
    for host, f in live.items():
        probe = f.probe(key)
        if not probe:
            continue
        seen = True
        if not probe.get("ok"):
            failing[host] = f"{probe.get('path')} not writable: {probe.get('error')}"
    return _check(
        name,
        "error",
        failing,
        f"{what} writable on every node",
        f"create {what} with the right owner on every node, or point it at a writable path",
        skipped=None if seen else f"{what} not set",
    )


def shared_dir_check(facts: Mapping[str, Facts], seen: Mapping[str, list[str] | str]) -> Check:
    """Checkpoint directory shared: every node reads every other node's marker (ZeRO-3 resume needs all shards)."""
    written = {h for h, f in facts.items() if (f.probe("marker") or {}).get("ok")}
    if len(written) < 2:
        return Check("checkpoint_shared", "error", "skip", "fewer than 2 nodes wrote a marker")
    failing = {}
    for host in sorted(written):
        view = seen.get(host)
        if isinstance(view, str):
            failing[host] = f"cannot list the checkpoint directory: {view}"
            continue
        missing = sorted(written - set(view or []) - {host})
        if missing:
            failing[host] = f"does not see the files written by {', '.join(missing)}"
    return _check(
        "checkpoint_shared",
        "error",
        failing,
        f"checkpoint directory shared by all {len(written)} nodes",
        "put job.checkpoint_dir on a shared filesystem (NFS, Lustre, ...): a ZeRO-3 resume reads every rank's shard",
    )


def _clock_check(live: Mapping[str, Facts]) -> Check:
    failing = {}
    for host, f in live.items():
        offset = f.get("clock_offset_s")
        if offset.known and abs(offset.value) > CLOCK_SKEW_WARN_S:
            failing[host] = f"clock off by at least {offset.value:+.1f}s from the head node"
    return _check(
        "clock_skew",
        "warning",
        failing,
        f"clocks within {CLOCK_SKEW_WARN_S:g}s of the head node",
        "enable time sync (chronyd / systemd-timesyncd); skewed clocks scramble logs and break TLS/Kerberos",
    )


def _disk_check(live: Mapping[str, Facts]) -> Check:
    failing = {}
    for host, f in live.items():
        free = f.raw.get("disk_free")
        if isinstance(free, int | float) and free < DISK_FREE_WARN_BYTES:
            failing[host] = f"only {free / 1024**3:.1f} GiB free under the workdir"
    return _check(
        "disk_free",
        "warning",
        failing,
        f"at least {DISK_FREE_WARN_BYTES // 1024**3} GiB free under the workdir on every node",
        "free space or move the workdir; checkpoints and logs fill disks mid-run",
    )


def _dataset_check(live: Mapping[str, Facts]) -> Check:
    probes = {h: f.probe("dataset") for h, f in live.items() if f.probe("dataset")}
    if not probes:
        return Check("dataset_same", "error", "skip", "no dataset named")
    failing = {
        h: f"cannot read {p.get('path')}: {p.get('error')}" for h, p in probes.items() if not p.get("sha256")
    }
    digests = {h: p["sha256"] for h, p in probes.items() if p.get("sha256")}
    majority, odd = odd_ones_out(digests)
    for host, digest in odd.items():
        failing[host] = f"sha256 {digest[:12]}… differs from the others' {str(majority)[:12]}…"
    return _check(
        "dataset_same",
        "error",
        failing,
        f"dataset identical on every node (sha256 {str(majority)[:12]}…)",
        "copy the same dataset file to every node (or put it on shared storage)",
    )


FAST_CHECKS = frozenset(
    {
        "reachable",
        "same_rocm",
        "same_torch",
        "same_python",
        "gpu_count",
        "torch_rocm_build",
        "master_port",
        "workdir_writable",
    }
)


def fast_preflight_checks(
    facts_by_host: Mapping[str, Facts], inventory: Inventory | None = None
) -> list[Check]:
    """The subset `up` runs before starting a job: seconds, not minutes, and only what certainly breaks a job."""
    return [c for c in checks(facts_by_host, inventory) if c.name in FAST_CHECKS]


# ---------------------------------------------------------------------------------------------------------
# The report


@dataclass
class DoctorReport:
    nodes: list[str]
    facts: dict[str, Facts]
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return not any(c.failed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.failed]

    def rows(self) -> list[tuple[str, dict[str, str], bool]]:
        """Facts table: (fact, {host: shown value}, differs across nodes)."""
        out = []
        for name in TABLE_FACTS:
            cells = {h: self.facts[h].get(name).show() for h in self.nodes}
            known = {self.facts[h].get(name).value for h in self.nodes if self.facts[h].get(name).known}
            differs = len(known) > 1 and name not in (
                "hostname",
                "disk_free_gib",
                "mem_available_gib",
                "clock_offset_s",
            )
            out.append((name, cells, differs))
        return out

    def to_json(self) -> str:
        return json.dumps(
            {
                "ok": self.ok,
                "nodes": self.nodes,
                "facts": {
                    h: {
                        "error": f.error,
                        "values": {
                            k: {"value": x.value, "reason": x.reason, "source": x.source}
                            for k, x in f.values.items()
                        },
                        "gpus": [asdict(g) for g in f.gpus] if f.gpus is not None else None,
                    }
                    for h, f in self.facts.items()
                },
                "table": [{"fact": n, "values": c, "differs": d} for n, c, d in self.rows()],
                "checks": [asdict(c) for c in self.checks],
            },
            indent=2,
            default=str,
        )


def format_report(report: DoctorReport) -> str:
    """Plain-text rendering (the CLI may use rich instead): table with differing rows marked '!', then failures."""
    nodes = report.nodes
    rows = report.rows()
    width = [2 + max(len("fact"), *(len(n) for n, _, _ in rows))] + [
        min(40, max(len(h), *(len(c[h]) for _, c, _ in rows))) for h in nodes
    ]

    def line(cells: list[str]) -> str:
        return "  ".join(c[:w].ljust(w) for c, w in zip(cells, width, strict=True)).rstrip()

    out = [line(["fact", *nodes])]
    for name, cells, differs in rows:
        out.append(line([("! " if differs else "  ") + name, *(cells[h] for h in nodes)]))
    out.append("")
    for c in report.checks:
        if c.failed:
            out.append(f"FAIL [{c.severity}] {c.name}: {c.message}")
            if c.fix:
                out.append(f"     fix: {c.fix}")
    passed = sum(c.status == "pass" for c in report.checks)
    skipped = sum(c.status == "skip" for c in report.checks)
    out.append(f"{passed} passed, {len(report.failed)} failed, {skipped} skipped")
    return "\n".join(out)


def doctor_args(
    inv: Inventory,
    token: str,
    *,
    fast: bool = False,
    dataset: str | None = None,
    tool_timeout: float = 10.0,
    torch_timeout: float = 60.0,
) -> Callable[[str], dict[str, Any]]:
    """Per-node probe arguments for an inventory: env, dirs, master listen/connect, dataset."""
    master = inv.master_node
    port = inv.master.port if isinstance(inv.master.port, int) else None
    hosts = [n.host for n in inv.nodes]

    def for_host(host: str) -> dict[str, Any]:
        node = next(n for n in inv.nodes if n.host == host)
        args: dict[str, Any] = {
            "node": host,
            "token": token,
            "env": {**inv.env, **node.env},
            "workdir": inv.workdir,
            "fast": fast,
            "tool_timeout": tool_timeout,
            "torch_timeout": torch_timeout,
            "connect_window": min(10.0, tool_timeout),
        }
        if inv.job.checkpoint_dir and not fast:
            args["ckpt_dir"] = inv.job.checkpoint_dir
        if dataset and not fast:
            args["dataset"] = dataset
        if port is not None:
            args["master_addr"] = master.address or master.host
            args["master_port"] = port
            if host == master.host:
                args["listen"] = True
                args["expect_peers"] = hosts
        return args

    return for_host


def run_doctor(
    inv: Inventory,
    transport: Transport,
    script: bytes,
    *,
    fast: bool = False,
    dataset: str | None = None,
    timeout: float = 120.0,
    tool_timeout: float = 10.0,
    torch_timeout: float = 60.0,
) -> DoctorReport:
    """Gather facts from every node, run the checks (the fast subset when `fast`), return the report."""
    hosts = [n.host for n in inv.nodes]
    python_for = {n.host: inv.python_for(n) for n in inv.nodes}
    token = uuid.uuid4().hex  # marks this run's files and master-port handshake
    args = doctor_args(
        inv, token, fast=fast, dataset=dataset, tool_timeout=tool_timeout, torch_timeout=torch_timeout
    )
    facts = gather(transport, hosts, script, args, timeout, python_for=python_for)
    result = fast_preflight_checks(facts, inv) if fast else checks(facts, inv)
    if not fast and inv.job.checkpoint_dir:
        live = [h for h in hosts if not facts[h].error]
        seen = gather_markers(
            transport, live, script, inv.job.checkpoint_dir, token, timeout, python_for=python_for
        )
        result.append(shared_dir_check({h: facts[h] for h in live}, seen))
    return DoctorReport(nodes=hosts, facts=facts, checks=result)
