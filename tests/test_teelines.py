"""torchrun's tee cuts a line written in two writes; every reader of out.log joins the pieces (launcher/node/teelines.py).

Turn 10's CI recorded "[default0]:step=2 loss=4.404990196228027[default0]:" in a run's log: print() under
PYTHONUNBUFFERED wrote the text and its newline apart, and torchrun's tail thread read in between."""

from __future__ import annotations

import io
import time
from pathlib import Path

from launcher.health.rules import classify
from launcher.node.edge import LineReader
from launcher.node.follower import LogTail
from launcher.node.teelines import MAX_HELD, TeeJoin


def joined(*lines: str) -> list[str]:
    join = TeeJoin()
    out = [line for raw in lines for line in join.feed(raw)]
    return out + join.flush()


def test_a_line_cut_at_its_newline_is_whole_again() -> None:
    assert joined("[default0]:step=2 loss=4.404990196228027[default0]:") == [
        "[default0]:step=2 loss=4.404990196228027"
    ]


def test_another_workers_lines_between_the_pieces_keep_their_place() -> None:
    lines = joined(
        "[default0]:RuntimeError: NCCL er[default1]:step=3 loss=2.5",
        "[default1]:step=4 loss=2.4",
        "[default0]:ror: unhandled system error",
    )
    assert lines == [
        "[default1]:step=3 loss=2.5",
        "[default1]:step=4 loss=2.4",
        "[default0]:RuntimeError: NCCL error: unhandled system error",
    ]
    whole, cut = (
        classify("RuntimeError: NCCL error: unhandled system error"),
        classify("RuntimeError: NCCL er"),
    )
    assert whole is not None and whole.severity == "fatal"
    assert cut is None or cut.severity != "fatal"  # what the rules would have seen of it, cut


def test_lines_that_are_not_cut_pass_as_they_are() -> None:
    plain = [
        "W1204 12:00:01.123 torch/distributed/run.py:793] Setting OMP_NUM_THREADS",
        "[default0]:[rank0]: Traceback (most recent call last):",
        "[default0]:gpu map [gpu0]: ok, [gpu1]: ok",  # another role's brackets are the program's text
        "[trainer3]:epoch 1",
        "",
    ]
    assert joined(*plain) == plain


def test_a_progress_bar_shows_its_latest_redraw_once_per_read() -> None:
    """tqdm writes "\\r" and the bar, no newline until it closes: each read gives the bar's latest state (activity
    for the stall check), not every redraw, and not one endless line."""
    join = TeeJoin()
    assert join.feed("[default0]:\r 10%|#         | 1/10[default1]:loss=2.0") == ["[default1]:loss=2.0"]
    assert join.feed("[default0]:\r 20%|##        | 2/10[default0]:\r 30%|###       | 3/10[default1]:x") == [
        "[default1]:x"
    ]
    assert join.bars() == ["[default0]:\r 30%|###       | 3/10"] and join.held == {}
    assert join.bars() == []  # nothing new drawn
    assert join.feed("[default0]:\r100%|##########| 10/10[default0]:") == [
        "[default0]:\r100%|##########| 10/10"
    ]


def test_what_waits_is_bounded() -> None:
    join = TeeJoin()
    many = "".join(f"[default{i}]:x" for i in range(MAX_HELD + 10)) + "[default0]:end"
    out = join.feed(many)
    assert len(join.held) <= MAX_HELD and out[-1].startswith("[default0]:x")
    long_piece = "[default0]:" + "y" * 9000 + "[default1]:z"
    assert len(TeeJoin().feed(long_piece)) == 2  # a piece too long to wait goes out as it is


def test_the_real_tail_thread_cuts_lines_and_the_readers_join_them(tmp_path: Path) -> None:
    """torch's own TailLog (what `torchrun --tee 3` runs) between workers' files and out.log; the writes are timed
    so that its reads fall inside lines (each write waits for the thread's copy). The follower and the guard's edge reader get each line whole."""
    from torch.distributed.elastic.multiprocessing.tail_log import TailLog

    files = {rank: tmp_path / f"rank{rank}.out" for rank in (0, 1)}
    for path in files.values():
        path.write_text("")
    out_log = tmp_path / "out.log"
    with open(out_log, "ab", buffering=0) as out_raw, open(files[0], "a") as w0, open(files[1], "a") as w1:
        dst = io.TextIOWrapper(out_raw, write_through=True)  # torchrun's stdout, unbuffered
        writers = {0: w0, 1: w1}
        tail = TailLog("default", {r: str(p) for r, p in files.items()}, dst, interval_sec=0.02).start()

        def write(rank: int, text: str, seen: str | None = None) -> None:
            """Write, then wait until the tail thread has copied `seen` into out.log: its read fell there."""
            writers[rank].write(text)
            writers[rank].flush()
            deadline = time.monotonic() + 60
            while seen is not None and seen not in out_log.read_text():
                assert time.monotonic() < deadline, (seen, out_log.read_text())
                time.sleep(0.01)

        try:
            write(0, "step=1 loss=5.1\n", "[default0]:step=1 loss=5.1\n")
            write(1, "step=1 loss=5.0\n", "[default1]:step=1 loss=5.0\n")
            write(0, "step=2 loss=4.404990196228027", "loss=4.404990196228027")  # print()'s text ...
            write(1, "step=2 loss=4.3\n", "[default1]:step=2 loss=4.3\n")
            write(0, "\n", "4.3\n[default0]:\n")  # ... and its newline
            write(1, "RuntimeError: NCCL er", "NCCL er")
            write(0, "step=3 loss=4.0\n", "[default0]:step=3 loss=4.0\n")
            write(1, "ror: unhandled system error\n", "[default1]:ror: unhandled system error\n")
        finally:
            tail.stop()
            dst.detach()
    raw = out_log.read_text()
    assert (
        "loss=4.404990196228027\n" not in raw and "NCCL error" not in raw
    )  # the tail thread really cut both
    expected = {
        "[default0]:step=1 loss=5.1",
        "[default1]:step=1 loss=5.0",
        "[default0]:step=2 loss=4.404990196228027",
        "[default1]:step=2 loss=4.3",
        "[default0]:step=3 loss=4.0",
        "[default1]:RuntimeError: NCCL error: unhandled system error",
    }
    followed = [text for _, text in LogTail(str(out_log), 0).read(final=True)]
    assert set(followed) == expected and len(followed) == len(expected), followed
    assert [t for t in followed if t.startswith("[default0]")] == [
        "[default0]:step=1 loss=5.1",
        "[default0]:step=2 loss=4.404990196228027",
        "[default0]:step=3 loss=4.0",
    ]
    edge = LineReader(str(out_log)).read()
    assert set(edge) == expected, edge
    offsets = [off for off, _ in LogTail(str(out_log), 0).read(final=True)]
    assert offsets == sorted(offsets) and offsets[-1] == out_log.stat().st_size
