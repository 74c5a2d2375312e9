"""launcher/node/ckpt.py: the latest COMPLETE checkpoint, as a node finds it (run the real script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from launcher.nodecall import node_script, with_modules
from launcher.run.loop import CKPT_MODULES


def latest(root: Path, world_size: int) -> dict:
    """ckpt.py as find_checkpoint sends it: with push.py (its path rule) and nothing else of ours."""
    code = with_modules(node_script("ckpt.py"), "ckpt.py", CKPT_MODULES)
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code, str(root), str(world_size)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")


def hf_checkpoint(root: Path, step: int, world: int, *, rng: bool = True, state: bool = True) -> Path:
    ckpt = root / f"checkpoint-{step}"
    touch(ckpt / "adapter_model.safetensors")
    if state:
        touch(ckpt / "trainer_state.json")
    if rng:
        for r in range(world):
            touch(ckpt / f"rng_state_{r}.pth")
    return ckpt


def test_newest_complete_hf_checkpoint_wins(tmp_path: Path) -> None:
    hf_checkpoint(tmp_path, 4, 2)
    hf_checkpoint(tmp_path, 8, 2, state=False)  # save interrupted before trainer_state.json
    hf_checkpoint(tmp_path, 6, 2, rng=False)  # trainer_state.json written, RNG states not yet
    out = latest(tmp_path, 2)
    assert out["latest"] == str(tmp_path / "checkpoint-4")
    reasons = dict(out["skipped"])
    assert "trainer_state" in reasons[str(tmp_path / "checkpoint-8")]
    assert "rng_state_0.pth" in reasons[str(tmp_path / "checkpoint-6")]


def test_deepspeed_tag_needs_every_rank_shard(tmp_path: Path) -> None:
    for step, ranks in (
        (10, [0, 1]),
        (20, [0]),
    ):  # `latest` says global_step20, but rank 1's shard is missing
        for r in ranks:
            touch(tmp_path / f"global_step{step}" / f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt")
    (tmp_path / "latest").write_text("global_step20")
    out = latest(tmp_path, 2)
    assert out["latest"] == str(tmp_path / "global_step10")
    assert "ranks [1]" in dict(out["skipped"])[str(tmp_path / "global_step20")]


def test_nothing_to_resume(tmp_path: Path) -> None:
    assert latest(tmp_path / "missing", 2)["latest"] is None
    assert latest(tmp_path, 2)["latest"] is None


def test_a_checkpoint_dir_others_can_write_is_never_resumed_from(tmp_path: Path) -> None:
    """A checkpoint another user can write is code the resumed job unpickles: push.py's run-directory rule (one
    rule, docs/security.md) refuses it, here for a directory of ours that is writable by everyone and not sticky,
    and for a link that resolves into it."""
    root = tmp_path / "open"
    hf_checkpoint(root, 4, 2)
    root.chmod(0o777)
    link = tmp_path / "ckpt-link"
    link.symlink_to(root)
    for path in (root, link):
        reply = latest(path, 2)
        assert reply["latest"] is None, reply
        assert f"{root} is writable by others, mode 0777" in reply["refused"], reply
        assert "owned by you or root and not group/world-writable" in reply["refused"], reply
    root.chmod(0o700)
    assert latest(root, 2)["latest"] == str(root / "checkpoint-4")  # the same tree, once only we can write it


def test_find_checkpoint_runs_ckpt_py_with_its_rule_on_the_node(tmp_path: Path) -> None:
    """The restart path's own call (launcher/run/loop.py find_checkpoint) over a real local transport: ckpt.py
    reaches the node with push.py and answers; an open checkpoint_dir is refused, never resumed from."""
    from cluster.inventory import from_mapping
    from cluster.transport import make_transport
    from launcher import plan as planning
    from launcher.run.loop import find_checkpoint

    root = tmp_path / "ck"
    hf_checkpoint(root, 6, 1)
    (root / "checkpoint-6" / "rng_state.pth").write_bytes(b"x")  # one process: rng_state.pth
    inv = from_mapping(
        {
            "transport": "local",
            "nodes": [{"host": "n1", "address": "127.0.0.1", "gpus": 0}],
            "workdir": str(tmp_path / "work"),
            "python": sys.executable,
            "job": {"kind": "command", "command": ["true"], "checkpoint_dir": str(root)},
        }
    )
    plan = planning.build_plan(inv, run_id="r-ck", sources=planning.load_sources(inv), head_env={})
    with make_transport(inv) as transport:
        assert find_checkpoint(inv, plan, transport) == str(root / "checkpoint-6")
        root.chmod(0o777)
        assert find_checkpoint(inv, plan, transport) is None
