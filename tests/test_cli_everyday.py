"""Unit tests for the everyday moves (issue 24): overrides, the node-side gc (with a real process holding a guard
lock), the live progress summary, and the generated reference pages (docs/inventory.md, docs/cli.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_security_audit2 import local_inventory_file

from cluster.inventory import Inventory, InventoryError, Overrides, apply_overrides, from_mapping
from launcher.lifecycle import progress_summary
from launcher.nodecall import with_modules

ROOT = Path(__file__).resolve().parents[1]
GC = ROOT / "launcher" / "node" / "gc.py"
sys.path.insert(0, str(ROOT / "scripts"))
import gen_docs  # noqa: E402

BASE = {
    "nodes": [{"host": "n1"}, {"host": "n2"}],
    "job": {"kind": "command", "command": ["true"], "args": ["x"]},
}


def test_overrides_apply_to_the_inventory_and_refuse_secrets() -> None:
    data = apply_overrides(
        {**BASE, "env": {"A": "1"}, "secrets": ["MY_PASS"]},
        Overrides(env=(("B", "2"), ("A", "3")), nproc_per_node=2, args=("--steps", "5")),
        "c.yaml",
    )
    inv = from_mapping(data)
    assert (
        inv.env == {"A": "3", "B": "2"} and inv.job.nproc_per_node == 2 and inv.job.args == ["--steps", "5"]
    )
    for name in ("MY_PASS", "HF_TOKEN", "WANDB_API_KEY", "aws_secret_access_key"):
        with pytest.raises(InventoryError, match="secrets:"):
            apply_overrides({**BASE, "secrets": ["MY_PASS"]}, Overrides(env=((name, "v"),)), "c.yaml")
    with pytest.raises(InventoryError, match="NAME=VALUE"):
        Overrides.parse_env(["novalue"])
    assert Overrides.parse_env(["K=a=b"]) == (("K", "a=b"),)
    assert apply_overrides(BASE, Overrides(), "c.yaml") is BASE


def run_gc(workdir: Path, keep: int, *extra: str) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            with_modules(GC.read_text(), "gc.py", ("protocol.py",)),
            str(workdir),
            str(keep),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def make_run(workdir: Path, name: str, hosts: tuple[str, ...] = ("h1", "h2")) -> None:
    for host in hosts:
        d = workdir / name / host
        d.mkdir(parents=True)
        (d / "out.log").write_bytes(b"x" * 1000)
        (d / "guard.lock").touch()


def test_gc_removes_exactly_the_old_finished_runs(tmp_path: Path) -> None:
    work = tmp_path / "work"
    names = [
        "20260101-000000-0001",
        "20260101-000000-0001-r1",  # the same run's second attempt (per-attempt layout)
        "20260102-000000-0002",
        "20260103-000000-0003",  # running: a live process holds a guard lock
        "20260104-000000-0004",
        "20260105-000000-0005",
    ]
    for name in names:
        make_run(work, name)
    (work / "not-a-run").mkdir()
    (work / ".node-h1.lock").touch()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    (work / "20250101-000000-9999").symlink_to(outside)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('locked', flush=True); time.sleep(60)",
            str(work / "20260103-000000-0003" / "h2" / "guard.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        dry = run_gc(work, 2, "--dry-run")
        assert (
            dry["removed"] == ["20260101-000000-0001", "20260102-000000-0002"] and dry["freed_bytes"] == 6000
        )
        assert (work / "20260101-000000-0001").is_dir()
        done = run_gc(work, 1, "--protect", "20260105-000000-0005")  # the run `up` is starting: not counted
        assert done["removed"] == ["20260101-000000-0001", "20260102-000000-0002"]
        assert done["running"] == ["20260103-000000-0003"] and done["errors"] == []
        left = sorted(p.name for p in work.iterdir())
        assert left == [
            ".node-h1.lock",
            "20250101-000000-9999",
            "20260103-000000-0003",
            "20260104-000000-0004",
            "20260105-000000-0005",
            "not-a-run",
        ]
        assert (outside / "precious").read_text() == "keep"
        assert holder.poll() is None  # the lock holder (a guard) was not touched
    finally:
        holder.kill()
        holder.wait()
    assert run_gc(tmp_path / "absent", 1)["removed"] == []


def test_progress_summary_step_loss_rate_eta() -> None:
    inv = Inventory.model_validate(
        {**BASE, "job": {"kind": "command", "command": ["t"], "args": ["--steps", "100"]}}
    )
    now = time.time()
    entries = [{"t": now - 20 + i, "a": 1, "step": 10 + 2 * i, "loss": 3.0 - i / 10} for i in range(11)]
    entries.insert(0, {"t": now - 100, "a": 0, "step": 50, "loss": 9.0})  # the failed attempt
    p = progress_summary(entries, inv, {"state": "running", "attempt": 1}, now=now)
    assert (p["step"], p["total"], p["attempt"], p["restarts"]) == (30, 100, 1, 1)
    assert p["loss"] == pytest.approx(2.0) and p["steps_per_s"] == pytest.approx(2.0)
    assert p["eta_s"] == pytest.approx(35.0) and p["last_progress_age_s"] == pytest.approx(10.0)
    done = progress_summary(entries, inv, {"state": "succeeded", "attempt": 1}, now=now)
    assert done["eta_s"] is None
    empty = progress_summary([], inv, {"state": "starting"}, now=now)
    assert empty["step"] is None and empty["total"] == 100


def test_every_inventory_key_is_documented_and_the_pages_are_current() -> None:
    keys = [key for key, _ in gen_docs.schema_keys() if not key.startswith("spares[].")]
    missing = [key for key in keys if not gen_docs.MEANING.get(key)]
    assert not missing, f"inventory keys without a meaning in scripts/gen_docs.py MEANING: {missing}"
    for rel, make in gen_docs.PAGES.items():
        assert (ROOT / rel).read_text() == make(), f"{rel} is stale: run python scripts/gen_docs.py"


def test_an_undocumented_key_fails_the_reference_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(gen_docs.MEANING, "keep_runs")
    keys = [key for key, _ in gen_docs.schema_keys()]
    assert "keep_runs" in keys and not gen_docs.MEANING.get("keep_runs")
    assert "| `keep_runs` |" in gen_docs.inventory_md() and gen_docs.inventory_md().count("keep_runs` | int")


def test_node_sync_refuses_paths_out_of_its_directory(tmp_path: Path) -> None:
    script = with_modules((ROOT / "launcher" / "node" / "sync.py").read_text(), "sync.py", ("push.py",))
    dest = tmp_path / "dest"
    (tmp_path / "outside").mkdir()
    dest.mkdir()
    (dest / "link").symlink_to(tmp_path / "outside")
    for bad in ("../escape", "/etc/passwd", "a/../../b", "link/file", ".rlaunch-sync.json"):
        body = json.dumps({"files": [[bad, 1, 0o644, "0" * 64]]})
        out = subprocess.run([sys.executable, "-c", script, "plan", str(dest)], input=body, capture_output=True,
                             text=True)  # fmt: skip
        assert out.returncode == 2 and "refused path" in out.stdout, (bad, out.stdout)
        header = json.dumps({"p": bad, "n": 1, "m": 0o644, "h": "0" * 64}) + "\nx"
        out = subprocess.run([sys.executable, "-c", script, "recv", str(dest)], input=header, capture_output=True,
                             text=True)  # fmt: skip
        assert out.returncode == 2 and "refused path" in out.stdout, (bad, out.stdout)
    assert list((tmp_path / "outside").iterdir()) == []


def test_node_sync_refuses_a_workdir_others_can_write(tmp_path: Path) -> None:
    script = with_modules((ROOT / "launcher" / "node" / "sync.py").read_text(), "sync.py", ("push.py",))
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    out = subprocess.run([sys.executable, "-c", script, "plan", str(shared / "sync" / "c")],
                         input='{"files": []}', capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 2 and "writable by others" in out.stdout
    assert not (shared / "sync").exists()
    ok = subprocess.run([sys.executable, "-c", script, "plan", str(tmp_path / "mine" / "sync" / "c")],
                        input='{"files": []}', capture_output=True, text=True)  # fmt: skip
    assert ok.returncode == 0 and json.loads(ok.stdout) == {"need": [], "deleted": 0}
    assert oct((tmp_path / "mine" / "sync").stat().st_mode & 0o777) == "0o700"


def test_sync_over_the_local_transport_sends_only_changes(tmp_path: Path) -> None:
    """The whole sync path (manifest, node plan, stream) with real processes on this machine, one node."""
    from cluster.transport import make_transport
    from launcher import sync

    tree = tmp_path / "project"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("a = 1\n")
    (tree / "b.bin").write_bytes(b"b" * 10_000)
    (tree / "notes.tmp").write_text("excluded by pattern\n")
    (tree / ".gitignore").write_text("__pycache__/\n")
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "a.pyc").write_bytes(b"\0")
    inv = from_mapping(
        {
            "transport": "local",
            "cluster": "c/../x",  # made path-safe
            "python": sys.executable,
            "workdir": str(tmp_path / "work"),
            "nodes": [{"host": "n1"}],
            "sync": {"src": str(tree), "exclude": ["*.tmp"]},
            "job": {"kind": "command", "command": ["true"]},
        }
    )
    assert inv.sync_dir == f"{tmp_path}/work/sync/c_.._x"
    dest = Path(inv.sync_dir)
    with make_transport(inv) as transport:
        first = sync.push_all(inv, transport).nodes["n1"]
        assert (first.error, first.sent_files, first.sent_bytes) == (None, 3, 6 + 10_000 + 13)
        assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == [
            ".gitignore",
            ".rlaunch-sync.json",
            "b.bin",
            "src/a.py",
        ]
        (tree / "src" / "a.py").write_text("a = 2\n")
        (dest / "stray").write_text("left by hand\n")
        second = sync.push_all(inv, transport).nodes["n1"]
        assert (second.sent_files, second.sent_bytes, second.deleted, second.round_trips) == (1, 6, 1, 2)
        assert (dest / "src" / "a.py").read_text() == "a = 2\n" and not (dest / "stray").exists()
        (dest / "b.bin").write_bytes(
            b"B" * 10_000
        )  # changed on the node, same size: the index's mtime differs
        third = sync.push_all(inv, transport).nodes["n1"]
        assert (third.sent_files, third.sent_bytes) == (1, 10_000) and (
            dest / "b.bin"
        ).read_bytes() == b"b" * 10_000
        fourth = sync.push_all(inv, transport).nodes["n1"]
        assert (fourth.sent_files, fourth.round_trips, fourth.deleted) == (0, 1, 0)


def test_status_takes_the_latest_attempt_by_number(tmp_path: Path) -> None:
    from launcher.lifecycle import latest_outcome
    from launcher.records import RunRecord, new_run_id

    record = RunRecord.create(new_run_id(), {"nodes": []}, base=tmp_path / "home")
    for n in (1, 2, 10):
        record.outcome_path(n).write_text(json.dumps({"attempt": n}))
    (record.root / "outcome-x.json").write_text("{}")
    assert latest_outcome(record) == {"attempt": 10}  # as text, outcome-2.json came last


def test_since_takes_durations_and_times() -> None:
    import datetime

    from launcher.cli.app import UserError
    from launcher.cli.run import parse_since

    assert parse_since("90s") == (90.0, None) and parse_since("10m") == (600.0, None)
    assert parse_since("1h30m") == (5400.0, None) and parse_since("2d") == (172800.0, None)
    assert parse_since("45") == (45.0, None)
    when = datetime.datetime(2026, 12, 1, 19, 0)
    assert parse_since("2026-12-01T19:00") == (None, when.timestamp())
    for bad in ("yesterday", "10x", "m10", ""):
        with pytest.raises(UserError, match="--since"):
            parse_since(bad)


def logcat(opts: dict, *run_dirs: Path) -> tuple[list[str], dict]:
    """logcat.py as `rlaunch logs` sends it to a node (launcher/lifecycle.py): `-c`, with teelines.py."""
    from launcher import nodecall

    code = nodecall.with_modules(nodecall.node_script("logcat.py"), "logcat.py", ("teelines.py",))
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, json.dumps(opts), *map(str, run_dirs)],
        capture_output=True,
        text=True,
        check=True,
    )
    *lines, reply = done.stdout.splitlines()
    return lines, json.loads(reply)["end"]


def test_logcat_since_reads_from_the_guards_time_index(tmp_path: Path) -> None:
    """out.idx's last entry at or before T says where T's lines begin, a size seen mid-line included; an entry
    cut short by a crash is skipped; a run directory without an index is whole or skipped by out.log's mtime."""
    a, b, old = tmp_path / "a0", tmp_path / "a1", tmp_path / "old"
    for d in (a, b, old):
        d.mkdir()
    (a / "out.log").write_bytes(b"one\ntwo\nthree par")  # the guard saw 8 bytes at 100, 12 ("thr") at 200
    (a / "out.idx").write_text("100.00 8\n200.00 12\n300.0")
    with open(a / "out.log", "ab") as f:
        f.write(b"tial\nfour\nfive")  # "five" is still being written
    (b / "out.log").write_text("b1\nb2\n")
    (b / "out.idx").write_text("400.00 3\n")
    (old / "out.log").write_text("from an old guard\n")
    assert logcat({"since": 150}, a)[0] == ["three partial", "four", "five"]
    lines, ends = logcat({"since": 150, "follow": True}, a, b)
    assert lines == ["three partial", "four", "b1", "b2"]  # b: nothing at or before 150, so from the start
    assert ends == {str(a): len(b"one\ntwo\nthree partial\nfour\n"), str(b): 6}
    assert logcat({"since": 250}, a, b)[0] == ["three partial", "four", "five", "b1", "b2"]
    assert logcat({"since": 450}, b)[0] == ["b2"]
    assert logcat({"since": 50, "tail": 2, "grep": "^(one|two|b)"}, a, b)[0] == ["b1", "b2"]
    assert logcat({"ago": 3600}, old)[0] == ["from an old guard"]  # written just now: whole
    assert logcat({"since": time.time() + 3600}, old)[0] == []


def test_the_guard_notes_out_logs_growth_at_most_once_a_second(tmp_path: Path) -> None:
    from launcher.node import protocol
    from launcher.node.rundir import OutIndex

    index = OutIndex(str(tmp_path))
    index.note()  # no out.log yet: nothing
    (tmp_path / "out.log").write_text("a\n")
    index.note()
    index.note()  # unchanged
    (tmp_path / "out.log").write_text("a\nb\n")
    index.note()  # grown, but within the second: waits
    index.note(force=True)  # the guard's last word at the end
    entries = [line.split() for line in (tmp_path / protocol.OUT_INDEX).read_text().splitlines()]
    assert [int(size) for _, size in entries] == [2, 4]
    assert float(entries[0][0]) <= float(entries[1][0])


def test_exec_and_tables_show_hostile_node_output_escaped(tmp_path: Path) -> None:
    """A node's output is text anyone on it could print: OSC 52 (the clipboard), a line rewrite, a hidden rest.
    `exec` (prefixed and collated) and the tables show each control character as `\\xNN`, line breaks kept."""
    nodes = [{"host": "n1"}, {"host": "n2"}]
    inventory = local_inventory_file(tmp_path / "cluster.yaml", tmp_path / "work", nodes, ["true"])
    hostile = "printf 'a\\033]52;c;ZXZpbA==\\007b\\n\\033[2Kc\\n'; printf 'd\\033[8m\\n' >&2"

    def rlaunch(*args: str) -> subprocess.CompletedProcess[str]:
        env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "RLAUNCH_HOME": str(tmp_path / "home")}
        return subprocess.run(
            [sys.executable, "-m", "launcher.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )

    prefixed = rlaunch("exec", str(inventory), "--shell", "--", hostile)
    collated = rlaunch("exec", str(inventory), "--shell", "--collate", "--", hostile)
    for done in (prefixed, collated):
        assert done.returncode == 0, done.stderr
        assert "\033" not in done.stdout + done.stderr and "\007" not in done.stdout
    assert "n1: a\\x1b]52;c;ZXZpbA==\\x07b\nn1: \\x1b[2Kc\n" in prefixed.stdout
    assert "n1: d\\x1b[8m" in prefixed.stderr
    assert "\na\\x1b]52;c;ZXZpbA==\\x07b\n\\x1b[2Kc\n" in collated.stdout


def test_summary_tables_escape_what_nodes_said(capsys: pytest.CaptureFixture[str]) -> None:
    from launcher.render import summary_table

    summary_table([{"node": "n1", "reason": "GPU fault\033]52;c;eA==\007"}], ["node", "reason"])
    shown = capsys.readouterr().out
    assert "\033]" not in shown and "\\x1b]52;c;eA==\\x07" in shown


def test_ssh_stdin_is_fed_one_packet_at_a_time() -> None:
    """paramiko's sendall re-slices the rest after every 32 KiB send (quadratic copying: a 50 MB sync stalled at
    64 nodes); _feed hands it at most FEED_CHUNK at a time, all bytes in order, then EOF. The channel below is a
    stand-in that takes what a flow-control window lets through."""
    import os as _os

    from cluster import ssh

    class Channel:
        def __init__(self) -> None:
            self.got, self.largest, self.eof, self.window = bytearray(), 0, False, [32768, 1000, 7]

        def send(self, chunk: bytes) -> int:
            self.largest = max(self.largest, len(chunk))
            take = min(len(chunk), self.window[len(self.got) % 3])
            self.got += chunk[:take]
            return take

        def shutdown_write(self) -> None:
            self.eof = True

    data = _os.urandom(3 * 1024 * 1024 + 5)
    chan = Channel()
    ssh._feed(chan, data)  # type: ignore[arg-type]
    assert bytes(chan.got) == data and chan.eof and chan.largest <= ssh.FEED_CHUNK
