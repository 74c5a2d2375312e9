"""Issue 22: node-script calls through launcher/nodecall.py over the real local transport, the guard's bundle as a
plan pushes it, state.json's one shape, and the follower's rule taken by the head's watcher.

Real parts: LocalTransport runs the node scripts with this machine's python; the plan is built from the real
launcher/node files; the edge Forwarder loads the real rules.py. Nothing starts a long-lived process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.local import LocalTransport
from cluster.transport import Endpoint
from launcher import nodecall
from launcher.health import watch
from launcher.node import edge, protocol
from launcher.node import rundir as rd

ROOT = Path(__file__).resolve().parents[1]
FATAL = "[default1]:RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error, NCCL version 2.18.3"


@pytest.fixture
def local() -> LocalTransport:
    return LocalTransport({h: Endpoint(host=h, address="127.0.0.1") for h in ("n1", "n2")})


def test_a_call_reads_the_reply_on_the_last_line_and_says_why_there_is_none(local: LocalTransport) -> None:
    code = (
        "import json, sys; print('noise'); print(json.dumps({'args': sys.argv[1:], 'in': sys.stdin.read()}))"
    )
    reply = nodecall.call(local, "n1", sys.executable, code, "a", "b c", stdin=b"payload")
    assert (
        reply.ok
        and reply.data == {"args": ["a", "b c"], "in": "payload"}
        and reply.get("args") == ["a", "b c"]
    )
    silent = nodecall.call(local, "n1", sys.executable, "print('no json here')")
    assert not silent.ok and silent.reached and silent.data is None and silent.why() == "exit 0: no json here"
    crashed = nodecall.call(local, "n1", sys.executable, "import sys; sys.exit('boom')")
    assert not crashed.ok and crashed.why() == "exit 1: boom"
    timed_out = nodecall.call(local, "n1", sys.executable, "import time; time.sleep(5)", timeout=0.3)
    assert not timed_out.reached and timed_out.result.failure == "timeout" and timed_out.data is None


def test_every_call_is_isolated_from_the_callers_directory(local: LocalTransport, tmp_path: Path) -> None:
    """A json.py planted in the current directory never runs (docs/security.md, issue 21): `-I` on every call."""
    argv = nodecall.argv("py", "print(1)", "x")
    assert argv == ["py", protocol.ISOLATED, "-c", "print(1)", "x"]
    assert nodecall.argv("py", None) == ["py", protocol.ISOLATED, "-"]
    with pytest.raises(ValueError):
        nodecall.argv("py", "import torch", isolated=False)  # without -I only SAFE_PATH code
    assert nodecall.argv("py", protocol.SAFE_PATH + "x", isolated=False)[1] == "-c"


def test_call_all_runs_on_every_host_and_a_tagged_reply_skips_other_json(local: LocalTransport) -> None:
    code = "import json, sys; print(json.dumps({'rlaunch_t': sys.argv[1]})); print(json.dumps({'other': 1}))"
    replies = nodecall.call_all(local, ["n1", "n2"], {"n1": sys.executable, "n2": sys.executable}, code,
                                lambda h: [h], tag='"rlaunch_t"')  # fmt: skip
    assert {h: r.data for h, r in replies.items()} == {"n1": {"rlaunch_t": "n1"}, "n2": {"rlaunch_t": "n2"}}
    plain = nodecall.call_all(local, ["n1"], lambda h: sys.executable, code, ["x"])
    assert plain["n1"].data == {"other": 1}


def test_a_node_script_gets_the_node_modules_it_imports_sent_with_it(
    local: LocalTransport, tmp_path: Path
) -> None:
    """gc.py imports protocol by its bare name on the node; with_modules sends protocol.py with it."""
    code = nodecall.with_modules(nodecall.node_script("gc.py"), "gc.py", ("protocol.py",))
    reply = nodecall.call(local, "n1", sys.executable, code, str(tmp_path), "1", "--dry-run")
    assert reply.ok and reply.data["removed"] == [] and reply.data["errors"] == []
    bare = nodecall.call(local, "n1", sys.executable, nodecall.node_script("gc.py"), str(tmp_path), "1")
    assert not bare.ok and "protocol" in bare.why()


def test_a_plan_pushes_the_whole_guard_bundle_and_the_guard_runs_from_it(tmp_path: Path) -> None:
    """Every file of protocol.GUARD_BUNDLE is in each node's plan, pushed into the attempt's directory, and guard.py
    runs from there alone (its modules beside it, `-I`, from another working directory)."""
    from cluster.inventory import from_mapping
    from launcher.plan import build_plan, load_sources

    (tmp_path / "train.py").write_text("print('hi')\n")
    inv = from_mapping({
        "cluster": "lab", "nodes": [{"host": "n1", "address": "127.0.0.1", "gpus": 1}], "workdir": "/scratch/rl",
        "job": {"kind": "torchrun", "script": str(tmp_path / "train.py")},
    })  # fmt: skip
    plan = build_plan(inv, run_id="run1", sources=load_sources(inv), head_env={})
    pushed = {f.path: f for f in plan.nodes[0].files if f.attempt}
    assert set(protocol.GUARD_BUNDLE) <= set(pushed)
    assert pushed[protocol.RULES_FILE].content == (ROOT / "launcher" / "health" / "rules.py").read_bytes()
    assert pushed[protocol.GUARD_FILE].mode == 0o755
    attempt = tmp_path / "attempt"
    attempt.mkdir()
    for name in protocol.GUARD_BUNDLE:
        (attempt / name).write_bytes(pushed[name].content)
    out = subprocess.run([sys.executable, "-I", str(attempt / protocol.GUARD_FILE), "status", str(attempt)],
                         capture_output=True, text=True, timeout=60, cwd="/")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"state": None, "alive": False, "descendants": []}


def test_state_json_has_one_shape(tmp_path: Path) -> None:
    state = rd.FinalState.of_this_process()
    state.job_pid = state.job_pgid = state.job_sid = 1234
    state.write(str(tmp_path))
    written = json.loads((tmp_path / "state.json").read_text())
    assert list(written) == ["state", "guard_pid", "guard_starttime", "job_pid", "job_pgid", "job_sid",
                             "exit_code", "signal", "started_at", "ended_at", "reason"]  # fmt: skip
    assert (
        written["state"] == protocol.RUNNING and written["job_pgid"] == 1234 and written["ended_at"] is None
    )
    state.edge = {"kind": "stall", "reason": "r"}
    state.end(protocol.FAILED, "r")
    state.write(str(tmp_path))
    pid, start, ended = rd.guard_identity(str(tmp_path))
    assert (pid, start) == (state.guard_pid, state.guard_starttime)
    assert ended["state"] == protocol.FAILED and ended["edge"] == {"kind": "stall", "reason": "r"}
    assert ended["ended_at"] >= ended["started_at"]


def test_the_head_takes_the_rule_the_follower_matched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("rules.py", "vocabulary.py"):  # what a node gets (protocol.HEALTH_FILES)
        shutil.copy(ROOT / "launcher" / "health" / name, tmp_path / name)
    fwd = edge.Forwarder(edge.load_rules(str(tmp_path)), show="none")
    (record,) = fwd.line(1.0, 10, FATAL)
    flag = record["f"]
    assert flag["lr"] == 1 and flag["rule"] and flag["severity"] == "fatal"
    expected = watch.Watcher({"n1": [0, 1]}, stall_timeout=60).observe_line(
        1.0, "n1", 1, FATAL.split(":", 1)[1]
    )
    assert expected is not None and expected.rule == flag["rule"]

    def no_second_classification(text: str) -> None:
        raise AssertionError(f"classified again on the head: {text}")

    monkeypatch.setattr(watch, "classify", no_second_classification)
    taken = watch.Watcher({"n1": [0, 1]}, stall_timeout=60).observe_line(
        1.0, "n1", 1, FATAL.split(":", 1)[1], rule=flag["rule"]
    )
    assert taken is not None and taken.to_dict() == expected.to_dict()
    assert watch.match_of_rule(protocol.F_COMPLETION, "done") is None
    assert watch.match_of_rule(protocol.F_NET_INIT, "NCCL INFO NET/Socket") is None
    monkeypatch.undo()  # a rule id this rlaunch does not know (another version's guard): classified here
    assert watch.match_of_rule("no-such-rule", FATAL.split(":", 1)[1]) == watch.classify(
        FATAL.split(":", 1)[1]
    )


def test_the_push_payload_lands_byte_for_byte_compressed_or_not(tmp_path: Path) -> None:
    """_push_entry (launcher/run/attempt.py) sends a file zlib shrinks as `zdata` and others as `data`, encoded
    once per content; push.py writes both byte for byte and checks their sha256."""
    import hashlib

    from launcher.run import attempt

    files = {
        "rules.py": (ROOT / "launcher" / "health" / "rules.py").read_bytes(),  # large and compressible
        "small.txt": b"tiny\n",  # under PUSH_COMPRESS_MIN
        "noise.bin": os.urandom(8192),  # large, does not shrink
    }
    entries = [
        attempt._push_entry(name, 0o644, False, hashlib.sha256(data).hexdigest(), data)
        for name, data in files.items()
    ]
    kinds = {json.loads(e)["path"]: ("zdata" if "zdata" in json.loads(e) else "data") for e in entries}
    assert kinds == {"rules.py": "zdata", "small.txt": "data", "noise.bin": "data"}
    rules = files["rules.py"]
    assert (
        attempt._push_entry("rules.py", 0o644, False, hashlib.sha256(rules).hexdigest(), rules) is entries[0]
    )
    payload = b'{"files": [' + b",".join(entries) + b"]}"
    done = subprocess.run(
        [sys.executable, "-c", (ROOT / "launcher" / "node" / "push.py").read_text(), str(tmp_path / "run")],
        input=payload, capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert {name: (tmp_path / "run" / name).read_bytes() for name in files} == files
    wrong = json.loads(entries[0])
    wrong["sha256"] = "0" * 64  # the check holds for a compressed file too
    done = subprocess.run(
        [sys.executable, "-c", (ROOT / "launcher" / "node" / "push.py").read_text(), str(tmp_path / "run2")],
        input=json.dumps({"files": [wrong]}).encode(), capture_output=True, timeout=60,
    )  # fmt: skip
    assert b"sha256 mismatch after writing rules.py" in done.stdout
