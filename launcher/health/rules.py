"""The log-line classifier: one table of rules, read top to bottom, first match wins. No I/O.

Every rule was written against real lines from public issue threads; those lines are kept as test
fixtures in tests/fixtures/logs/ (one file per source, each citing its thread) so a change here that
stops recognising one of them fails a test.

A rule's ``cascade`` flag marks lines that survivors print *because a peer failed* (a closed
connection, a remote error, a collective timeout, torchrun's ChildFailedError). The watcher uses it
so that such a line never outranks the peer's own, more specific failure (see watch.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:  # the regex parser, to find each rule's required literals (Python 3.11+ names; older ones below)
    from re import _constants as _c
    from re import _parser
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

CATEGORIES = (
    "collective-timeout",
    "comm-error",
    "network",
    "gpu-fault",
    "oom",
    "crash",
    "rendezvous",
    "divergence",
    "version-mismatch",
    "config",
)


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    category: str
    severity: str
    hint: str
    cascade: bool = False
    # The line says "still waiting" (a retry loop): not a sign of progress for stall checks.
    waiting: bool = False
    # Lower-case literals of which every match contains at least one (one per top-level alternative): a cheap
    # `in` test skips the regex for the vast majority of lines, which are healthy. None: always run the regex.
    needles: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Match:
    rule: str
    category: str
    severity: str
    hint: str
    cascade: bool = False
    waiting: bool = False


def _rule(
    name: str,
    regex: str,
    category: str,
    severity: str,
    hint: str,
    *,
    cascade: bool = False,
    waiting: bool = False,
) -> Rule:
    assert category in CATEGORIES, category
    assert severity in ("fatal", "warning", "info"), severity
    pattern = re.compile(regex, re.IGNORECASE)
    return Rule(name, pattern, category, severity, hint, cascade, waiting, _needles(regex))


def _needles(regex: str) -> tuple[str, ...] | None:
    """Literals that every match of `regex` must contain: per top-level alternative, its longest run of plain
    characters outside any repeat or option. None when an alternative has no literal of 3 characters or more."""
    items = list(_parser.parse(regex))
    if len(items) == 1 and items[0][0] is _c.SUBPATTERN:
        items = list(items[0][1][-1])
    branches = [list(b) for b in items[0][1][1]] if len(items) == 1 and items[0][0] is _c.BRANCH else [items]
    found = []
    for branch in branches:
        literal = _longest_literal(branch)
        if len(literal) < 3:
            return None
        found.append(literal.lower())
    return tuple(found)


def _longest_literal(items: list) -> str:
    best = current = ""
    for op, arg in items:
        if op is _c.LITERAL:
            current += chr(arg)
            continue
        best, current = max(best, current, key=len), ""
        if op is _c.SUBPATTERN:  # a required group: its own literal counts if it has exactly one alternative
            inner = list(arg[-1])
            if not (len(inner) == 1 and inner[0][0] is _c.BRANCH):
                best = max(best, _longest_literal(inner), key=len)
    return max(best, current, key=len)


# Lines that are healthy whatever words they contain. NCCL/RCCL INFO lines trace error codes
# ("misc/socket.cc:47 -> 3") and say "Connection closed by localRank 0" at normal shutdown; the
# real failure is always on a WARN line or in PyTorch's exception. DeepSpeed's fp16 "OVERFLOW!
# Skipping step" is the loss scaler doing its job.
# C++ stack frames ("frame #2: c10::DistNetworkError::DistNetworkError(...)") and "Exception raised from"
# only repeat the exception's class names; the message line above them is what gets classified.
HEALTHY = re.compile(
    r"\bNCCL INFO\b|\[deepspeed\] OVERFLOW! Rank \d+ Skipping step|^\s*frame #\d+:|^\s*Exception raised from "
)

# fmt: off
RULES: tuple[Rule, ...] = (
    # ---- torchrun's agents after a clean run: the master's agent leaves the exit barrier first and closes the
    #      store under the others, which log this and still exit 0 (captured here, torch 2.13)
    _rule("torchrun-exit-barrier", r"Error waiting on exit barrier", "rendezvous", "warning",
          "the master's agent finished first; harmless when the node exits 0"),
    # ---- rendezvous, transient: TCPStore keeps retrying until its timeout; only the final error is fatal
    _rule("store-connect-retry", r"TCP client failed to connect/validate to host .* - retrying \(try=\d+",
          "rendezvous", "warning", "the master's TCPStore is not reachable yet; PyTorch keeps retrying",
          waiting=True),

    # ---- config: RCCL's init warnings (rccl #1026, #908); harmless on many hosts, a hint on others
    _rule("rccl-missing-fine-grain-pcie", r'Missing "HSA_FORCE_FINE_GRAIN_PCIE=1"', "config", "warning",
          "RCCL wants HSA_FORCE_FINE_GRAIN_PCIE=1 for PCIe peer-to-peer (not needed over XGMI)"),
    _rule("rccl-missing-iommu", r'Missing "(iommu=pt|amd_iommu=on)" from kernel command line', "config",
          "warning", "kernel command line lacks iommu=pt / amd_iommu=on; RCCL may hang or be slow"),

    # ---- version-mismatch: the build has no code for this GPU's ISA
    _rule("hip-no-binary-for-gpu", r"hipErrorNoBinaryForGpu", "version-mismatch", "fatal",
          "no code object for this GPU arch: wrong torch/ROCm build, or HSA_OVERRIDE_GFX_VERSION needed"),
    _rule("hip-invalid-device-function", r"invalid device function", "version-mismatch", "fatal",
          "kernel not built for this gfx arch (torch/ROCm build vs GPU mismatch)"),
    _rule("hip-no-kernel-image", r"no kernel image is available for execution on the device",
          "version-mismatch", "fatal", "kernel not built for this gfx arch"),
    _rule("rocblas-tensile-missing",
          r"rocBLAS error: (Cannot read .*TensileLibrary|Could not initialize Tensile)", "version-mismatch",
          "fatal", "rocBLAS has no Tensile library for this gfx arch, or the path is wrong"),
    _rule("hip-missing-code-object", r"Cannot find CO in the bundle|Missing CO for these ISAs",
          "version-mismatch", "warning", "a library lacks code objects for this ISA (AMD_LOG_LEVEL trace)"),

    # ---- oom
    _rule("gpu-out-of-memory", r"(HIP|CUDA) out of memory|OutOfMemoryError", "oom", "fatal",
          "device memory exhausted: smaller micro-batch, ZeRO-3 offload, gradient checkpointing"),
    _rule("host-oom-killer", r"Out of memory: Killed process|invoked oom-killer|\boom-kill:", "oom", "fatal",
          "the kernel OOM killer killed a process: host RAM exhausted"),
    _rule("rank-sigkill", r"exitcode\s*:?\s*-9\b|Signal 9 \(SIGKILL\)", "oom", "fatal",
          "a rank got SIGKILL: most often the host OOM killer (check dmesg), else an external kill"),

    # ---- divergence
    _rule("loss-scale-at-minimum", r"Current loss scale already at minimum", "divergence", "fatal",
          "fp16 loss scale collapsed: use bf16, lower the LR, or raise min_loss_scale"),
    _rule("loss-not-finite", r"""['"]loss['"]\s*:\s*['"]?(nan|-?inf(inity)?)\b""", "divergence", "fatal",
          "the loss is NaN/Inf: training diverged"),
    _rule("grad-norm-not-finite", r"""['"]grad_norm['"]\s*:\s*['"]?(nan|-?inf(inity)?)\b""", "divergence",
          "warning", "gradient norm is NaN/Inf: a skipped step under fp16, or the start of divergence"),

    # ---- gpu-fault: HIP runtime, HSA, and amdgpu kernel log
    _rule("gpu-memory-access-fault", r"Memory access fault by GPU node-\d+", "gpu-fault", "fatal",
          "a kernel touched an unmapped address (bug, bad build, or hardware)"),
    _rule("hsa-status-error", r"HSA_STATUS_ERROR_\w+", "gpu-fault", "fatal",
          "the HSA runtime aborted a queue (illegal access or hardware exception)"),
    _rule("gpu-hang-hw-exception", r"HW Exception by GPU node-\d+.*GPU Hang", "gpu-fault", "fatal",
          "the GPU hung; check dmesg for ring timeouts / resets on that node"),
    _rule("amdgpu-ring-timeout", r"ring \S+ timeout, signaled seq=", "gpu-fault", "fatal",
          "amdgpu job timeout on a ring: the GPU stopped responding"),
    _rule("amdgpu-mes-unresponsive", r"MES failed to respon", "gpu-fault", "fatal",
          "the GPU's micro engine scheduler stopped responding"),
    _rule("amdgpu-gpu-reset", r"GPU reset|VRAM is lost", "gpu-fault", "fatal",
          "the driver reset the GPU; everything running on it is lost"),
    _rule("ras-uncorrectable",
          r"uncorrectable (hardware )?error|Accelerator Check Architecture events logged",
          "gpu-fault", "fatal",
          "uncorrectable hardware error (RAS/ACA): drain the node, check amd-smi/RAS"),
    _rule("hardware-error-detail", r"\[Hardware Error\]", "gpu-fault", "warning",
          "hardware error record from the kernel (corrected errors are informational)"),
    _rule("hip-runtime-error", r"HIP error: |hipError\w+", "gpu-fault", "fatal",
          "HIP runtime error; rerun with AMD_SERIALIZE_KERNEL=3 to locate the kernel"),

    # ---- rendezvous: before the job exists
    _rule("rendezvous-timeout", r"RendezvousTimeoutError", "rendezvous", "fatal",
          "not every node joined the rendezvous in time: a node did not start or cannot reach the endpoint"),
    _rule("rendezvous-connection", r"RendezvousConnectionError|connection to the C10d store has failed",
          "rendezvous", "fatal", "cannot reach the c10d store at the rendezvous endpoint"),
    _rule("rendezvous-closed", r"RendezvousClosedError", "rendezvous", "fatal",
          "the rendezvous was closed (another agent finished or failed)", cascade=True),
    _rule("store-connect-timeout", r"client socket has timed out after .* trying to connect to|DistStoreError"
          r"|DistNetworkError|Socket Timeout", "rendezvous", "fatal",
          "cannot reach MASTER_ADDR:MASTER_PORT (wrong address, firewall, master not up)"),
    _rule("gloo-connect-full-mesh", r"connectFullMesh failed", "rendezvous", "fatal",
          "gloo could not connect all ranks: GLOO_SOCKET_IFNAME or an unreachable interface"),
    _rule("address-in-use",
          r"Address already in use|EADDRINUSE|errno: 98\b|failed to listen on any local network address",
          "rendezvous", "fatal",
          "the port is taken (a previous run still alive, or two jobs on one MASTER_PORT)"),

    # ---- collective-timeout: usually a symptom; the rank that never arrived is the cause
    _rule("nccl-watchdog-timeout", r"Watchdog caught collective operation timeout", "collective-timeout",
          "fatal",
          "a collective waited past the process-group timeout: a peer died, hung or diverged", cascade=True),
    _rule("nccl-watchdog-exception", r"Exception \(either an error or timeout\) detected by watchdog",
          "collective-timeout", "fatal", "the watchdog saw a failed or timed-out collective", cascade=True),
    _rule("nccl-heartbeat-monitor", r"Heartbeat monitor timed out|watchdog got stuck for \d+ seconds",
          "collective-timeout", "fatal", "the NCCL/RCCL watchdog itself was stuck (API hang or deadlock)",
          cascade=True),
    _rule("nccl-async-abort", r"Some NCCL operations have failed or timed out", "collective-timeout", "fatal",
          "PyTorch is taking the process down after a failed/timed-out collective", cascade=True),
    _rule("gloo-wait-timeout", r"Timed out waiting \d+ms for (recv|send) operation", "collective-timeout",
          "fatal", "a gloo collective timed out waiting for a peer", cascade=True),

    # ---- network: link-level errors are causes; closed/reset connections are what survivors see
    _rule("ib-completion-error", r"NET/IB\w*\s*:\s*Got completion from peer .*(error|status=)\s*\d+",
          "network", "fatal", "InfiniBand/RoCE completion error: link, switch or NIC trouble"),
    _rule("ibverbs-call-failed", r"Call to ibv_\w+ failed", "network", "fatal",
          "an ibverbs call failed (RoCE GID/route/interface problem)"),
    _rule("ofi-completion-error", r"NET/OFI .*completed with error", "network", "fatal",
          "libfabric (OFI) completion error on the network"),
    _rule("peer-connection-closed", r"Connection closed by (remote )?peer", "network", "fatal",
          "a peer closed its connection: usually that peer's process died first", cascade=True),
    _rule("peer-connection-reset", r"Connection reset by peer|Broken pipe", "network", "fatal",
          "a peer reset its connection: usually that peer's process died first", cascade=True),
    _rule("peer-connection-refused", r"Connection refused", "network", "fatal",
          "nothing listens at the peer's address (peer not up, or already gone)", cascade=True),

    # ---- comm-error: NCCL/RCCL return codes surfaced by PyTorch
    _rule("nccl-remote-error", r"ncclRemoteError|remote process exited or there was a network error",
          "comm-error", "fatal", "a remote rank exited or the network failed; look at the other nodes first",
          cascade=True),
    _rule("nccl-system-error", r"ncclSystemError|unhandled system error", "comm-error", "fatal",
          "a system call failed inside NCCL/RCCL (shm, ulimits, interfaces): rerun with NCCL_DEBUG=INFO"),
    _rule("nccl-internal-error", r"ncclInternalError|internal error - please report", "comm-error", "fatal",
          "NCCL/RCCL internal check failed (topology or build problem)"),
    _rule("nccl-unhandled-device-error", r"unhandled cuda error", "comm-error", "fatal",
          "RCCL got a HIP error from the device; check GPU health and peer access"),
    _rule("nccl-error", r"NCCL error in:|NCCL Error \d+|NCCL error:", "comm-error", "fatal",
          "NCCL/RCCL returned an error; rerun with NCCL_DEBUG=INFO for the reason"),
    _rule("nccl-warn", r"\bNCCL WARN\b", "comm-error", "warning",
          "an NCCL/RCCL warning; fatal only if an error follows"),

    # ---- crash: deaths of processes
    _rule("end-of-run-abort", r"terminate called without an active exception", "crash", "fatal",
          "std::terminate without exception: often a thread torn down at interpreter exit"),
    _rule("terminate-after-throw", r"terminate called after throwing an instance of", "crash", "fatal",
          "an uncaught C++ exception aborted the process"),
    _rule("segfault", r"Segmentation fault|SIGSEGV|exitcode\s*:?\s*-11\b|Signal 11\b", "crash", "fatal",
          "a process segfaulted (native extension, driver, or corrupted memory)"),
    _rule("abort", r"Aborted \(core dumped\)|Fatal Python error: Aborted|exitcode\s*:?\s*-6\b|Signal 6\b",
          "crash", "fatal", "a process aborted (SIGABRT)"),
    _rule("dataloader-worker-killed", r"DataLoader worker \(pid \d+\) is killed by signal", "crash", "fatal",
          "a DataLoader worker was killed (host OOM is the usual reason: fewer workers, less prefetch)"),
    _rule("child-failed", r"ChildFailedError", "crash", "fatal",
          "torchrun reports a failed worker; the root cause is the first failure listed", cascade=True),
    _rule("torchrun-worker-failed", r"failed \(exitcode: -?\d+\) local_rank: \d+", "crash", "fatal",
          "torchrun saw a worker exit non-zero; its own output says why", cascade=True),
    _rule("torchrun-closing-workers", r"Sending process \d+ closing signal SIG\w+", "crash", "info",
          "torchrun is stopping the remaining workers after a failure", cascade=True),
)
# fmt: on

RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}

# What training stacks print once training is over: HF Trainer's "Training completed." and the
# train_runtime metric (also in LLaMA-Factory's "***** train metrics *****" block), and the "training complete"
# that plain scripts (ours among them) print after their last step. A crash after one of these is an end-of-run
# abort, not a failed run (see watch.py): gloo ranks abort at interpreter exit now and then even after
# destroy_process_group() ("terminate called without an active exception", seen here in 3 of 28 plain torchrun
# runs of examples/train.py; pytorch#190489, pytorch#179291).
COMPLETION = re.compile(
    r"(?i:\btraining complete(d)?\b)|['\"]?train_runtime['\"]?\s*[:=]|\*\*\*\*\* train metrics \*\*\*\*\*"
)


def classify(line: str) -> Match | None:
    """The first rule that matches ``line``, or None for a healthy or unknown line."""
    if HEALTHY.search(line):
        return None
    low = line.lower()
    for rule in RULES:
        if rule.needles is not None and not any(n in low for n in rule.needles):
            continue
        if rule.pattern.search(line):
            return Match(rule.name, rule.category, rule.severity, rule.hint, rule.cascade, rule.waiting)
    return None


# Lines that carry no news of progress: c10d's socket/TCPStore chatter, C++ stack frames and blank lines, which a
# TCPStore client retrying an unreachable master prints with every attempt for up to 15 minutes, would otherwise
# keep a hung rank looking alive.
NO_PROGRESS = re.compile(
    r"^\s*$|\[c10d\]|^\s*frame #\d+:|^\s*Exception raised from |^\s*<omitting python frames>"
)


def is_progress(line: str, match: Match | None) -> bool:
    """Whether a line shows the job moving (for stall detection): not noise, not a "still waiting" retry."""
    return not NO_PROGRESS.search(line) and not (match is not None and match.waiting)


def is_completion_marker(line: str) -> bool:
    """True for lines that say training finished (used to recognise end-of-run aborts)."""
    return COMPLETION.search(line) is not None
