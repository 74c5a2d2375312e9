"""GPU activity per rank, for the hang rule: pure parsing and one decision. Standard library only, Python >= 3.8:
pushed beside guard.py on every node (the guard samples, the head decides with the same function).

What the tools print (sources in docs/facts.md):

- ``amd-smi metric --json``: a list of ``{"gpu": N, "usage": {"gfx_activity": {"value": 42, "unit": "%"},
  "umc_activity": {...}, ...}, "power": {"socket_power": {"value": 20, "unit": "W"}, ...}, ...}``; amd-smi >= 26
  wraps the list as ``{"gpu_data": [...]}``; any field may be ``"N/A"`` (``"usage": "N/A"`` as a whole on some
  devices); a ``WARNING:`` banner may precede the JSON.
- ``rocm-smi --showuse --showmemuse --showpower --json``: ``{"card0": {"GPU use (%)": "100", "GPU memory use (%)":
  "0", "Average Graphics Package Power (W)": "128.0"}, ...}`` (string values; newer versions name the memory
  controller's activity "GPU Memory Read/Write Activity (%)" and the power "Current Socket Graphics Package Power").

The decision (``gpu_state``): a GPU whose graphics engine is busy is doing real work when its memory controller is
active or it draws clearly more than its idle power; busy with a quiet memory controller at about idle power is
the signature of collective kernels spinning on flags a peer never sets (a hung RCCL/NCCL collective: "GPU util
100% but power ~70 W"). Anything the readings cannot prove counts as real work, so a missing field never turns a
busy job into a hang.
"""

from __future__ import annotations

import json
import re

BUSY, SPINNING, IDLE = "busy", "spinning", "idle"

GFX_BUSY_PCT = 10.0  # graphics activity at or above this: the engine is running something
UMC_ACTIVE_PCT = 5.0  # memory-controller activity at or above this: real work moves data
IDLE_POWER_RATIO = 1.5  # power below this multiple of the GPU's lowest reading: "near idle"

VISIBILITY = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "LOCAL_RANK")

# The kernel OOM killer's lines that name the killed process by pid (mm/oom_kill.c):
#   "Out of memory: Killed process 25315 (python3) total-vm:..., anon-rss:31451456kB, ..."
#   "Memory cgroup out of memory: Killed process 25315 (python3) ..."
#   "oom-kill:constraint=CONSTRAINT_NONE,...,task=python3,pid=25315,uid=0"
# (kernels before 4.19 print "Out of memory: Kill process N (comm) score S or sacrifice child", then "Killed
# process N ...").
OOM_PID = re.compile(r"\bKilled process (\d+)|\boom-kill:\S*?\bpid=(\d+)")
ANON_RSS = re.compile(r"anon-rss:\s*([\d,]+\s*kB)")
# The kernel's watchdogs naming a stuck task (kernel/hung_task.c "INFO: task %s:%d blocked for more than %ld
# seconds.", kernel/watchdog.c "BUG: soft lockup - CPU#%d stuck for %us! [%s:%d]"; comm is at most 15 characters):
# a rank of the job stuck in the kernel is this job's business (the rule kernel-hung-task in launcher/health/rules.py).
STUCK_PID = re.compile(
    r"INFO: task .{1,16}:(\d{1,9}) blocked for more than|soft lockup - CPU#\d+ stuck for \d+s! \[.{1,16}:(\d{1,9})\]"
)


def _number(value: object) -> float | None:
    """A reading: 42, "42", "42.0", {"value": 42, "unit": "%"}; None for "N/A" and anything else."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().rstrip("%W").strip())
        except ValueError:
            return None
    return None


def _json_in(text: str) -> object:
    """The JSON document in a tool's output, skipping a banner line printed before it; None if there is none."""
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        return None
    try:
        return json.loads(text[min(starts) :])
    except ValueError:
        return None


def parse_amd_smi(text: str) -> dict:
    """``amd-smi metric --json`` → {gpu index: {"gfx", "umc", "w"}} (each a float or None)."""
    data = _json_in(text)
    if isinstance(data, dict):
        data = data.get("gpu_data")
    out: dict = {}
    if not isinstance(data, list):
        return out
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("gpu"), int):
            continue
        usage = entry.get("usage") if isinstance(entry.get("usage"), dict) else {}
        power = entry.get("power") if isinstance(entry.get("power"), dict) else {}
        watts = _number(power.get("socket_power"))
        if watts is None:  # MI300 reports current, MI200 average socket power (ROCm/pytorch PR #1457)
            watts = _number(power.get("current_socket_power")) or _number(power.get("average_socket_power"))
        out[entry["gpu"]] = {
            "gfx": _number(usage.get("gfx_activity")),
            "umc": _number(usage.get("umc_activity")),
            "w": watts,
        }
    return out


def parse_rocm_smi(text: str) -> dict:
    """``rocm-smi --showuse --showmemuse --showpower --json`` → {gpu index: {"gfx", "umc", "w"}}."""
    data = _json_in(text)
    out: dict = {}
    if not isinstance(data, dict):
        return out
    for key, card in data.items():
        m = re.fullmatch(r"card(\d+)", str(key))
        if not m or not isinstance(card, dict):
            continue
        out[int(m.group(1))] = {
            "gfx": _first(card, "GPU use (%)"),
            "umc": _first(card, "GPU memory use (%)", "GPU Memory Read/Write Activity (%)"),
            "w": _first(
                card,
                "Current Socket Graphics Package Power (W)",
                "Average Graphics Package Power (W)",
                "Current Graphics Package Power (W)",
            ),
        }
    return out


def _first(card: dict, *names: str) -> float | None:
    for name in names:
        value = _number(card.get(name))
        if value is not None:
            return value
    return None


def parse(tool: str, text: str) -> dict:
    return parse_amd_smi(text) if tool == "amd-smi" else parse_rocm_smi(text)


def _indices(value: str | None) -> list | None:
    """ "0,1,2" → [0, 1, 2]; None when unset; [] when it names devices by UUID (not mappable here)."""
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    return [int(p) for p in parts] if all(p.isdigit() for p in parts) else []


def device_of(env: dict) -> int | None:
    """The physical GPU index a rank computes on, from its environment: ROCR_VISIBLE_DEVICES selects among all
    GPUs, HIP_VISIBLE_DEVICES (CUDA_VISIBLE_DEVICES is HIP's alias) among those, and the rank uses the visible
    device LOCAL_RANK (torchrun, DeepSpeed) or the only one it sees. None when that cannot be told."""
    rocr = _indices(env.get("ROCR_VISIBLE_DEVICES"))
    hip = _indices(env.get("HIP_VISIBLE_DEVICES", env.get("CUDA_VISIBLE_DEVICES")))
    if rocr == [] or hip == []:
        return None
    visible = rocr
    if hip is not None:
        if visible is not None:
            if any(i >= len(visible) for i in hip):
                return None
            visible = [visible[i] for i in hip]
        else:
            visible = hip
    local_text = env.get("LOCAL_RANK")
    local = int(local_text) if local_text is not None and local_text.isdigit() else None
    if visible is not None and len(visible) == 1:
        return visible[0]
    if local is None:
        return None
    if visible is None:
        return local
    return visible[local] if local < len(visible) else None


def gpu_state(
    gfx: float | None,
    umc: float | None,
    watts: float | None,
    idle_watts: float | None,
    gfx_busy: float = GFX_BUSY_PCT,
    umc_active: float = UMC_ACTIVE_PCT,
    idle_ratio: float = IDLE_POWER_RATIO,
) -> str | None:
    """BUSY (real work), SPINNING (busy engine, quiet memory controller, about idle power), IDLE, or None when the
    readings say nothing (no graphics activity reading)."""
    if gfx is None:
        return None
    if gfx < gfx_busy:
        return IDLE
    if umc is not None and umc >= umc_active:
        return BUSY
    if watts is None or idle_watts is None or idle_watts <= 0:
        return BUSY  # the spinning signature needs the power reading: without it, assume work
    return SPINNING if watts < idle_ratio * idle_watts else BUSY


def oom_pid(text: str) -> int | None:
    """The pid an OOM-killer kernel line names as killed, else None."""
    m = OOM_PID.search(text)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def stuck_pid(text: str) -> int | None:
    """The pid a hung-task or soft-lockup kernel line names as stuck, else None."""
    m = STUCK_PID.search(text) if "INFO: task" in text or "soft lockup" in text else None
    return int(m.group(1) or m.group(2)) if m else None


def oom_detail(text: str) -> str:
    """What to say about an OOM kill: the resident anonymous memory the kernel reports, else the line itself."""
    m = ANON_RSS.search(text)
    return f"anon-rss {m.group(1).replace(',', '')}" if m else text.strip()[:160]
