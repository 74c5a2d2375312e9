"""Flight-recorder dumps from a real torch job (3 gloo ranks, one late at every collective and missing from the
last), read by the node script (launcher/node/frtrace.py) and judged by the head (launcher/health/flight.py);
hostile or torn dumps; the env wiring (launcher/envrules.py)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from e2e_helpers import scaled
from test_health_progress import run_job
from test_plan import plan_of

from cluster.local import LocalTransport
from cluster.transport import Endpoint
from launcher import envrules
from launcher.health import flight
from launcher.health.watch import Watcher
from launcher.records import RunRecord
from launcher.run.forensics import HangForensics

torch = pytest.importorskip("torch")

# Rank 2 arrives LATE s after its peers at every all_reduce and never enters the last one; every rank dumps its
# flight recorder the way torch writes it (pickle; rank 0 also the JSON variant) while rank 0 waits in the last.
JOB = """
import os, sys, time, torch, torch.distributed as dist
from torch._C._distributed_c10d import _dump_fr_trace, _dump_fr_trace_json
rank, world, store, prefix, late = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world)
t = torch.ones(8)
for _ in range(5):
    if rank == 2:
        time.sleep(late)
    dist.all_reduce(t)
if rank != 2:
    work = dist.all_reduce(t, async_op=True)  # collective #6: rank 2 is not there yet
open(prefix + str(rank), "wb").write(_dump_fr_trace())
if rank == 0:
    open(prefix + "json_" + str(rank), "wb").write(_dump_fr_trace_json())
dist.barrier(group=dist.new_group(backend="gloo"))  # every rank has dumped
if rank == 2:
    dist.all_reduce(t)
else:
    work.wait()
dist.destroy_process_group()
"""
LATE = 0.25
WORLD = 3


def run_node_script(stdin: dict[str, Any], budget: float = 3.0) -> dict[str, Any]:
    code = resources.files("launcher.node").joinpath("frtrace.py").read_text()
    out = subprocess.run(
        [sys.executable, "-c", code, str(budget)],
        input=json.dumps(stdin),
        capture_output=True,
        text=True,
        timeout=scaled(30),
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fr")
    (folder / "job.py").write_text(JOB)
    env = {**os.environ, "TORCH_FR_BUFFER_SIZE": "100", "OMP_NUM_THREADS": "1"}
    args = [str(WORLD), str(folder / "store"), str(folder / "nccl_trace_rank_"), str(LATE)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(folder / "job.py"), str(r), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(WORLD)
    ]
    try:
        # 2 cores shared with other test files
        outputs = [p.communicate(timeout=scaled(240))[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert all(p.returncode == 0 for p in procs), outputs
    return folder


def by_node(ranks: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Ranks 0 and 1 on node a, rank 2 on node b (as the head gets them, one answer per node)."""
    return {
        "a": [s for s in ranks if s["rank"] in (0, 1)],
        "b": [s for s in ranks if s["rank"] == 2],
    }


def test_real_dumps_are_summarised_and_name_the_rank_behind(dumps: Path) -> None:
    answer = run_node_script({"dump": str(dumps / "nccl_trace_rank_"), "pipe": None, "ranks": [0, 1, 2]})
    ranks = {s["rank"]: s for s in answer["ranks"]}
    assert sorted(ranks) == [0, 1, 2] and answer["poked"] == 0
    zero, two = ranks[0]["pgs"]["0"], ranks[2]["pgs"]["0"]
    assert zero["enqueued"] == 6 and zero["completed"] in (4, 5) and zero["in"] == [6, "gloo:all_reduce"]
    # Rank 2 returned from #5; its record may not be retired yet, so `completed` is 4 or 5.
    assert two["enqueued"] == 5 and two["completed"] in (4, 5) and two["in"] in (None, [5, "gloo:all_reduce"])
    assert [e[1] for e in ranks[0]["entries"] if e[0] == "0"] == [1, 2, 3, 4, 5, 6]

    culprit, sentence = flight.behind(by_node(answer["ranks"]))
    assert culprit == ("b", 2)
    assert sentence == "rank 2 never entered gloo:all_reduce #6 (process group 0); the 2 others wait in it"


def test_arrival_lag_names_the_late_node(dumps: Path) -> None:
    answer = run_node_script({"dump": str(dumps / "nccl_trace_rank_"), "pipe": None, "ranks": [0, 1, 2]})
    lags, count = flight.arrival_lag(by_node(answer["ranks"]))
    assert count == 5  # the collectives every rank recorded
    # Rank 2 sleeps LATE before entering each all_reduce its peers already wait in: it is the last to arrive.
    assert lags["b"] > lags["a"] and lags["b"] >= LATE / 2
    evidence = flight.lag_evidence("b", lags, count)
    assert evidence is not None and evidence.startswith("flight recorder: b arrives ")
    assert flight.lag_evidence("b", {"b": 0.3}, 5) is None  # no other node to compare with


def test_json_variant_reads_like_the_pickle(dumps: Path) -> None:
    answer = run_node_script({"dump": str(dumps / "nccl_trace_rank_json_"), "pipe": None, "ranks": [0]})
    (summary,) = answer["ranks"]
    assert summary["pgs"]["0"]["enqueued"] == 6 and summary["pgs"]["0"]["in"] == [6, "gloo:all_reduce"]


class RunsCode:
    """Unpickling this would run a shell command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_hostile_and_torn_dumps_are_unreadable_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    prefix = tmp_path / "nccl_trace_rank_"
    Path(f"{prefix}0").write_bytes(pickle.dumps({"entries": [RunsCode(marker)]}))
    Path(f"{prefix}1").write_bytes(b"\x80\x04garbage")
    Path(f"{prefix}2").write_bytes(b"")
    Path(f"{prefix}3").write_bytes(pickle.dumps(["not", "a", "dump"]))
    Path(f"{prefix}4").symlink_to("/etc/passwd")
    Path(f"{prefix}5").write_text("{not json")
    answer = run_node_script({"dump": str(prefix), "pipe": None, "ranks": list(range(6))})
    assert not marker.exists()
    errors = {s["rank"]: s.get("error", "") for s in answer["ranks"]}
    assert sorted(errors) == [0, 1, 2, 3, 4, 5]
    assert all(e.startswith("unreadable: ") for e in errors.values()), errors
    assert "refused global" in errors[0] and "not a regular file" in errors[4]
    notes = flight.unreadable({"n1": answer["ranks"], "n2": {"error": "ssh: timed out"}})
    assert notes[0] == "n1 rank 0: flight-recorder dump " + errors[0]
    assert notes[-1] == "n2: flight recorder not read (ssh: timed out)"
    assert flight.behind({"n1": answer["ranks"]}) == (None, None)


def test_a_rank_is_asked_for_a_dump_through_its_pipe(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fr_pipe_0.pipe")
    os.mkfifo(tmp_path / "fr_pipe_1.pipe")  # nobody reads it: not asked, and nothing blocks
    (tmp_path / "fr_pipe_2.pipe").write_text("")  # not a FIFO: never written
    reader = os.open(tmp_path / "fr_pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK)
    got: list[bytes] = []

    def rank0() -> None:
        # What ProcessGroupNCCL's monitor does on a byte in its pipe: write the dump.
        while not got:
            try:
                data = os.read(reader, 16)
            except BlockingIOError:
                data = b""
            if data:
                got.append(data)
                (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps({"entries": [], "version": "2.10"}))
            threading.Event().wait(0.02)

    thread = threading.Thread(target=rank0, daemon=True)
    thread.start()
    try:
        answer = run_node_script(
            {
                "dump": str(tmp_path / "nccl_trace_rank_"),
                "pipe": str(tmp_path / "fr_pipe_"),
                "ranks": [0, 1, 2],
            }
        )
    finally:
        got.append(b"")
        thread.join(timeout=scaled(5))
        os.close(reader)
    assert answer["poked"] == 1 and got[0] == b"1"
    assert (tmp_path / "fr_pipe_2.pipe").read_text() == ""
    (summary,) = answer["ranks"]
    assert summary["rank"] == 0 and summary["fresh"] is True and summary["version"] == "2.10"


def test_env_wiring_points_dumps_into_the_run_directory() -> None:
    res = envrules.apply_rules({}, gpus=(), nproc=1, job_timeout=None, job_kind="torchrun")
    added, note = envrules.flight_recorder_env(res.env, "/w/run1/node1")
    assert added == {
        "TORCH_FR_DUMP_TEMP_FILE": "/w/run1/node1/nccl_trace_rank_",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/w/run1/node1/nccl_trace_rank_",
        "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/w/run1/node1/fr_pipe_",
    }
    assert note is not None and "the run directory" in note and "/tmp" not in "".join(added.values())
    # The user's own dump path is kept (and named in the note).
    added, note = envrules.flight_recorder_env(
        {**res.env, "TORCH_FR_DUMP_TEMP_FILE": "/shared/fr/t_"}, "/w/r/n"
    )
    assert (
        added["TORCH_FR_DUMP_TEMP_FILE"] == "/shared/fr/t_" and note is not None and "/shared/fr/t_" in note
    )
    # Turned off by the user under either name: nothing added, and the other name is not defaulted back on.
    for name in envrules.FR_SIZE_VARS:
        off = envrules.apply_rules({name: "0"}, gpus=(), nproc=1, job_timeout=None, job_kind="torchrun")
        assert not envrules.flight_recorder_on(off.env)
        assert envrules.flight_recorder_env(off.env, "/w/r/n") == ({}, None)


def test_plan_sets_the_dump_path_per_node_and_says_so() -> None:
    plan = plan_of()
    for node in plan.nodes:
        assert node.env["TORCH_FR_DUMP_TEMP_FILE"] == f"{node.guard_dir}/nccl_trace_rank_"
        assert node.env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] == f"{node.guard_dir}/fr_pipe_"
    assert sum("flight recorder on (2000 entries)" in note for note in plan.notes) == 1
    quiet = plan_of(env={"TORCH_FR_BUFFER_SIZE": "0"})
    assert all("TORCH_FR_DUMP_TEMP_FILE" not in node.env for node in quiet.nodes)


def test_hang_verdict_names_the_rank_behind_unless_the_stacks_did(dumps: Path) -> None:
    answer = run_node_script({"dump": str(dumps / "nccl_trace_rank_"), "pipe": None, "ranks": [0, 1, 2]})
    fr = by_node(answer["ranks"]) | {
        "c": [{"rank": 9, "error": "unreadable: UnpicklingError: refused global"}]
    }
    for named in (False, True):
        events: list[dict[str, Any]] = []
        watcher = Watcher({"node1": [0, 1], "node2": [2, 3]}, stall_timeout=600)
        run_job(watcher, 120.0, hang_at=40.0)  # a quiescent hang, as the watcher declares it
        runner = SimpleNamespace(watcher=watcher, lock=threading.Lock(), event=events.append)
        with runner.lock:
            event = HangForensics(runner)._explain_fr(fr, named=named)  # type: ignore[arg-type]
        assert event is not None and watcher.verdict().root_cause == event
        if named:  # the stacks named a rank already: the flight recorder's word is added as evidence
            assert event.node != "b" and event.text.endswith("; rank 2 never entered gloo:all_reduce #6 "
                                                             "(process group 0); the 2 others wait in it")  # fmt: skip
        else:
            assert (event.node, event.rank) == ("b", 2)
            assert event.text.startswith("rank 2 never entered gloo:all_reduce #6")
        assert [e["text"] for e in events] == [
            "c rank 9: flight-recorder dump unreadable: UnpicklingError: refused global"
        ]


def test_straggler_warning_gets_the_arrival_lag_read_on_the_nodes(dumps: Path, tmp_path: Path) -> None:
    plans = {}
    for host, ranks in (("a", (0, 1)), ("b", (2,))):
        run_dir = tmp_path / host
        run_dir.mkdir()
        for r in ranks:
            shutil.copy(dumps / f"nccl_trace_rank_{r}", run_dir / f"nccl_trace_rank_{r}")
        env = envrules.apply_rules({}, gpus=(), nproc=len(ranks), job_timeout=None, job_kind="torchrun").env
        env.update(envrules.flight_recorder_env(env, str(run_dir))[0])
        plans[host] = SimpleNamespace(env=env, python=sys.executable, ranks=range(ranks[0], ranks[-1] + 1))
    events: list[dict[str, Any]] = []
    endpoints = {h: Endpoint(host=h, address="127.0.0.1") for h in plans}
    with LocalTransport(endpoints) as transport:
        runner = SimpleNamespace(
            plan=SimpleNamespace(node=plans.__getitem__),
            transport=transport,
            record=RunRecord(tmp_path),
            nodes={h: SimpleNamespace(lost=False) for h in plans},
            lock=threading.Lock(),
            event=events.append,
        )
        HangForensics(runner).fr_straggler_evidence(["b"])  # type: ignore[arg-type]
        deadline = time.monotonic() + 30
        while not events and time.monotonic() < deadline:
            time.sleep(0.05)
    (event,) = events
    assert event["kind"] == "evidence" and event["category"] == "straggler" and event["node"] == "b"
    assert event["text"].startswith("flight recorder: b arrives ")
    saved = json.loads((tmp_path / "fr.json").read_text())
    assert (tmp_path / "fr.json").stat().st_mode & 0o777 == 0o600  # record mode (issue 21)
    assert sorted(s["rank"] for host in saved.values() for s in host) == [0, 1, 2]


def summary(rank: int, enqueued: int, completed: int, name: str = "nccl:all_reduce") -> dict[str, Any]:
    entries = [["0", seq, name, seq * 1_000_000, "scheduled"] for seq in range(1, enqueued + 1)]
    current = [enqueued, name] if enqueued > completed else None
    pg = {
        "enqueued": enqueued,
        "started": -1,
        "completed": completed,
        "in": current,
        "last": [enqueued, name],
    }
    return {"rank": rank, "pgs": {"0": pg}, "entries": entries}


def test_behind_with_asynchronous_enqueues_and_no_clear_minority() -> None:
    # NCCL ranks run ahead of each other by a few enqueued collectives; the one far behind is named.
    nodes = {"n1": [summary(0, 45, 40), summary(1, 44, 40)], "n2": [summary(2, 45, 40), summary(3, 40, 40)]}
    assert flight.behind(nodes) == (("n2", 3), "rank 3 never entered nccl:all_reduce #41 (process group 0); "
                                                 "the 3 others wait in it")  # fmt: skip
    even = {"n1": [summary(0, 41, 40), summary(1, 40, 40)], "n2": [summary(2, 41, 40), summary(3, 40, 40)]}
    assert flight.behind(even)[0] is None  # half the ranks: nobody stands out
    same = {"n1": [summary(0, 41, 40)], "n2": [summary(1, 41, 40)]}
    assert flight.behind(same) == (None, "flight recorder: all 2 rank(s) reached collective #41 (process group 0); "
                                         "2 wait in nccl:all_reduce #41")  # fmt: skip
