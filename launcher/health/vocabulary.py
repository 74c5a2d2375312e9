"""Each emitter's own error vocabulary, as data: one table per family, turned into rules by `family_rules`.

Why tables: rounds 1-8 extended the rule table line by line from what each held-out round missed, and every new round
found new lines. The emitters are finite, so their error lists are enumerated here from their own source (the file
and commit read are cited per table; docs/health-rules.md lists each family and how many of its messages are
covered). Only message texts and format strings are kept, as data to match; no code is copied.

A row is (format or text, category, severity). A format's conversions (``%s``, ``%d``, ``%lx`` ...) match any text;
its longest literal part is the rule's prefilter needle, so it must be distinctive (a test checks 8 characters or
more). `family_rules` groups a family's rows by (category, severity) into one rule each, named
``<family>-<category>[-warning]``. `example_lines` instantiates every row into the line a log would show; the
``source-vocab-<family>.log`` fixtures hold those lines, and tests/test_health_rules.py checks each is classified as
its row says (by this family's rule or by an older, more specific rule of the same category and severity).

Categories follow what the message means for an operator: no code object / ISA / comgr / symbol / driver too old is
**version-mismatch**; out of device or host memory is **oom**; no device, no peer access, an invalid launch
configuration or environment is **config**; a kernel that faulted or hung, a queue the runtime aborted, a driver
reset is **gpu-fault**.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# printf conversions as C and the kernel write them (%s, %d, %u, %lx, %llu, %zu, %p, %08X, %.*s ...)
_CONVERSION = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?([diouxXcspfeg%])")
_SAMPLE = {
    "d": "3",
    "i": "3",
    "u": "2",
    "o": "7",
    "x": "1f",
    "X": "1F",
    "c": "x",
    "s": "mlx5_0",
    "p": "0x7f00deadbeef",
    "f": "1.5",
    "e": "1.5",
    "g": "1.5",
    "%": "%",
}


@dataclass(frozen=True)
class Family:
    """One emitter's vocabulary; `source` says what was read (repository, file, commit)."""

    name: str
    source: str
    hint: str
    rows: tuple[tuple[str, str, str], ...]  # (format or text, category, severity)
    prefix: str = ""  # a regex before every message of the family ("HIP error: "); "" for none
    example_prefix: str = ""  # what a log line shows before the message, for the example lines
    cascade: bool = False
    # Shorter literals that stand in for the rows' own needles when a row's needle contains one ("miopenstatus" for
    # every miopenStatus_t name): the one scan every line gets then carries one literal instead of one per row.
    shared_needles: tuple[str, ...] = ()
    # One literal for every row (the family's prefix must then require it): RCCL's 89 WARN formats all follow
    # "NCCL WARN ", which the scan already knows (the older `nccl-warn` rule), so they add nothing to it.
    needle: str = ""


def format_regex(fmt: str) -> str:
    """A printf format as a regex: literal parts escaped, each conversion any text (lazy)."""
    out, last = [], 0
    for conv in _CONVERSION.finditer(fmt):
        out.append(re.escape(fmt[last : conv.start()]))
        out.append("%" if conv.group(1) == "%" else ".*?")
        last = conv.end()
    out.append(re.escape(fmt[last:].rstrip()))
    return "".join(out)


def format_needle(fmt: str) -> str:
    """The longest literal part of a format, lower-cased: every instance of the format contains it."""
    parts = _CONVERSION.split(fmt)[::2]  # split() also returns the conversion letters: keep the literal parts
    return max((p.strip() for p in parts), key=len).lower()


def instantiate(fmt: str) -> str:
    return _CONVERSION.sub(lambda m: _SAMPLE[m.group(1)], fmt).rstrip()


# fmt: off
# ---- HIP runtime: ROCm/clr hipamd/src/hip_error.cpp (commit f9f995c6d0aecec28debd3db0f41df0c15ec003d, 2024-10-22):
#      ihipGetErrorName (the hipError_t names) and ihipGetErrorString (the texts PyTorch prints after "HIP error: ").
#      Row: (name, text, category, severity); the name alone and "HIP error: <text>" are matched, and "CUDA error: <text>"
#      too: PyTorch's ROCm build raises torch.AcceleratorError with the hipified C10_CUDA_CHECK text "CUDA error: <text>".
#      hipErrorFileNotFound is version-mismatch: HIP returns it when a code object or library file it loads is missing
#      (added after round 9, where "CUDA error: file not found" was a missing hipBLASLt library).
HIP_ERRORS: tuple[tuple[str, str, str, str], ...] = (
    ("hipErrorInvalidValue", "invalid argument", "gpu-fault", "fatal"),
    ("hipErrorOutOfMemory", "out of memory", "oom", "fatal"),
    ("hipErrorNotInitialized", "initialization error", "config", "fatal"),
    ("hipErrorDeinitialized", "driver shutting down", "crash", "warning"),
    ("hipErrorProfilerDisabled", "profiler disabled while using external profiling tool", "gpu-fault", "fatal"),
    ("hipErrorProfilerNotInitialized", "profiler is not initialized", "gpu-fault", "fatal"),
    ("hipErrorProfilerAlreadyStarted", "profiler already started", "gpu-fault", "fatal"),
    ("hipErrorProfilerAlreadyStopped", "profiler already stopped", "gpu-fault", "fatal"),
    ("hipErrorInvalidConfiguration", "invalid configuration argument", "config", "fatal"),
    ("hipErrorInvalidPitchValue", "invalid pitch argument", "gpu-fault", "fatal"),
    ("hipErrorInvalidSymbol", "invalid device symbol", "version-mismatch", "fatal"),
    ("hipErrorInvalidDevicePointer", "invalid device pointer", "gpu-fault", "fatal"),
    ("hipErrorInvalidMemcpyDirection", "invalid copy direction for memcpy", "gpu-fault", "fatal"),
    ("hipErrorInsufficientDriver", "driver version is insufficient for runtime version", "version-mismatch", "fatal"),
    ("hipErrorMissingConfiguration", "__global__ function call is not configured", "config", "fatal"),
    ("hipErrorPriorLaunchFailure", "unspecified launch failure in prior launch", "gpu-fault", "fatal"),
    ("hipErrorInvalidDeviceFunction", "invalid device function", "version-mismatch", "fatal"),
    ("hipErrorNoDevice", "no ROCm-capable device is detected", "config", "fatal"),
    ("hipErrorInvalidDevice", "invalid device ordinal", "config", "fatal"),
    ("hipErrorInvalidImage", "device kernel image is invalid", "version-mismatch", "fatal"),
    ("hipErrorInvalidContext", "invalid device context", "gpu-fault", "fatal"),
    ("hipErrorContextAlreadyCurrent", "context is already current context", "gpu-fault", "fatal"),
    ("hipErrorMapFailed", "mapping of buffer object failed", "gpu-fault", "fatal"),
    ("hipErrorUnmapFailed", "unmapping of buffer object failed", "gpu-fault", "fatal"),
    ("hipErrorArrayIsMapped", "array is mapped", "gpu-fault", "fatal"),
    ("hipErrorAlreadyMapped", "resource already mapped", "gpu-fault", "fatal"),
    ("hipErrorNoBinaryForGpu", "no kernel image is available for execution on the device", "version-mismatch", "fatal"),
    ("hipErrorAlreadyAcquired", "resource already acquired", "gpu-fault", "fatal"),
    ("hipErrorNotMapped", "resource not mapped", "gpu-fault", "fatal"),
    ("hipErrorNotMappedAsArray", "resource not mapped as array", "gpu-fault", "fatal"),
    ("hipErrorNotMappedAsPointer", "resource not mapped as pointer", "gpu-fault", "fatal"),
    ("hipErrorECCNotCorrectable", "uncorrectable ECC error encountered", "gpu-fault", "fatal"),
    ("hipErrorUnsupportedLimit", "limit is not supported on this architecture", "version-mismatch", "fatal"),
    ("hipErrorContextAlreadyInUse", "exclusive-thread device already in use by a different thread", "config", "fatal"),
    ("hipErrorPeerAccessUnsupported", "peer access is not supported between these two devices", "config", "fatal"),
    ("hipErrorInvalidKernelFile", "invalid kernel file", "version-mismatch", "fatal"),
    ("hipErrorInvalidGraphicsContext", "invalid OpenGL or DirectX context", "gpu-fault", "fatal"),
    ("hipErrorInvalidSource", "device kernel image is invalid", "version-mismatch", "fatal"),
    ("hipErrorFileNotFound", "file not found", "version-mismatch", "fatal"),
    ("hipErrorSharedObjectSymbolNotFound", "shared object symbol not found", "version-mismatch", "fatal"),
    ("hipErrorSharedObjectInitFailed", "shared object initialization failed", "version-mismatch", "fatal"),
    ("hipErrorOperatingSystem", "OS call failed or operation not supported on this OS", "config", "fatal"),
    ("hipErrorInvalidHandle", "invalid resource handle", "gpu-fault", "fatal"),
    ("hipErrorIllegalState", "the operation cannot be performed in the present state", "gpu-fault", "fatal"),
    ("hipErrorNotFound", "named symbol not found", "version-mismatch", "fatal"),
    ("hipErrorNotReady", "device not ready", "gpu-fault", "warning"),
    ("hipErrorIllegalAddress", "an illegal memory access was encountered", "gpu-fault", "fatal"),
    ("hipErrorLaunchOutOfResources", "too many resources requested for launch", "config", "fatal"),
    ("hipErrorLaunchTimeOut", "the launch timed out and was terminated", "gpu-fault", "fatal"),
    ("hipErrorPeerAccessAlreadyEnabled", "peer access is already enabled", "gpu-fault", "warning"),
    ("hipErrorPeerAccessNotEnabled", "peer access has not been enabled", "gpu-fault", "fatal"),
    ("hipErrorSetOnActiveProcess", "cannot set while device is active in this process", "config", "fatal"),
    ("hipErrorContextIsDestroyed", "context is destroyed", "gpu-fault", "fatal"),
    ("hipErrorAssert", "device-side assert triggered", "gpu-fault", "fatal"),
    ("hipErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped", "gpu-fault", "fatal"),
    ("hipErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region", "gpu-fault", "fatal"),
    ("hipErrorLaunchFailure", "unspecified launch failure", "gpu-fault", "fatal"),
    ("hipErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch", "config", "fatal"),
    ("hipErrorNotSupported", "operation not supported", "config", "fatal"),
    ("hipErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing", "gpu-fault", "fatal"),
    ("hipErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture", "gpu-fault", "fatal"),
    ("hipErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences", "gpu-fault", "fatal"),
    ("hipErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began", "gpu-fault", "fatal"),
    ("hipErrorStreamCaptureUnjoined", "capturing stream has unjoined work", "gpu-fault", "fatal"),
    ("hipErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream", "gpu-fault", "fatal"),
    ("hipErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream", "gpu-fault", "fatal"),
    ("hipErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream", "gpu-fault", "fatal"),
    ("hipErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread", "gpu-fault", "fatal"),
    ("hipErrorGraphExecUpdateFailure", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update", "gpu-fault", "fatal"),
    ("hipErrorRuntimeMemory", "runtime memory call returned error", "gpu-fault", "fatal"),
    ("hipErrorRuntimeOther", "runtime call other than memory returned error", "gpu-fault", "fatal"),
)

# ---- ROCr (HSA runtime): ROCm/ROCR-Runtime runtime/hsa-runtime/core/runtime/hsa.cpp hsa_status_string (commit
#      c7785a6da1c10c25bc8d527c00b1fe79bfbd84c9, 2024-10-23). CLR's queue callback (ROCm/clr rocclr/device/rocm/
#      rocdevice.cpp and rocvirtual.cpp callbackQueue, commit f9f995c6) prints "Callback: Queue %p aborting with error :
#      <status string> code: 0x%x" and aborts; OUT_OF_RESOURCES gets "Aborting ... Available Free mem : %zu MB".
HSA_STATUS: tuple[tuple[str, str, str], ...] = (
    ("HSA_STATUS_ERROR_INVALID_ARGUMENT", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_ALLOCATION", "oom", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_AGENT", "config", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_REGION", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_SIGNAL", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_QUEUE", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_OUT_OF_RESOURCES", "oom", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_PACKET_FORMAT", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_RESOURCE_FREE", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_NOT_INITIALIZED", "config", "fatal"),
    ("HSA_STATUS_ERROR_REFCOUNT_OVERFLOW", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_INDEX", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_ISA", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_ISA_NAME", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_CODE_OBJECT", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_EXECUTABLE", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_FROZEN_EXECUTABLE", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_VARIABLE_UNDEFINED", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_EXCEPTION", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_CODE_SYMBOL", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_FILE", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER", "version-mismatch", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_CACHE", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_WAVEFRONT", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_RUNTIME_STATE", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_FATAL", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_MEMORY_FAULT", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_INVALID_MEMORY_POOL", "gpu-fault", "fatal"),
    ("HSA_STATUS_ERROR_OUT_OF_REGISTERS", "version-mismatch", "fatal"),
)

FAMILIES: tuple[Family, ...] = (
    # ---- CLR / ROCclr code-object and device messages: ROCm/clr (commit f9f995c6) hipamd/src/hip_code_object.cpp
    #      ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", then one "    %s - [%s]" line
    #      per device, [Not Found] / [Unsupported]), hip_fatbin.cpp, rocclr/device/rocm/rocdevice.cpp (device init,
    #      queue creation, memory), rocclr/device/comgrctx.cpp ("Failed to load COMGR library.").
    Family(
        "clr",
        "ROCm/clr hipamd/src/hip_code_object.cpp, hip_fatbin.cpp, rocclr/device/rocm/rocdevice.cpp, rocvirtual.cpp, "
        "rocclr/device/comgrctx.cpp (commit f9f995c6d0aecec28debd3db0f41df0c15ec003d)",
        "the HIP runtime (CLR) could not load code for this GPU or set the device up: check the build's gfx targets",
        (
            ("%s - [Not Found]", "version-mismatch", "fatal"),
            ("%s - [Unsupported]", "version-mismatch", "fatal"),
            ("%s - [Code object targetID is %s]", "version-mismatch", "warning"),
            ("Unable to find code object for all current devices", "version-mismatch", "fatal"),
            ("Failed to load COMGR library", "version-mismatch", "fatal"),
            ("Code object manager initialization failed for HSA device", "version-mismatch", "fatal"),
            ("has %u ISAs but can only support a single ISA", "version-mismatch", "fatal"),
            ("Error: cannot extract ISA from compiled binary", "version-mismatch", "fatal"),
            ("Bad OCL Binary: %s", "version-mismatch", "fatal"),
            ("Cannot get Kernel Symbol by name: %s, failed with hsa_status: %d", "version-mismatch", "fatal"),
            ("Cannot find the function: %s", "version-mismatch", "fatal"),
            ("Cannot Register fat binary", "version-mismatch", "fatal"),
            ("Device::acquireQueue: hsa_queue_create failed!", "gpu-fault", "fatal"),
            ("Could not create signal for copy queue", "gpu-fault", "fatal"),
            ("AQL dispatch failed!", "gpu-fault", "fatal"),
            ("Barrier packet submission failed", "gpu-fault", "fatal"),
            ("Failed blocking queue wait with signal", "gpu-fault", "fatal"),
            ("Couldn't allocate memory on device!", "oom", "fatal"),
            ("Fail allocation local memory", "oom", "fatal"),
            ("Fail allocation host memory with err %d", "oom", "fatal"),
            ("Heap buffer allocation failed!", "oom", "fatal"),
            ("Arena Memory Creation failed!", "oom", "fatal"),
            ("Error creating new instance of Device", "config", "fatal"),
            ("Allow p2p access failed - hsa_amd_agents_allow_access", "config", "fatal"),
        ),
    ),
    # ---- ROCr queue/agent errors ROCr itself prints (ROCm/ROCR-Runtime, commit c7785a6d, core/runtime/
    #      amd_gpu_agent.cpp / runtime.cpp): "HW Exception by GPU node-%u ... Reason :%s" and "Memory access fault by GPU
    #      node-%u" are older rules; these add ROCr's init failures as printed by rocminfo and the runtime.
    Family(
        "rocr",
        "ROCm/ROCR-Runtime runtime/hsa-runtime/core/runtime/amd_aql_queue.cpp, runtime.cpp (commit "
        "c7785a6da1c10c25bc8d527c00b1fe79bfbd84c9); rocminfo",
        "the ROCm runtime could not open the GPU: driver not loaded, /dev/kfd permissions, or a ROCm install mismatch",
        (
            ("hsa api call failure at: %s", "config", "fatal"),
            ("Failed to get user name to check for video group membership", "config", "fatal"),
            ("is member of render group", "config", "warning"),
            # added after round 9: ROCr core/runtime/amd_aql_queue.cpp's GPU core dump on a queue error ("GPU core dump
            # skipped because PC Sampling active", "GPU core dump failed" in c7785a6d; newer ROCr also prints "GPU core
            # dump created: <file>", as seen in a thread): a detail of the fault printed next to it
            ("GPU core dump created: %s", "gpu-fault", "warning"),
            ("GPU core dump failed", "gpu-fault", "warning"),
            ("GPU core dump skipped because PC Sampling active", "gpu-fault", "warning"),
        ),
    ),
    # ---- amdgpu / amdkfd kernel driver (the page-fault decode fields are warnings: details under the fatal fault line,
#      and "WALKER_ERROR: 0x0" says there was none): ROCm/amdgpu (AMD's DKMS tree of drivers/gpu/drm/amd; torvalds/linux is too
    #      large to bring here, 8.6 GB) drivers/gpu/drm/amd/amdgpu/amdgpu_job.c (commit 146ae3b49ea6ab83142b70e73a8aacf6bc7b21c8)
    #      amdgpu_job_timedout, pm/swsmu/smu_cmn.c (commit 077e3ec7b92e41d9792c35d059a4aa467e461675) __smu_msg_v1_print_error;
    #      gmc_v9_0.c / gmc_v10_0.c process_interrupt (the page-fault decode lines, read through code search); the
    #      firmware loader's "Direct firmware load for %s failed with error %d" (drivers/base/firmware_loader).
    Family(
        "amdgpu",
        "ROCm/amdgpu drivers/gpu/drm/amd amdgpu_job.c (146ae3b4), pm/swsmu/smu_cmn.c (077e3ec7), gmc_v9_0.c/gmc_v10_0.c "
        "process_interrupt, amdgpu_ras.c, amdgpu_device.c, amdkfd/kfd_device_queue_manager.c (code search)",
        "the amdgpu kernel driver reports a GPU fault, hang or reset: drain the node if it repeats (dmesg, amd-smi)",
        (
            ("GPU Recovery Failed: %d", "gpu-fault", "fatal"),
            ("Error scheduling IBs (%d) in ring(%s)", "gpu-fault", "warning"),
            ("Error getting VM ID (%d)", "gpu-fault", "warning"),
            ("SMU is in hanged state, failed to send smu message", "gpu-fault", "fatal"),
            ("SMU: No response msg_reg: %x resp_reg: %x", "gpu-fault", "warning"),
            ("SMU: I'm very busy msg_reg", "gpu-fault", "warning"),
            ("SMU: unknown response msg_reg", "gpu-fault", "warning"),
            ("SMU: bus error for message: %s(%d) response:0x%08X", "gpu-fault", "fatal"),
            ("SMU: I'm not done with your previous command", "gpu-fault", "warning"),
            ("Failed to send message %s", "gpu-fault", "warning"),
            ("Faulty UTCL2 client ID: %s", "gpu-fault", "warning"),
            ("MORE_FAULTS: 0x%x", "gpu-fault", "warning"),
            ("WALKER_ERROR: 0x%x", "gpu-fault", "warning"),
            ("PERMISSION_FAULTS: 0x%x", "gpu-fault", "warning"),
            ("MAPPING_ERROR: 0x%x", "gpu-fault", "warning"),
            ("Fence fallback timer expired on ring %s", "gpu-fault", "warning"),
            ("Evicting PASID 0x%x queues", "gpu-fault", "warning"),
            ("RAS records:%d exceed threshold:%d", "gpu-fault", "fatal"),
            ("bad pages reaches threshold value", "gpu-fault", "fatal"),
            ("uncorrectable error detected in UMC", "gpu-fault", "fatal"),
            ("Fatal error during GPU init", "gpu-fault", "fatal"),
            ("amdgpu_device_ip_init failed", "gpu-fault", "fatal"),
            ("PSP load %s fw failed", "gpu-fault", "fatal"),
            ("PSP firmware loading failed", "gpu-fault", "fatal"),
            ("failed to write reg %x wait reg %x", "gpu-fault", "fatal"),
            ("failed to load firmware", "config", "fatal"),
            ("Direct firmware load for amdgpu/%s failed with error %d", "config", "fatal"),
            ("Runlist is getting oversubscribed", "config", "warning"),
            ("Not enough memory for command submission", "oom", "warning"),
            ("Failed to initialize parser -%d", "gpu-fault", "warning"),
            # added after round 9: amdkfd/kfd_process_queue_manager.c pqm_destroy_queue pr_err (code search, 6.x trees)
            ("Pasid 0x%x destroy queue %d failed, ret %d", "gpu-fault", "fatal"),
        ),
        example_prefix="[ 4518.220312] amdgpu 0000:c1:00.0: amdgpu: ",
    ),
    # ---- RCCL WARN formats: ROCm/rccl src/ (commit 0cbce2a7571c907554199fad7e905f16ec0a565c, 2024-10-24): transport/
    #      (net_ib.cc, net_socket.cc, p2p.cc, shm.cc), misc/socket.cc, misc/ibvwrap.cc, proxy.cc, bootstrap.cc, init.cc,
    #      transport.cc, graph/ (topo, rings, xml), enqueue.cc, group.cc. The ones older rules name (Duplicate GPU, socket
    #      family, shm, Call to ..., connect retries, ring loop) keep their rules; every other WARN stays `nccl-warn`.
    Family(
        "rccl",
        "ROCm/rccl src/ WARN(...) formats: transport/net_ib.cc, net_socket.cc, p2p.cc, shm.cc, misc/socket.cc, proxy.cc, "
        "bootstrap.cc, init.cc, transport.cc, graph/*.cc (commit 0cbce2a7571c907554199fad7e905f16ec0a565c)",
        "RCCL/NCCL warned before failing: the text says which part (network, topology, config); the error follows",
        (
            ("NET/IB : Unable to open device %s", "network", "warning"),
            ("NET/IB : Unable to query device %s", "network", "warning"),
            ("NET/IB : Unable to query port_num %d", "network", "warning"),
            ("NET/IB : No IP interface found", "config", "warning"),
            ("NET/IB : Can't merge net devices with different link_layer", "config", "warning"),
            ("has a different number of devices=%d as remote", "config", "warning"),
            ("ibv_post_send() failed with error %s", "network", "fatal"),
            ("ibv_post_recv() failed with error %s", "network", "fatal"),
            ("Call to ibv_poll_cq() returned %d", "network", "fatal"),
            ("NET/Socket : No usable listening interface found", "config", "fatal"),
            ("NET/Socket : socket progress error", "network", "fatal"),
            ("Net : No interface found in the same subnet as remote address", "config", "fatal"),
            ("Net : error encountered when getting address info : %s", "config", "fatal"),
            ("Net : No valid <IPv4_or_hostname>:<port> pair found", "config", "fatal"),
            ("Net : No valid [IPv6]:port pair found", "config", "fatal"),
            ("Net : Unsupported address family type", "config", "fatal"),
            ("Net : unsupported IP family", "config", "fatal"),
            ("Invalid NCCL_COMM_ID, please use format", "config", "fatal"),
            ("socketPollConnect: Connect to %s returned %d(%s) errno %d(%s)", "network", "fatal"),
            ("socketPollConnect: exceeded retries (%d)", "network", "fatal"),
            ("socketPollConnect: exceeded timeouts (%d)", "network", "fatal"),
            ("socketStartConnect: exceeded retries (%d)", "network", "fatal"),
            ("socketStartConnect: exceeded timeouts (%d)", "network", "fatal"),
            ("socketPollConnect poll() failed with error %s", "network", "fatal"),
            ("socketProgressOpt: Call to recv from %s failed : %s", "network", "fatal"),
            ("socketTryAccept: Accept failed: %s", "network", "fatal"),
            ("socketFinalizeAccept: wrong magic %lx != %lx", "config", "warning"),
            ("Message truncated : received %d bytes instead of %d", "comm-error", "fatal"),
            ("Bootstrap Root : mismatch in rank count from procs %d : %d", "rendezvous", "fatal"),
            ("Bootstrap Root : rank %d of %d ranks has already checked in", "rendezvous", "fatal"),
            ("Failed to determine local ranks rank %d", "config", "fatal"),
            ("Failed to determine intra proc ranks rank %d", "config", "fatal"),
            ("Invalid device count requested : %d", "config", "fatal"),
            ("Invalid rank requested : %d/%d", "config", "fatal"),
            ("invalid device count (%d) requested", "config", "fatal"),
            ("rank %d exceeds ndev=%d", "config", "fatal"),
            ("Invalid config %s attribute value %d", "config", "fatal"),
            ("ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER", "config", "fatal"),
            ("No transport found for rank %d[%lx] -> rank %d[%lx]", "comm-error", "fatal"),
            ("Rank %d has no transport for %s peer %d on channel %d/%d", "comm-error", "fatal"),
            ("Error : ring %d does not contain rank %d", "comm-error", "fatal"),
            ("Error : no algorithm/protocol available", "comm-error", "fatal"),
            ("No path computed to go from %s/%d to %s/%d", "comm-error", "fatal"),
            ("Could not find a path for pattern %d, falling back to simple order", "comm-error", "warning"),
            ("Comm %p is in abort state", "comm-error", "warning"),
            ("Attempt to use communicator before the previous operation returned ncclSuccess", "comm-error", "fatal"),
            ("Error: corrupted comm object detected", "comm-error", "fatal"),
            ("comm %p has already been destroyed", "comm-error", "fatal"),
            ("commReclaim: cleanup comm %p rank %d failed in destroy/abort, error %d", "comm-error", "warning"),
            ("commReclaim: comm %p (rank = %d) in abort, error %d", "comm-error", "warning"),
            ("ncclCommSetAsyncError: error comm %p sets state %d", "comm-error", "warning"),
            ("ncclAsyncJobComplete: job %p failed, job error %d", "comm-error", "fatal"),
            ("Trying to send to self without a matching recv", "comm-error", "fatal"),
            ("Trying to recv to self without a matching send", "comm-error", "fatal"),
            ("%s : invalid root %d (root should be in the 0..%d range)", "comm-error", "fatal"),
            ("%s : invalid type %d", "comm-error", "fatal"),
            ("%s : invalid reduction operation %d", "comm-error", "fatal"),
            ("%s : %s argument is NULL", "comm-error", "fatal"),
            ("%s : %s %p is not a valid pointer", "comm-error", "fatal"),
            ("%s : %s allocated on device %d mismatchs with NCCL device %d", "config", "fatal"),
            ("Blocking and nonblocking communicators are not allowed in the same group", "comm-error", "fatal"),
            ("Proxy response for opId=%p doesn't match any expected response", "comm-error", "fatal"),
            ("Socket recv failed while polling for opId=%p", "comm-error", "warning"),
            ("[Proxy Service] Poll failed: %s", "comm-error", "fatal"),
            ("[Service thread] Accept failed %s", "network", "fatal"),
            ("[Service thread] Could not receive type from localRank %d", "comm-error", "fatal"),
            ("[Proxy Service] Failed to set CUDA device %d", "gpu-fault", "fatal"),
            ("[Proxy Progress] Failed to set CUDA device %d", "gpu-fault", "fatal"),
            ("Failed to create CUDA context on device %d", "gpu-fault", "fatal"),
            ("Failed to set CUDA context on device %d", "gpu-fault", "fatal"),
            ("ROCr failure '%s'", "gpu-fault", "fatal"),
            ("failed to peer with device %d", "config", "fatal"),
            ("cudaIpcGetMemHandle failed : %s", "config", "fatal"),
            ("Failed to CUDA malloc %ld bytes", "oom", "fatal"),
            ("Failed to CUDA host alloc %ld bytes", "oom", "fatal"),
            ("Failed to malloc %ld bytes", "oom", "fatal"),
            ("Unrecoverable error detected: malloc(size=%llu) returned null", "oom", "fatal"),
            ("Failed to find ROCm runtime library in %s", "version-mismatch", "fatal"),
            ("Failed to load ROCr missing symbol %s", "version-mismatch", "fatal"),
            ("ROCr Driver version found is %d. Minimum requirement is %d", "version-mismatch", "fatal"),
            ("CUDA Driver version found is %d. Minimum requirement is %d", "version-mismatch", "fatal"),
            ("XML Topology has wrong version %d, %d needed", "version-mismatch", "fatal"),
            ("XML Graph has wrong version %d, %d needed", "version-mismatch", "fatal"),
            ("Could not open XML topology file %s : %s", "config", "fatal"),
            ("Could not open XML graph file %s : %s", "config", "fatal"),
            ("ROCm SMI init failure %s", "config", "warning"),
            ("Message Queue timed out waiting for all ranks to receive messages", "collective-timeout", "fatal"),
            ("NUMA auto balancing enabled which can lead to variability", "config", "warning"),
            ("MSCCL Internal Scheduler:  Unable to find algorithm files in %s", "config", "warning"),
        ),
        example_prefix="node1:2841:2903 [0] transport/net_ib.cc:221 NCCL WARN ",
        prefix=r"NCCL WARN ",
        needle="nccl warn",
    ),
    # ---- MIOpen: ROCm/MIOpen (commit 2d1fd997a6fcf801ac4ca7a63e0656ef1cb9f488, 2024-10-24) src/handle_api.cpp
    #      miopenGetErrorString (the miopenStatus_t names), src/include/miopen/errors.hpp / src/errors.cpp ("MIOpen Error:
    #      " + what()), src/logger.cpp (the "MIOpen(HIP): Error [Function] ..." prefix of MIOPEN_LOG_E), src/hip/
    #      hipoc_program.cpp ("Code object build failed"), src/comgr.cpp (HIPRTC / comgr status names).
    Family(
        "miopen",
        "ROCm/MIOpen src/handle_api.cpp, errors.cpp, logger.cpp, hip/hipoc_program.cpp, comgr.cpp (commit 2d1fd997)",
        "MIOpen could not build or find a kernel for this GPU (a gfx target the install lacks, a stale kernel cache)",
        (
            ("miopenStatusNotInitialized", "config", "fatal"),
            ("miopenStatusInvalidValue", "config", "fatal"),
            ("miopenStatusBadParm", "config", "fatal"),
            ("miopenStatusAllocFailed", "oom", "fatal"),
            ("miopenStatusInternalError", "gpu-fault", "fatal"),
            ("miopenStatusNotImplemented", "version-mismatch", "fatal"),
            ("miopenStatusUnknownError", "gpu-fault", "fatal"),
            ("miopenStatusUnsupportedOp", "version-mismatch", "fatal"),
            ("miopenStatusVersionMismatch", "version-mismatch", "fatal"),
            ("Code object build failed", "version-mismatch", "fatal"),
            ("HIPRTC_ERROR_COMPILATION", "version-mismatch", "fatal"),
            ("HIPRTC_ERROR_", "version-mismatch", "fatal"),
            ("AMD_COMGR_STATUS_ERROR", "version-mismatch", "fatal"),
            ("Memory access fault, kparam is a nullptr", "gpu-fault", "fatal"),
            ("No suitable algorithm was found to execute the required convolution", "version-mismatch", "fatal"),
            ("MIOpen Error: ", "version-mismatch", "fatal"),
            ("MIOpen(HIP): Error [", "version-mismatch", "warning"),
        ),
        shared_needles=("miopenstatus", "hiprtc_error_", "comgr_status_error"),
    ),
    # ---- rocBLAS: ROCm/rocBLAS (commit b520bc83fa67045bed4544f33ba83ce3a7c39c44) library/src/rocblas_auxiliary.cpp
    #      rocblas_status_to_string, library/src/tensile_host.cpp ("rocBLAS error: Cannot read / Could not load /
    #      Could not initialize Tensile ..."), library/src/handle.cpp; hipBLASLt (ROCm/hipBLASLt commit
    #      7d9fb683db25941d38c5f89749a2c26acc493992) library/include/hipblaslt.h hipblasStatus_t and "hipBLASLt
    #      error(Err=%d) at %s:%d"; PyTorch prints the cuBLAS-named codes too ("CUBLAS_STATUS_ALLOC_FAILED when calling").
    Family(
        "blas",
        "ROCm/rocBLAS library/src/rocblas_auxiliary.cpp, tensile_host.cpp (b520bc83); ROCm/hipBLASLt library/include/"
        "hipblaslt.h (7d9fb683)",
        "the BLAS library failed: no kernels (Tensile / hipBLASLt) for this gfx arch, device memory, or a GPU fault",
        (
            ("rocblas_status_invalid_handle", "gpu-fault", "fatal"),
            ("rocblas_status_not_implemented", "version-mismatch", "fatal"),
            ("rocblas_status_invalid_pointer", "gpu-fault", "fatal"),
            ("rocblas_status_invalid_size", "gpu-fault", "fatal"),
            ("rocblas_status_memory_error", "oom", "fatal"),
            ("rocblas_status_internal_error", "gpu-fault", "fatal"),
            ("rocblas_status_invalid_value", "gpu-fault", "fatal"),
            ("rocblas_status_check_numerics_fail", "divergence", "fatal"),
            ("rocblas_status_excluded_from_build", "version-mismatch", "fatal"),
            ("rocblas_status_arch_mismatch", "version-mismatch", "fatal"),
            ("rocBLAS error: Could not load %s", "version-mismatch", "fatal"),
            ("rocBLAS error: Could not initialize Tensile library", "version-mismatch", "fatal"),
            ("Could not initialize Tensile host: No devices found", "config", "fatal"),
            ("rocBLAS error: No hipBLASLt solution found", "version-mismatch", "fatal"),
            ("rocBLAS error from hip error code: '%s'", "gpu-fault", "fatal"),
            ("hipBLASLt error(Err=%d) at %s:%d", "gpu-fault", "fatal"),
            # added after round 9: hipBLASLt library/src/amd_detail/rocblaslt/src/tensile_host.cpp (7d9fb683): no kernel
            # files for this gfx arch
            ("rocblaslt warning: No paths matched %s", "version-mismatch", "warning"),
            ("HIPBLAS_STATUS_NOT_INITIALIZED", "oom", "fatal"),
            ("HIPBLAS_STATUS_ALLOC_FAILED", "oom", "fatal"),
            ("HIPBLAS_STATUS_INVALID_VALUE", "gpu-fault", "fatal"),
            ("HIPBLAS_STATUS_MAPPING_ERROR", "gpu-fault", "fatal"),
            ("HIPBLAS_STATUS_EXECUTION_FAILED", "gpu-fault", "fatal"),
            ("HIPBLAS_STATUS_INTERNAL_ERROR", "gpu-fault", "fatal"),
            ("HIPBLAS_STATUS_NOT_SUPPORTED", "version-mismatch", "fatal"),
            ("HIPBLAS_STATUS_ARCH_MISMATCH", "version-mismatch", "fatal"),
            ("HIPBLAS_STATUS_HANDLE_IS_NULLPTR", "gpu-fault", "fatal"),
            ("HIPBLAS_STATUS_INVALID_ENUM", "gpu-fault", "fatal"),
            ("HIPBLAS_STATUS_UNKNOWN", "gpu-fault", "fatal"),
            ("CUBLAS_STATUS_NOT_INITIALIZED", "oom", "fatal"),
            ("CUBLAS_STATUS_ALLOC_FAILED", "oom", "fatal"),
            ("CUBLAS_STATUS_INVALID_VALUE", "gpu-fault", "fatal"),
            ("CUBLAS_STATUS_ARCH_MISMATCH", "version-mismatch", "fatal"),
            ("CUBLAS_STATUS_MAPPING_ERROR", "gpu-fault", "fatal"),
            ("CUBLAS_STATUS_EXECUTION_FAILED", "gpu-fault", "fatal"),
            ("CUBLAS_STATUS_INTERNAL_ERROR", "gpu-fault", "fatal"),
            ("CUBLAS_STATUS_NOT_SUPPORTED", "version-mismatch", "fatal"),
        ),
        shared_needles=("rocblas_status_", "hipblas_status_", "cublas_status_", "rocblas error"),
    ),
    # ---- PyTorch, DeepSpeed, LLaMA-Factory / transformers formats not covered by the older rules (torch 2.13.0,
    #      DeepSpeed 0.19.8 and transformers in the .venv, read there: torch/distributed/distributed_c10d.py,
    #      torch/nn/parallel/distributed.py (reducer.cpp's unused-parameter error), torch/cuda/__init__.py,
    #      deepspeed/ops/op_builder/builder.py, torch/utils/cpp_extension.py, transformers/utils/versions.py,
    #      llamafactory/extras/misc.py check_version; the loader's "undefined symbol" / "cannot open shared object file").
    Family(
        "python-stack",
        "torch 2.13.0, deepspeed 0.19.8, transformers, llamafactory (the .venv): distributed_c10d.py, reducer.cpp, "
        "cuda/__init__.py, op_builder/builder.py, cpp_extension.py, utils/versions.py, extras/misc.py",
        "the Python stack refused to start: versions, missing libraries, or the job's distributed settings",
        (
            ("Default process group has not been initialized", "config", "fatal"),
            ("ProcessGroupNCCL is only supported with GPUs, no GPUs found", "config", "fatal"),
            ("Tensors must be CUDA and dense", "config", "fatal"),
            ("Detected mismatch between collectives on ranks", "collective-timeout", "fatal"),
            ("Expected to have finished reduction in the prior iteration before starting a new one", "config", "fatal"),
            ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False", "config", "fatal"),
            ("Torch not compiled with CUDA enabled", "config", "fatal"),
            ("Found no NVIDIA driver on your system", "config", "fatal"),
            ("does not match the version torch was compiled with", "version-mismatch", "fatal"),
            ("Error building extension '%s'", "version-mismatch", "fatal"),
            ("ninja: build stopped: subcommand failed", "version-mismatch", "fatal"),
            ("undefined symbol: %s", "version-mismatch", "warning"),
            ("cannot open shared object file: No such file or directory", "version-mismatch", "warning"),
            ("version `GLIBCXX_%s' not found", "version-mismatch", "fatal"),
            ("is required for a normal functioning of this module, but found", "version-mismatch", "fatal"),
            ("set `DISABLE_VERSION_CHECK=1` to skip this check", "version-mismatch", "fatal"),
            ("Your setup doesn't support bf16/gpu", "config", "fatal"),
            ("Please launch distributed training with `llamafactory-cli` or `torchrun`", "config", "fatal"),
            ("No module named '%s'", "config", "warning"),
        ),
    ),
)

# fmt: on


def _hip_rows() -> list[tuple[str, str, str, str]]:
    """HIP rows as (regex, needle, category, severity, example): the name, and the text after "HIP error: "."""
    rows = []
    for name, text, category, severity in HIP_ERRORS:
        # needles: every name starts with "hiperror"; every text row needs " error: ", which the scan already finds as
        # the last resort's "error" (so the 142 rows add two literals to the scan, not 142)
        rows.append((rf"\b{name}\b", "hiperror", category, severity, f"RuntimeError: {name}"))
        rows.append(
            (
                rf"(?:HIP|CUDA) error: {re.escape(text)}",
                " error: ",
                category,
                severity,
                f"[rank0]: RuntimeError: HIP error: {text}",
            )
        )
    return rows


def _hsa_rows() -> list[tuple[str, str, str, str]]:
    text = dict(HSA_STRINGS)
    rows = []
    for name, category, severity in HSA_STATUS:
        example = f":0:rocdevice.cpp            :2995: 1234567890 us: [pid:9 tid:0x7f] Callback: Queue 0x7f0000000000 aborting with error : {name}: {text[name]} code: 0x1016"
        rows.append((rf"\b{name}\b", "hsa_status_error", category, severity, example))
    return rows


# fmt: off
# hsa_status_string texts (ROCm/ROCR-Runtime hsa.cpp, commit c7785a6d), for the example lines only
HSA_STRINGS: tuple[tuple[str, str], ...] = (
    ("HSA_STATUS_ERROR_INVALID_ARGUMENT", "One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument."),
    ("HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", "The requested queue creation is not valid."),
    ("HSA_STATUS_ERROR_INVALID_ALLOCATION", "The requested allocation is not valid."),
    ("HSA_STATUS_ERROR_INVALID_AGENT", "The agent is invalid."),
    ("HSA_STATUS_ERROR_INVALID_REGION", "The memory region is invalid."),
    ("HSA_STATUS_ERROR_INVALID_SIGNAL", "The signal is invalid."),
    ("HSA_STATUS_ERROR_INVALID_QUEUE", "The queue is invalid."),
    ("HSA_STATUS_ERROR_OUT_OF_RESOURCES", "The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events."),
    ("HSA_STATUS_ERROR_INVALID_PACKET_FORMAT", "The AQL packet is malformed."),
    ("HSA_STATUS_ERROR_RESOURCE_FREE", "An error has been detected while releasing a resource."),
    ("HSA_STATUS_ERROR_NOT_INITIALIZED", "An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero."),
    ("HSA_STATUS_ERROR_REFCOUNT_OVERFLOW", "The maximum reference count for the object has been reached."),
    ("HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS", "The arguments passed to a functions are not compatible."),
    ("HSA_STATUS_ERROR_INVALID_INDEX", "The index is invalid."),
    ("HSA_STATUS_ERROR_INVALID_ISA", "The instruction set architecture is invalid."),
    ("HSA_STATUS_ERROR_INVALID_ISA_NAME", "The instruction set architecture name is invalid."),
    ("HSA_STATUS_ERROR_INVALID_CODE_OBJECT", "The code object is invalid."),
    ("HSA_STATUS_ERROR_INVALID_EXECUTABLE", "The executable is invalid."),
    ("HSA_STATUS_ERROR_FROZEN_EXECUTABLE", "The executable is frozen."),
    ("HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", "There is no symbol with the given name."),
    ("HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED", "The variable is already defined."),
    ("HSA_STATUS_ERROR_VARIABLE_UNDEFINED", "The variable is undefined."),
    ("HSA_STATUS_ERROR_EXCEPTION", "An HSAIL operation resulted in a hardware exception."),
    ("HSA_STATUS_ERROR_INVALID_CODE_SYMBOL", "The code object symbol is invalid."),
    ("HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL", "The executable symbol is invalid."),
    ("HSA_STATUS_ERROR_INVALID_FILE", "The file descriptor is invalid."),
    ("HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER", "The code object reader is invalid."),
    ("HSA_STATUS_ERROR_INVALID_CACHE", "The cache is invalid."),
    ("HSA_STATUS_ERROR_INVALID_WAVEFRONT", "The wavefront is invalid."),
    ("HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP", "The signal group is invalid."),
    ("HSA_STATUS_ERROR_INVALID_RUNTIME_STATE", "The HSA runtime is not in the configuration state."),
    ("HSA_STATUS_ERROR_FATAL", "The queue received an error that may require process termination."),
    ("HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", "The agent attempted to access memory beyond the largest legal address."),
    ("HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", "The agent attempted to execute an illegal shader instruction."),
    ("HSA_STATUS_ERROR_MEMORY_FAULT", "Agent attempted to access an inaccessible address."),
    ("HSA_STATUS_ERROR_INVALID_MEMORY_POOL", "The memory pool is invalid."),
    ("HSA_STATUS_ERROR_OUT_OF_REGISTERS", "Kernel has requested more VGPRs than are available on this agent"),
)

# fmt: on


def _shared(needle: str, shared: tuple[str, ...]) -> str:
    return next((literal for literal in shared if literal in needle), needle)


def _family_rows(family: Family) -> list[tuple[str, str, str, str, str]]:
    return [
        (
            family.prefix + format_regex(fmt),
            family.needle or _shared(format_needle(fmt), family.shared_needles),
            category,
            severity,
            family.example_prefix + instantiate(fmt),
        )
        for fmt, category, severity in family.rows
    ]


HINTS = {
    "hip": "the HIP runtime returned this error; rerun with AMD_SERIALIZE_KERNEL=3 to locate the kernel",
    "hsa": "the ROCm runtime (ROCr) aborted a queue with this status; the status name says what the GPU reported",
}


def all_rows() -> dict[str, tuple[str, list[tuple[str, str, str, str, str]]]]:
    """{family: (hint, rows)}; a row is (regex, needle, category, severity, example line)."""
    out = {"hip": (HINTS["hip"], _hip_rows()), "hsa": (HINTS["hsa"], _hsa_rows())}
    for family in FAMILIES:
        out[family.name] = (family.hint, _family_rows(family))
    return out


def family_rules(family: str) -> list[tuple[str, str, str, str, str, tuple[str, ...]]]:
    """One (name, regex, category, severity, hint, needles) per (category, severity) of the family, in table order."""
    hint, rows = all_rows()[family]
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for regex, needle, category, severity, _ in rows:
        groups.setdefault((category, severity), []).append((regex, needle))
    rules = []
    for (category, severity), members in groups.items():
        name = f"{family}-{category}" + ("" if severity == "fatal" else f"-{severity}")
        regex = "|".join(f"(?:{r})" for r, _ in members)
        needles = tuple(dict.fromkeys(n for _, n in members))
        rules.append((name, regex, category, severity, hint, needles))
    return rules


def example_lines(family: str) -> list[tuple[str, str, str]]:
    """(category, severity, line) for every row of the family."""
    return [(category, severity, example) for _, _, category, severity, example in all_rows()[family][1]]
