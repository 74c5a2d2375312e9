"""`rlaunch stop --save` on a real LLaMA-Factory job (LoRA SFT, DeepSpeed ZeRO-3, the tiny local model of
tests/assets.py) on 2 simulated SSH nodes × 1 rank (docs/preemption.md).

rlaunch's entry wrapper (launcher/node/rlaunch_lf.py) hands LLaMA-Factory the stop callback through run_exp's
`callbacks` argument; the user's yaml says nothing about it (no periodic save before step 1000). One stop and one
resume: every rank agrees at the next optimizer step, the Trainer saves `checkpoint-N` through its own save path
(complete by the resume rule: trainer_state.json, every rank's ZeRO shard and RNG state), every process exits
(the nodes' process tables), and a fresh `up` of the same job resumes from checkpoint-N by itself and finishes.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from assets import TinyAssets
from e2e_helpers import assert_nothing_left, wait_for
from test_llamafactory_e2e import lf_inventory, lf_yaml, shared_dir, tiny, trainer_losses

from launcher import lifecycle, preempt, records

__all__ = ["shared_dir", "tiny"]  # module fixtures, shared with the LLaMA-Factory e2e file
NODES = ("node1", "node2")


def two_nodes(sim3: Any) -> Any:
    class Two:
        def inventory_dict(self, **kw: Any) -> dict[str, Any]:
            data = sim3.inventory_dict(**kw)
            data["nodes"] = [n for n in data["nodes"] if n["host"] in NODES]
            return data

    return Two()


def logged_steps(out_dir: Path) -> int:
    try:
        return max(trainer_losses(out_dir), default=0)
    except (OSError, ValueError):
        return 0


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.ssh
def test_llamafactory_saves_once_on_stop_and_the_next_up_resumes_from_it(
    sim3: Any, shared_dir: Path, tiny: TinyAssets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    ckpt = shared_dir / "stopped"
    config = lf_yaml(tiny, shared_dir / "stop.yaml", max_steps=400, save_steps=1000)
    inv = lf_inventory(two_nodes(sim3), shared_dir, config, ckpt, health={"grace": 5})
    run_id = records.new_run_id()
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(out=lifecycle.up(inv, run_id=run_id, head_env={})), daemon=True
    )
    thread.start()
    wait_for(lambda: logged_steps(ckpt) >= 2, 400, "two LLaMA-Factory steps", result)
    stopped = preempt.stop(run_id, deadline=120)
    thread.join(timeout=120)
    assert not thread.is_alive()
    step = stopped["step"]
    assert stopped["saved"] and not stopped["timed_out"] and step >= 2, stopped
    saved = ckpt / f"checkpoint-{step}"
    assert stopped["checkpoint"] == str(saved)
    assert stopped["summary"] == f"stopped for preemption at step {step}, saved ({saved})"
    # Complete by the resume rule, one checkpoint only (no periodic save was due).
    assert (saved / "trainer_state.json").is_file()
    assert all((saved / f"rng_state_{r}.pth").is_file() for r in (0, 1))
    assert all(
        (saved / f"global_step{step}" / f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt").is_file()
        for r in (0, 1)
    )
    assert sorted(p.name for p in ckpt.glob("checkpoint-*")) == [saved.name]
    assert json.loads((saved / "trainer_state.json").read_text())["global_step"] == step
    assert result["out"][1].code == 130
    assert_nothing_left(sim3, nodes=NODES)
    # The ranks exited with the documented requeue code, seen in torchrun's failure table.
    log = "\n".join(records.RunRecord.open(run_id).log_path(n).read_text(errors="replace") for n in NODES)
    assert "exitcode  : 75" in log and f"saved checkpoint-{step}, exiting to be requeued" in log

    # The next `up` of the same job (a requeued Slurm job runs the same command) resumes from checkpoint-N.
    config2 = lf_yaml(tiny, shared_dir / "stop.yaml", max_steps=step + 2, save_steps=1000)
    inv2 = lf_inventory(two_nodes(sim3), shared_dir, config2, ckpt)
    statuses: list[str] = []
    run2, outcome = lifecycle.up(inv2, on_status=statuses.append, head_env={})
    assert outcome.code == 0, outcome.summary
    assert any(
        s.startswith(f"resuming from {saved}: run {run_id} was stopped for preemption") for s in statuses
    )
    assert records.RunRecord.open(run2).read_state()["resumed_after_preemption"]["checkpoint"] == str(saved)
    assert sorted(trainer_losses(ckpt)) == list(range(1, step + 3))  # the steps after the save, none redone
    assert_nothing_left(sim3, nodes=NODES)
