"""The pure planning core: inventory + job → plan, with every ROCm mapping and warning."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from cluster.inventory import from_mapping
from launcher.envrules import apply_rules, dataloader_workers
from launcher.plan import GUARD, PROTOCOL, REDACTED, Plan, PlanError, auto_port, build_plan

SOURCES = {GUARD: b"# guard", PROTOCOL: b"# protocol", "train.py": b"print('hi')\n"}


def inventory(**over: Any) -> Any:
    data: dict[str, Any] = {
        "cluster": "lab",
        "nodes": [
            {"host": "node01", "address": "10.0.0.11", "gpus": 4},
            {"host": "node02", "address": "10.0.0.12", "gpus": "0-3"},
            {"host": "node03", "address": "10.0.0.13", "gpus": [0, 1, 2, 3]},
        ],
        "master": {"node": "node02", "port": 29555},
        "workdir": "/scratch/rl",
        "python": "/opt/venv/bin/python",
        "job": {"kind": "torchrun", "script": "train.py", "args": ["--steps", "5"]},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return from_mapping(data)


def plan_of(head_env: dict[str, str] | None = None, **over: Any) -> Plan:
    return build_plan(inventory(**over), run_id="run1", sources=SOURCES, head_env=head_env or {})


def test_rendezvous_is_identical_and_consistent_everywhere() -> None:
    plan = plan_of()
    assert plan.master_addr == "10.0.0.12" and plan.master_port == 29555 and plan.world_size == 12
    for rank, node in enumerate(plan.nodes):
        env = node.env
        assert env["MASTER_ADDR"] == "10.0.0.12" and env["MASTER_PORT"] == "29555"
        assert env["NNODES"] == "3" and env["NODE_RANK"] == str(rank) and env["NPROC_PER_NODE"] == "4"
        assert "RANK" not in env  # LLaMA-Factory ignores RANK; torchrun sets it per worker
        argv = node.argv
        assert f"--node-rank={rank}" in argv and "--nnodes=3" in argv and "--master-port=29555" in argv
        assert node.ranks == range(rank * 4, rank * 4 + 4)
    assert [n.first_rank for n in plan.nodes] == [0, 4, 8]


def test_user_rendezvous_vars_are_dropped_with_a_warning() -> None:
    plan = plan_of(env={"MASTER_PORT": "1234", "RANK": "3"})
    assert plan.nodes[0].env["MASTER_PORT"] == "29555"
    assert any("MASTER_PORT in env is ignored" in w for w in plan.warnings)
    assert any("RANK in env is ignored" in w for w in plan.warnings)


def test_exactly_one_visibility_variable_from_gpu_list() -> None:
    plan = plan_of(nodes=[{"host": "a", "gpus": [2, 3]}], master={"node": "a"}, job={"nproc_per_node": 2})
    env = plan.nodes[0].env
    assert env["HIP_VISIBLE_DEVICES"] == "2,3"
    assert "CUDA_VISIBLE_DEVICES" not in env and "ROCR_VISIBLE_DEVICES" not in env


def test_conflicting_visibility_variable_is_an_error() -> None:
    with pytest.raises(PlanError) as info:
        plan_of(env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert "CUDA_VISIBLE_DEVICES=0,1 conflicts" in str(info.value)


def test_matching_visibility_variable_is_replaced_with_a_note() -> None:
    plan = plan_of(env={"ROCR_VISIBLE_DEVICES": "0,1,2,3"})
    assert "ROCR_VISIBLE_DEVICES" not in plan.nodes[0].env
    assert any("ROCR_VISIBLE_DEVICES in env replaced" in n for n in plan.notes)


def test_nccl_timeout_becomes_real_timeouts() -> None:
    plan = plan_of(env={"NCCL_TIMEOUT": "1800"})
    env = plan.nodes[0].env
    assert "NCCL_TIMEOUT" not in env
    assert env["RLAUNCH_PG_TIMEOUT"] == "1800" and env["DEEPSPEED_TIMEOUT"] == "30"
    assert plan.collective_timeout == 1800
    assert any("NCCL_TIMEOUT is read by neither NCCL nor RCCL" in n for n in plan.notes)


def test_job_timeout_wins_over_nccl_timeout() -> None:
    plan = plan_of(env={"NCCL_TIMEOUT": "1800"}, job={"timeout": 600})
    assert plan.nodes[0].env["RLAUNCH_PG_TIMEOUT"] == "600"


def test_timeout_of_years_is_warned_about() -> None:
    plan = plan_of(job={"timeout": 180000000})
    assert any("5.7 years" in w for w in plan.warnings)


def test_bad_nccl_timeout_is_an_error() -> None:
    with pytest.raises(PlanError):
        plan_of(env={"NCCL_TIMEOUT": "soon"})


def test_rccl_net_plugin_maps_to_nccl_net_plugin() -> None:
    plan = plan_of(env={"RCCL_NET_PLUGIN": "ib"})
    env = plan.nodes[0].env
    assert env["NCCL_NET_PLUGIN"] == "ib" and "RCCL_NET_PLUGIN" not in env
    assert any("RCCL reads NCCL_NET_PLUGIN only" in n for n in plan.notes)


def test_rccl_net_plugin_conflicting_with_nccl_net_plugin_warns() -> None:
    plan = plan_of(env={"RCCL_NET_PLUGIN": "ib", "NCCL_NET_PLUGIN": "none"})
    assert plan.nodes[0].env["NCCL_NET_PLUGIN"] == "none"
    assert any("RCCL_NET_PLUGIN=ib dropped" in w for w in plan.warnings)


def test_rocm_defaults_and_overrides() -> None:
    env = plan_of().nodes[0].env
    assert env["NCCL_DEBUG"] == "WARN" and env["OMP_NUM_THREADS"] == "1"
    assert env["HSA_FORCE_FINE_GRAIN_PCIE"] == "1" and env["PYTORCH_HIP_ALLOC_CONF"].startswith("expandable")
    assert env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1" and env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    env = plan_of(env={"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "8"}).nodes[0].env
    assert env["NCCL_DEBUG"] == "INFO" and env["OMP_NUM_THREADS"] == "8"


def test_nccl_debug_off_warns() -> None:
    plan = plan_of(env={"NCCL_DEBUG": "VERSION"})
    assert any("no WARN lines" in w for w in plan.warnings)


def test_hip_alloc_conf_shadowed_by_cuda_alloc_conf_warns() -> None:
    plan = plan_of(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    assert any("PYTORCH_HIP_ALLOC_CONF is ignored" in w for w in plan.warnings)


def test_cpu_nodes_get_no_gpu_variables() -> None:
    plan = plan_of(nodes=[{"host": "a"}, {"host": "b"}], master={"node": "a"})
    env = plan.nodes[0].env
    assert "HIP_VISIBLE_DEVICES" not in env and "HSA_FORCE_FINE_GRAIN_PCIE" not in env
    assert plan.world_size == 2 and plan.nodes[1].nproc == 1


def test_per_node_env_overrides_global() -> None:
    nodes = [{"host": "a", "env": {"X": "node"}}, {"host": "b"}]
    plan = plan_of(nodes=nodes, master={"node": "a"}, env={"X": "global"})
    assert plan.node("a").env["X"] == "node" and plan.node("b").env["X"] == "global"


def test_profile_env_is_a_default_under_user_env() -> None:
    sources = {
        **SOURCES,
        "<templates>/env_mi300x.env": b"# c\nNCCL_MIN_NCHANNELS=112\nHIP_FORCE_DEV_KERNARG=1\n",
    }
    inv = inventory(profile="mi300x", env={"NCCL_MIN_NCHANNELS": "32"})
    env = build_plan(inv, run_id="r", sources=sources, head_env={}).nodes[0].env
    assert env["HIP_FORCE_DEV_KERNARG"] == "1" and env["NCCL_MIN_NCHANNELS"] == "32"


def test_different_rank_counts_per_node_are_refused() -> None:
    with pytest.raises(PlanError) as info:
        plan_of(nodes=[{"host": "a", "gpus": 8}, {"host": "b", "gpus": 4}], master={"node": "a"})
    assert "different numbers of ranks" in str(info.value)


def test_secrets_come_from_head_env_and_are_redacted() -> None:
    plan = plan_of(head_env={"HF_TOKEN": "hf_s3cret"}, secrets=["HF_TOKEN"])
    node = plan.nodes[0]
    assert node.env["HF_TOKEN"] == "hf_s3cret"
    text = json.dumps(plan.to_json())
    assert "hf_s3cret" not in text and f'"HF_TOKEN": "{REDACTED}"' in text
    job_json = next(f for f in node.files if f.path == "job.json")
    assert job_json.mode == 0o600 and job_json.secret


def test_missing_secret_is_an_error() -> None:
    with pytest.raises(PlanError) as info:
        plan_of(secrets=["HF_TOKEN"])
    assert "HF_TOKEN is not set" in str(info.value)


def test_files_carry_sha256_and_modes() -> None:
    node = plan_of().nodes[0]
    files = {f.path: f for f in node.files}
    assert set(files) == {"train.py", "env.sh", "job.json", "guard.py", "protocol.py"}
    assert files["env.sh"].mode == 0o600 and files["guard.py"].mode == 0o755
    out = plan_of().to_json()["nodes"][0]["files"]
    assert all(len(f["sha256"]) == 64 for f in out)


def test_hostile_env_values_are_quoted_everywhere() -> None:
    evil = "$(touch /tmp/pwned); rm -rf / 'quote' \"dq\"\nnewline `id`"
    node = plan_of(env={"EVIL": evil}).nodes[0]
    env_sh = next(f for f in node.files if f.path == "env.sh").content.decode()
    line = next(line for line in env_sh.split("\nexport ") if line.startswith("EVIL="))
    assert shlex.split(line.split("=", 1)[1]) == [evil]
    job = json.loads(next(f for f in node.files if f.path == "job.json").content)
    assert job["env"]["EVIL"] == evil


def test_job_json_for_the_guard() -> None:
    plan = plan_of(health={"heartbeat_timeout": 7, "grace": 3})
    job = json.loads(next(f for f in plan.nodes[0].files if f.path == "job.json").content)
    assert job["argv"] == plan.nodes[0].argv and job["heartbeat_timeout"] == 7 and job["grace"] == 3
    assert job["cwd"] == "/scratch/rl/run1/node01"
    detached = build_plan(inventory(), run_id="r", sources=SOURCES, head_env={}, detach=True)
    job = json.loads(next(f for f in detached.nodes[0].files if f.path == "job.json").content)
    assert job["heartbeat_timeout"] == 0


def test_auto_port_is_stable_and_in_range() -> None:
    assert auto_port("abc") == auto_port("abc")
    assert 29500 <= auto_port("abc") < 30500
    plan = plan_of(master={"port": "auto"})
    assert plan.master_port == auto_port("run1")
    assert any("master.port auto" in n for n in plan.notes)


def test_module_entry_and_command_kind() -> None:
    plan = plan_of(job={"kind": "torchrun", "module": "pkg.train", "script": None})
    assert plan.nodes[0].argv[-4:] == ["-m", "pkg.train", "--steps", "5"]
    plan = plan_of(job={"kind": "command", "command": ["hostname"], "script": None, "args": []})
    assert plan.nodes[0].argv == ["hostname"]


def test_excluding_nodes_renumbers_ranks_and_moves_master() -> None:
    plan = build_plan(inventory(), run_id="r", sources=SOURCES, head_env={}, exclude=frozenset({"node02"}))
    assert plan.hosts == ["node01", "node03"] and plan.master_addr == "10.0.0.11"
    assert [n.node_rank for n in plan.nodes] == [0, 1]


def test_resume_and_checkpoint_env() -> None:
    inv = inventory(job={"checkpoint_dir": "/shared/ckpt"})
    plan = build_plan(inv, run_id="r", sources=SOURCES, head_env={}, resume_from="/shared/ckpt/step-4")
    env = plan.nodes[0].env
    assert env["RLAUNCH_CKPT_DIR"] == "/shared/ckpt" and env["RLAUNCH_RESUME_FROM"] == "/shared/ckpt/step-4"


def test_plan_json_shape() -> None:
    data = plan_of().to_json()
    assert {"nodes", "master_addr", "master_port", "world_size", "warnings"} <= set(data)
    assert {"host", "node_rank", "nproc", "env", "command", "files"} <= set(data["nodes"][0])
    assert isinstance(data["warnings"], list)
    json.dumps(data)


def test_plan_is_pure_same_inputs_same_plan() -> None:
    assert plan_of().to_json() == plan_of().to_json()


@pytest.mark.parametrize(
    ("requested", "cpus", "nproc", "expected"),
    [(None, None, 8, 2), (8, 96, 8, 6), (1, 96, 8, 1), (4, 8, 4, 1)],
)
def test_dataloader_worker_cap(requested: int | None, cpus: int | None, nproc: int, expected: int) -> None:
    assert dataloader_workers(requested, cpus, nproc) == expected


def test_apply_rules_is_pure() -> None:
    env = {"NCCL_TIMEOUT": "60"}
    apply_rules(env, gpus=(0,), nproc=1, job_timeout=None, job_kind="torchrun")
    assert env == {"NCCL_TIMEOUT": "60"}


def test_every_attempt_runs_in_the_same_run_directory_with_its_own_guard_files() -> None:
    """Issue 20: a program's relative checkpoint (the DDP tutorial's snapshot.pt) lives in its working directory,
    which must be the same for every attempt on a host; the guard's files go to a per-attempt folder."""
    inv = inventory()
    first = build_plan(inv, run_id="run1", sources=SOURCES, head_env={})
    third = build_plan(inv, run_id="run1", sources=SOURCES, head_env={}, attempt=2)
    assert third.run_id == "run1-r2" and third.attempt == 2
    for a, b in zip(first.nodes, third.nodes, strict=True):
        assert a.run_dir == b.run_dir == f"/scratch/rl/run1/{a.host}"
        assert (
            a.guard_dir == f"{a.run_dir}/.rlaunch/attempt-0"
            and b.guard_dir == f"{a.run_dir}/.rlaunch/attempt-2"
        )
        for node in (a, b):
            job = json.loads(next(f for f in node.files if f.path == "job.json").content)
            assert job["cwd"] == node.run_dir
            assert job["node_lock"] == f"/scratch/rl/.node-{node.host}.lock" and job["run_id"] == "run1"
            placed = {f.path: f.attempt for f in node.files}
            assert placed["train.py"] is False  # the job's files beside its working directory, as before
            assert placed["job.json"] and placed["guard.py"] and placed["env.sh"]
            assert f"--log-dir={node.guard_dir}/torchrun-logs" in node.argv
            assert node.argv[-3] == f"{node.run_dir}/train.py"


MOVED = "can move a failed node's ranks"


@pytest.mark.parametrize(
    ("over", "warned"),
    [
        ({"restart": {"max_restarts": 2, "exclude_failed_node": True}}, True),
        ({"restart": {"max_restarts": 2}, "spares": [{"host": "node04", "gpus": 4}]}, True),
        ({"restart": {"max_restarts": 2}}, False),  # same nodes again: the run directories are still there
        ({"restart": {"max_restarts": 0, "exclude_failed_node": True}}, False),
        (
            {
                "restart": {"max_restarts": 2, "exclude_failed_node": True},
                "job": {"kind": "torchrun", "script": "train.py", "checkpoint_dir": "/shared/ckpt"},
            },
            False,
        ),
    ],
)
def test_plan_warns_when_a_restart_could_move_ranks_away_from_their_local_files(
    over: dict[str, Any], warned: bool
) -> None:
    plan = plan_of(**over)
    assert any(MOVED in w and "job.checkpoint_dir" in w for w in plan.warnings) is warned
