"""cluster/slurm.py's one-step fan-out without a Slurm: the bundle, the node-side dispatcher, the per-node results
and the demultiplexing of one step's labelled lines into per-node processes, through tests/bin/fake-srun (srun's
I/O contract: one task per node, stdin to every task, `--label`, srun's line for a task that exited badly). The
layer under test is the transport; srun is the layer below. The same paths against 4 real slurmd:
tests/test_slurm_multinode.py."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from e2e_helpers import wait_for

from cluster.slurm import DISPATCH, SlurmTransport, pack
from cluster.transport import Endpoint, First, GroupResult

FAKE_SRUN = str(Path(__file__).parent / "bin" / "fake-srun")
HOSTS = ["n1", "n2", "n3"]


def transport() -> SlurmTransport:
    env = {"SLURM_JOB_ID": "7", "PATH": "/usr/bin:/bin"}  # no SLURM_JOB_NODELIST: the bundle goes on stdin
    return SlurmTransport(
        {h: Endpoint(h, h) for h in HOSTS}, environ=env, srun=FAKE_SRUN, python=sys.executable
    )


def test_run_all_gives_each_node_its_own_stdin_exit_code_and_output() -> None:
    payload = {h: (b"x" * (150_000 * (i + 1))) for i, h in enumerate(HOSTS)}  # larger than a pipe, per node
    script = "import os,sys; d=sys.stdin.buffer.read(); print(os.environ['SLURMD_NODENAME'], len(d)); sys.exit(int(os.environ['SLURMD_NODENAME'][1:]) - 1)"
    group = transport().run_all(HOSTS, [sys.executable, "-c", script], stdin_for=payload.get)
    assert {h: r.stdout.split() for h, r in group.results.items()} == {
        h: [h, str(len(payload[h]))] for h in HOSTS
    }
    assert {h: r.exit_code for h, r in group.results.items()} == {"n1": 0, "n2": 1, "n3": 2}
    missing = transport().run_all(HOSTS, ["/nonexistent/prog"])
    assert {r.exit_code for r in missing.results.values()} == {127}
    assert all("/nonexistent/prog: No such file" in r.stderr for r in missing.results.values())


def test_a_node_without_a_result_gets_one_line_naming_it() -> None:
    # The dispatcher itself cannot start on the nodes (its python is missing): srun's task lines name the node.
    t = transport()
    t.python = "/nonexistent/python3"
    group = t.run_all(HOSTS, ["true"])
    for host, result in group.results.items():
        assert result.exit_code is None and result.error and result.error.startswith(f"srun on {host}: "), (
            result
        )


def test_bundle_dedupes_identical_inputs() -> None:
    nodes = {h: {"argv": ["true"], "stdin": "k"} for h in HOSTS * 100}
    one = len(pack({"nodes": nodes, "blobs": {"k": "A" * 100_000}}))
    assert one < 20_000  # stored once, compressed
    assert "lzma" in DISPATCH and "SLURMD_NODENAME" in DISPATCH


def test_start_all_demultiplexes_one_step_and_one_write_reaches_every_node() -> None:
    lines: list[tuple[str, str, str]] = []
    code = (
        "import os,sys\nprint('up', os.environ['SLURMD_NODENAME'], flush=True)\n"
        "for l in sys.stdin:\n    print('got', l.strip(), flush=True)\n"
        "    if l.strip() == 'stop': sys.exit(3 if os.environ['SLURMD_NODENAME'] == 'n2' else 0)\n"
    )
    procs = transport().start_all(
        HOSTS, lambda h: [sys.executable, "-u", "-c", code], lambda *a: lines.append(a)
    )
    try:
        wait_for(lambda: {h for h, _, t in lines if t == f"up {h}"} == set(HOSTS), 60, "every task up")
        for proc in procs.values():  # a heartbeat round: one write per node view
            assert proc.try_write(b"hb\n")
        wait_for(lambda: sum(t == "got hb" for _, _, t in lines) == len(HOSTS), 30, "hb on every node")
        time.sleep(0.3)
        assert sum(t == "got hb" for _, _, t in lines) == len(HOSTS)  # once per node, not once per view
        for proc in procs.values():
            proc.write(b"stop\n")
        assert procs["n2"].wait(30) == 3  # srun's line about n2's task, while the step still runs
    finally:
        for proc in procs.values():
            proc.close()
    assert all(p.poll() is not None for p in procs.values())
    assert {h for h, _, t in lines if t == "got stop"} == set(HOSTS)


def counted(tmp_path: Path) -> tuple[SlurmTransport, Path]:
    log = tmp_path / "srun.log"
    t = transport()
    t.environ["FAKE_SRUN_LOG"] = str(log)
    return t, log


def steps_in(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


# The long-lived command of the tests below: says it is up, echoes the head's words, ends at "stop".
ECHO = (
    "import os,sys\nprint('up', os.environ['SLURMD_NODENAME'], flush=True)\n"
    "for l in sys.stdin:\n    print('got', l.strip(), flush=True)\n"
    "    if l.strip() == 'stop': sys.exit(0)\n"
)


def test_push_checks_guards_and_collect_are_one_step(tmp_path: Path) -> None:
    t, log = counted(tmp_path)
    lines: list[tuple[str, str, str]] = []
    seen: dict[str, object] = {}
    push = "import os,sys; d=sys.stdin.buffer.read(); print(os.environ['SLURMD_NODENAME'], len(d)); sys.exit(1 if d == b'bad' else 0)"

    def check(group: GroupResult) -> None:
        seen["push"] = {h: (r.exit_code, r.stdout.split()) for h, r in group.results.items()}
        # A check after the push (the run loop's job-path check) while the nodes hold: no step of its own.
        during = t.run_all(HOSTS, ["sh", "-c", 'echo "held $SLURMD_NODENAME"'])
        seen["during"] = {h: r.stdout.strip() for h, r in during.results.items()}
        seen["started_before_go"] = any(text.startswith("up ") for _, _, text in lines)

    first = First(
        lambda h: [sys.executable, "-c", push], check, stdin_for=lambda h: h.encode() * 1000, timeout=60
    )
    procs = t.start_all(
        HOSTS, lambda h: [sys.executable, "-u", "-c", ECHO], lambda *a: lines.append(a), first=first
    )
    try:
        assert seen["push"] == {h: (0, [h, str(len(h) * 1000)]) for h in HOSTS}
        assert seen["during"] == {h: f"held {h}" for h in HOSTS}
        assert seen["started_before_go"] is False  # the guards start only once the check has passed
        wait_for(lambda: {h for h, _, x in lines if x == f"up {h}"} == set(HOSTS), 60, "every task up")
        # A node whose command still runs cannot take a request in the step: that one gets its own step.
        assert t.run_all(["n1"], ["true"]).ok
        assert steps_in(log) == 2
        procs["n1"].write(b"stop\n")
        assert all(p.wait(30) == 0 for p in procs.values())
        # Every command ended: what runs now (collect) is answered in the same step, each node its own result.
        after = t.run_all(["n2", "n3"], ["sh", "-c", 'echo "after $SLURMD_NODENAME"; exit 4'])
        assert {h: (r.exit_code, r.stdout.strip()) for h, r in after.results.items()} == {
            "n2": (4, "after n2"),
            "n3": (4, "after n3"),
        }
        assert {h for h, _, x in lines if x.startswith("RL")} == set()  # the dispatcher's words stay its own
    finally:
        for proc in procs.values():
            proc.close()
    assert steps_in(log) == 2  # the guards' step (push, check, guards, collect) + n1's own
    assert all(p.poll() == 0 for p in procs.values())


def test_a_failed_check_starts_nothing(tmp_path: Path) -> None:
    t, log = counted(tmp_path)
    marker = tmp_path / "started"
    lines: list[tuple[str, str, str]] = []

    def check(group: GroupResult) -> None:
        failed = sorted(h for h, r in group.results.items() if r.exit_code != 0)
        if failed:
            raise RuntimeError(f"push failed on {failed}")

    push = "import os,sys; sys.exit(2 if os.environ['SLURMD_NODENAME'] == 'n2' else 0)"
    first = First(lambda h: [sys.executable, "-c", push], check, timeout=60)
    try:
        t.start_all(HOSTS, lambda h: ["touch", str(marker)], lambda *a: lines.append(a), first=first)
    except RuntimeError as exc:
        assert str(exc) == "push failed on ['n2']"
    else:
        raise AssertionError("start_all started despite a failed check")
    assert not marker.exists()
    assert steps_in(log) == 1
    assert t._step is not None and t._step.wait(10) is not None  # the step ended by itself
