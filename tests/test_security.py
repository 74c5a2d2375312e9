"""Trust boundaries (docs/security.md, issue 11) against a second real local user, `rlaunch-other` (otheruser.py).

Each test is the attack that worked before: a workdir another user created, a symlink planted in a run
directory, a state.json naming a stranger's process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import otheruser
import psutil
import pytest
import yaml
from e2e_helpers import free_port

from cluster.inventory import from_mapping
from launcher.node import guard as guard_module
from launcher.nodecall import node_script, with_modules
from launcher.run.loop import CKPT_MODULES

ROOT = Path(__file__).resolve().parents[1]
PUSH = ROOT / "launcher" / "node" / "push.py"
GUARD = ROOT / "launcher" / "node" / "guard.py"


def push(run_dir: Path) -> dict:
    """Run the node's preflight + push exactly as the head does (`python -c <push.py> RUN_DIR`, payload on stdin)."""
    done = subprocess.run(
        [sys.executable, "-c", PUSH.read_text(), str(run_dir)],
        input=json.dumps({"files": []}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------ 1. workdir takeover
def test_default_workdir_is_per_user() -> None:
    inv = from_mapping({"nodes": [{"host": "n1"}], "job": {"kind": "command", "command": ["true"]}})
    assert (
        inv.workdir == "/var/tmp/rlaunch-root" if os.geteuid() == 0 else inv.workdir.startswith("/var/tmp/")
    )
    inv = from_mapping(
        {"ssh": {"user": "alice"}, "nodes": [{"host": "n1"}], "job": {"kind": "command", "command": ["true"]}}
    )
    assert inv.workdir == "/var/tmp/rlaunch-alice"


def test_push_creates_every_missing_directory_0700() -> None:
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        assert push(shared / "w" / "run1" / "node1")["ok"]
        for path in (shared / "w", shared / "w" / "run1", shared / "w" / "run1" / "node1"):
            assert path.stat().st_mode & 0o777 == 0o700, path


def test_workdir_created_by_another_user_is_refused_and_nothing_starts(tmp_path: Path) -> None:
    """The takeover: rlaunch-other pre-creates the shared workdir, so it could swap guard.py before the start."""
    other = otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        planted = shared / "rlaunch"
        otheruser.run_as_other(["mkdir", "-m", "0777", str(planted)])
        reply = push(planted / "run1" / "node1")
        assert not reply["ok"]
        assert f"{planted} is owned by {otheruser.NAME} (uid {other.pw_uid}), mode 0777" in reply["error"]
        assert list(planted.iterdir()) == []  # checked before anything was created in it

        # Through the CLI on the local transport (the prolog's path): exit 3, one line per node, no guard.
        inventory = tmp_path / "cluster.yaml"
        inventory.write_text(
            yaml.safe_dump(
                {
                    "transport": "local",
                    "python": sys.executable,
                    "workdir": str(planted),
                    "nodes": [{"host": "n1", "address": "127.0.0.1"}],
                    "job": {"kind": "command", "command": ["true"]},
                }
            )
        )
        done = subprocess.run(
            [sys.executable, "-m", "launcher.cli", "up", str(inventory), "--no-doctor"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "RLAUNCH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 3, done.stderr
        assert f"n1: refusing {planted}/" in done.stderr and "owned by rlaunch-other" in done.stderr
        assert "Traceback" not in done.stderr
        assert list(planted.iterdir()) == []


def test_world_writable_directory_without_sticky_bit_is_refused() -> None:
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        loose = shared / "loose"
        loose.mkdir()
        loose.chmod(0o777)  # root-owned, but anyone may rename entries in it
        reply = push(loose / "run1")
        assert not reply["ok"] and f"{loose} is writable by others, mode 0777" in reply["error"]


def test_symlink_planted_by_another_user_is_refused() -> None:
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        target = shared / "root-only"
        target.mkdir(mode=0o700)
        link = shared / "rlaunch"
        otheruser.run_as_other(["ln", "-s", str(target), str(link)])
        reply = push(link / "run1")
        assert not reply["ok"] and f"{link} is owned by {otheruser.NAME}" in reply["error"]
        assert list(target.iterdir()) == []  # nothing was created through the link


def job_dir(tmp_path: Path, argv: list[str]) -> Path:
    rundir = tmp_path / "run"
    rundir.mkdir()
    spec = {"argv": argv, "env": {}, "cwd": str(rundir), "heartbeat_timeout": 0, "grace": 1.0}
    (rundir / "job.json").write_text(json.dumps(spec))
    return rundir


def guard(rundir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(GUARD), *args, str(rundir)], capture_output=True, text=True, timeout=60
    )


def test_guard_does_not_follow_a_symlink_planted_in_the_run_directory(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    rundir = job_dir(tmp_path, ["echo", "overwritten"])
    (rundir / "out.log").symlink_to(victim)
    done = guard(rundir, "start")
    assert done.returncode != 0 and "Traceback" not in done.stdout
    time.sleep(0.5)  # a job that did start would have written by now; nothing is asserted about timing
    assert victim.read_text() == "precious\n"
    state = json.loads((rundir / "state.json").read_text())
    assert state["state"] == "failed" and isinstance(state["guard_starttime"], int)


# ------------------------------------------------------------------------------------------ 2. PID reuse
@pytest.fixture
def strangers_process() -> subprocess.Popen:
    """A process of rlaunch-other that happens to hold a PID a run record names."""
    proc = subprocess.Popen(otheruser.as_other(["sleep", "300"]))
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize(
    "identity",
    [
        {
            "guard_pid": "STRANGER"
        },  # a failed start used to leave no start time: any process with the pid matched
        {"guard_pid": "STRANGER", "guard_starttime": None},
        {"guard_pid": "STRANGER", "guard_starttime": "123"},
        {"guard_pid": 1, "guard_starttime": 1},
        {"guard_pid": "abc", "guard_starttime": 5},
        {"guard_pid": [1], "guard_starttime": 5},
    ],
)
def test_stop_never_signals_a_process_the_record_does_not_prove_ours(
    tmp_path: Path, strangers_process: subprocess.Popen, identity: dict
) -> None:
    rundir = job_dir(tmp_path, ["true"])
    if identity["guard_pid"] == "STRANGER":
        identity = dict(identity, guard_pid=strangers_process.pid)
    (rundir / "state.json").write_text(json.dumps({"state": "running", **identity}))
    # pids records: the stranger with a wrong start time, and pid 1 (whose tree is every process)
    (rundir / "pids").write_text(f"{strangers_process.pid} 1 {strangers_process.pid}\n1 0 1\n")
    done = guard(rundir, "stop", "--grace", "0.2")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert strangers_process.poll() is None  # still running: never signalled
    assert json.loads(done.stdout)["remaining"] == []


def test_signal_same_refuses_a_reused_pid(strangers_process: subprocess.Popen) -> None:
    st = guard_module.read_stat(strangers_process.pid)
    assert st is not None
    assert not guard_module.signal_same(strangers_process.pid, st["starttime"] + 1, signal.SIGKILL)
    assert not guard_module.signal_same(1, 0, signal.SIGKILL)
    assert strangers_process.poll() is None


# ------------------------------------------------------------------------------------------ 8, 9. hostile input
def cli(
    *args: str, env: dict | None = None, cwd: Path = ROOT, user: bool = False
) -> subprocess.CompletedProcess:
    """The CLI in a child capped at 2 GiB of address space: a resource bomb fails fast instead of eating the box."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    argv = [sys.executable, "-m", "launcher.cli", *args]
    return subprocess.run(
        otheruser.as_other(argv) if user else argv,
        cwd=cwd,
        capture_output=True,
        timeout=120,
        preexec_fn=cap,
        env=env if env is not None else {**os.environ, "PYTHONPATH": str(ROOT)},
    )


def assert_one_line_exit_2(done: subprocess.CompletedProcess, *words: str) -> None:
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (BOMB + "nodes: [{host: n1}]\njob: {kind: command, command: [x]}\n", ["values"]),
        ("a: &a [*a]\nnodes: [{host: n1}]\n", ["nested"]),
        ("a: " + "[" * 3000 + "]" * 3000 + "\n", ["nested"]),
        ("nodes: [{host: n1, gpus: 200000000}]\njob: {kind: command, command: [x]}\n", ["limit"]),
        ('nodes: [{host: n1, gpus: "0-200000000"}]\njob: {kind: command, command: [x]}\n', ["limit"]),
    ],
    ids=["alias-bomb", "recursive-alias", "deep-nesting", "gpu-count", "gpu-range"],
)
def test_inventory_bombs_are_bad_input(tmp_path: Path, text: str, words: list[str]) -> None:
    inventory = tmp_path / "cluster.yaml"
    inventory.write_text(text)
    assert_one_line_exit_2(cli("plan", str(inventory)), *words)


def test_hostfile_and_slurm_bombs_are_bad_input(tmp_path: Path) -> None:
    inventory = tmp_path / "cluster.yaml"
    inventory.write_text("job: {kind: command, command: [x]}\n")
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("n1 slots=99999999999\n")
    assert_one_line_exit_2(cli("plan", str(inventory), "--hostfile", str(hostfile)), "slots")
    hostfile.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\xff\xfe" * 100)
    assert_one_line_exit_2(cli("plan", str(inventory), "--hostfile", str(hostfile)), "hostfile")
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    for extra in (
        {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_GPUS_ON_NODE": "200000000000"},
        {"SLURM_JOB_NODELIST": "n[0-999999999]"},
    ):
        env = {**base, "PYTHONPATH": str(ROOT), **extra}
        assert_one_line_exit_2(cli("plan", str(inventory), "--from-slurm", env=env), "SLURM_")
    env_bytes = {os.fsencode(k): os.fsencode(v) for k, v in base.items()}
    env_bytes.update({b"PYTHONPATH": os.fsencode(ROOT), b"SLURM_JOB_NODELIST": b"n\xff[1-2]"})
    assert_one_line_exit_2(cli("plan", str(inventory), "--from-slurm", env=env_bytes), "SLURM_JOB_NODELIST")


def test_classify_reads_a_giant_line_in_bounded_memory(tmp_path: Path) -> None:
    log = tmp_path / "giant.log"
    with log.open("wb") as f:
        f.truncate(3 << 30)  # 3 GiB of NUL bytes and no newline (sparse: costs no disk), above the 2 GiB cap
        f.seek(3 << 30)
        f.write(b"\nRuntimeError: NCCL error in: ProcessGroupNCCL.cpp, unhandled system error\n")
    done = cli("logs", "classify", str(log))
    assert done.returncode in (0, 1), done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"MemoryError" not in done.stderr


def test_classify_of_an_unreadable_file_is_bad_input(tmp_path: Path) -> None:
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        secret = shared / "root-only.log"
        secret.write_text("x\n")
        secret.chmod(0o600)
        done = cli("logs", "classify", str(secret), user=True, cwd=shared)
        assert_one_line_exit_2(done, "cannot read")


def test_plan_prints_markup_in_arguments_literally(tmp_path: Path) -> None:
    inventory = tmp_path / "cluster.yaml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "nodes": [{"host": "n1"}],
                "job": {
                    "kind": "command",
                    "command": ["echo", "[blink red]hidden[/blink red]", "[/]", "[bold]"],
                },
            }
        )
    )
    done = cli("plan", str(inventory))
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert "[blink red]hidden[/blink red]" in out and "[/]" in out and "[bold]" in out


# ------------------------------------------------------------------------------------------ 5. crash reports
def test_crash_report_is_private_and_never_follows_a_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher.cli.app import guarded

    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        victim = tmp_path / "victim"
        victim.write_text("precious\n")
        otheruser.run_as_other(["ln", "-s", str(victim), str(shared / f"rlaunch-crash-{os.getpid()}.txt")])
        monkeypatch.setenv("TMPDIR", str(shared))
        monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))

        @guarded
        def broken() -> None:
            raise RuntimeError("a bug")

        with pytest.raises(SystemExit) as info:
            broken()
        assert info.value.code == 3
        assert victim.read_text() == "precious\n"
        reports = list((tmp_path / "home" / "crash").iterdir())
        assert len(reports) == 1 and reports[0].stat().st_mode & 0o777 == 0o600
        assert "RuntimeError: a bug" in reports[0].read_text()


# ------------------------------------------------------------------------------------------ 11. run records
def test_run_ids_cannot_leave_the_record_directory(tmp_path: Path) -> None:
    """`rlaunch status ../../x` opened a record outside RLAUNCH_HOME and ran its plan's argv[0]."""
    home = tmp_path / "home"
    (home / "runs").mkdir(parents=True)
    evil = tmp_path / "x"
    evil.mkdir()
    marker = tmp_path / "ran"
    (evil / "state.json").write_text(json.dumps({"state": "running", "run_id": "x"}))
    plan = {"nodes": [{"host": "n1", "address": "127.0.0.1", "python": f"/bin/touch {marker}"}]}
    (evil / "plan.json").write_text(json.dumps(plan))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RLAUNCH_HOME": str(home)}
    for run_id in ("../../x", str(evil), "..", "a/../../x"):
        done = cli("status", run_id, env=env)
        assert_one_line_exit_2(done, "not a run id")
    assert not marker.exists()


def test_run_records_are_private(tmp_path: Path) -> None:
    from launcher import records

    rec = records.RunRecord.create("20260101-000000-abcd", {"nodes": []}, base=tmp_path / "home")
    rec.append_log("n1", "a line with a secret in its environment")
    rec.append_event({"k": "x"})
    rec.append_gpu("n1", {"t": 1})
    rec.close()
    for path in [tmp_path / "home", *(tmp_path / "home").rglob("*")]:
        want = 0o700 if path.is_dir() else 0o600
        assert path.stat().st_mode & 0o777 == want, path


# ------------------------------------------------------------------------------------------ 7. collect_artifacts
def test_collected_artifacts_stay_inside_the_run_record(tmp_path: Path) -> None:
    """A hostile node answers the collect step with paths that climb out of the record."""
    import base64

    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher import records
    from launcher.plan import build_plan, load_sources
    from launcher.run.attempt import Runner

    escaped = tmp_path / "escaped"
    reply = {
        "../../../../escaped": base64.b64encode(b"pwned").decode(),
        str(escaped): base64.b64encode(b"pwned").decode(),
        "nccl_trace_rank_0": base64.b64encode(b"trace").decode(),
    }
    node = tmp_path / "hostile-python"
    node.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{json.dumps(reply)}'\n")
    node.chmod(0o755)
    inv = from_mapping(
        {
            "transport": "local",
            "python": str(node),
            "workdir": str(tmp_path / "work"),
            "nodes": [{"host": "n1", "address": "127.0.0.1"}],
            "job": {"kind": "command", "command": ["true"]},
        }
    )
    plan = build_plan(inv, run_id=records.new_run_id(), sources=load_sources(inv), head_env=os.environ)
    record = records.RunRecord.create(plan.run_id, plan.to_json(), base=tmp_path / "home")
    saved = Runner(plan, LocalTransport(Endpoint.all_from(inv)), record).collect_artifacts()
    record.close()
    assert saved == ["n1/nccl_trace_rank_0"]
    assert not escaped.exists() and not (tmp_path / "home" / "escaped").exists()
    assert not list(tmp_path.rglob("escaped"))


# ------------------------------------------------------------------------------------------ 11. paramiko noise
NOT_SSH = r"""
import socket, sys, threading
from cluster.ssh import SSHTransport
from cluster.transport import Endpoint
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
def answer():
    for _ in range(2):
        conn, _ = server.accept()
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n" * 20)
        conn.close()
threading.Thread(target=answer, daemon=True).start()
ep = Endpoint(host="web", address="127.0.0.1", port=server.getsockname()[1], known_hosts="", connect_timeout=5)
with SSHTransport({"web": ep}) as t:
    print(t.run("web", ["true"], timeout=10).error)
"""


def test_a_failed_handshake_prints_one_line_and_no_paramiko_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NOT_SSH],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert "SSH" in done.stdout and len(done.stdout.strip().splitlines()) == 1
    assert done.stderr == ""  # paramiko's "Exception (client): Error reading SSH protocol banner" + traceback


def test_doctor_sends_env_values_on_stdin_not_the_command_line(tmp_path: Path) -> None:
    """Any local user on a node can read a command line in `ps`; the inventory's env holds tokens."""
    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher.doctor import gather

    argv_log = tmp_path / "argv"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >"{argv_log}"\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    secret = "hunter2-token-value"
    args = {"node": "n1", "token": "t", "env": {"HF_TOKEN": secret}, "fast": True, "workdir": str(tmp_path)}
    transport = LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")})
    script = (ROOT / "launcher" / "node" / "facts.py").read_bytes()
    facts = gather(transport, ["n1"], script, args, 120, python_for={"n1": str(python)})
    assert facts["n1"].error is None, facts["n1"].error
    assert secret not in argv_log.read_text()


# ------------------------------------------------------------------------------------------ 6. one run per node
def local_inventory(tmp_path: Path, cluster: str, command: list[str]) -> object:
    return from_mapping(
        {
            "cluster": cluster,
            "transport": "local",
            "python": sys.executable,
            "workdir": str(tmp_path / "work"),
            "nodes": [{"host": "n1", "address": "127.0.0.1"}],
            "master": {"port": free_port()},
            "job": {"kind": "command", "command": command},
        }
    )


def test_a_second_inventory_naming_the_same_host_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher import lifecycle

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    # argv[0] is not python: `down` once ran the job's own command in place of the guard's interpreter
    run_id, outcome = lifecycle.up(local_inventory(tmp_path, "a", ["sleep", "60"]), detach=True)
    try:
        assert outcome.code == 0, outcome.summary
        with pytest.raises(lifecycle.LaunchError) as info:
            lifecycle.up(local_inventory(tmp_path, "another-name", ["true"]))
        assert info.value.code == 2 and run_id in str(info.value)
    finally:
        _, results = lifecycle.down(run_id)
    assert all(r.ok for r in results.values()), results


HOLD_N1 = """
import sys, time
from launcher import hostlock
with hostlock.hold(["n1"]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_concurrent_up_waits_for_the_host_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from launcher import hostlock, lifecycle

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(hostlock, "WAIT_S", 0.5)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_N1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(lifecycle.LaunchError) as info:
            lifecycle.up(local_inventory(tmp_path, "a", ["true"]))
        assert info.value.code == 2 and "another rlaunch on this head is starting a run on n1" in str(
            info.value
        )
    finally:
        holder.communicate("", timeout=30)


def test_resume_refuses_a_checkpoint_dir_another_user_can_write() -> None:
    """A planted checkpoint is code: the resumed job unpickles it as the launching user."""
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        ckpt = shared / "ckpt"
        otheruser.run_as_other(["mkdir", "-m", "0777", str(ckpt)])
        otheruser.run_as_other(["mkdir", str(ckpt / "step-3")])
        otheruser.run_as_other(["touch", str(ckpt / "step-3" / "state.pt")])
        otheruser.run_as_other(["sh", "-c", f"echo step-3 > {ckpt}/latest"])
        # as launcher/run/loop.py find_checkpoint sends it: with push.py, whose path rule it applies
        script = with_modules(node_script("ckpt.py"), "ckpt.py", CKPT_MODULES)
        done = subprocess.run(
            [sys.executable, "-I", "-c", script, str(ckpt), "1"], capture_output=True, text=True, timeout=60
        )
        reply = json.loads(done.stdout.strip().splitlines()[-1])
        assert reply["latest"] is None
        other = otheruser.ensure()
        assert f"{ckpt} is owned by {other.pw_name} (uid {other.pw_uid}), mode 0777" in reply["refused"]


def test_the_node_itself_refuses_a_second_run_even_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11 item 6, the node side: `--force` (or a second head) passes the head's lock; the guard does not."""
    from launcher import lifecycle

    monkeypatch.setenv("RLAUNCH_HOME", str(tmp_path / "home"))
    marker = f"rlaunch-nodelock-{os.getpid()}"
    run_id, outcome = lifecycle.up(
        local_inventory(tmp_path, "a", ["bash", "-c", f"exec -a {marker} sleep 60"]), detach=True
    )
    try:
        assert outcome.code == 0, outcome.summary
        with pytest.raises(lifecycle.LaunchError) as info:
            lifecycle.up(local_inventory(tmp_path, "b", ["true"]), force=True)
        assert info.value.code == 3 and "busy with run " + run_id in str(info.value), info.value
    finally:
        _, results = lifecycle.down(run_id)
    assert all(r.ok for r in results.values()), results
    assert not [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
