"""What a torchrun or SkyPilot user reaches for first, on real OpenSSH nodes (issue 24): command-line overrides
reaching the nodes, `exec` on every node with one failing, `status --json` during a run, `gc` / `keep_runs`.

One torchrun run serves status and gc. Nodes' process tables and directory listings are read from the nodes'
namespaces, never from rlaunch's word.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import assert_nothing_left, job_pids, rlaunch, scaled, slowdown, wait_for

from cluster.inventory import Overrides, load_inventory
from launcher import lifecycle

pytestmark = [pytest.mark.ssh, pytest.mark.usefixtures("run_home")]

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "examples" / "train.py")
WORKDIR = "/tmp/rlaunch"


def write_inventory(tmp_path: Path, cluster: Any, **over: Any) -> Path:
    data = cluster.inventory_dict(
        master={"port": "auto"}, health={"heartbeat_timeout": 4, "grace": 2, "stall_timeout": 60}, **over
    )
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


cli = functools.partial(rlaunch, timeout=120, env={"PYTHONPATH": str(ROOT)})


def test_overrides_reach_the_nodes(sim3: Any, tmp_path: Path) -> None:
    """`--env` and `-- ARGS` as `up` applies them: the job on every node sees the variable and the new args."""
    path = write_inventory(
        tmp_path,
        sim3,
        job={
            "kind": "command",
            "command": [
                sys.executable,
                "-c",
                "import os, sys; print('FOO=' + os.environ['FOO'], sys.argv[1:])",
            ],
            "args": ["from-file"],
        },
    )
    overrides = Overrides(env=Overrides.parse_env(["FOO=from the cli; $(x)"]), args=("a b", "--c"))
    inv = load_inventory(path, overrides=overrides)
    lines: list[tuple[str, str]] = []
    run_id, outcome = lifecycle.up(inv, on_line=lambda h, r, t: lines.append((h, t)))
    assert outcome.code == 0, outcome.summary
    printed = {h: t for h, t in lifecycle.read_logs(run_id) if t.startswith("FOO=")}
    assert printed == {n.name: "FOO=from the cli; $(x) ['a b', '--c']" for n in sim3.nodes}
    tail = cli("logs", run_id, "--grep", "^FOO=", "--tail", "1")
    assert tail.returncode == 0 and sorted(tail.stdout.splitlines()) == sorted(
        f"{n.name}| FOO=from the cli; $(x) ['a b', '--c']" for n in sim3.nodes
    )
    # The plan shows the same (the CLI's `plan` takes the same flags).
    shown = cli("plan", str(path), "--json", "--env", "FOO=x", "--nproc-per-node", "1", "--", "--steps", "3")
    assert shown.returncode == 0, shown.stderr
    plan = json.loads(shown.stdout)
    assert plan["overrides"][0] == "--env FOO=x" and plan["nodes"][0]["env"]["FOO"] == "x"
    refused = cli("plan", str(path), "--env", "HF_TOKEN=hf_abc")
    assert refused.returncode == 2 and "hf_abc" not in refused.stderr and "secrets:" in refused.stderr


def test_exec_on_every_node_with_one_failing(sim3: Any, tmp_path: Path) -> None:
    path = write_inventory(tmp_path, sim3)
    result = cli("exec", str(path), "--", "sh", "-c", 'echo "on $(hostname)"; [ "$(hostname)" != node2 ]')
    assert result.returncode == 1, result.stderr
    assert sorted(result.stdout.splitlines()) == [f"{n}: on {n}" for n in ("node1", "node2", "node3")]
    assert "3 nodes: 2 ok, 1 failed (node2: exit 1)" in result.stderr
    # argv is quoted: nothing is expanded on the node without --shell
    quoted = cli("exec", str(path), "--json", "--nodes", "node[1-2]", "--", "echo", "a;b", "$HOME", "*")
    data = json.loads(quoted.stdout)
    assert quoted.returncode == 0 and data["ok"] == ["node1", "node2"]
    assert {h: n["stdout"] for h, n in data["nodes"].items()} == {
        h: "a;b $HOME *\n" for h in ("node1", "node2")
    }
    shell = cli("exec", str(path), "--collate", "--shell", "--", "echo $((6 * 7))")
    assert shell.returncode == 0 and "node[1-3]\n" in shell.stdout and "\n42\n" in shell.stdout
    slow = cli("exec", str(path), "--timeout", "1", "--nodes", "node3", "--", "sleep", "30")
    assert slow.returncode == 1 and "timed out" in slow.stderr
    wait_for(lambda: not job_pids(sim3, "node3"), 30, "the timed-out command gone from node3")


def plant_runs(cluster: Any, names: list[str]) -> None:
    """Finished runs' directories as earlier `up`s leave them (no live guard holds their lock)."""
    for node in cluster.nodes:
        for name in names:
            d = cluster.node_path(node.name, f"{WORKDIR}/{name}/{node.name}")
            d.mkdir(parents=True, exist_ok=True)
            (d / "out.log").write_text("step=1 loss=1.0\n" * 100)
            (d / "guard.lock").touch()


def clear_runs(cluster: Any) -> None:
    """Nothing of earlier tests' runs in the nodes' workdir (sim3 serves every test of a worker, validate's and
    the other files' included): the tests that count run directories start from none."""
    for node in cluster.nodes:
        root = cluster.node_path(node.name, WORKDIR)
        for entry in root.iterdir() if root.is_dir() else []:
            if entry.name[:1].isdigit():
                subprocess.run(["rm", "-rf", str(entry)], check=True)


def test_status_during_a_run_and_gc_keeps_exactly_the_newest_finished(sim3: Any, tmp_path: Path) -> None:
    old = ["20200101-000000-aaaa", "20200101-000000-aaaa-r1", "20200102-000000-bbbb", "20200103-000000-cccc"]
    clear_runs(sim3)
    plant_runs(sim3, old)
    outside = sim3.node_path("node1", "/tmp/outside-workdir")
    outside.mkdir(exist_ok=True)
    (outside / "keep.txt").write_text("not ours")
    link = sim3.node_path("node1", f"{WORKDIR}/20190101-000000-dddd")
    if not link.is_symlink():
        link.symlink_to("/tmp/outside-workdir")
    path = write_inventory(
        tmp_path,
        sim3,
        keep_runs=None,  # this test's own gc call decides
        job={
            "kind": "torchrun",
            "script": TRAIN,
            # 15 s on an idle machine; longer on a loaded one, so the run is still going when gc runs
            "args": ["--steps", "60", "--sleep", f"{0.25 * slowdown():.2f}"],
            "timeout": 60,
        },
    )
    inv = load_inventory(path)
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.setdefault("out", lifecycle.up(inv)), daemon=True)
    thread.start()
    try:

        def progressed() -> dict[str, Any] | None:
            shown = cli("status", "--json")
            if shown.returncode != 0 or not shown.stdout.strip():
                return None
            info = json.loads(shown.stdout)
            p = info.get("progress") or {}
            return info if (p.get("step") or 0) >= 5 and p.get("eta_s") else None

        info = wait_for(progressed, 90, "status --json with a step, a loss and an ETA", result)
        p = info["progress"]
        assert info["state"] == "running" and p["total"] == 60 and 5 <= p["step"] < 60
        assert p["loss"] is not None and p["steps_per_s"] > 0 and p["eta_s"] > 0
        assert p["attempt"] == 0 and p["restarts"] == 0 and "goodput" in info
        text = cli("status")
        assert text.returncode == 0 and "/60 · loss " in text.stdout and "rlaunch logs " in text.stdout
        running = {n.name: [pid for pid, _ in job_pids(sim3, n.name)] for n in sim3.nodes}

        gc = cli("gc", str(path), "--keep", "1", "--json")
        assert gc.returncode == 0, gc.stderr
        done = json.loads(gc.stdout)
        run_id = info["run_id"]
        for node in sim3.nodes:
            assert sorted(done[node.name]["removed"]) == ["20200101-000000-aaaa", "20200102-000000-bbbb"]
            assert done[node.name]["running"] == [run_id] and done[node.name]["kept"] == [
                "20200103-000000-cccc"
            ]
            listing = sorted(
                p.name for p in sim3.node_path(node.name, WORKDIR).iterdir() if p.name[0].isdigit()
            )
            expected = {"20200103-000000-cccc", run_id} | (
                {"20190101-000000-dddd"} if node.name == "node1" else set()
            )
            assert set(listing) == expected, listing
            still = [pid for pid, _ in job_pids(sim3, node.name)]
            assert set(running[node.name]) <= set(still), f"gc touched the running job on {node.name}"
        assert (outside / "keep.txt").read_text() == "not ours" and link.is_symlink()
    finally:
        thread.join(scaled(120))
    assert not thread.is_alive() and result["out"][1].code == 0
    assert_nothing_left(sim3)
    link.unlink()


def test_keep_runs_at_up_removes_old_finished_runs(sim3: Any, tmp_path: Path) -> None:
    clear_runs(sim3)  # it counts run directories
    plant_runs(sim3, ["20200104-000000-eeee", "20200105-000000-ffff"])
    path = write_inventory(tmp_path, sim3, keep_runs=1)
    said: list[str] = []
    run_id, outcome = lifecycle.up(load_inventory(path), on_status=said.append)
    assert outcome.code == 0
    assert any(s.startswith("keep_runs 1: removed ") for s in said), said
    for node in sim3.nodes:
        names = [p.name for p in sim3.node_path(node.name, WORKDIR).iterdir() if p.name[:1].isdigit()]
        finished = {n[:20] for n in names if not n.startswith(run_id)}
        assert len(finished) == 1, names  # the newest finished run stays beside the new one; older ones went
        assert "20200104-000000-eeee" not in names
        assert sim3.node_path(node.name, f"{WORKDIR}/{run_id}/{node.name}").is_dir()


def make_tree(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "model.py").write_text("print('model')\n" * 100)
    (root / "train.sh").write_text("#!/bin/sh\necho train\n")
    (root / "train.sh").chmod(0o755)
    (root / "hello.txt").write_text("hello from the head\n")
    (root / "old.txt").write_text("to be deleted\n")
    (root / "big.bin").write_bytes(os.urandom(2 << 20))
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "run.log").write_text("ignored\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\0" * 1000)
    (root / "data").mkdir()
    (root / "data" / "shard0").write_bytes(b"x" * 5000)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


def test_sync_sends_only_what_changed_and_honours_excludes(sim3: Any, tmp_path: Path) -> None:
    from cluster.transport import make_transport
    from launcher import sync

    tree = tmp_path / "project"
    make_tree(tree)
    path = write_inventory(
        tmp_path,
        sim3,
        sync={"src": "project", "exclude": ["data/"]},
        job={"kind": "command", "command": ["sh", "-c", 'cat "$RLAUNCH_SYNC_DIR/hello.txt"']},
    )
    inv = load_inventory(path)
    pushed = {"train.sh", "hello.txt", "old.txt", "big.bin", ".gitignore", "pkg/model.py"}
    total = sum((tree / p).stat().st_size for p in pushed)
    with make_transport(inv) as transport:
        first = sync.push_all(inv, transport)
        assert first.files == len(pushed) and first.total_bytes == total
        for host, n in first.nodes.items():
            assert (n.error, n.sent_files, n.sent_bytes, n.round_trips) == (None, len(pushed), total, 2), host
            on_node = sim3.node_path(host, inv.sync_dir)
            files = {str(p.relative_to(on_node)) for p in on_node.rglob("*") if p.is_file()}
            assert files == pushed | {".rlaunch-sync.json"}, files  # no run.log, build/, data/, .git/
            assert (on_node / "big.bin").read_bytes() == (tree / "big.bin").read_bytes()
            assert os.access(on_node / "train.sh", os.X_OK)
        (tree / "hello.txt").write_text("hello again\n")  # changed
        (tree / "old.txt").unlink()  # deleted
        (tree / "new.txt").write_text("new\n")  # added
        second = sync.push_all(inv, transport)
        for host, n in second.nodes.items():
            assert (n.sent_files, n.sent_bytes, n.deleted) == (2, len("hello again\n") + len("new\n"), 1), (
                host
            )
            assert not sim3.node_path(host, f"{inv.sync_dir}/old.txt").exists()
        third = sync.push_all(inv, transport)
        assert all((n.sent_files, n.round_trips, n.error) == (0, 1, None) for n in third.nodes.values())
    run_id, outcome = lifecycle.up(inv)
    assert outcome.code == 0, outcome.summary
    said = {h: t for h, t in lifecycle.read_logs(run_id) if t.startswith("hello")}
    assert said == {n.name: "hello again" for n in sim3.nodes}
    shown = cli("sync", str(path), "--json")
    assert shown.returncode == 0 and all(
        n["sent_files"] == 0 for n in json.loads(shown.stdout)["nodes"].values()
    )


# The job waits until the guard's time index (out.idx) has noted its early lines before it takes the time T the
# test asks `--since` for, so no assertion below depends on how fast anything ran. Then it prints three late lines,
# waits for the test's `go` file (after `logs -f` has read them) and prints three more, which `-f` follows.
SINCE_JOB = r"""
import glob, os, time
def wait(ok):
    while not ok():
        time.sleep(0.05)
for i in range(3):
    print(f"early {i}", flush=True)
attempt = glob.glob(".rlaunch/attempt-*")[0]
size = os.path.getsize(f"{attempt}/out.log")
def noted():
    try:
        return any(int(line.split()[1]) >= size for line in open(f"{attempt}/out.idx"))
    except (OSError, IndexError, ValueError):
        return False
wait(noted)
time.sleep(0.05)
print(f"mark {time.time():.3f}", flush=True)
for i in range(3):
    print(f"late {i}", flush=True)
wait(lambda: os.path.exists("go"))
for i in range(3, 6):
    print(f"late {i}", flush=True)
"""


def test_logs_since_and_follow_show_each_line_once(sim3: Any, tmp_path: Path) -> None:
    """On a running job: `logs -f` on every node and `logs -f --since T` on one, each started after some lines
    and going on until the job ends: exactly the lines (written after T), the ones read first and the ones
    followed after, none twice; `--since 10m` everything; `--tail` with it; a bad --since is exit 2."""
    import datetime

    from launcher import records

    path = write_inventory(
        tmp_path, sim3, job={"kind": "command", "command": [sys.executable, "-c", SINCE_JOB], "timeout": 60}
    )
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.setdefault("out", lifecycle.up(load_inventory(path))), daemon=True
    )
    thread.start()
    hosts = [n.name for n in sim3.nodes]
    followers: dict[str, subprocess.Popen[str]] = {}
    shown: dict[str, list[str]] = {"all": [], "since": []}
    try:
        run_id = wait_for(lambda: (records.list_run_ids() or [None])[-1], 30, "the run's record", result)

        def out_log(host: str) -> str:
            logs = list(sim3.node_path(host, f"{WORKDIR}/{run_id}/{host}/.rlaunch").glob("attempt-*/out.log"))
            return logs[0].read_text() if logs else ""

        wait_for(lambda: all("late 2\n" in out_log(h) for h in hosts), 120, "late 2 on every node", result)
        mark = next(float(line.split()[1]) for line in out_log("node1").splitlines() if "mark" in line)
        since = datetime.datetime.fromtimestamp(mark - 0.02).isoformat()  # T, as the job printed it (rounded)
        for name, extra in (("all", []), ("since", ["--since", since, "--node", "node1"])):
            followers[name] = proc = subprocess.Popen(
                [sys.executable, "-m", "launcher.cli", "logs", run_id, "-f", *extra],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            threading.Thread(target=lambda p=proc, n=name: shown[n].extend(iter(p.stdout.readline, "")),
                             daemon=True).start()  # fmt: skip
        wait_for(
            lambda: sum("| late 2" in s for s in shown["all"]) == 3, 60, "logs -f read late 2 everywhere"
        )
        wait_for(lambda: any("| late 2" in s for s in shown["since"]), 120, "logs -f --since read late 2")
        for host in hosts:
            sim3.node_path(host, f"{WORKDIR}/{run_id}/{host}/go").touch()
        for proc in followers.values():
            proc.wait(120)
    finally:
        for proc in followers.values():
            if proc.poll() is None:
                proc.kill()
        thread.join(120)
    assert not thread.is_alive() and result["out"][1].code == 0, result
    for proc in followers.values():
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""

    def lines_of(name: str, host: str) -> list[str]:
        return [s.rstrip("\n").split("| ", 1)[1] for s in shown[name] if s.startswith(f"{host}| ")]

    late = [f"late {i}" for i in range(6)]
    for host in hosts:
        every = lines_of("all", host)
        assert every[:3] == [f"early {i}" for i in range(3)] and every[4:] == late, (
            every
        )  # once each, in order
    since_lines = lines_of("since", "node1")
    assert since_lines[0].startswith("mark ") and since_lines[1:] == late, since_lines  # nothing before T
    assert not [s for s in shown["since"] if not s.startswith("node1| ")]
    everything = cli("logs", run_id, "--since", "10m")
    assert everything.returncode == 0 and sum("| early 0" in s for s in everything.stdout.splitlines()) == 3
    last = cli("logs", run_id, "--since", "1h30m", "--tail", "1", "--node", "node2")
    assert last.returncode == 0 and last.stdout.splitlines() == ["node2| late 5"], last.stdout
    bad = cli("logs", run_id, "--since", "yesterday")
    assert bad.returncode == 2 and "--since: 'yesterday'" in bad.stderr and "Traceback" not in bad.stderr
    assert_nothing_left(sim3)
