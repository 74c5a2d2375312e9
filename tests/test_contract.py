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
    assert argv == ["/venv/bin/python", "/w/r/n1/guard.py", "stop", "/w/r/n1", "--grace", "2.0"]
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
