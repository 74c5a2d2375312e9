"""GPU activity as a rank activity signal (launcher/node/gpuact.py and the hang rule in progress.py), over tool
outputs captured in public threads (tests/fixtures/smi/SOURCES.md), and the kernel OOM killer's lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.health.progress import Progress
from launcher.node import gpuact
from launcher.node.gpuact import BUSY, IDLE, SPINNING

SMI = Path(__file__).parent / "fixtures" / "smi"


def fixture(name: str) -> str:
    return (SMI / name).read_text()


def test_amd_smi_usage_only_list_shape() -> None:
    """`amd-smi metric -u --json` on a W7700 (list shape, no power block)."""
    assert gpuact.parse("amd-smi", fixture("amd-smi_metric_w7700_usage.json")) == {
        0: {"gfx": 42.0, "umc": 1.0, "w": None}
    }


def test_amd_smi_gpu_data_shape_of_rocm7() -> None:
    """MI300X in DPX mode on ROCm 7.0.2: the list is wrapped in gpu_data, partitions add per-XCP fields."""
    assert gpuact.parse("amd-smi", fixture("amd-smi_metric_mi300x_dpx_usage.json")) == {
        0: {"gfx": 0.0, "umc": 0.0, "w": None}
    }


def test_amd_smi_all_na_after_a_banner_reads_as_unknown() -> None:
    """`amd-smi metric -w 1 --json` prints a banner first and "usage": "N/A" on an unsupported device."""
    readings = gpuact.parse("amd-smi", fixture("amd-smi_metric_watch_na.json"))
    assert readings == {0: {"gfx": None, "umc": None, "w": None}}
    assert gpuact.gpu_state(None, None, None, None) is None


def test_rocm_smi_string_values_and_power() -> None:
    """`rocm-smi -a --json` on an MI250: "GPU use (%)": "100", "GPU memory use (%)": "0", 128 W of 560 W."""
    assert gpuact.parse("rocm-smi", fixture("rocm-smi_mi250_use_power.json")) == {
        0: {"gfx": 100.0, "umc": 0.0, "w": 128.0}
    }
    # --showmemuse alone: no graphics activity reading, nothing to decide from.
    memuse = gpuact.parse("rocm-smi", fixture("rocm-smi_showmemuse_rx6800.json"))
    assert memuse == {0: {"gfx": None, "umc": 0.0, "w": None}, 1: {"gfx": None, "umc": 0.0, "w": None}}
    assert gpuact.parse("rocm-smi", fixture("rocm-smi_rx7900xt.json"))[0]["gfx"] == 0.0


@pytest.mark.parametrize("text", ["", "garbage", "[1, 2]", '{"gpu_data": "N/A"}', '[{"gpu": "0"}]'])
def test_unusable_outputs_give_no_readings(text: str) -> None:
    assert gpuact.parse("amd-smi", text) == {} and gpuact.parse("rocm-smi", text) == {}


def test_the_spinning_signature() -> None:
    idle, spin, busy = (
        gpuact.parse("amd-smi", fixture(f"amd-smi_metric_mi300x_{name}.json"))[1]
        for name in ("idle", "spin", "busy")
    )
    baseline = idle["w"]
    assert gpuact.gpu_state(idle["gfx"], idle["umc"], idle["w"], baseline) == IDLE
    assert gpuact.gpu_state(spin["gfx"], spin["umc"], spin["w"], baseline) == SPINNING
    assert gpuact.gpu_state(busy["gfx"], busy["umc"], busy["w"], baseline) == BUSY
    # The MI250 reading above: 100 % busy, memory controller at 0, 128 W. Without a baseline it proves nothing
    # (work assumed); against an idle reading of 90 W it is the signature; a busy memory controller is work.
    assert gpuact.gpu_state(100, 0, 128, None) == BUSY
    assert gpuact.gpu_state(100, 0, 128, 90) == SPINNING
    assert gpuact.gpu_state(100, 0, 200, 90) == BUSY
    assert gpuact.gpu_state(100, 12, 128, 90) == BUSY
    assert gpuact.gpu_state(100, None, None, 90) == BUSY  # usage without power (amd-smi metric -u): work
    assert gpuact.gpu_state(100, None, 100, 90) == SPINNING  # no memory reading, power at idle


@pytest.mark.parametrize(
    ("env", "device"),
    [
        ({"HIP_VISIBLE_DEVICES": "0,1,2,3", "LOCAL_RANK": "2"}, 2),  # what rlaunch sets: the node's gpus list
        ({"HIP_VISIBLE_DEVICES": "4,5,6,7", "LOCAL_RANK": "1"}, 5),
        ({"HIP_VISIBLE_DEVICES": "6", "LOCAL_RANK": "3"}, 6),  # pinned per rank (Slurm --gpu-bind)
        ({"CUDA_VISIBLE_DEVICES": "2,3", "LOCAL_RANK": "0"}, 2),  # HIP reads CUDA_VISIBLE_DEVICES too
        ({"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "1,3", "LOCAL_RANK": "1"}, 7),
        ({"LOCAL_RANK": "3"}, 3),
        ({"HIP_VISIBLE_DEVICES": "0,1", "LOCAL_RANK": "5"}, None),  # out of range
        ({"HIP_VISIBLE_DEVICES": "0,1"}, None),  # several GPUs, no local rank: cannot tell
        ({"ROCR_VISIBLE_DEVICES": "GPU-4b2c8e5a1f3d7a90", "LOCAL_RANK": "0"}, None),  # a UUID
        ({}, None),
    ],
)
def test_the_gpu_of_a_rank_from_its_environment(env: dict, device: int | None) -> None:
    assert gpuact.device_of(env) == device


OOM_LINES = (
    # pcyin/tranX #41 (dmesg, the terminal wrap removed); the cgroup form as mm/oom_kill.c prints it
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
    "task_memcg=/user.slice,task=python3,pid=25315,uid=0",
    "Out of memory: Killed process 25315 (python3) total-vm:53312244kB, anon-rss:31451456kB, file-rss:74816kB, "
    "shmem-rss:12296kB, UID:0 pgtables:69068kB oom_score_adj:0",
    "Memory cgroup out of memory: Killed process 25315 (python3) total-vm:53312244kB, anon-rss:31451456kB, "
    "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:69068kB oom_score_adj:0",
)


def test_oom_killer_lines_name_the_killed_pid() -> None:
    assert [gpuact.oom_pid(line) for line in OOM_LINES] == [25315, 25315, 25315]
    assert gpuact.oom_detail(OOM_LINES[1]) == "anon-rss 31451456kB"
    assert gpuact.oom_pid("python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE)") is None
    assert gpuact.oom_pid("oom_reaper: reaped process 25315 (python3), now anon-rss:0kB") is None


def test_the_kernels_watchdogs_name_the_stuck_pid() -> None:
    """kernel/hung_task.c and kernel/watchdog.c formats; a task name may hold a colon or a slash."""
    assert gpuact.stuck_pid("INFO: task python3:4242 blocked for more than 120 seconds.") == 4242
    assert gpuact.stuck_pid("[  246.9] INFO: task kworker/2:4:944 blocked for more than 122 seconds.") == 944
    assert gpuact.stuck_pid("watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [pt_main_thread:4243]") == 4243
    assert gpuact.stuck_pid("INFO: task hung but no pid") is None


# ---- the hang rule with GPU readings (progress.py) ------------------------------------------------------------

SPIN = {"gfx": 100, "umc": 0, "w": 190, "idle_w": 182}
WORK = {"gfx": 100, "umc": 38, "w": 612, "idle_w": 182}
IDLE_GPU = {"gfx": 0, "umc": 0, "w": 182, "idle_w": 182}


def run(cpu_per_s: float, gpu: dict | None, until: float = 120.0) -> Progress:
    """Two ranks step every second for 20 s, then print nothing: CPU per second and, every 5 s, this GPU reading."""
    progress = Progress()
    for t in range(int(until) + 1):
        if t <= 20:
            progress.observe_line(float(t), f"step {t}")
        for rank in (0, 1):
            sample = gpu if gpu is not None and t % 5 == 0 else None
            progress.observe_rank(float(t), "node1", rank, cpu_per_s * t, 0.0, sample)
    return progress


def test_spinning_gpus_are_quiescent_even_while_the_cpu_spins() -> None:
    assert run(cpu_per_s=1.0, gpu=None).hung(120.0) is None  # CPU alone: busy, left to stall_timeout
    assert run(cpu_per_s=1.0, gpu=SPIN).hung(120.0) is not None  # the spinning collective is a hang


def test_a_gpu_doing_real_work_is_busy_with_an_idle_cpu() -> None:
    assert run(cpu_per_s=0.0, gpu=None).hung(120.0) is not None  # today's rule: quiet CPU, no I/O
    assert run(cpu_per_s=0.0, gpu=WORK).hung(120.0) is None  # a long evaluation kernel


def test_an_idle_gpu_leaves_the_cpu_rule_as_it_is() -> None:
    assert run(cpu_per_s=0.0, gpu=IDLE_GPU).hung(120.0) is not None
    assert run(cpu_per_s=1.0, gpu=IDLE_GPU).hung(120.0) is None  # CPU work (a save being serialised)


def test_one_rank_working_on_its_gpu_keeps_the_job_alive() -> None:
    progress = run(cpu_per_s=1.0, gpu=SPIN)
    for t in range(121, 160):
        progress.observe_rank(float(t), "node1", 0, 1.0 * t, 0.0, SPIN if t % 5 == 0 else None)
        progress.observe_rank(float(t), "node1", 1, 0.0 + 120, 0.0, WORK if t % 5 == 0 else None)
    assert progress.busy_ranks(159.0) == [("node1", 1)] and progress.hung(159.0) is None


# ---- the watcher: an OOM kill names the rank (launcher/health/watch.py) -------------------------------------------


def test_oom_kill_of_a_rank_is_one_event_naming_it() -> None:
    from launcher.health.watch import ProcSample, Watcher

    watcher = Watcher(ranks={"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
    watcher.observe_procs(10.0, "node2", [ProcSample(25315, "S", 3, 5.0, 0.0), ProcSample(25300, "S", None)])
    assert watcher.observe_gpu(11.0, "node2", OOM_LINES[0]) is not None  # "oom-kill:...pid=25315"
    assert watcher.observe_gpu(11.0, "node2", OOM_LINES[1]) is None  # the same kill, now with its size
    kills = [e for e in watcher.events if e.category == "oom"]
    assert len(kills) == 1 and (kills[0].node, kills[0].rank, kills[0].kind) == ("node2", 3, "line")
    assert kills[0].text == "rank 3 (node2) killed by the kernel OOM killer: anon-rss 31451456kB (pid 25315)"
    # The rank's own SIGKILL, reported after, is the same story.
    watcher.observe_exit(12.0, "node2", None, signal="SIGKILL", rank=3)
    assert watcher.first_failure == kills[0]


def test_oom_kill_of_an_unknown_pid_stays_evidence_for_the_node() -> None:
    from launcher.health.watch import Watcher

    watcher = Watcher(ranks={"node2": [3]}, stall_timeout=600)
    event = watcher.observe_gpu(11.0, "node2", OOM_LINES[1])
    assert event is not None and (event.kind, event.rank, event.category) == ("gpu", None, "oom")
