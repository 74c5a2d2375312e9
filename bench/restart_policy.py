"""Restart policy benchmark: a job that crashes at the same step every time, under `restart.max_restarts: 5` alone
(the old behaviour: no breaker, no kind budgets) and under the restart policy's defaults (launcher/restart_policy.py).

The job: examples/train.py on the embedded local transport (2 simulated nodes × 1 rank, gloo), a checkpoint every
2 steps, rank 1 SIGKILLed at step 5 of every attempt (--fail-always). Same code path as `rlaunch up`
(`lifecycle.up`). Measured per configuration: attempts made, wall time of `up` (start to verdict), the rule that
ended the run. The difference is allocation time a real cluster would have spent restarting a job that could not
get past its checkpoint.

Usage (root, after scripts/setup.sh; under the machine-wide e2e lock here):
  .venv/bin/python bench/restart_policy.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from e2e_helpers import crash_loop_inventory  # noqa: E402

from cluster.inventory import from_mapping  # noqa: E402
from launcher import lifecycle, records  # noqa: E402

CONFIGS = {
    # Everything but the overall cap out of the way: what restart.max_restarts did before the policy.
    "max_restarts only": {
        "max_restarts": 5,
        "backoff": 0,
        "no_progress": 0,
        "budgets": {"code": 5, "node": 5, "network": 5, "hang": 5, "other": 5},
    },
    "policy defaults": {"max_restarts": 5, "backoff": 0},
}


def inventory(tmp: Path, restart: dict) -> dict:
    """The end-to-end test's job (tests/e2e_helpers.py `crash_loop_inventory`) under this configuration."""
    return crash_loop_inventory(tmp, restart, cluster=f"bench-{os.getpid()}", python=sys.executable)


def main() -> None:
    rows = []
    for name, restart in CONFIGS.items():
        with tempfile.TemporaryDirectory(prefix="rlaunch-bench-policy-") as tmp_name:
            tmp = Path(tmp_name)
            os.environ["RLAUNCH_HOME"] = str(tmp / "home")
            stopped: list[str] = []
            started = time.monotonic()
            run_id, outcome = lifecycle.up(from_mapping(inventory(tmp, restart)), on_status=stopped.append)
            wall = time.monotonic() - started
            root = records.RunRecord.open(run_id).root
            attempts = len(list(root.glob("outcome-*.json")))
            rows.append(
                {
                    "config": name,
                    "attempts": attempts,
                    "wall_s": round(wall, 1),
                    "stopped_by": outcome.stopped_by,
                }
            )
    print(json.dumps(rows, indent=1))
    print("\n| configuration | attempts | wall time of `up` | stopped by |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['config']} | {r['attempts']} | {r['wall_s']} s | {r['stopped_by']} |")


if __name__ == "__main__":
    main()
