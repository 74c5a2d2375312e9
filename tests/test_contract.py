"""The house rules that keep the head↔node contract and the error model in one place (issue 12)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
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
    from launcher.run.attempt import LaunchError, LaunchRefused

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
    assert "protocol.HEARTBEAT" in (ROOT / "launcher" / "node" / "follower.py").read_text()


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
    assert re.search(r'^RULE = "(.*)"$', push, re.M) and "unsafe_path = push.unsafe_path" in facts  # one rule
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


# ---- issue 22: the run loop's one home, and the rules that keep it one -------------------------------------------

# The two factories that import their implementations lazily, by kind, from the modules that implement their
# interface (so each implementation may import the interface): the only import circles allowed.
LAZY_FACTORIES = {"cluster/transport.py": "make_transport", "launcher/jobs/base.py": "adapter_for"}


def _our_module_files() -> dict[str, Path]:
    """Dotted module name → file, for cluster/ and launcher/ (a package is its __init__.py)."""
    out = {}
    for top in ("cluster", "launcher"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """Our modules that `path` imports, at module level or inside a function (a lazy import is still an arrow),
    leaving out what the lazy factories import inside themselves."""
    rel = str(path.relative_to(ROOT))
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == LAZY_FACTORIES.get(rel):
            skipped.update(id(inner) for inner in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}" for alias in node.names
            )  # `from launcher import ledger`
    return {name for name in found if name in known}


def test_no_import_circles_but_the_two_lazy_factories() -> None:
    """Issue 22: data flows one way. Every import among cluster/ and launcher/ (lazy ones too) forms no circle,
    except through the transport and job-kind factories (`make_transport`, `adapter_for`), whose kind-by-kind
    imports are their whole point. The circles this rule ended: run.py <-> hangs.py, lifecycle.py <->
    supervise.py, doctor/checks.py <-> doctor/net.py, jobs/lfdata.py <-> jobs/llamafactory.py."""
    known = _our_module_files()
    graph = {name: _imports_of(path, known) - {name} for name, path in known.items()}
    # Tarjan's strongly connected components: any component of two or more modules is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(graph[name]):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == name:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert circles == [], "\n".join(
        " <-> ".join(c) + ": " + "; ".join(f"{a} -> {sorted(graph[a] & set(c))}" for a in c) for c in circles
    )


def test_the_run_loop_lives_in_launcher_run() -> None:
    """Issue 22: one attempt, the restart loop, forensics and signal handling each have one room in launcher/run/;
    lifecycle and the supervisor launch through `launch()` (launcher/run/launch.py, which calls `execute()`; the
    supervisor re-attaching calls `execute()` itself), and nobody else builds a restart loop or a Runner."""
    run = ROOT / "launcher" / "run"
    assert {p.name for p in run.glob("*.py")} >= {
        "attempt.py",
        "loop.py",
        "launch.py",
        "forensics.py",
        "signals.py",
    }
    assert not (ROOT / "launcher" / "run.py").exists() and not (ROOT / "launcher" / "hangs.py").exists()
    assert "execute(" in (run / "launch.py").read_text()
    for name, calls in (("lifecycle.py", ("launch(",)), ("supervise.py", ("launch(", "execute("))):
        text = (ROOT / "launcher" / name).read_text()
        assert all(c in text for c in calls) and "Runner(" not in text and "Policy.from_config" not in text, (
            name
        )
    outside = [
        line
        for line in _launcher_lines(r"\bRunner\(|restart_policy\.Policy\b|signal\.signal\(")
        if not line.startswith(("launcher/run/", "launcher/node/"))
    ]
    assert outside == []
    # Forensics sees the attempt through its narrow view, never the Runner class.
    assert "launcher.run.attempt" not in imported_modules(run / "forensics.py")


def test_the_run_loop_speaks_through_public_seams() -> None:
    """Issue 22: no reach into another object's private state from the run loop's rooms or their callers
    (`runner._lock`, `watcher._record`, `runner.nodes[host]` from outside the Runner), and validation splits attempts by
    the loop's `on_attempt`, never by the words of a status line."""
    assert _launcher_lines(r"runner\._|watcher\._|runner\.nodes\[") == []
    runner = (ROOT / "launcher" / "validate" / "runner.py").read_text()
    assert "on_attempt" in runner and 'startswith("restart ' not in runner


def _literal_exit_codes(path: Path) -> list[str]:
    """Every `return <int>` and `Outcome(<int>, ...)` of one module, as "file:line: N"."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        literal = node.value if isinstance(node, ast.Return) else None
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Outcome" and node.args:
            literal = node.args[0]
        if isinstance(literal, ast.Constant) and type(literal.value) is int:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {literal.value}")
    return found


def test_run_verbs_return_no_literal_exit_codes() -> None:
    """The rule of test_verb_entry_points_return_exit_codes_by_name, over every verb module of the run: no
    `return <int>` and no `Outcome(<int>, ...)` in lifecycle, the supervisor or launcher/run/; the codes come from
    launcher/errors.py by name."""
    run = sorted((ROOT / "launcher" / "run").glob("*.py"))
    paths = [ROOT / "launcher" / "lifecycle.py", ROOT / "launcher" / "supervise.py", *run]
    assert [line for path in paths for line in _literal_exit_codes(path)] == []


def test_run_states_are_named_not_spelled() -> None:
    """The rule of test_run_states_are_written_through_the_one_setter, wider: outside launcher/states.py (and the
    node, which speaks protocol.py), no state.json write spells a state (`set_state("…")`, `update_state(state=`)
    and no module keeps its own set of active states (`("running", "starting")`): `states.is_active` decides."""
    assert (
        _launcher_lines(r'set_state\(\s*"|update_state\([^)]*\bstate=', skip=("launcher/records.py",)) == []
    )
    active = [
        line
        for line in _launcher_lines(r'\(\s*"running",\s*"starting"|\(\s*"starting",\s*"running"')
        if not line.startswith(("launcher/states.py", "launcher/node/"))
    ]
    assert active == []


# Issue 22: node-script calls, the guard's bundle, the follower's records, the run record's layout.


def test_node_script_calls_go_through_nodecall() -> None:
    """Every node-script call from the head is built (`python -I -c CODE`, `python -I -`) and read (the JSON reply on
    the last line) by launcher/nodecall.py; guard verbs by launcher/guardctl.py. The head's own supervisor
    (supervise.py BOOT) is no node script."""
    skip = ("launcher/nodecall.py", "launcher/guardctl.py")
    pattern = r"(?<!nodecall\.)(script_argv|reply_of)\(|\"-I\", \"-c\""
    head = [line for line in _launcher_lines(pattern, skip=skip) if not line.startswith("launcher/node/")]
    assert [line for line in head if not line.startswith("launcher/supervise.py")] == []
    assert _launcher_lines(r"json\.loads\([^)]*\.stdout", skip=skip) == []
    # One reader of a node script's text: nodecall.node_script.
    assert _launcher_lines(r"import .*\bnode_script\b") == []


def test_the_guard_bundle_is_the_only_pushed_file_list() -> None:
    """plan.py pushes protocol.GUARD_BUNDLE and names none of its files itself, and the bundle holds every module
    the guard imports beside itself (guard.py run as a script imports its siblings by their bare names)."""
    plan = (ROOT / "launcher" / "plan.py").read_text()
    for name in protocol.GUARD_BUNDLE:
        assert f'"{name}"' not in plan and f"'{name}'" not in plan, f"plan.py names {name} itself"
    assert plan.count("protocol.GUARD_BUNDLE") == 2  # the files of every node plan, and load_sources
    node = ROOT / "launcher" / "node"
    siblings = {p.stem for p in node.glob("*.py")}
    todo, seen = ["guard"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [m for m in imported_modules(node / f"{name}.py") if m in siblings]
    node_files = set(protocol.GUARD_BUNDLE) - set(protocol.HEALTH_FILES) - {protocol.RULES_INDEX_FILE}
    assert {f"{m}.py" for m in seen} <= node_files
    assert node_files <= {f"{m}.py" for m in siblings}
    assert (ROOT / "launcher" / "health" / protocol.RULES_FILE).is_file()


def test_node_records_carry_protocol_kinds_only() -> None:
    """No record built in launcher/node has a literal "k": every {"k": ...} takes a protocol.K_* name."""
    kinds = {name for name in dir(protocol) if name.startswith("K_")}
    bad = []
    for path in sorted((ROOT / "launcher" / "node").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                literal = isinstance(key, ast.Constant) and key.value == "k"
                if literal and not (isinstance(value, ast.Attribute) and value.attr in kinds):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert bad == []


def test_the_head_takes_the_followers_rule_for_a_flagged_line() -> None:
    """A flagged line carries the rule its follower matched and the local rank it read (edge.Forwarder), and the
    head's watcher uses that rule (Watcher.observe_line(rule=...)) instead of classifying the line again."""
    edge = (ROOT / "launcher" / "node" / "edge.py").read_text()
    assert edge.count('"lr": local') == 3
    run = (ROOT / "launcher" / "run" / "attempt.py").read_text()
    assert "observe_line(now, host, rank, rest, rule=rule)" in run


def test_the_run_records_layout_lives_in_records_py() -> None:
    """Paths inside a run record come from RunRecord (records.py: targets, outcomes, stacks, fr, metrics,
    progress ...), never built from `record.root / "..."` elsewhere."""
    names = r'"(targets|outcome)-|"(targets|stacks|fr)\.json"|"metrics\.prom"|"progress\.jsonl"|root / "'
    assert _launcher_lines(names, skip=("launcher/records.py",)) == []


def test_every_command_documents_its_exit_codes() -> None:
    """Scripts branch on exit codes: each verb's --help says which it returns (like `up`'s), and only codes
    launcher/errors.py defines (issue 24)."""
    import re

    import click

    from launcher.cli import main
    from launcher.errors import ExitCode

    known = {int(c) for c in ExitCode}
    missing, unknown = [], []

    def walk(group: click.Group, prefix: str) -> None:
        for name, command in sorted(group.commands.items()):
            if isinstance(command, click.Group):
                walk(command, f"{prefix}{name} ")
                continue
            text = command.help or ""
            line = next((part for part in text.split("Exit:")[1:2]), None)
            if line is None:
                missing.append(f"{prefix}{name}")
                continue
            codes = {int(c) for c in re.findall(r"(?:^|·)\s*(\d{1,3})\s", line.split("\n\n")[0])}
            if not codes or codes - known:
                unknown.append(f"{prefix}{name}: {sorted(codes - known) or 'no codes'}")

    walk(main, "")
    assert not missing, f"no `Exit:` line in --help: {missing}"
    assert not unknown, unknown


def test_ssh_connections_parse_no_known_hosts_and_poll_quietly() -> None:
    """Issue 23 (scale): a connection never parses a whole known_hosts file (N² parses for a verb on N nodes; the
    transport parses each file once, `SSHTransport._host_keys`), and every paramiko Transport is the quiet one
    (one idle wake-up a second, not ten: ~1 ms of head CPU per node per second)."""
    source = (ROOT / "cluster" / "ssh.py").read_text()
    calls = [
        node.func.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    ]
    assert "load_host_keys" not in calls and "load_system_host_keys" not in calls
    connects = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "connect"
        and any(k.arg == "sock" for k in node.keywords)
    ]
    assert connects and all(
        any(
            k.arg == "transport_factory" and isinstance(k.value, ast.Name) and k.value.id == "_QuietTransport"
            for k in node.keywords
        )
        for node in connects
    ), "every SSHClient.connect passes transport_factory=_QuietTransport"


def test_tests_share_one_copy_of_the_e2e_helpers_and_no_machine_wide_paths() -> None:
    """Issue 22 item 6: one home for what end-to-end tests share (tests/e2e_helpers.py, the run_home fixture of
    tests/conftest.py), and nothing one test run shares with another by accident: no test runs the demo's
    inventory as it stands (its workdir /tmp/rlaunch-demo is one per machine, and its node locks with it)."""
    shared = {"processes_of_run", "wait_for", "run_home", "assert_nothing_left", "scaled"}
    for path in (ROOT / "tests").glob("test_*.py"):
        tree = ast.parse(path.read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert not defined & shared, f"{path.name} defines its own {sorted(defined & shared)}"
        assert not re.search(r'"up",\s*"examples/local\.yaml"', path.read_text()), path.name


def test_simulated_nodes_die_with_their_harness() -> None:
    """tests/simnodes.py spawns every node with a parent-death signal from a thread that lives as long as the
    process, and its namespaces are PID 1-killed when unshare dies: a SIGKILLed test worker leaves no sshd."""
    text = (ROOT / "tests" / "simnodes.py").read_text()
    assert '"setpriv", "--pdeathsig", "KILL"' in text and "--kill-child=SIGKILL" in text
    assert "_SPAWNER.submit(" in text and "reap_leftovers()" in text


def test_stop_requests_speak_one_contract() -> None:
    """`rlaunch stop --save` (docs/preemption.md): the inventory's stop signals are stopreq.py's, none of them one
    that torchrun's agent turns into "kill the workers" (its TORCHELASTIC_SIGNALS_TO_HANDLE default, docs/facts.md);
    the plan's stop file is the one the guard hook reads; the requeue code is documented; the guard calls the
    hook and nothing else of stop logic lives in guard.py."""
    import typing

    from cluster.inventory import JobSpec
    from launcher import plan
    from launcher.node import rlaunch_job, stopreq

    signals = typing.get_args(JobSpec.model_fields["stop_signal"].annotation)
    assert set(signals) == set(stopreq.SIGNALS)
    assert not set(signals) & {"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGKILL"}
    assert plan.STOP_FILE == stopreq.STOP_FILE
    assert rlaunch_job.REQUEUE_EXIT_CODE == 75 and "**75**" in (ROOT / "docs" / "preemption.md").read_text()
    daemon = (ROOT / "launcher" / "node" / "daemon.py").read_text()
    assert daemon.count("stopreq.") <= 2 and "SigCgt" not in daemon  # a hook of a few lines
    assert "stopreq.py" in protocol.GUARD_BUNDLE


def test_slurm_fan_out_is_one_job_step_per_call() -> None:
    """Issue 23: under Slurm a run costs a constant number of job steps, not one per command per node. Fan-out is
    one Transport call (`run_all`, `start_all`) that SlurmTransport answers with ONE step; the run loop starts
    every attached guard with one call and stops them with the stop word on their channels first; the node-side
    dispatcher is standard library only (it runs with the node's python, `-I`)."""
    import inspect
    import sys

    from cluster.slurm import DISPATCH, SlurmTransport
    from cluster.transport import Transport
    from launcher.run.attempt import Runner

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


def test_guards_start_one_way_and_the_head_benchmark_takes_it() -> None:
    """Turn 21: a run starts each guard on the channel that then follows it (`start-follow`, or `run` under Slurm), so
    the head never sends the plain `start` verb and then opens a second channel; that path lived on only in tests
    and in bench/headsim.py, which measured a start the launcher no longer made. Runner.launch is the one entry
    point (push, checks, start), and the head-only benchmark and simulation go through it, answering start-follow."""
    import inspect

    from launcher.guardctl import GuardClient
    from launcher.run.attempt import Runner

    head = [p for p in _head_modules() if p.name != "guardctl.py"]
    assert not [p for p in head if "protocol.START," in p.read_text() or "protocol.START)" in p.read_text()]
    assert not hasattr(GuardClient, "start")
    assert list(inspect.signature(Runner.start).parameters) == ["self"]
    assert "_start_following()" in inspect.getsource(Runner.launch)
    bench = (ROOT / "bench" / "headsim.py").read_text()
    assert "runner.launch()" in bench and "runner.start()" not in bench and "protocol.START_FOLLOW" in bench


def _head_modules() -> list[Path]:
    """launcher/ as the head runs it: not launcher/node/ (pushed to the nodes, its own exit statuses) nor
    launcher/jobs/ (wrappers that run as the job)."""
    skip = {"node", "jobs"}
    return [p for p in sorted((ROOT / "launcher").rglob("*.py")) if not skip & set(p.relative_to(ROOT).parts)]


def test_verbs_leave_only_through_the_one_mapping() -> None:
    """A verb raises a typed error and the CLI's `guarded` leaves with its code (`_leave`): no `sys.exit(...)` or
    `os._exit(...)` anywhere else on the head but the supervisor's process entry (`sys.exit(main())`) and its
    fork's parent."""
    allowed = {
        ("launcher/cli/app.py", "sys.exit(error.code)"),
        ("launcher/supervise.py", "sys.exit(main())"),
        ("launcher/supervise.py", "os._exit(ExitCode.OK)"),
    }
    found = set()
    for path in _head_modules():
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text())):
            func = node.func if isinstance(node, ast.Call) else None
            if isinstance(func, ast.Attribute) and (ast.unparse(func) in ("sys.exit", "os._exit")):
                found.add((rel, ast.unparse(node)))
    assert found == allowed, sorted(found - allowed)


def test_codes_returned_as_verdicts_are_named() -> None:
    """What stands for an exit code (a report's `exit_code`, `fleet.exec_code`, anything `-> ExitCode`) returns
    launcher/errors.py's names, never `return 1 if failed else 0`: `raise_for` and a reader must see the code."""
    found = []
    for path in _head_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            returns = ast.unparse(node.returns) if node.returns else ""
            if not (node.name.endswith(("exit_code", "exec_code")) or returns == "ExitCode"):
                continue
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    literal = [
                        c for c in ast.walk(ret.value) if isinstance(c, ast.Constant) and type(c.value) is int
                    ]
                    if literal:
                        found.append(f"{path.relative_to(ROOT)}:{ret.lineno}: {ast.unparse(ret)}")
    assert found == []


def test_every_error_class_is_raised_and_its_code_maps_back() -> None:
    """Each error class of launcher/errors.py is made somewhere on the head (raised, or handed to `guarded`'s
    `_leave`), and `error_for(code)` gives back exactly that class: no class declared and never used, no code
    `raise_for` cannot turn into its type."""
    import launcher.errors as errors

    classes = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, RlaunchError) and value is not RlaunchError
    }
    per_code = {"BadInput", "Infra", "JobFailed", "Interrupted"}  # one per exit code; the rest refine them
    assert per_code <= classes
    made = set()
    for path in _head_modules():
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes:
                made.add(node.func.id)
    assert made == classes, f"never raised: {sorted(classes - made)}"
    for name in per_code:
        error = errors.error_for(getattr(errors, name).code, "why")
        assert type(error) is getattr(errors, name) and str(error) == "why"
    assert errors.error_for(ExitCode.OK) is None
    errors.raise_for(ExitCode.OK)
    try:
        errors.raise_for(ExitCode.INTERRUPTED)
    except errors.Interrupted as exc:
        assert exc.code == ExitCode.INTERRUPTED and str(exc) == ""
    else:
        raise AssertionError("raise_for(130) raised nothing")


def test_exit_codes_are_caught_by_type_not_compared() -> None:
    """`exc.code == 3`, `outcome.code != 0`: our codes are compared by name (ExitCode) or caught by type, never
    against a number (launcher/health/ and launcher/node/ compare a process's own exit status, not ours)."""
    found = []
    for path in _head_modules():
        if "health" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            named = any(isinstance(s, ast.Attribute) and s.attr == "code" for s in sides)
            number = any(isinstance(s, ast.Constant) and type(s.value) is int for s in sides)
            if named and number:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_the_cli_shell_maps_each_error_type_to_its_code(tmp_path: Path) -> None:
    """`guarded`, the one mapping: each typed error leaves with its code and one line, an error raised with no
    message (the verb printed its verdict) with the code alone; Ctrl-C is Interrupted (130)."""
    import click
    from click.testing import CliRunner

    from launcher.cli.app import guarded
    from launcher.errors import Interrupted

    cases: dict[str, BaseException] = {
        "job": JobFailed(""),
        "bad": BadInput("cluster.yaml:3: nodes: empty"),
        "infra": Infra("node2: unreachable"),
        "stopped": Interrupted(""),
        "ctrl-c": KeyboardInterrupt(),
    }

    @click.command()
    @click.argument("case")
    @guarded
    def verb(case: str) -> None:
        raise cases[case]

    runner = CliRunner()
    got = {case: runner.invoke(verb, [case]) for case in cases}
    assert {case: r.exit_code for case, r in got.items()} == {
        "job": 1,
        "bad": 2,
        "infra": 3,
        "stopped": 130,
        "ctrl-c": 130,
    }
    assert got["job"].output == "" and got["stopped"].output == ""
    assert "cluster.yaml:3: nodes: empty" in got["bad"].output and "interrupted" in got["ctrl-c"].output


def test_status_and_down_start_without_the_health_rules(tmp_path: Path) -> None:
    """`rlaunch status` and `rlaunch down` read a run record and ask the guards; they watch no log, so neither
    they nor `import launcher.cli` build the health rule table (launcher/health/rules.py, the largest start-up
    cost) or import the run loop that applies it: only `up`, `supervise` and `logs` (for flags) do. Checked in a
    fresh interpreter by what it imported, never by a time."""
    import json
    import os
    import subprocess
    import sys

    from cluster.inventory import from_mapping
    from launcher import records
    from launcher.states import RunState

    home = tmp_path / "home"
    record = records.RunRecord.create("r-quiet", {"nodes": []}, base=home)
    inv = from_mapping(
        {"nodes": [{"host": "n1", "gpus": 0}], "job": {"kind": "command", "command": ["true"]}}
    )
    records.write_atomic(record.inventory_path, inv.model_dump_json())
    records.write_atomic(record.targets_path(), "[]")  # no node left to stop: `down` asks nobody
    record.set_state(RunState.SUCCEEDED, reason="done")
    heavy = ("launcher.health.rules", "launcher.health.watch", "launcher.run.attempt", "launcher.run.loop")
    code = (
        "import json, sys\n"
        "import launcher.cli\n"
        "from launcher.cli import main\n"
        "codes, seen = [], {'import': sorted(m for m in HEAVY if m in sys.modules)}\n"
        "for verb in (['status', 'r-quiet'], ['down', 'r-quiet']):\n"
        "    try:\n"
        "        main(verb, standalone_mode=False)\n"
        "        codes.append(0)\n"  # a verb that succeeds returns (guarded exits only for an error)
        "    except SystemExit as exc:\n"
        "        codes.append(exc.code)\n"
        "    seen[verb[0]] = sorted(m for m in HEAVY if m in sys.modules)\n"
        "import launcher.run.loop\n"  # the control: `up`'s import brings every one of them
        "seen['control'] = sorted(m for m in HEAVY if m in sys.modules)\n"
        "print(json.dumps({'codes': codes, 'seen': seen}))\n"
    ).replace("HEAVY", repr(heavy))
    env = {**os.environ, "RLAUNCH_HOME": str(home), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["codes"] == [ExitCode.OK, ExitCode.OK], proc.stdout + proc.stderr
    assert "run r-quiet: succeeded" in proc.stdout and "run r-quiet stopped" in proc.stderr
    assert result["seen"] == {"import": [], "status": [], "down": [], "control": sorted(heavy)}


def test_the_node_path_rule_has_one_home() -> None:
    """push.py's `unsafe_path` (every directory owned by us or root, not writable by others) is the one rule for the
    run directory, doctor's write probes and the checkpoint a restart resumes from: ckpt.py and facts.py define no
    walk of their own, and ckpt.py is sent with exactly the node modules it imports (launcher/run/loop.py
    CKPT_MODULES), as facts.py is with gather.PROBE_MODULES."""
    from launcher.run.loop import CKPT_MODULES

    node = ROOT / "launcher" / "node"
    for name in ("ckpt.py", "facts.py"):
        text = (node / name).read_text()
        assert "def unsafe_path" not in text and "os.lstat(" not in text, name
    siblings = {p.stem for p in node.glob("*.py")}
    imported = imported_modules(node / "ckpt.py") & siblings
    assert {f"{m}.py" for m in imported} == set(CKPT_MODULES) == {"push.py"}
    loop = (ROOT / "launcher" / "run" / "loop.py").read_text()
    assert 'with_modules(nodecall.node_script("ckpt.py"), "ckpt.py", CKPT_MODULES)' in loop


def test_every_module_has_a_room_in_contributing() -> None:
    """CONTRIBUTING.md's room map matches the tree: every module of launcher/ and cluster/ is named in the table
    row of its folder (by file name or by its bare name among the row's list), so a newcomer finds each file's
    room there and a new file gets one."""
    rows = [line for line in (ROOT / "CONTRIBUTING.md").read_text().splitlines() if line.startswith("| `")]
    missing = []
    for path in sorted([*(ROOT / "launcher").rglob("*.py"), *(ROOT / "cluster").rglob("*.py")]):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        rel = path.relative_to(ROOT)
        folder = f"{rel.parent.as_posix()}/"
        named = re.compile(rf"(?<![\w/]){re.escape(path.stem)}(\.py)?(?![\w])")
        mine = [row for row in rows if folder in row.split("|")[1] or rel.as_posix() in row]
        if not any(rel.as_posix() in row or named.search(row) for row in mine):
            missing.append(rel.as_posix())
    assert not missing, f"modules without a room in CONTRIBUTING.md's table: {missing}"


def test_every_reader_of_out_logs_lines_joins_torchruns_cut_lines() -> None:
    """out.log's lines reach the head, the edge rules and `rlaunch logs` only through teelines.TeeJoin (torchrun's
    tee cuts a line read half-written; turn 10's CI recorded `loss=4.40...[default0]:`). The modules that name
    out.log and are not readers of its lines: the daemon writes it, rundir's index only stats it."""
    writers_and_stat = {"daemon.py", "rundir.py"}
    for path in sorted((ROOT / "launcher" / "node").glob("*.py")):
        text = path.read_text()
        if '"out.log"' not in text or path.name in writers_and_stat:
            continue
        assert "TeeJoin()" in text, f"{path.relative_to(ROOT)} reads out.log's lines without teelines.TeeJoin"
    assert "teelines.py" in protocol.GUARD_BUNDLE


def test_node_processes_load_the_rules_without_compiling_them_and_walk_proc_in_one_place() -> None:
    """Every guard and follower on every node loads the rule table, and the guard's walk of /proc costs with the
    node's process count (docs/scale.md, "What a node's own processes cost"): loading it compiles no rule's regex
    (each on first use), and only the guard's `record_tree` and `rundir.left_of_job` (the stop verb without a guard,
    the follower's exit record) walk the whole of /proc for a job; a follower walks only when the guard's snapshot
    (procs.json) is missing or stale."""
    code = "import launcher.health.rules as r; print(sum('pattern' in rule.__dict__ for rule in r.RULES))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.split() == ["0"], out.stdout + out.stderr
    walkers = {
        path.name: path.read_text().count("job_processes(")
        for path in sorted((ROOT / "launcher" / "node").glob("*.py"))
        if "job_processes(" in path.read_text() and path.name != "procs.py"
    }
    assert walkers == {"daemon.py": 1, "follower.py": 1, "guard.py": 2, "rundir.py": 1}, walkers
    follower = (ROOT / "launcher" / "node" / "follower.py").read_text()
    assert follower.index("rd.read_procs(") < follower.index("proctab.job_processes(")


def test_the_heldout_build_never_shows_a_collectors_line(tmp_path: Path) -> None:
    """The rule writer runs scripts/heldout_round.py build before a round's lines are committed and must not read
    them (docs/health-rules.md, round 32): a row the build cannot understand is reported by file, line and fault,
    never by its text; a good row's text is not printed either."""
    (tmp_path / "out-Z.txt").write_text(
        "THREAD\thttps://example.com/thread-1\texample #1\tcontext\n"
        "config/error\trocm-smi\tERROR: a line with SECRET-BAD in it\n"
        "crash/fatal\tglibc\tSECRET-GOOD free(): invalid pointer\n"
        "only\ttwo-SECRET-FIELDS\n",
        encoding="utf-8",
    )
    script = ROOT / "scripts" / "heldout_round.py"
    done = subprocess.run(
        [sys.executable, str(script), "build", "99", "--work", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "rows not understood: 2" in done.stdout, done.stdout
    assert "label 'config/error'" in done.stdout and "not 3 fields" in done.stdout, done.stdout
    assert "SECRET" not in done.stdout + done.stderr
