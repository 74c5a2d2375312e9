"""Inventory loading: every bad input is one located InventoryError (file:line, field), never a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cluster.inventory import InventoryError, load_inventory, nodes_from_slurm, parse_gpus, parse_hostfile

GOOD = """\
cluster: lab
ssh: {user: ml, port: 2222}
nodes:
  - host: node01
    address: 10.0.0.11
    gpus: 8
  - host: node02
    gpus: "0-3"
master: {node: node01, port: 29500}
env: {NCCL_SOCKET_IFNAME: ens50f0, FLAG: true, N: 4}
job:
  kind: torchrun
  script: train.py
  args: [--steps, 100]
  nproc_per_node: 4
"""


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(tmp_path: Path, text: str, **kwargs: object) -> InventoryError:
    path = write(tmp_path, text)
    with pytest.raises(InventoryError) as info:
        load_inventory(path, **kwargs)  # type: ignore[arg-type]
    return info.value


def test_good_inventory_loads_with_normalised_values(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, GOOD))
    assert [n.host for n in inv.nodes] == ["node01", "node02"]
    assert inv.nodes[0].gpus == tuple(range(8))
    assert inv.nodes[1].gpus == (0, 1, 2, 3)
    assert inv.env == {"NCCL_SOCKET_IFNAME": "ens50f0", "FLAG": "1", "N": "4"}
    assert inv.job.args == ["--steps", "100"]
    assert inv.master_node.host == "node01"
    assert inv.base_dir == str(tmp_path.resolve())


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, ()), (2, (0, 1)), ([3, 1], (3, 1)), ("0-3", (0, 1, 2, 3)), ("0,2,4-5", (0, 2, 4, 5))],
)
def test_gpu_forms(value: object, expected: tuple[int, ...]) -> None:
    assert parse_gpus(value) == expected


@pytest.mark.parametrize("value", ["0-", "a", "3-1", [0, 0], [-1], True, 1.5, "1,,2"])
def test_bad_gpu_forms(value: object) -> None:
    with pytest.raises(ValueError):
        parse_gpus(value)


def test_missing_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as info:
        load_inventory(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(info.value) and "rlaunch init" in str(info.value)


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    err = error_of(tmp_path, "cluster: a\nnodes:\n  - host: [unclosed\n")
    assert err.line is not None and err.line >= 3
    assert "YAML syntax error" in err.message


def test_unknown_key_did_you_mean_with_line(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("  nproc_per_node: 4", "  nproc_per_nod: 4"))
    assert err.field == "job.nproc_per_nod"
    assert err.line == 15
    assert "did you mean 'nproc_per_node'" in err.message


def test_unknown_top_level_key(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD + "wrkdir: /tmp\n")
    assert "did you mean 'workdir'" in err.message
    assert err.line == 16


def test_duplicate_host(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("host: node02", "host: node01"))
    assert "duplicate host 'node01'" in err.message and err.line == 7


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD + "cluster: again\n")
    assert "duplicate key 'cluster'" in err.message and err.line == 16


def test_master_not_in_nodes(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("node: node01, port", "node: node09, port"))
    assert "master.node 'node09' is not in nodes" in err.message and err.line == 9


def test_bad_gpu_list_names_node_and_line(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace('gpus: "0-3"', 'gpus: "0-x"'))
    assert err.field is not None and "nodes.1.gpus" in err.field and "node02" in err.field
    assert err.line == 8


def test_nproc_larger_than_gpus(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("nproc_per_node: 4", "nproc_per_node: 6"))
    assert "exceeds the 4 GPUs of node 'node02'" in err.message and err.line == 15


@pytest.mark.parametrize("port", ["0", "70000", "-1"])
def test_port_out_of_range(tmp_path: Path, port: str) -> None:
    err = error_of(tmp_path, GOOD.replace("port: 2222", f"port: {port}"))
    assert err.field == "ssh.port" and err.line == 2


def test_master_port_out_of_range(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("port: 29500", "port: 99999"))
    assert err.field is not None and err.field.startswith("master.port")


def test_hostile_host_name_rejected(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("host: node02", "host: '-oProxyCommand=touch /tmp/x'"))
    assert "not a valid host name" in err.message


def test_env_value_with_metacharacters_is_kept_verbatim(tmp_path: Path) -> None:
    hostile = "$(touch /tmp/pwned); echo 'x' \"y\" `id`"
    text = GOOD.replace("N: 4}", "N: 4, EVIL: " + repr(hostile).replace("\\'", "''") + "}")
    inv = load_inventory(write(tmp_path, text))
    assert inv.env["EVIL"] == hostile


def test_bad_env_name(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("FLAG: true", "'BAD-NAME': 1"))
    assert "not a valid environment variable name" in err.message


def test_job_needs_an_entry(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("  script: train.py\n", ""))
    assert "exactly one of `script` or `module`" in err.message


def test_unknown_job_kind(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("kind: torchrun", "kind: slurmrun"))
    assert err.field == "job.kind" and "slurmrun" in err.message


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    err = error_of(tmp_path, "- a\n- b\n")
    assert "mapping" in err.message


def test_reserved_key(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD + "base_dir: /x\n")
    assert err.field == "base_dir"


def test_str_formats_file_line_field(tmp_path: Path) -> None:
    err = error_of(tmp_path, GOOD.replace("  nproc_per_node: 4", "  nproc_per_nod: 4"))
    assert str(err).startswith(f"{tmp_path / 'cluster.yaml'}:15: job.nproc_per_nod:")


# --- hostfile and Slurm ------------------------------------------------------------------------------------


def test_hostfile_replaces_nodes(tmp_path: Path) -> None:
    hf = write(tmp_path, "# comment\nworker-1 slots=8\nworker-2 slots=8  # second\n\n", "hostfile")
    text = GOOD.replace("nproc_per_node: 4", "nproc_per_node: 8").replace("node: node01, ", "")
    inv = load_inventory(write(tmp_path, text), hostfile=hf)
    assert [(n.host, len(n.gpus)) for n in inv.nodes] == [("worker-1", 8), ("worker-2", 8)]


def test_hostfile_line_without_slots(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as info:
        parse_hostfile("a slots=2\nb\n", "hf")
    assert info.value.line == 2 and info.value.file == "hf" and "slots=N" in info.value.message


def test_slurm_nodelist_expansion() -> None:
    nodes = nodes_from_slurm({"SLURM_JOB_NODELIST": "gpu-[01-03,07]", "SLURM_GPUS_ON_NODE": "4"})
    assert [n["host"] for n in nodes] == ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]
    assert {n["gpus"] for n in nodes} == {4}


def test_slurm_outside_allocation() -> None:
    with pytest.raises(InventoryError) as info:
        nodes_from_slurm({})
    assert "SLURM_JOB_NODELIST" in info.value.message


def test_slurm_bad_gpu_count() -> None:
    with pytest.raises(InventoryError):
        nodes_from_slurm({"SLURM_JOB_NODELIST": "a", "SLURM_GPUS_ON_NODE": "four"})
