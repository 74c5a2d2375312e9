"""Doctor, step 4: checks over every node's facts, each naming the odd node out and a fix."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cluster.inventory import Inventory
from launcher.doctor.check import Check, Severity, _check, odd_ones_out
from launcher.doctor.facts import Facts
from launcher.doctor.parse import GPU_GROUPS

IOMMU_OPTIONS = ("iommu=pt", "amd_iommu=on")
CLOCK_SKEW_WARN_S = 2.0
DISK_FREE_WARN_BYTES = 10 * 1024**3


# ---------------------------------------------------------------------------------------------------------
# Checks


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
    out.append(_entry_import_check(live))
    from launcher.doctor.net import net_checks  # it builds on the helpers above

    out.extend(net_checks(live, inventory))
    return out


def _entry_import_check(live: Mapping[str, Facts]) -> Check:
    """The job's entry module imports on every node (launcher/node/facts.py IMPORT_PROBE): a package can be
    installed, with a version, and still fail to import (LLaMA-Factory 0.9.5 without torchaudio). An import that
    did not finish in time is noted, not failed: slow is not broken."""
    failing: dict[str, str] = {}
    slow: list[str] = []
    modules: set[str] = set()
    for host, f in live.items():
        tool = (f.raw.get("tools") or {}).get("imports") if isinstance(f.raw.get("tools"), dict) else None
        if not isinstance(tool, dict):
            continue
        if tool.get("error"):
            slow.append(f"{host}: {tool['error']}")
            continue
        reply = _last_json(str(tool.get("stdout") or ""))
        if not isinstance(reply, dict):
            tail = (str(tool.get("stderr") or "").strip().splitlines() or ["no output"])[-1]
            failing[host] = f"the import probe died (exit {tool.get('rc')}): {tail[:200]}"
            continue
        for name, result in reply.items():
            modules.add(name)
            if isinstance(result, dict) and not result.get("ok"):
                failing[host] = f"import {name}: {result.get('error')}"
    if not modules and not failing and not slow:
        return Check("entry_import", "error", "skip", "no entry module to import for this job kind")
    note = f" (not finished: {'; '.join(slow)})" if slow else ""
    return _check(
        "entry_import",
        "error",
        failing,
        f"{', '.join(sorted(modules)) or 'the entry'} imports on every node{note}",
        "install what the import needs in the node's python (for LLaMA-Factory: the torchaudio build of the node's "
        "torch, from the same index), then run doctor again",
    )


def _last_json(text: str) -> Any:
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


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
        if probe.get("unsafe"):  # another user owns or can write a directory on it (docs/security.md)
            failing[host] = str(probe.get("error"))
        elif not probe.get("ok"):
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
    reference = next((probes[h].get("files") or {} for h, d in digests.items() if d == majority), {})
    for host, digest in odd.items():
        # A LLaMA-Factory job's datasets come per file (launcher/node/facts.py dataset_probe): name the files.
        files = probes[host].get("files") or {}
        differ = sorted(p for p in set(files) | set(reference) if files.get(p) != reference.get(p))
        which = f" ({', '.join(differ[:3])})" if differ else ""
        failing[host] = f"sha256 {digest[:12]}… differs from the others' {str(majority)[:12]}…{which}"
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
        # launcher/doctor/net.py: each certainly breaks or silently slows a job, and costs no extra round trip.
        "master_route",
        "nccl_socket_ifname",
        "rdma_active",
        "roce_gid_index",
    }
)


def fast_preflight_checks(
    facts_by_host: Mapping[str, Facts], inventory: Inventory | None = None
) -> list[Check]:
    """The subset `up` runs before starting a job: seconds, not minutes, and only what certainly breaks a job."""
    return [c for c in checks(facts_by_host, inventory) if c.name in FAST_CHECKS]
