"""Issue 21: the second audit's findings, each the attack that worked, against a second real local user
(`rlaunch-other`, tests/otheruser.py) where a user is involved, with real files, symlinks and processes.

docs/security.md states the rules these tests hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import otheruser
import pytest
from e2e_helpers import free_port

from launcher.nodecall import with_modules

ROOT = Path(__file__).resolve().parents[1]
N1 = [{"host": "n1", "address": "127.0.0.1"}]


def local_inventory_file(path: Path, work: Path, nodes: list[dict[str, str]], command: list[str]) -> Path:
    """An inventory file for the local transport (every node is this machine, its run directories under work)
    whose job is `command`; JSON, which is YAML too. tests/test_cli_everyday.py writes its local runs with it."""
    job = {"kind": "command", "command": command}
    data = {
        "transport": "local",
        "python": sys.executable,
        "workdir": str(work),
        "nodes": nodes,
        "job": job,
        "master": {"port": free_port()},
    }
    path.write_text(json.dumps(data))
    return path


FACTS = ROOT / "launcher" / "node" / "facts.py"


# ------------------------------------------------------------------------------------------ 1. doctor's write probe
def test_doctor_write_probes_never_write_through_a_strangers_symlinks(tmp_path: Path) -> None:
    """rlaunch-other pre-creates the default workdir and checkpoint marker folder full of links named like the
    probe files (the old names were `<dir>/.rlaunch-write-test-<pid>` and `<marker>.<pid>.tmp`): the wrapper
    below plants them for the very PID the probe will have (exec keeps it). Nothing may be written through them,
    and the doctor reports the foreign directories as errors."""
    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher.doctor.checks import checks
    from launcher.doctor.gather import gather

    other = otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        victim = shared / "root-owned-precious"
        victim.write_text("precious\n")
        victim.chmod(0o644)
        workdir, ckpt = shared / "rlaunch-root", shared / "ckpt"
        for folder in (workdir, ckpt, ckpt / ".rlaunch-doctor"):
            otheruser.run_as_other(["mkdir", "-m", "0777", str(folder)])
        as_other = f"setpriv --reuid={other.pw_uid} --regid={other.pw_gid} --clear-groups --"
        python = tmp_path / "python"
        python.write_text(
            "#!/bin/sh\n"
            f"{as_other} ln -s {victim} {workdir}/.rlaunch-write-test-$$\n"
            f"{as_other} ln -s {victim} {ckpt}/.rlaunch-write-test-$$\n"
            f"{as_other} ln -s {victim} {ckpt}/.rlaunch-doctor/n1.marker.$$.tmp\n"
            f'exec {sys.executable} "$@"\n'
        )
        python.chmod(0o755)
        args = {"token": "t", "fast": True, "workdir": str(workdir), "ckpt_dir": str(ckpt)}
        transport = LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")})
        facts = gather(transport, ["n1"], FACTS.read_bytes(), args, 120, python_for={"n1": str(python)})
        assert facts["n1"].error is None, facts["n1"].error
        assert victim.read_text() == "precious\n"
        for key, folder in (("workdir", workdir), ("ckpt", ckpt)):
            probe = facts["n1"].probe(key)
            assert probe["ok"] is False and probe["unsafe"] is True, probe
            assert f"{folder} is owned by {otheruser.NAME} (uid {other.pw_uid})" in probe["error"]
        assert facts["n1"].probe("marker")["ok"] is False
        found = {c.name: c for c in checks(facts)}
        for name in ("workdir_writable", "checkpoint_writable"):
            assert found[name].status == "fail" and found[name].severity == "error", found[name]
            assert "owned by rlaunch-other" in json.dumps(found[name].__dict__, default=str)


def test_doctor_write_probe_leaves_no_file_in_a_safe_workdir(tmp_path: Path) -> None:
    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher.doctor.gather import gather

    workdir, ckpt = tmp_path / "w", tmp_path / "c"
    args = {"token": "t", "fast": True, "workdir": str(workdir), "ckpt_dir": str(ckpt)}
    transport = LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")})
    facts = gather(transport, ["n1"], FACTS.read_bytes(), args, 120, python_for={"n1": sys.executable})
    assert facts["n1"].probe("workdir")["ok"] and facts["n1"].probe("ckpt")["ok"]
    assert list(workdir.iterdir()) == []
    assert (ckpt / ".rlaunch-doctor" / "n1.marker").read_text() == "t"
    assert workdir.stat().st_mode & 0o777 == 0o700


# ------------------------------------------------------------------------------------------ 2. record homes
def cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "RLAUNCH_HOME"}
    return subprocess.run(
        [sys.executable, "-m", "launcher.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def plant_record(home: Path, run_id: str, python: str, supervisor_pid: int) -> None:
    """A detached, running run record as rlaunch-other would write it: its targets name `python` (run by `down`
    to reach the guard) and its state a supervisor PID with no start time."""
    from cluster.inventory import from_mapping

    inv = from_mapping(
        {
            "transport": "local",
            "python": python,
            "workdir": str(home / "w"),
            "nodes": [{"host": "n1", "address": "127.0.0.1"}],
            "job": {"kind": "command", "command": ["true"]},
        }
    )
    root = home / "runs" / run_id
    files = {
        "state.json": {
            "run_id": run_id,
            "state": "running",
            "detached": True,
            "hosts": ["n1"],
            "supervisor_pid": supervisor_pid,
            "created_at": 1.0,
        },
        "plan.json": {"run_id": run_id, "nodes": []},
        "targets.json": [{"host": "n1", "python": python, "run_dir": str(home / "w" / run_id / "n1")}],
    }
    script = "; ".join(
        f"printf %s {json.dumps(json.dumps(data))} > {root / name}" for name, data in files.items()
    )
    otheruser.run_as_other(["sh", "-c", f"mkdir -p -m 0777 {root} && {script}"])
    (home / "inventory.tmp").write_text(inv.model_dump_json())
    otheruser.run_as_other(["cp", str(home / "inventory.tmp"), str(root / "inventory.json")])


def test_a_planted_record_home_is_refused_before_anything_in_it_runs(tmp_path: Path) -> None:
    """The attack: in a directory others can write, rlaunch-other plants `.rlaunch/` with a running detached run
    whose targets name its own `python` and whose supervisor_pid is its own process. `down` ran that python as
    root and SIGTERMed that process; now every verb refuses the home with one line, exit 3."""
    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        project = shared / "project"
        otheruser.run_as_other(["mkdir", "-m", "0777", str(project)])
        proof = shared / "ran-as-root"
        evil = shared / "evil-python"
        otheruser.run_as_other(
            ["sh", "-c", f"printf '#!/bin/sh\\ntouch {proof}\\n' > {evil} && chmod 755 {evil}"]
        )
        home = project / ".rlaunch"
        otheruser.run_as_other(["mkdir", "-m", "0777", str(home)])
        stranger = subprocess.Popen(otheruser.as_other(["sleep", "300"]))
        try:
            plant_record(home, "20261201-000000-abcd", str(evil), stranger.pid)
            for verb in (
                ["down"],
                ["status"],
                ["logs"],
                ["attach"],
                ["supervise"],
                ["report", "--html", str(tmp_path / "r.html")],
                ["nodes"],
            ):
                done = cli(*verb, cwd=project)
                assert done.returncode == 3, (verb, done.stdout, done.stderr)
                err = done.stderr.strip()
                assert len(err.splitlines()) == 1 and "Traceback" not in err, (verb, err)
                assert f"refusing the run record {'.rlaunch'}" in err or str(home) in err, (verb, err)
                assert f"owned by {otheruser.NAME}" in err, (verb, err)
            assert stranger.poll() is None  # never signalled
            assert not proof.exists()  # the planted python never ran
            # RLAUNCH_HOME pointing at it is refused the same way; a symlinked home too.
            done = cli("status", cwd=tmp_path, env={"RLAUNCH_HOME": str(home)})
            assert done.returncode == 3 and "dubious ownership" in done.stderr
            mine = tmp_path / "home"
            mine.mkdir(mode=0o700)
            link = tmp_path / "link"
            link.symlink_to(mine)
            done = cli("status", cwd=tmp_path, env={"RLAUNCH_HOME": str(link)})
            assert done.returncode == 3 and "is a symlink" in done.stderr, done.stderr
            mine.chmod(0o777)
            done = cli("status", cwd=tmp_path, env={"RLAUNCH_HOME": str(mine)})
            assert done.returncode == 3 and "is writable by others, mode 0777" in done.stderr, done.stderr
        finally:
            stranger.kill()
            stranger.wait()


def test_a_foreign_runs_dir_inside_my_home_is_refused(tmp_path: Path) -> None:
    otheruser.ensure()
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    runs = home / "runs"
    runs.mkdir()
    os.chown(runs, otheruser.ensure().pw_uid, -1)
    done = cli("status", "--all", cwd=tmp_path, env={"RLAUNCH_HOME": str(home)})
    assert done.returncode == 3 and f"{runs}" in done.stderr and "owned by rlaunch-other" in done.stderr


def test_down_never_signals_a_supervisor_recorded_without_a_start_time(tmp_path: Path) -> None:
    """Even in our own record: a supervisor_pid without supervisor_starttime proves nothing about the PID now."""
    from launcher import supervise

    victim = subprocess.Popen(["sleep", "300"])
    try:
        root = tmp_path / "run"
        root.mkdir()
        (root / "state.json").write_text(json.dumps({"state": "running", "supervisor_pid": victim.pid}))
        assert supervise.supervisor_alive(json.loads((root / "state.json").read_text())) is False
        assert supervise.stop(root, timeout=1) is False
        start = supervise._starttime(victim.pid)
        (root / "state.json").write_text(
            json.dumps({"state": "running", "supervisor_pid": victim.pid, "supervisor_starttime": start + 1})
        )
        assert supervise.stop(root, timeout=1) is False
        assert victim.poll() is None
        (root / "state.json").write_text(
            json.dumps({"state": "running", "supervisor_pid": victim.pid, "supervisor_starttime": start})
        )
        assert supervise.stop(root, timeout=5) is True
        assert victim.wait(timeout=10) == -15
    finally:
        victim.kill()
        victim.wait()


# ------------------------------------------------------------------------------------------ 3. imports from the cwd
@pytest.mark.slow
def test_nothing_rlaunch_starts_imports_from_the_current_directory(tmp_path: Path) -> None:
    """A project directory with its own `json.py` and `launcher/` package (planted, or just a user's project): the
    doctor's probes (`python -`, the torch and library children), push (`python -c`), the guard, and a detached
    run's supervisor all ran with that directory first on sys.path. The CLI itself is started with -P here, as
    the installed `rlaunch` entry point would be (its sys.path[0] is its bin directory)."""

    proj = tmp_path / "proj"
    (proj / "launcher").mkdir(parents=True)
    proof = tmp_path / "imported-from-cwd"
    plant = f"open({str(proof)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("json.py", "ctypes.py", "launcher/__init__.py", "launcher/supervise.py"):
        (proj / name).write_text(plant)
    inventory = local_inventory_file(proj / "cluster.yaml", tmp_path / "work", N1, ["sleep", "3"])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RLAUNCH_HOME": str(tmp_path / "home")}

    def rlaunch(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-P", "-m", "launcher.cli", *args],
            cwd=proj,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )

    rlaunch("doctor", str(inventory))
    assert not proof.exists(), proof.read_text()
    done = rlaunch("up", str(inventory), "--detach", "--no-doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = sorted((tmp_path / "home" / "runs").iterdir())[-1].name
    state_file = tmp_path / "home" / "runs" / run_id / "state.json"
    state = json.loads(state_file.read_text())
    assert state.get("supervisor_pid") and isinstance(state.get("supervisor_starttime"), int), state
    import time

    deadline = time.monotonic() + 120
    while json.loads(state_file.read_text()).get("state") in ("starting", "running"):
        assert time.monotonic() < deadline, "the supervised run did not end"
        time.sleep(0.5)
    assert json.loads(state_file.read_text())["state"] == "succeeded"
    assert not proof.exists(), proof.read_text()


# ------------------------------------------------------------------------------------------ 4. digit bombs
BOMB = "9" * 5000  # Python refuses int() of more than 4300 digits (sys.int_info.default_max_str_digits)
BOMB_LINES = [
    f"[default{BOMB}]: hello",
    f"[rank{BOMB}]: hello",
    f"[default0]:step={BOMB} loss=1.5",
    f"| {BOMB}/{BOMB} [00:01<00:02,  2.10it/s]",
    f"{{'loss': 1.5, 'step': {BOMB}}}",
]


@pytest.mark.parametrize("line", BOMB_LINES, ids=["local", "global", "step", "tqdm", "dict"])
def test_every_parser_of_job_output_survives_a_digit_bomb(line: str) -> None:
    from launcher.goodput import checkpoint_step
    from launcher.health import classify, progress, rules
    from launcher.health.progress import parse_progress
    from launcher.node import edge

    edge.strip_prefixes(line)
    classify.parse_prefixes(line)
    classify.parse_rank_prefix(line)
    rules.classify(line)
    assert progress.progress_step(line) in (None, True)
    parse_progress(line)
    assert checkpoint_step(f"/ckpt/checkpoint-{BOMB}") is None
    series = progress.Progress(progress.Settings(progress_regex=r"step=(\S+)"))
    series.observe_line(1.0, line)  # a custom regex may capture anything, numbers or not
    series.observe_line(2.0, "step=abc")
    series.observe_line(3.0, "step=\u00b2")  # "²".isdigit() is True, int("²") raises


def test_edge_health_skips_a_bad_line_and_still_ends_the_node_on_the_next_fatal_one(tmp_path: Path) -> None:
    """The guard's own rules (launcher/node/edge.py with the pushed rules.py, loaded as the guard loads them):
    before, the first bomb raised out of `check`, and the guard switched edge health off for the rest of the run.
    A rules table that raises on one line (a bug, or a hostile pattern) is skipped for that line only."""
    import shutil

    from launcher.node import edge

    for name in ("rules.py", "vocabulary.py"):  # what a node gets (protocol.HEALTH_FILES)
        shutil.copy(ROOT / "launcher" / "health" / name, tmp_path / name)
    health = edge.make(str(tmp_path), {"edge": {"stall_timeout": 0}}, now=0.0)
    assert health is not None
    said: list[str] = []
    health.on_bad_line = said.append
    real = health.rules.classify

    def classify(text: str):  # the table raising on one line, as 4300+ digits once did
        if "poison" in text:
            raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")
        return real(text)

    health.rules = type(
        "Rules",
        (),
        {
            "classify": staticmethod(classify),
            "is_progress": health.rules.is_progress,
            "is_completion_marker": health.rules.is_completion_marker,
        },
    )
    lines = [
        *BOMB_LINES,
        "poison 1",
        "poison 2",
        f"[default1]:RuntimeError: HIP error: out of memory step={BOMB}",
    ]
    (tmp_path / "out.log").write_text("\n".join(lines) + "\n")
    assert health.check(1.0, []) is None  # the finding waits for its confirmation
    decision = health.check(100.0, [])
    assert decision is not None and decision["category"] == "oom" and decision["local_rank"] == 1, decision
    assert health.bad_lines == 2 and len(said) == 1 and "4300" in said[0]


# ------------------------------------------------------------------------------------------ 5. pretokenize
PRETOKENIZE = ROOT / "launcher" / "jobs" / "lf_pretokenize.py"


def test_pretokenize_refuses_a_tokenized_path_another_user_controls(tmp_path: Path) -> None:
    """rlaunch-other plants a "tokenized dataset" with a fingerprint it computed from the public inputs: node
    rank 0 reused it. Now the checkpoint_dir rule applies to tokenized_path, before anything is read or run."""
    import yaml

    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        planted = shared / "tokenized"
        otheruser.run_as_other(["mkdir", "-m", "0755", str(planted)])
        otheruser.run_as_other(["sh", "-c", f'echo \'{{"id": "x"}}\' > {planted}/rlaunch-fingerprint.json'])
        config = tmp_path / "lf.yaml"
        config.write_text(yaml.safe_dump({"tokenized_path": str(planted), "stage": "sft"}))
        proof = tmp_path / "torchrun-ran"
        done = subprocess.run(
            [sys.executable, str(PRETOKENIZE), str(config), "0", "n1", "5", "--", "touch", str(proof)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0 and "refusing tokenized_path" in done.stderr, done.stderr
        assert f"{planted} is owned by uid {otheruser.ensure().pw_uid}" in done.stderr
        assert not proof.exists()


def test_pretokenize_reuses_only_the_files_it_saved(tmp_path: Path) -> None:
    from launcher.jobs import lf_pretokenize as pt

    path = tmp_path / "tok"
    (path / "train").mkdir(parents=True)
    (path / "train" / "data-00000-of-00001.arrow").write_bytes(b"arrow")
    mine = {"id": "abc"}
    pt.write(path, pt.FINGERPRINT, {**mine, "produced": pt.produced(path)})
    assert pt.reusable(path, mine)
    (path / "train" / "data-00000-of-00001.arrow").write_bytes(b"evil!")
    assert not pt.reusable(path, mine)
    (path / "train" / "data-00000-of-00001.arrow").write_bytes(b"arrow")
    (path / "train" / "extra.arrow").write_bytes(b"more")
    assert not pt.reusable(path, mine)


def test_pretokenize_passes_its_arguments_in_a_private_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The yaml (with hf_hub_token) went on the tokenizing child's command line, readable by anyone in `ps`."""
    from launcher.jobs import lf_pretokenize as pt

    seen: dict = {}

    def child(
        argv: list[str], env: dict
    ) -> subprocess.CompletedProcess:  # the layer below: the child process
        seen["argv"] = argv
        seen["mode"] = os.stat(argv[3]).st_mode & 0o777
        seen["args"] = json.loads(Path(argv[3]).read_text())
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(pt.subprocess, "run", child)
    pt.tokenize({"hf_hub_token": "hf_secret_value", "stage": "sft"}, tmp_path / "tok", tmp_path / "scratch")
    assert not any("hf_secret_value" in a for a in seen["argv"])
    assert seen["mode"] == 0o600 and seen["args"]["hf_hub_token"] == "hf_secret_value"
    assert seen["argv"][2].startswith("import sys; sys.path[:] = ")
    assert list((tmp_path / "scratch").glob("args-*")) == []


# ------------------------------------------------------------------------------------------ 6. nodes --drain
RECORDING_SCONTROL = """#!/bin/sh
# A recording scontrol: `show node -o NAME` answers like Slurm for a cluster of n1, n2, n3 (a host list or ALL
# names several nodes), `update` is recorded and succeeds.
printf '%s\\n' "$*" >> "$SCONTROL_LOG"
if [ "$1" = show ]; then
  case "$4" in
    n1|n2|n3) echo "NodeName=$4 Arch=x86_64 CoresPerSocket=1 State=IDLE" ;;
    ALL|all|'n[1-2]') for n in n1 n2 n3; do echo "NodeName=$n Arch=x86_64 State=IDLE"; done ;;
    *) echo "Node $4 not found" >&2; exit 1 ;;
  esac
fi
exit 0
"""


def test_drain_refuses_slurm_keywords_and_job_text_and_strips_control_characters(tmp_path: Path) -> None:
    from launcher import ledger

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(RECORDING_SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    log = tmp_path / "scontrol.log"
    home = tmp_path / "home"
    gpu = {"kind": "gpu", "category": "gpu-fault", "text": "amdgpu: page fault"}
    printed = {"kind": "line", "category": "gpu-fault", "text": "Memory access fault by GPU node-1"}
    entries = []
    for host in ("ALL", "n[1-2]", "n1", "n2", "nope"):
        for i in range(3):
            root = printed if host == "n2" else gpu
            entries.append(ledger.strike(host, f"run-{i}\x1b]52;c;ZXZpbA==\x07\x1b[2K\r", "gpu-fault", root))
    ledger.append(entries, base=home)
    assert (home.stat().st_mode & 0o777, (home / "nodes.jsonl").stat().st_mode & 0o777) == (0o700, 0o600)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SCONTROL_LOG": str(log), "RLAUNCH_HOME": str(home)}
    done = cli("nodes", "--drain", "3", cwd=tmp_path, env=env)
    updates = [line for line in log.read_text().splitlines() if line.startswith("update")]
    assert len(updates) == 1 and updates[0].startswith(
        "update nodename=n1 state=drain reason=rlaunch: 3 strike"
    ), updates
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in updates[0]), updates
    assert done.returncode == 3, done.stdout + done.stderr
    assert "'ALL' is not one node name" in done.stderr and "'n[1-2]' is not one node name" in done.stderr
    assert "nope: scontrol show node nope does not name exactly that node" in done.stderr
    assert "n2" not in done.stdout  # its strikes came from a line the job printed: never drained
    assert "drained n1" in done.stdout


# ------------------------------------------------------------------------------------------ 7. low items
def test_a_foreign_ledger_line_is_skipped_by_nodes_up_and_report(tmp_path: Path) -> None:
    from cluster.inventory import from_mapping
    from launcher import ledger, spares

    home = tmp_path / "home"
    ledger.append([ledger.strike("n1", "r1", "lost", {"kind": "lost"})], base=home)
    with (home / "nodes.jsonl").open("a") as f:
        for line in (
            {"kind": "strike", "host": "n1", "time": "yesterday"},
            {"kind": "goodput", "host": "n1", "time": 5, "total_s": "lots", "productive_s": 1},
            {"kind": "strike", "host": "n1", "time": 1e999},
            {"kind": "strike", "host": "n1", "time": 7, "run_id": ["x"]},
        ):
            f.write(json.dumps(line).replace("Infinity", "1e999") + "\n")
    entries = ledger.read(home)
    assert len(entries) == 1
    assert ledger.summarize(entries)["n1"].strikes == 1
    done = cli("nodes", "--json", cwd=tmp_path, env={"RLAUNCH_HOME": str(home)})
    assert done.returncode == 0 and json.loads(done.stdout)[0]["strikes"] == 1, done.stderr
    inv = from_mapping(
        {
            "nodes": [{"host": "n1"}],
            "spares": [{"host": "s1"}],
            "job": {"kind": "command", "command": ["true"]},
            "health": {"max_strikes": 1},
        }
    )
    _, struck = spares.admit(inv, ledger.read(home), now=10.0)
    assert struck == {"n1": "s1"}


def run_frtrace(stdin: dict) -> dict:
    import resource

    code = (ROOT / "launcher" / "node" / "frtrace.py").read_text()

    def cap() -> None:  # the old reader needed ~500 MiB for the set bomb: 256 MiB makes it fail, not the box
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    done = subprocess.run(
        [sys.executable, "-I", "-c", code, "1"],
        input=json.dumps(stdin),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_flight_recorder_reader_bounds_memory_ranks_and_integers(tmp_path: Path) -> None:
    import pickle

    prefix = tmp_path / "nccl_trace_rank_"
    Path(f"{prefix}0").write_bytes(b"\x80\x04(" + b"\x8f" * (2 << 20) + b"l.")  # 2 MiB of EMPTY_SET
    Path(f"{prefix}1").write_bytes(b"\x80\x04(" + b"]" * (2 << 20) + b"l.")  # 2 MiB of EMPTY_LIST
    entry = {"collective_seq_id": 10**5000, "time_created_ns": float("inf"), "pg_id": 10**5000, "state": "x"}
    status = {"0": {"last_enqueued_collective": 10**5000, "last_completed_collective": -(10**5000)}}
    Path(f"{prefix}2").write_bytes(pickle.dumps({"entries": [entry], "pg_status": status}))
    Path(f"{prefix}7").write_bytes(pickle.dumps({"entries": []}))  # not one of this job's ranks on the node
    answer = run_frtrace({"dump": str(prefix), "pipe": None, "ranks": [0, 1, 2]})
    by_rank = {s["rank"]: s for s in answer["ranks"]}
    assert sorted(by_rank) == [0, 1, 2]
    assert "a set" in by_rank[0]["error"] and "containers" in by_rank[1]["error"], by_rank
    pg = next(iter(by_rank[2]["pgs"].values()))
    assert pg["enqueued"] == 1 << 62 and pg["completed"] == -(1 << 62), by_rank[2]
    assert all(len(str(v)) < 30 for e in by_rank[2]["entries"] for v in e), by_rank[2]


def test_extreme_losses_never_put_nan_into_the_report_svg() -> None:
    from launcher import goodput, runreport

    a = goodput.Attempt(index=0, start=0.0)
    a.progress += [(1.0, 1, -1.7e308), (2.0, 2, 1.7e308), (3.0, 3, 0.5), (4.0, 4, float("nan"))]
    svg = runreport._loss_chart([a])
    assert "<polyline" in svg and "nan" not in svg.lower() and "inf" not in svg.lower().replace("info", ""), (
        svg
    )


def test_init_never_writes_through_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(victim)
    done = cli("init", str(dangling), cwd=tmp_path)
    assert done.returncode == 2 and "already exists" in done.stderr and not victim.exists(), done.stderr
    victim.write_text("precious\n")
    link = tmp_path / "cluster.yaml"
    link.symlink_to(victim)
    done = cli("init", str(link), "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "precious\n" and not link.is_symlink() and "nodes" in link.read_text()


HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x9b31m\x1b[8m hidden \x1b[2K\rall good"
CONTROLS = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]]


def test_logs_classify_escapes_terminal_controls(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(f"{HOSTILE}\nRuntimeError: HIP error: out of memory {HOSTILE}\n")
    done = cli("logs", "classify", str(log), cwd=tmp_path)
    assert done.returncode == 1 and "out of memory" in done.stdout, done.stderr
    assert not any(c in done.stdout for c in CONTROLS), repr(done.stdout)
    assert "\\x1b]52;c;" in done.stdout and "\\x9b31m" in done.stdout


@pytest.mark.slow
def test_a_job_printing_digit_bombs_and_escapes_is_judged_by_its_fatal_line(tmp_path: Path) -> None:
    """One real local run (guard, edge rules, forwarding follower, head watcher): the job prints every digit
    bomb and terminal escapes, then a fatal line with a 5000-digit step. Before, the node's follower died on the
    first bomb (the node was reported lost) and the escapes reached the terminal raw."""

    code = (
        "import sys, time\n"
        f"for line in {BOMB_LINES!r} + [{HOSTILE!r}]:\n"
        "    print(line, flush=True)\n"
        "time.sleep(1)\n"
        f"print('RuntimeError: HIP error: out of memory step=' + '9' * 5000, flush=True)\n"
        "time.sleep(30)\n"
    )
    inventory = local_inventory_file(
        tmp_path / "cluster.yaml", tmp_path / "work", N1, [sys.executable, "-c", code]
    )
    home = tmp_path / "home"
    done = cli("up", str(inventory), "--no-doctor", cwd=tmp_path, env={"RLAUNCH_HOME": str(home)})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert not any(c in done.stdout + done.stderr for c in CONTROLS), repr(done.stdout[-500:])
    (root,) = (home / "runs").iterdir()
    outcome = json.loads((root / "outcome-0.json").read_text())
    cause = outcome["root_cause"]
    assert cause["category"] == "oom" and cause["kind"] == "line" and cause["node"] == "n1", outcome
    logs = cli("logs", root.name, cwd=tmp_path, env={"RLAUNCH_HOME": str(home)})
    assert logs.returncode == 0 and "\\x1b]52;c;" in logs.stdout, logs.stderr
    assert not any(c in logs.stdout for c in CONTROLS)


# ------------------------------------------------------------------------------------------ 8. hardening
STACKS = ROOT / "launcher" / "node" / "stacks.py"


def fake_tool(path: Path, log: Path) -> None:
    path.write_text(f'#!/bin/sh\necho "{path} $*" >> {log}\necho "Thread 1 (idle): \\"MainThread\\""\n')
    path.chmod(0o755)


def run_stacks(targets: list[dict], python: str, cwd: Path, path_env: str) -> dict:
    import resource

    def cap() -> None:  # the old collector read /dev/zero until memory ran out: fail fast instead
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run(
        [python, "-I", "-c", with_modules(STACKS.read_text(), "stacks.py", ("protocol.py",)), "5"],
        input=json.dumps(targets),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PATH": path_env},
        preexec_fn=cap,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_py_spy_is_found_beside_the_python_never_in_the_cwd_and_only_for_the_same_process(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    fake_tool(cwd / "py-spy", log)  # planted where an empty or `.` PATH entry points
    victim = subprocess.Popen(["sleep", "60"])
    try:
        path_env = f":.:{os.environ['PATH']}"
        answer = run_stacks([{"pid": victim.pid, "rank": 0}], sys.executable, cwd, path_env)
        assert not log.exists() and answer["py_spy"] != str(cwd / "py-spy"), answer
        # Beside the node's python (a venv's bin/), before anything on PATH.
        venv = tmp_path / "venv" / "bin"
        venv.mkdir(parents=True)
        (venv / "python").symlink_to(sys.executable)
        fake_tool(venv / "py-spy", log)
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        fake_tool(elsewhere / "py-spy", log)
        from launcher.node.guard import read_stat

        start = read_stat(victim.pid)["starttime"]
        answer = run_stacks(
            [{"pid": victim.pid, "rank": 0, "start": start + 1}],
            str(venv / "python"),
            cwd,
            f"{elsewhere}:/usr/bin",
        )
        assert answer["py_spy"] == str(venv / "py-spy") and not log.exists(), (
            answer
        )  # start differs: no attach
        assert "gone" in answer["ranks"][0]["error"]
        answer = run_stacks(
            [{"pid": victim.pid, "rank": 0, "start": start}], str(venv / "python"), cwd, "/usr/bin"
        )
        assert log.read_text().split() == [str(venv / "py-spy"), "dump", "--pid", str(victim.pid)]
        assert answer["ranks"][0]["tool"] == "py-spy"
    finally:
        victim.kill()
        victim.wait()


def test_stack_collector_reads_named_source_files_bounded(tmp_path: Path) -> None:
    """A frame naming /dev/zero (or a FIFO) was read through linecache without limit (5 GB in a minute, or
    blocked for good): now only a regular file of bounded size is read."""
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    code = (
        "import resource, sys; sys.path.insert(0, sys.argv[1])\n"
        "from launcher.node import stacks\n"
        f"text = 'Thread 1 (idle): \"MainThread\"\\n    main (/dev/zero:3)\\n'\n"
        f"text += 'Thread 2 (idle): \"T\"\\n    main ({fifo}:1)\\n'\n"
        "print(stacks.with_source(1, text))\n"
        "print('maxrss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=cap,
    )
    assert done.returncode == 0 and "main (/dev/zero:3)" in done.stdout, done.stderr[-500:]
    # Bounded: the old collector read /dev/zero without limit (5 GB, stopped here only by the 2 GiB address-space
    # cap); the bounded one stays far below it (about 40-210 MB seen, the higher under a loaded machine).
    assert int(done.stdout.split("maxrss_kb")[1]) < 1_000_000, done.stdout


def test_amd_smi_is_looked_up_beside_python_and_in_rocm_before_a_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher.node import facts, protocol

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    fake_tool(cwd / "amd-smi", tmp_path / "log")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PATH", f"::.:{cwd.name}:/usr/bin")
    for find in (protocol.find_tool, facts.find_tool):
        found = find("amd-smi")
        assert found is None or not found.startswith(str(cwd)), found


def test_stack_and_straggler_files_get_the_record_modes(tmp_path: Path) -> None:
    """stacks/, stacks.json and metrics.prom were written with the umask's modes (0755/0644) beside 0600 files."""
    import threading
    import time
    from types import SimpleNamespace

    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher.health.events import Event
    from launcher.node.guard import read_stat
    from launcher.records import RunRecord
    from launcher.run.forensics import HangForensics

    root = tmp_path / "r1"  # the run id is the record directory's name
    root.mkdir(mode=0o700)
    (root / "state.json").write_text("{}")  # a record has its state file from creation on (RunRecord.create)
    os.umask(os.umask(0o022))  # the umask stays as it was (what the old code relied on)
    rank = subprocess.Popen(["sleep", "60"])
    try:
        events: list[dict] = []
        plan = SimpleNamespace(env={}, python=sys.executable, ranks=range(0, 1))
        with LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")}) as transport:
            runner = SimpleNamespace(
                plan=SimpleNamespace(node=lambda h: plan, health={"stack_budget": 5.0}),
                transport=transport,
                record=RunRecord(root),
                nodes={"n1": SimpleNamespace(lost=False, last_heard=time.time())},
                watcher=SimpleNamespace(explain_hang=lambda dumps: None, stragglers=["n1"]),
                lock=threading.Lock(),
                event=events.append,
            )
            forensics = HangForensics(runner)  # type: ignore[arg-type]
            forensics.note_procs(
                "n1", [{"pid": rank.pid, "rank": 0, "start": read_stat(rank.pid)["starttime"]}]
            )
            forensics.dump_stacks()
            forensics.report_stragglers([Event(1.0, "n1", None, "straggler", "straggler", "warning", "slow")])
    finally:
        rank.kill()
        rank.wait()
    assert (root / "stacks").stat().st_mode & 0o777 == 0o700
    for path in (root / "stacks" / "n1.txt", root / "stacks.json", root / "metrics.prom"):
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert 'rlaunch_straggler{node="n1",run="r1"} 1.0' in (root / "metrics.prom").read_text()


def test_a_crash_report_never_lands_in_a_foreign_home(tmp_path: Path) -> None:
    """With the home refused, the traceback of an internal error goes to a fresh 0600 file under $TMPDIR."""
    from launcher import records

    otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        home = shared / "home"
        otheruser.run_as_other(["mkdir", "-m", "0777", str(home)])
        os.environ["RLAUNCH_HOME"] = str(home)
        try:
            path = records.write_crash_report("Traceback ...")
        finally:
            del os.environ["RLAUNCH_HOME"]
        assert not path.is_relative_to(home) and path.stat().st_mode & 0o777 == 0o600
        assert list(home.iterdir()) == []
        path.unlink()


def test_the_heads_follower_skips_a_record_it_cannot_read_and_says_so_once(tmp_path: Path) -> None:
    """launcher/run/attempt.py: a follower record `_on_record` raises on (here a non-numeric offset, as a digit bomb once
    raised) is skipped and counted, one warning event per node; the lines after it are still followed."""
    from cluster.inventory import from_mapping
    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher import plan as planning
    from launcher.records import RunRecord
    from launcher.run.attempt import Runner

    inv = from_mapping(
        {
            "transport": "local",
            "python": sys.executable,
            "workdir": str(tmp_path / "w"),
            "nodes": [{"host": "n1", "address": "127.0.0.1"}],
            "job": {"kind": "command", "command": ["true"]},
        }
    )
    plan = planning.build_plan(inv, run_id="r1", sources=planning.load_sources(inv), head_env={})
    record = RunRecord.create("r1", plan.to_json(), base=tmp_path / "home")
    lines: list[str] = []
    events: list[dict] = []
    with LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")}) as transport:
        runner = Runner(
            plan, transport, record, on_line=lambda h, r, t: lines.append(t), on_event=events.append
        )
        for off in ("bad", "worse", 10):
            runner._on_follow(
                "n1", "stdout", json.dumps({"k": "line", "t": 1.0, "off": off, "text": f"x {off}"})
            )
    record.close()
    assert lines == ["x 10"]
    warnings = [e for e in events if e.get("kind") == "warning"]
    assert len(warnings) == 1 and warnings[0]["node"] == "n1" and "ValueError" in warnings[0]["text"], events
    assert runner._bad_records == {"n1": 2}
