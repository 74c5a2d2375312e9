"""The supervisor's live view and teardown record (launcher/records.py), and how `status` and `down` use them
(launcher/lifecycle.py): read only when ours, whole and fresh; anything else falls back to asking the nodes.

The nodes here are a transport that answers guard verbs and counts who was asked (the layer below lifecycle);
records, lifecycle, supervise's identity checks and the CLI's rendering are the real ones. End to end on
simulated nodes: tests/test_e2e_liveview.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import otheruser
import pytest

from cluster.inventory import from_mapping
from cluster.transport import Result, Transport
from launcher import lifecycle, records, supervise
from launcher.guardctl import GuardTarget
from launcher.states import RunState

HOSTS = ("n1", "n2", "n3")


class GuardNodes(Transport):
    """Answers `guard.py status|stop RUNDIR` like a guard whose job runs (status) or was stopped clean (stop);
    `asked` lists (host, verb) in call order."""

    def __init__(self) -> None:
        super().__init__({}, max_parallel=4)
        self.asked: list[tuple[str, str]] = []

    def run(
        self, host: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> Result:
        verb = next(a for a in argv if a in ("status", "stop"))
        self.asked.append((host, verb))
        if verb == "status":
            reply = {"state": "running", "alive": True, "descendants": [{"pid": 7, "ppid": 1, "state": "S"}]}
        else:
            reply = {"state": "stopped", "remaining": []}
        return Result(host, 0, json.dumps(reply) + "\n")

    def _start(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing is started here")


@pytest.fixture
def nodes(monkeypatch: pytest.MonkeyPatch) -> GuardNodes:
    fake = GuardNodes()
    monkeypatch.setattr(lifecycle, "make_transport", lambda inv: fake)
    return fake


def make_run(supervisor_pid: int) -> records.RunRecord:
    """A detached, running run on three nodes whose recorded supervisor is `supervisor_pid` (with its start
    time, as the supervisor records itself)."""
    inv = from_mapping(
        {
            # Nodes that refuse connections at once: what is asked of them shows as unknown.
            "nodes": [{"host": h, "address": "127.0.0.1", "port": 1, "gpus": 0} for h in HOSTS],
            "job": {"kind": "command", "command": ["true"]},
        }
    )
    record = records.RunRecord.create("20260101-000000-live", {"nodes": []})
    records.write_atomic(record.inventory_path, inv.model_dump_json())
    targets = [GuardTarget(h, "/usr/bin/python3", f"/tmp/rl/{h}/.rlaunch/attempt-0") for h in HOSTS]
    records.write_atomic(record.targets_path(), json.dumps([t.to_json() for t in targets]))
    record.set_state(
        RunState.RUNNING,
        detached=True,
        hosts=list(HOSTS),
        plan_run_id="20260101-000000-live",
        supervisor_pid=supervisor_pid,
        supervisor_starttime=supervise._starttime(supervisor_pid),
    )
    return record


def view_nodes(**changes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    nodes = {
        h: {
            "run_dir": f"/tmp/rl/{h}/.rlaunch/attempt-0",
            "followed": True,
            "state": "running",
            "alive": True,
            "guard_pid": 40 + i,
            "descendants": [{"pid": 50 + i, "ppid": 40 + i, "state": "S", "cmd": "train.py"}],
            "ranks_alive": 1,
            "last_heard": time.time(),
            "reason": None,
        }
        for i, h in enumerate(HOSTS)
    }
    for host, change in changes.items():
        nodes[host].update(change)
    return nodes


def share(record: records.RunRecord, nodes: dict[str, dict[str, Any]]) -> None:
    """What the supervisor's live-view thread writes (launcher/supervise.py share_view)."""
    records.write_live(record, nodes, attempt=0, plan_run_id="20260101-000000-live")


# ------------------------------------------------------------------------------------------- the files


def test_live_view_round_trip_is_private_and_names_its_writer(run_home: Path) -> None:
    record = make_run(os.getpid())
    share(record, view_nodes())
    st = os.stat(record.live_path)
    assert oct(st.st_mode & 0o777) == "0o600" and st.st_uid == os.geteuid()
    me = supervise.recorded_supervisor(record.read_state())
    view = records.read_live(record, me)
    assert view["writer_pid"] == os.getpid() and view["nodes"]["n2"]["guard_pid"] == 41
    assert 0 <= view["age_s"] < records.LIVE_STALE_S


def test_stale_view_is_refused_as_a_hung_supervisors(run_home: Path) -> None:
    record = make_run(os.getpid())
    share(record, view_nodes())
    me = supervise.recorded_supervisor(record.read_state())
    later = time.time() + records.LIVE_STALE_S + 1
    with pytest.raises(records.ViewRefused, match="old"):
        records.read_live(record, me, now=later)


@pytest.mark.parametrize(
    "content, why",
    [
        (b'{"v": 1, "written_at": 1.0, "nodes": {"n1": ', "not JSON"),  # torn (never by us: we rename)
        (b"[1, 2]", "not a JSON object"),
        (b'{"v": 7, "written_at": 1.0, "nodes": {}}', "layout version"),
        (b'{"v": 1, "written_at": "soon", "nodes": {}}', "written_at"),
        (b'{"v": 1, "written_at": 1.0, "nodes": {"n1": "running"}}', "node objects"),
    ],
)
def test_corrupt_view_is_refused(run_home: Path, content: bytes, why: str) -> None:
    record = make_run(os.getpid())
    records.write_atomic(record.live_path, content)
    with pytest.raises(records.ViewRefused, match=why):
        records.read_live(record, None, now=2.0)


def test_view_others_may_touch_or_that_is_a_symlink_is_refused(run_home: Path, tmp_path: Path) -> None:
    record = make_run(os.getpid())
    share(record, view_nodes())
    os.chmod(record.live_path, 0o644)
    with pytest.raises(records.ViewRefused, match="mode 0644"):
        records.read_live(record, None)
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_bytes(record.live_path.read_bytes())
    os.chmod(elsewhere, 0o600)
    record.live_path.unlink()
    record.live_path.symlink_to(elsewhere)
    with pytest.raises(records.ViewRefused, match="cannot open"):
        records.read_live(record, None)


def test_view_owned_by_another_user_is_refused(run_home: Path) -> None:
    other = otheruser.ensure()
    record = make_run(os.getpid())
    share(record, view_nodes())
    os.chown(record.live_path, other.pw_uid, other.pw_gid)
    with pytest.raises(records.ViewRefused, match=f"owned by uid {other.pw_uid}"):
        records.read_live(record, None)


def test_view_by_another_process_than_the_recorded_supervisor_is_refused(run_home: Path) -> None:
    record = make_run(os.getpid())
    share(record, view_nodes())
    pid, start = supervise.recorded_supervisor(record.read_state()) or (0, 0)
    with pytest.raises(records.ViewRefused, match="not by the run's supervisor"):
        records.read_live(record, (pid, start + 1))


# ------------------------------------------------------------------------------------------- status


def test_status_through_a_fresh_view_asks_no_node(run_home: Path, nodes: GuardNodes) -> None:
    record = make_run(os.getpid())
    share(record, view_nodes())
    info = lifecycle.status(record.run_id)
    assert nodes.asked == []
    assert info["view"]["source"] == "supervisor" and info["view"]["asked"] == []
    assert set(info["nodes"]) == set(HOSTS)
    # The --json shape of the direct path, with fields added: state, alive, descendants.
    assert info["nodes"]["n1"]["state"] == "running" and info["nodes"]["n1"]["alive"] is True
    assert info["nodes"]["n3"]["descendants"][0]["pid"] == 52 and info["nodes"]["n3"]["ranks_alive"] == 1


def test_status_asks_only_the_nodes_the_supervisor_does_not_follow(run_home: Path, nodes: GuardNodes) -> None:
    record = make_run(os.getpid())
    lost = {"followed": False, "state": "unknown", "reason": "lost the connection to the node"}
    silent = {
        "last_heard": time.time() - records.NODE_SILENT_S - 5
    }  # hung behind a connection that looks open
    share(record, view_nodes(n1=silent, n2=lost, n3={"run_dir": "/tmp/rl/n3/.rlaunch/attempt-9"}))
    info = lifecycle.status(record.run_id)
    assert sorted(nodes.asked) == [(h, "status") for h in HOSTS]  # n3: the view is of another attempt
    assert info["view"]["asked"] == list(HOSTS) and info["nodes"]["n2"]["state"] == "running"
    ended = {"state": "succeeded", "alive": False, "last_heard": time.time() - 60, "descendants": []}
    just_followed = {"last_heard": None, "followed_at": time.time()}  # its first procs record is yet to come
    share(record, view_nodes(n1=ended, n2=lost, n3=just_followed))  # an ended node says nothing more
    nodes.asked.clear()
    info = lifecycle.status(record.run_id)
    assert nodes.asked == [("n2", "status")] and info["nodes"]["n1"]["state"] == "succeeded"
    assert info["nodes"]["n3"]["state"] == "running" and info["nodes"]["n3"]["last_heard_age_s"] is None
    assert list(info["nodes"]) == list(HOSTS)


@pytest.mark.parametrize("spoil", ["stale", "missing", "corrupt", "probe"])
def test_status_falls_back_to_every_node(run_home: Path, nodes: GuardNodes, spoil: str) -> None:
    record = make_run(os.getpid())
    share(record, view_nodes())
    if spoil == "stale":
        data = json.loads(record.live_path.read_text())
        data["written_at"] -= records.LIVE_STALE_S + 5
        records.write_atomic(record.live_path, json.dumps(data))
    elif spoil == "missing":
        record.live_path.unlink()
    elif spoil == "corrupt":
        records.write_atomic(record.live_path, b"\x00garbage")
    info = lifecycle.status(record.run_id, probe=spoil == "probe")
    assert sorted(nodes.asked) == [(h, "status") for h in HOSTS]
    assert info["view"]["source"] == "nodes" and info["view"]["why"], info["view"]
    assert info["nodes"]["n1"]["descendants"] == [{"pid": 7, "ppid": 1, "state": "S"}]


def test_status_of_a_run_whose_supervisor_is_gone_asks_the_nodes(run_home: Path, nodes: GuardNodes) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    record = make_run(os.getpid())
    share(record, view_nodes())  # fresh, but its writer is not the (dead) recorded supervisor
    record.update_state(supervisor_pid=gone.pid, supervisor_starttime=12345)
    info = lifecycle.status(record.run_id)
    assert info["supervised"] is False and len(nodes.asked) == len(HOSTS)
    assert info["view"] == {"source": "nodes", "why": "no live supervisor"}


def test_status_cli_shows_the_views_age_and_the_probe_flag(run_home: Path) -> None:
    """The real CLI in a child process (CliRunner on the real `main` would leave click's cached help option
    behind for docs/cli.md's generator). Its nodes refuse connections (127.0.0.1 port 1): with the view fresh
    nothing is asked and every node shows running; --probe asks them, and every one is unknown."""
    record = make_run(os.getpid())
    share(record, view_nodes())
    env = {**os.environ, "RLAUNCH_HOME": str(run_home)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "launcher.cli", *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)

    shown = cli("status", record.run_id)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "the supervisor's live view" in shown.stdout and "s old" in shown.stdout, shown.stdout
    as_json = json.loads(cli("status", record.run_id, "--json").stdout)
    assert {h: n["state"] for h, n in as_json["nodes"].items()} == {h: "running" for h in HOSTS}
    helped = cli("status", "--help")
    assert "--probe" in helped.stdout and "rlaunch status RUN --probe" in helped.stdout
    probed = json.loads(cli("status", record.run_id, "--json", "--probe").stdout)
    assert probed["view"] == {"source": "nodes", "why": "--probe"}
    assert {h: n["state"] for h, n in probed["nodes"].items()} == {h: "unknown" for h in HOSTS}


# ------------------------------------------------------------------------------------------- down

# A stand-in supervisor: on SIGTERM it writes the teardown record as the real one does on its way out
# (records.write_teardown), with n1 and n2 confirmed clean and n3 unreachable, then exits.
SUPERVISOR = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from pathlib import Path
    from launcher import records
    record = records.RunRecord(Path(sys.argv[1]))
    def on_term(signum, frame):
        nodes = {h: {"run_dir": f"/tmp/rl/{h}/.rlaunch/attempt-0", "ok": True, "exit_code": 0, "remaining": [],
                     "error": None, "final": {"state": "stopped", "remaining": []}} for h in ("n1", "n2")}
        nodes["n3"] = {"run_dir": "/tmp/rl/n3/.rlaunch/attempt-0", "ok": False, "exit_code": None,
                       "remaining": None, "error": "n3: timed out", "final": None}
        records.write_teardown(record, nodes, attempt=0, stopped_at=time.time())
        os._exit(130)
    signal.signal(signal.SIGTERM, on_term)
    print("ready", flush=True)
    time.sleep(120)
    """
)


def test_down_trusts_the_nodes_the_supervisor_confirmed_clean(run_home: Path, nodes: GuardNodes) -> None:
    record = make_run(os.getpid())
    sup = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, str(record.root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert sup.stdout is not None and sup.stdout.readline().strip() == "ready"
        record.update_state(supervisor_pid=sup.pid, supervisor_starttime=supervise._starttime(sup.pid))
        _, replies = lifecycle.down(record.run_id, grace=1)
        assert sup.wait(timeout=30) == 130
    finally:
        if sup.poll() is None:
            sup.send_signal(signal.SIGKILL)
            sup.wait()
    assert nodes.asked == [("n3", "stop")]  # only the node the supervisor could not confirm
    assert {h: r.via for h, r in replies.items()} == {"n1": "supervisor", "n2": "supervisor", "n3": "node"}
    assert record.read_state()["state"] == "stopped"


def test_down_asks_every_node_when_the_teardown_record_is_old_or_foreign(
    run_home: Path, nodes: GuardNodes
) -> None:
    record = make_run(os.getpid())
    me = supervise.recorded_supervisor(record.read_state())
    clean = {"ok": True, "exit_code": 0, "remaining": [], "error": None, "final": {"state": "stopped"}}
    nodes_json = {h: {"run_dir": f"/tmp/rl/{h}/.rlaunch/attempt-0", **clean} for h in HOSTS}
    records.write_teardown(record, nodes_json, stopped_at=time.time() - 60)
    targets = lifecycle.targets_of(record)
    assert lifecycle._confirmed_clean(record, targets, me, since=time.time() - 1) == {}  # an earlier teardown
    assert set(lifecycle._confirmed_clean(record, targets, me, since=time.time() - 120)) == set(HOSTS)
    assert me is not None
    not_its_writer = (me[0], me[1] + 1)
    assert lifecycle._confirmed_clean(record, targets, not_its_writer, since=0) == {}
    os.chmod(record.teardown_path, 0o666)
    assert lifecycle._confirmed_clean(record, targets, me, since=0) == {}


@pytest.mark.parametrize(
    "record",
    [
        {"k": "activity", "off": 120, "lines": {"0": 3}, "progress": {}},
        {"k": "line", "off": 80, "text": "[default0]:step=3 loss=1.2", "f": None},
    ],
    ids=["activity", "forwarded-line"],
)
def test_a_filtering_followers_records_keep_its_node_heard(
    run_home: Path, tmp_path: Path, record: dict[str, Any]
) -> None:
    """With edge forwarding a follower sends activity summaries and forwarded lines between its procs records:
    each is a sign of life, so the live view's last_heard moves and `status` does not ask a node that talks."""
    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    inv = from_mapping(
        {
            "workdir": str(tmp_path / "work"),
            "nodes": [{"host": "n1", "address": "127.0.0.1", "gpus": 0}],
            "job": {"kind": "command", "command": ["true"]},
        }
    )
    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    run = records.RunRecord.create(plan.run_id, plan.to_json())
    runner = Runner(plan, LocalTransport(Endpoint.all_from(inv)), run)
    try:
        assert runner.live_view()["n1"]["last_heard"] is None
        before = time.time()
        runner._on_record_safe("n1", {"t": before, **record})
        heard = runner.live_view()["n1"]["last_heard"]
        assert heard is not None and heard >= before
    finally:
        run.close()
