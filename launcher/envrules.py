"""The ROCm truth table: what users write in `env`, what NCCL/RCCL/PyTorch really read, and what we say about it.

Pure functions over dictionaries; every change to the user's environment is reported as a note so `rlaunch plan`
can show exactly what was mapped and why. Sources are named next to each rule (see also docs/facts.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Variables that decide which GPUs a rank sees. ROCR_VISIBLE_DEVICES applies first, HIP_/CUDA_VISIBLE_DEVICES index
# within what ROCr exposes; setting several with different lists warns or fails (pytorch #140318, PR #140398).
VISIBILITY_VARS = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")

# Set by rlaunch for the whole job: a user value would make nodes disagree (LLaMA-Factory picks a random
# MASTER_PORT per node when unset, and reads NODE_RANK, not RANK).
RENDEZVOUS_VARS = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "NNODES",
    "NODE_RANK",
    "NPROC_PER_NODE",
    "WORLD_SIZE",
    "RANK",
)

# Defaults that users may override by writing the variable themselves.
ROCM_DEFAULTS: dict[str, str] = {
    # Without NCCL_DEBUG, RCCL prints no WARN lines at all and the health watcher goes blind.
    "NCCL_DEBUG": "WARN",
    # Make watchdog failures tear the process group down instead of hanging (PyTorch ProcessGroupNCCL).
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    # Flight recorder: dump the last collectives on timeout so the run record shows which one hung. Only the name
    # the node's torch reads: torch >= 2.8 reads TORCH_FR_BUFFER_SIZE and warns "TORCH_NCCL_TRACE_BUFFER_SIZE is
    # deprecated" on every rank when the old one is set, even beside the new (c10d/Utils.hpp getCvarInt); older
    # torch has the recorder on at 2000 entries by default (docs/facts.md, "Flight recorder").
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
    "TORCH_FR_BUFFER_SIZE": "2000",
    # Unbuffered output: a rank's last words before a crash must reach the log.
    "PYTHONUNBUFFERED": "1",
}
# The flight recorder's buffer size (either name turns it on: the newer one first) and the file names rlaunch gives
# its dumps and its dump pipes in the run directory (node/collect.py and node/frtrace.py read them there).
FR_SIZE_VARS = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
FR_DUMP_NAME = "nccl_trace_rank_"
FR_PIPE_NAME = "fr_pipe_"
# Only meaningful on GPU nodes.
ROCM_GPU_DEFAULTS: dict[str, str] = {
    # RCCL warns at init when this is missing (rccl #1026); needed for fine-grained PCIe memory on multi-GPU nodes.
    "HSA_FORCE_FINE_GRAIN_PCIE": "1",
    "PYTORCH_HIP_ALLOC_CONF": "expandable_segments:True",
}


@dataclass
class EnvResult:
    env: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # mappings applied, shown by `plan`
    collective_timeout: float | None = None  # seconds, from job.timeout or NCCL_TIMEOUT
    errors: list[str] = field(default_factory=list)


def apply_rules(
    user_env: dict[str, str],
    *,
    gpus: tuple[int, ...],
    nproc: int,
    job_timeout: float | None,
    job_kind: str,
) -> EnvResult:
    """Map one node's user environment (global env + node env, already merged) to what really works."""
    env = dict(user_env)
    res = EnvResult(env=env)

    # --- rendezvous: owned by rlaunch --------------------------------------------------------------------------
    for name in RENDEZVOUS_VARS:
        if name in env:
            del env[name]
            res.warnings.append(
                f"{name} in env is ignored: rlaunch sets MASTER_ADDR/MASTER_PORT/NNODES/NODE_RANK/NPROC_PER_NODE "
                "identically on every node (set master.node / master.port instead)"
            )

    # --- GPU visibility: exactly one variable, from the node's GPU list ---------------------------------------
    for name in VISIBILITY_VARS:
        if name in env:
            value = env.pop(name)
            wanted = ",".join(map(str, gpus))
            if value.replace(" ", "") != wanted:
                res.errors.append(
                    f"{name}={value} conflicts with the node's GPU list [{wanted}]: set `gpus:` on the node instead "
                    "(rlaunch sets HIP_VISIBLE_DEVICES from it; mixing visibility variables fails on ROCm)"
                )
            else:
                res.notes.append(f"{name} in env replaced by HIP_VISIBLE_DEVICES from the node's `gpus`")
    if gpus:
        env["HIP_VISIBLE_DEVICES"] = ",".join(map(str, gpus))

    # --- timeouts: NCCL_TIMEOUT is read by neither NCCL nor RCCL --------------------------------------------
    timeout = job_timeout
    if "NCCL_TIMEOUT" in env:
        raw = env.pop("NCCL_TIMEOUT")
        try:
            nccl_timeout = float(raw)
        except ValueError:
            res.errors.append(f"NCCL_TIMEOUT={raw!r} is not a number of seconds")
            nccl_timeout = None
        if nccl_timeout is not None and nccl_timeout > 0:
            if timeout is None:
                timeout = nccl_timeout
            res.notes.append(
                "NCCL_TIMEOUT is read by neither NCCL nor RCCL: mapped to the process-group timeout "
                f"({_human(timeout)}) via {_timeout_carriers(job_kind)}"
            )
    if timeout is not None:
        res.collective_timeout = timeout
        env["RLAUNCH_PG_TIMEOUT"] = str(int(timeout))
        # DeepSpeed's init_distributed reads DEEPSPEED_TIMEOUT in minutes (default 30).
        env["DEEPSPEED_TIMEOUT"] = str(max(1, round(timeout / 60)))
        if job_kind == "torchrun":
            res.notes.append(
                "torchrun scripts must pass the timeout themselves: "
                "init_process_group(timeout=timedelta(seconds=int(os.environ['RLAUNCH_PG_TIMEOUT'])))"
            )
        if timeout > 7 * 24 * 3600:
            res.warnings.append(
                f"collective timeout of {_human(timeout)} means a hung rank blocks the job for that long "
                "(LLaMA-Factory's examples use ddp_timeout: 180000000, ~5.7 years); rlaunch's stall detection "
                "(health.stall_timeout) is then the only guard"
            )

    # --- network plugin: RCCL reads NCCL_NET_PLUGIN (rccl src/plugin/net.cc) ------------------------------
    if "RCCL_NET_PLUGIN" in env:
        value = env.pop("RCCL_NET_PLUGIN")
        if "NCCL_NET_PLUGIN" in env and env["NCCL_NET_PLUGIN"] != value:
            res.warnings.append(
                f"RCCL_NET_PLUGIN={value} dropped: NCCL_NET_PLUGIN={env['NCCL_NET_PLUGIN']} is also set and is "
                "the one RCCL reads"
            )
        else:
            env["NCCL_NET_PLUGIN"] = value
            res.notes.append(f"RCCL_NET_PLUGIN={value} → NCCL_NET_PLUGIN (RCCL reads NCCL_NET_PLUGIN only)")

    # --- defaults ---------------------------------------------------------------------------------------
    defaults = dict(ROCM_DEFAULTS)
    if gpus:
        defaults.update(ROCM_GPU_DEFAULTS)
    # One thread per rank unless told otherwise: torchrun only sets it when nproc_per_node > 1, and on CPU
    # nodes (simulated or not) N ranks × all cores oversubscribes badly (measured 5× slower).
    defaults["OMP_NUM_THREADS"] = "1"
    if FR_SIZE_VARS[0] in user_env or FR_SIZE_VARS[1] in user_env:
        # One of the two names set by the user (0 turns the recorder off): the other must not override it.
        for name in FR_SIZE_VARS:
            defaults.pop(name, None)
    for name, value in defaults.items():
        env.setdefault(name, value)

    if env.get("NCCL_DEBUG", "").upper() not in ("WARN", "INFO", "TRACE"):
        res.warnings.append(
            f"NCCL_DEBUG={env.get('NCCL_DEBUG')}: RCCL prints no WARN lines below level WARN, so communication "
            "errors will not reach the logs"
        )
    if "PYTORCH_CUDA_ALLOC_CONF" in env and "PYTORCH_HIP_ALLOC_CONF" in env:
        res.warnings.append(
            "PYTORCH_HIP_ALLOC_CONF is ignored by PyTorch because PYTORCH_CUDA_ALLOC_CONF is set; keep one of them"
        )
    if gpus and env.get("HSA_FORCE_FINE_GRAIN_PCIE") != "1":
        res.warnings.append(
            "HSA_FORCE_FINE_GRAIN_PCIE is not 1: RCCL warns and may fall back to slower paths"
        )
    return res


def flight_recorder_env(env: dict[str, str], run_dir: str) -> tuple[dict[str, str], str | None]:
    """Where a rank's flight-recorder dump goes, when the recorder is on: (variables to add, a note for `plan`).

    PyTorch's default dump path is ~/.cache/torch/comm_lib_trace_rank_N (older releases: /tmp/nccl_trace_rank_N);
    rlaunch keeps dumps in the run directory, private to the user, where `rlaunch` collects them and reads them at
    hang forensics. The named pipe lets rlaunch ask a ProcessGroupNCCL rank for a dump without stopping it.
    Variables the user set are kept. Sources: docs/facts.md (flight recorder)."""
    if not flight_recorder_on(env):
        return {}, None
    prefix = f"{run_dir}/{FR_DUMP_NAME}"
    chosen = env.get("TORCH_FR_DUMP_TEMP_FILE") or env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE") or prefix
    added = {
        # Both names: torch reads TORCH_FR_DUMP_TEMP_FILE first, older releases only the NCCL one.
        "TORCH_FR_DUMP_TEMP_FILE": chosen,
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": chosen,
        "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
        or f"{run_dir}/{FR_PIPE_NAME}",
    }
    where = "the run directory" if chosen == prefix else chosen
    note = (
        f"flight recorder on ({flight_recorder_size(env)} entries): dumps go to {where} "
        f"({FR_DUMP_NAME.rstrip('_')}… via TORCH_FR_DUMP_TEMP_FILE, not ~/.cache or /tmp); at a hang rlaunch asks NCCL "
        "ranks for a dump (TORCH_NCCL_DEBUG_INFO_PIPE_FILE) and reads it into the run record"
    )
    return added, note


def flight_recorder_size(env: dict[str, str]) -> int:
    raw = env.get(FR_SIZE_VARS[0], env.get(FR_SIZE_VARS[1], "0"))
    try:
        return int(raw)
    except ValueError:
        return 0


def flight_recorder_on(env: dict[str, str]) -> bool:
    return flight_recorder_size(env) > 0


def dataloader_workers(requested: int | None, cpus: int | None, nproc: int) -> int:
    """At most half the physical cores per rank (HIP + fork-heavy loaders oversubscribe and segfault otherwise)."""
    cap = max(0, (cpus // 2) // max(1, nproc)) if cpus else None
    if requested is None:
        return min(2, cap) if cap is not None else 2
    return min(requested, cap) if cap is not None else requested


def _timeout_carriers(kind: str) -> str:
    return {
        "torchrun": "RLAUNCH_PG_TIMEOUT and DEEPSPEED_TIMEOUT",
        "deepspeed": "DEEPSPEED_TIMEOUT (minutes) and RLAUNCH_PG_TIMEOUT",
        "llamafactory": "ddp_timeout in the rendered LLaMA-Factory yaml and DEEPSPEED_TIMEOUT",
        "command": "RLAUNCH_PG_TIMEOUT",
    }.get(kind, "RLAUNCH_PG_TIMEOUT")


def _human(seconds: float | None) -> str:
    if seconds is None:
        return "unset"
    if seconds >= 86400 * 365:
        return f"{seconds / (86400 * 365):.1f} years"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 60:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"
