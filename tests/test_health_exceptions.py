"""A rank's own Python exception as the root cause (issue 20), on plain data: the watcher is fed what torchrun's
ranks and agents print (lines as in tests/fixtures/logs and torch/distributed/elastic/multiprocessing/api.py)."""

from __future__ import annotations

from launcher.health.classify import parse_rank_prefix
from launcher.health.pyexc import Tracebacks, short_path
from launcher.health.watch import Watcher, describe

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/var/tmp/rlaunch-u/r1/node2/multinode.py", line 111, in <module>',
    "    main(args.save_every, args.total_epochs, args.batch_size)",
    '  File "/venv/lib/python3.11/site-packages/torch/nn/functional.py", line 2551, in embedding',
    "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "IndexError: index out of range in self",
]
WRAPPER = (
    "E1201 15:02:03.123000 99 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) "
    "local_rank: 0 (pid: 4242) of binary: /venv/bin/python"
)
SURVIVOR = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:1234"


def watcher() -> Watcher:
    return Watcher({"node1": [0], "node2": [1]}, stall_timeout=60)


def test_the_ranks_own_exception_is_the_root_cause_not_torchruns_wrapper() -> None:
    w = watcher()
    w.observe_line(0.0, "node1", 0, "[GPU0] Epoch 0 | Batchsize: 32 | Steps: 4")
    for i, line in enumerate(TRACEBACK):
        w.observe_line(10.0 + i * 0.01, "node2", 1, line)
    w.observe_line(10.3, "node1", 0, SURVIVOR)  # the survivor's cascade, raised as its own exception
    w.observe_line(10.5, "node2", None, WRAPPER)
    news = w.tick(10.6)
    assert [e.rule for e in news] == ["uncaught-exception"]
    w.observe_exit(11.0, "node2", 1)
    w.observe_exit(11.2, "node1", 1)
    verdict = w.verdict()
    assert not verdict.ok
    assert (
        verdict.summary
        == "node2 rank 1: IndexError: index out of range in self (torch/nn/functional.py:2551)"
    )
    assert verdict.root_cause is not None and verdict.root_cause.time == 10.06


def test_frames_forwarded_as_context_and_a_plain_exit_1_name_the_exception() -> None:
    """Through edge forwarding the frames arrive as context (observe_activity); a job without torchrun just exits 1."""
    w = Watcher({"node1": [0]}, stall_timeout=60)
    for i, line in enumerate(TRACEBACK[:-1]):
        w.observe_activity(5.0 + i * 0.01, "node1", 0, text=line)
    w.observe_line(5.1, "node1", 0, "KeyError: 'labels'")
    w.observe_exit(5.5, "node1", 1)
    assert w.verdict().summary == "node1 rank 0: KeyError: 'labels' (torch/nn/functional.py:2551)"


def test_survivors_cascade_stays_cascade_and_a_sigkill_is_not_an_exception() -> None:
    w = watcher()
    w.observe_line(1.0, "node1", 0, "Traceback (most recent call last):")
    w.observe_line(1.0, "node1", 0, '  File "/x/train.py", line 5, in <module>')
    w.observe_line(1.1, "node1", 0, SURVIVOR)
    w.observe_exit(1.5, "node2", -9)  # the real cause: node2's rank was SIGKILLed (reported later)
    w.observe_line(2.0, "node1", None, WRAPPER)
    w.observe_exit(2.5, "node1", 1)
    assert all(e.rule != "uncaught-exception" for e in w.events)
    assert w.verdict().summary.startswith("node2: crash — killed by SIGKILL")
    # a logged, caught exception earlier on the killed node does not become the cause of its SIGKILL
    w2 = watcher()
    for line in TRACEBACK:
        w2.observe_line(1.0, "node2", 1, line)
    w2.observe_exit(3.0, "node2", None, "SIGKILL")
    assert w2.verdict().summary.startswith("node2: crash — killed by SIGKILL")


def test_chained_exceptions_name_the_last_one_and_paths_are_short() -> None:
    t = Tracebacks()
    lines = [
        *TRACEBACK,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/home/u/proj/train.py", line 9, in <module>',
        "    raise RuntimeError('bad batch') from e",
        "RuntimeError: bad batch",
    ]
    found = [t.feed(1.0, ("n", 0), line) for line in lines]
    assert [f.describe() for f in found if f] == [
        "IndexError: index out of range in self (torch/nn/functional.py:2551)",
        "RuntimeError: bad batch (train.py:9)",
    ]
    assert short_path("/usr/lib/python3/dist-packages/llamafactory/data/processor/x.py") == (
        "llamafactory/data/processor/x.py"
    )
    assert t.feed(2.0, ("n", 0), "ValueError: not after a frame") is None  # prose outside a traceback


def test_teardown_waits_briefly_after_a_survivors_cascade_for_the_cause() -> None:
    """The survivor's "Connection closed by peer" can reach the head before the failed node's torchrun reports
    exit status 1: the runner holds teardown a moment, and the cause that arrives then is named."""
    w = watcher()
    for line in TRACEBACK:
        w.observe_line(10.0, "node2", 1, line)  # read (flagged, warning) but no exit seen yet
    cascade = w.observe_line(10.1, "node1", 0, SURVIVOR)
    assert cascade is not None and w.first_failure == cascade
    assert w.worth_holding(cascade, now=10.5)
    assert not w.worth_holding(cascade, now=10.1 + w.confirm_s)
    w.observe_line(10.8, "node2", None, WRAPPER)
    assert w.first_failure is not None and w.first_failure.rule == "uncaught-exception"


def test_a_traceback_behind_torchruns_and_pytorchs_prefixes_is_read_as_printed() -> None:
    """Real lines of the DDP tutorial's broken variant on a 2-node run (torchrun --tee 3 adds `[default0]:`,
    PyTorch `[rank1]: ` with one space): the frames keep their indentation once both prefixes are gone, so the
    exception is found (the e2e run named the survivor's cascade before this)."""
    w = Watcher({"node2": [1]}, stall_timeout=60)
    lines = [
        '[default0]:[rank1]:   File "/tmp/rlaunch/r/node2/multinode.py", line 75, in train',
        "[default0]:[rank1]:     self._run_epoch(epoch)",
        '[default0]:[rank1]:   File "/tmp/rlaunch/r/node2/multinode.py", line 57, in _run_epoch',
        "[default0]:[rank1]:     if self.global_rank == 1 and epoch == 2: self.train_data.dataset.data[9]",
        "[default0]:[rank1]:                                              ~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^",
        "[default0]:[rank1]: IndexError: list index out of range",
    ]
    for i, raw in enumerate(lines):
        _local, rest = parse_rank_prefix(raw)
        w.observe_line(10.0 + i * 0.01, "node2", 1, rest)
    w.observe_line(
        11.0, "node2", None, "E1201 api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 21) of binary: x"
    )
    root = w.first_failure
    assert root is not None
    assert describe(root) == "node2 rank 1: IndexError: list index out of range (multinode.py:57)"
