"""The house rules that keep the head↔node contract and the error model in one place (issue 12)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from launcher.errors import BadInput, ExitCode, Infra, JobFailed, RlaunchError
from launcher.guardctl import GuardReply, GuardTarget
from launcher.node import protocol

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_cluster_imports_nothing_from_launcher() -> None:
    for path in (ROOT / "cluster").rglob("*.py"):
        bad = {m for m in imported_modules(path) if m == "launcher" or m.startswith("launcher.")}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_node_files_import_nothing_of_ours_but_node() -> None:
    ours = ("launcher", "cluster", "templates", "ops")
    for path in (ROOT / "launcher" / "node").glob("*.py"):
        bad = {
            m for m in imported_modules(path) if m.split(".")[0] in ours and not m.startswith("launcher.node")
        }
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_the_readme_exit_code_table_is_the_one_defined() -> None:
    readme = (ROOT / "docs" / "design.md").read_text()  # moved from the README (issue 24)
    table = readme.split("### Exit codes", 1)[1].split("\n\n")[2]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", table, re.MULTILINE)}
    assert documented == {int(code) for code in ExitCode}, table


def test_no_verb_invents_an_exit_code() -> None:
    """Exit codes come from launcher/errors.py: no literal `sys.exit(N)` / `code=N` elsewhere in launcher/."""
    literal = re.compile(r"sys\.exit\(\d+\)|\bcode=\d\b")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in (ROOT / "launcher").rglob("*.py")
        if "node" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert not offenders, "\n".join(offenders)


def test_errors_carry_their_exit_codes() -> None:
    assert (BadInput("x").code, Infra("x").code, JobFailed("x").code) == (2, 3, 1)
    assert RlaunchError("x", code=2).code is ExitCode.BAD_INPUT


def test_guard_argv_and_replies() -> None:
    argv = protocol.guard_argv("/venv/bin/python", "/w/r/n1", protocol.STOP, grace=2)
    assert argv == ["/venv/bin/python", "-I", "/w/r/n1/guard.py", "stop", "/w/r/n1", "--grace", "2.0"]
    assert protocol.reply_of('noise\n{"state": "stopped"}\n\n') == {"state": "stopped"}
    assert protocol.reply_of("Traceback ...\nValueError: x") is None
    assert protocol.parse_record('{"k": "line", "text": "a"}') == {"k": "line", "text": "a"}
    assert protocol.parse_record("[1, 2]") is None


def test_tampered_node_targets_are_refused() -> None:
    good = {"host": "n1", "python": "/venv/bin/python", "run_dir": "/w/r/n1"}
    assert GuardTarget.from_json(good) == GuardTarget("n1", "/venv/bin/python", "/w/r/n1")
    for bad in ({**good, "python": 3}, {**good, "run_dir": "relative"}, {**good, "host": ""}, ["n1"]):
        try:
            GuardTarget.from_json(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad}")


def test_a_guard_that_answered_with_an_error_is_not_ok() -> None:
    from cluster.transport import Result

    assert not GuardReply.of(Result("n1", 2, stdout='{"error": "no such run directory"}')).ok
    assert GuardReply.of(Result("n1", 1, stdout='{"state": "stopped", "remaining": [7]}')).ok
    assert GuardReply.of(Result("n1", None, error="unreachable")).error == "unreachable"


def test_every_state_maps_into_the_run_vocabulary() -> None:
    from launcher.health.watch import State as WatchState
    from launcher.states import FROM_GUARD, FROM_WATCH, RunState, is_active

    assert set(FROM_GUARD) == {protocol.RUNNING} | set(protocol.TERMINAL_STATES)
    assert set(FROM_WATCH) == set(WatchState)
    assert all(FROM_GUARD[s].is_terminal() for s in protocol.TERMINAL_STATES)
    assert is_active("running") and not is_active("abandoned") and not is_active("garbage")
    assert RunState.parse("stop-failed") is RunState.STOP_FAILED


def test_every_package_is_installed() -> None:
    """pyproject.toml lists packages by hand (templates/ installs as launcher.templates): none may be missing."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("launcher", "cluster")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found | {"launcher.templates"} == listed


def _launcher_lines(pattern: str, under: str = "launcher", skip: tuple[str, ...] = ()) -> list[str]:
    """`grep -rn PATTERN launcher` in Python: "file:line: text" for every match, outside the `skip` files."""
    found = []
    for path in sorted((ROOT / under).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel in skip:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_run_states_are_written_through_the_one_setter() -> None:
    """`grep -rn 'state="' launcher` is empty: a run's state is a RunState, written by RunRecord.set_state."""
    assert _launcher_lines(r'state="', skip=("launcher/states.py",)) == []


def test_node_code_emits_record_kinds_from_the_protocol() -> None:
    """`grep -rn '"k": "' launcher/node` is empty: the guard and edge.py emit protocol.K_* kinds."""
    assert _launcher_lines(r'"k": "', under="launcher/node") == []


def test_nobody_reaches_into_the_runner() -> None:
    """`grep -rn 'runner\\._' launcher` is empty: helpers use Runner.lock and Runner.event."""
    assert _launcher_lines(r"runner\._") == []


def test_replies_are_read_by_the_protocol() -> None:
    """`grep -rn 'splitlines()\\[-1\\]' launcher` is empty: a node script's reply is read by protocol.reply_of."""
    assert _launcher_lines(r"splitlines\(\)\[-1\]") == []


def test_errors_are_raised_and_caught_by_type() -> None:
    """`grep -rn 'code=.*BAD_INPUT\\|\\.code == 2' launcher` is empty: bad input is a BadInput, caught as one."""
    from launcher.run import LaunchError, LaunchRefused

    assert _launcher_lines(r"code=.*BAD_INPUT|\.code == 2") == []
    refused = LaunchRefused("run r1 is still running on these nodes")
    assert (
        isinstance(refused, BadInput) and isinstance(refused, LaunchError) and not isinstance(refused, Infra)
    )
    assert refused.code == ExitCode.BAD_INPUT


def test_verb_entry_points_return_exit_codes_by_name() -> None:
    """No `return 2` in the supervisor's or the CLI's code: exit codes come from launcher/errors.py by name."""
    paths = [ROOT / "launcher" / "supervise.py", *sorted((ROOT / "launcher" / "cli").glob("*.py"))]
    literal = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            value = node.value if isinstance(node, ast.Return) else None
            if isinstance(value, ast.Constant) and type(value.value) is int:
                literal.append(f"{path.relative_to(ROOT)}:{node.lineno}: return {value.value}")
    assert literal == []


def test_state_setter_and_settle_speak_the_run_vocabulary(tmp_path: Path) -> None:
    import pytest

    from launcher import records
    from launcher.lifecycle import settle
    from launcher.states import RunState

    record = records.RunRecord.create("20260101-000000-abcd", {"nodes": []}, base=tmp_path)
    assert RunState.parse(record.read_state()["state"]) is RunState.PLANNED
    assert record.set_state(RunState.RUNNING, attempt=1)["state"] == "running"
    with pytest.raises(ValueError):
        record.update_state(state="half-done")  # a word outside RunState never reaches state.json
    assert record.read_state()["state"] == "running"
    assert settle({"a": protocol.SUCCEEDED, "b": protocol.SUCCEEDED}) == (
        RunState.SUCCEEDED,
        "every node succeeded",
    )
    final, why = settle({"a": protocol.SUCCEEDED, "b": protocol.LOST_LAUNCHER})
    assert final is RunState.FAILED and "b: lost-launcher" in why
    assert settle({"a": protocol.SUCCEEDED, "b": protocol.RUNNING}) is None
    record.close()


def test_transport_failures_carry_a_kind_and_validate_reads_it() -> None:
    """Every transport failure has a kind (unreachable, auth, host-key, timeout); validate counts unreachable
    nodes by it, never by words in the message."""
    import socket

    import pytest

    from cluster.local import LocalTransport
    from cluster.ssh import SSHTransport
    from cluster.transport import FAILURE_KINDS, TIMEOUT, UNREACHABLE, Endpoint, Result

    assert set(FAILURE_KINDS) == {"unreachable", "auth", "host-key", "timeout"}
    assert Result("n1", None, error="gone").failure == UNREACHABLE and Result("n1", 0).failure is None
    with pytest.raises(ValueError):
        Result("n1", None, error="gone", failure="weather")
    local = LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")})
    slow = local.run("n1", ["sleep", "5"], timeout=0.2)
    assert slow.error and slow.failure == TIMEOUT
    with socket.socket() as s:  # a port nobody listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ssh = SSHTransport({"n1": Endpoint(host="n1", address="127.0.0.1", port=port, connect_timeout=2)})
    try:
        refused = ssh.run("n1", ["true"], timeout=5)
    finally:
        ssh.close()
    assert refused.error and "refused" in refused.error and refused.failure == UNREACHABLE
    assert _launcher_lines(r'"timed out"|"connect"|"refused"', under="launcher/validate") == []


def test_heartbeats_go_out_only_from_their_own_thread_and_never_block() -> None:
    """Issue 23: the words on a follower's stdin live in protocol.py, and the head writes heartbeats only through
    guardctl.Heartbeats (its own thread, `try_write`); a blocking `.write(` of a heartbeat anywhere else would
    put every guard behind one slow node again."""
    word = re.compile(r"""["']hb(\\n)?["']""")
    for top in ("launcher", "cluster"):
        for path in (ROOT / top).rglob("*.py"):
            if path.name == "protocol.py":
                continue
            text = path.read_text()
            assert not word.search(text), f"{path.relative_to(ROOT)} spells the heartbeat word itself"
    guardctl = (ROOT / "launcher" / "guardctl.py").read_text()
    assert "try_write(self._word)" in guardctl and ".write(self._word)" not in guardctl.replace(
        "try_write", ""
    )
    assert "protocol.HEARTBEAT" in (ROOT / "launcher" / "node" / "guard.py").read_text()


def test_every_vocabulary_family_cites_its_emitter_source() -> None:
    """Health rules derived from an emitter's error list name the repository file (and commit) they were read from, and
    the health module stays standard-library only (the node guard applies the same table at the edge)."""
    from launcher.health import vocabulary

    for family in vocabulary.FAMILIES:
        assert family.rows and re.search(r"\w+/\S+\.(?:cpp|c|cc|h|hpp|py)\b", family.source), family.name
    text = (ROOT / "launcher" / "health" / "vocabulary.py").read_text(encoding="utf-8")
    assert re.search(r"hip_error\.cpp \(commit [0-9a-f]{40}", text) and re.search(
        r"hsa\.cpp hsa_status_string \(commit", text
    )
    tree = ast.parse(text)
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= {"__future__", "re", "dataclasses"}, imported


def test_one_progress_parser_and_a_sourced_corpus() -> None:
    """Issue 20: progress lines are read in one place (launcher/health/progress.py); goodput, attempts and the
    report hold no progress regexes of their own. Every third-party program in tests/corpus/ comes with its
    licence and a SOURCE.md naming the repository, the commit and the edits."""
    for name in ("goodput.py", "attempts.py", "runreport.py"):
        text = (ROOT / "launcher" / name).read_text()
        assert not re.search(r"^(?:STEP|TQDM|LOSS|PROGRESS_PATTERNS)\b\s*=|def parse_progress", text, re.M), (
            name
        )
    programs = [p for p in (ROOT / "tests" / "corpus").iterdir() if p.is_dir()]
    assert programs
    for program in programs:
        source = (program / "SOURCE.md").read_text()
        assert (program / "LICENSE").is_file(), program
        assert "https://github.com/" in source and re.search(r"\b[0-9a-f]{40}\b", source), program


def test_no_stand_in_package_shadows_a_real_one() -> None:
    """Real parts, not mocks: no test puts a stand-in package on PYTHONPATH (LLaMA-Factory once imported a stub
    torchaudio from tests/, so the project's own venv could not run it and nothing said so: issue 20 item 4)."""
    assert not (ROOT / "tests" / "stubs").exists()
    pattern = re.compile(r"PYTHONPATH[^\n]{0,80}tests" + r"[/\"' ,]+(stubs|fakes)")
    offenders = [
        p.relative_to(ROOT).as_posix()
        for p in [*ROOT.glob("tests/*.py"), *ROOT.glob("scripts/*"), ROOT / "Makefile"]
        if p.is_file() and pattern.search(p.read_text(errors="replace"))
    ]
    assert offenders == []


def test_strikes_need_node_level_evidence() -> None:
    """The ledger strikes a node only for what only that node did: a signal alone or an exception never counts."""
    from launcher.ledger import node_fault

    assert node_fault({"node": "n", "kind": "exit", "signal": "SIGKILL", "category": "crash"}) is None
    assert node_fault({"node": "n", "kind": "line", "category": "crash", "text": "IndexError: x"}) is None
    assert node_fault({"node": "n", "kind": "gpu", "category": "gpu-fault"}) == "gpu-fault"


def test_the_restart_policy_and_the_net_checks_do_no_io() -> None:
    """launcher/restart_policy.py, launcher/doctor/net.py and launcher/health/netinit.py decide from plain data
    (tested with plain event data): no files, processes, sockets, transports or records of their own."""
    io_modules = {"os", "subprocess", "socket", "shutil", "pathlib", "cluster.transport", "launcher.records"}
    for rel in ("launcher/restart_policy.py", "launcher/doctor/net.py", "launcher/health/netinit.py"):
        path = ROOT / rel
        bad = imported_modules(path) & io_modules
        assert not bad, f"{rel} imports {bad}"
        assert "open(" not in path.read_text(), f"{rel} opens files"


def test_the_probe_ships_every_node_module_facts_imports() -> None:
    """facts.py runs from stdin on the node: every node module it imports must be in gather.PROBE_MODULES."""
    from launcher.doctor.gather import PROBE_MODULES

    node_modules = {p.stem for p in (ROOT / "launcher" / "node").glob("*.py")}
    imported = imported_modules(ROOT / "launcher" / "node" / "facts.py") & node_modules
    assert {f"{m}.py" for m in imported} == set(PROBE_MODULES)


def test_every_python_rlaunch_starts_is_isolated_from_the_cwd() -> None:
    """docs/security.md, issue 21: `python -c`/`python -`/`-m` put the current directory first on sys.path, so every
    interpreter rlaunch starts runs with -I (protocol.script_argv, guard_argv, the supervisor's BOOT), or runs code
    that starts with SAFE_PATH (it imports the job's torch with the job's PYTHONPATH). The one exception is the
    job itself: torchrun (`-m torch.distributed.run`) runs in the job's own directory, as the user runs it."""
    safe_code = ("TORCH_PROBE", "IMPORT_PROBE", "ENV_SCRIPT", "TOKENIZE")
    offenders = []
    for path in sorted((ROOT / "launcher").rglob("*.py")) + sorted((ROOT / "cluster").rglob("*.py")):
        text = path.read_text()
        for m in re.finditer(r'(python\w*|sys\.executable)[^\n]{0,40}?,\s*"(-c|-m|-)"', text):
            window = text[max(0, m.start() - 160) : m.end() + 80]
            if '"-I"' in window or "script_argv(" in window or any(name in window for name in safe_code):
                continue
            if path.name == "base.py" and '"torch.distributed.run"' in window:
                continue
            offenders.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert offenders == [], offenders
    assert protocol.guard_argv("p", "/r", protocol.STOP)[1] == protocol.ISOLATED == "-I"
    from launcher.jobs.lf_pretokenize import TOKENIZE
    from launcher.node.facts import IMPORT_PROBE, TORCH_PROBE
    from launcher.validate.stages import ENV_SCRIPT

    for code in (TORCH_PROBE, IMPORT_PROBE, ENV_SCRIPT, TOKENIZE):
        assert code.startswith(protocol.SAFE_PATH)


def test_node_probes_write_files_only_without_following_links() -> None:
    """Doctor's probes (launcher/node/facts.py) create files through mkstemp only, after the push path rule
    (issue 21): no `open(..., "w"/"a")`, and the rule text is push.py's."""
    facts = (ROOT / "launcher" / "node" / "facts.py").read_text()
    assert not re.search(r"""(?<!fd)open\((?!fd)[^)]*["'][wax]b?\+?["']""", facts)
    assert "O_CREAT" not in facts or "O_NOFOLLOW" in facts
    push = (ROOT / "launcher" / "node" / "push.py").read_text()
    rule = re.search(r'^RULE = "(.*)"$', facts, re.M)
    assert rule and f'RULE = "{rule.group(1)}"' in push
    assert (
        "unsafe_path(" in facts.split("def writable", 1)[1].split("def read_markers", 1)[0]
        or "_private_dirs(" in facts
    )


def test_job_output_parsers_bound_their_digit_counts() -> None:
    """int() refuses more than 4300 digits (issue 21): no unbounded `(\\d+)` capture in the modules that parse job
    output (rank prefixes, progress, goodput)."""
    for name in ("node/edge.py", "health/classify.py", "health/progress.py", "goodput.py"):
        text = (ROOT / "launcher" / name).read_text()
        assert r"(\d+)" not in text, name


def test_slurm_fan_out_is_one_job_step_per_call() -> None:
    """Issue 23: under Slurm a run costs a constant number of job steps, not one per command per node. Fan-out is
    one Transport call (`run_all`, `start_all`) that SlurmTransport answers with ONE step; the run loop starts
    every attached guard with one call and stops them with the stop word on their channels first; the node-side
    dispatcher is standard library only (it runs with the node's python, `-I`)."""
    import inspect
    import sys

    from cluster.slurm import DISPATCH, SlurmTransport
    from cluster.transport import Transport
    from launcher.run import Runner

    assert SlurmTransport.run_all is not Transport.run_all
    assert SlurmTransport.start_all is not Transport.start_all
    start = inspect.getsource(Runner._start_attached)
    assert "run_attached(" in start and ".follow(" not in start
    assert "stop_over_channels(" in inspect.getsource(Runner.stop)
    imported = set()
    for node in ast.walk(ast.parse(DISPATCH)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= set(sys.stdlib_module_names), imported
