"""How SIGINT and SIGTERM reach a run: once as KeyboardInterrupt (the teardown path), never twice into a teardown.

The foreground `up` (launcher/cli/run.py) and the detached supervisor (launcher/supervise.py) both turn the first
signal into KeyboardInterrupt, which `launcher/run/loop.py` answers by stopping the job on every node; while that
teardown runs, `teardown_shield` keeps later signals from cutting it short (issue 12: `timeout`, systemd and Slurm
signal the launcher and then its process group, often twice within a second).
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

ABANDON_WINDOW_S = 2.0  # a second Ctrl-C within this long abandons a teardown in progress
REDELIVER_AFTER_S = 0.05  # a swallowed signal is delivered again this long after (_redeliver_swallowed)


def interrupt_once(note: Callable[[str], None] | None = None) -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt once, which takes the teardown path; later ones are noted and
    ignored. `timeout`, systemd and Slurm signal the launcher and then its process group: a second signal
    arriving before the teardown has shielded itself must not cut it short (issue 12). A KeyboardInterrupt that
    Python swallowed (`_redeliver_swallowed`) is raised again."""
    say = note or (lambda text: sys.stderr.write(f"rlaunch: {text}\n"))
    fired: list[int] = []
    swallowed: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        if fired and not swallowed:
            say(f"{signal.Signals(signum).name} received: already stopping the job on every node")
            return
        swallowed.clear()
        fired.append(signum)
        raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    _redeliver_swallowed(fired, swallowed)


def _redeliver_swallowed(fired: list[int], swallowed: list[int]) -> None:
    """Deliver a signal again when its KeyboardInterrupt was swallowed.

    A signal's handler runs wherever the main thread is. If that is a finaliser (a `__del__`, a weakref or garbage
    collector callback), the KeyboardInterrupt it raises cannot propagate: Python prints it ("Exception ignored
    in: ...") and goes on, and the run went on as if no signal had come (a SIGTERM to a foreground `up` was lost
    that way under make test, turn 16). Python hands such exceptions to `sys.unraisablehook`; this hook marks the
    signal swallowed, and a thread delivers it again to the main thread (`_thread.interrupt_main`) a moment later,
    never inside the hook itself (where it would be swallowed for good), until it is raised somewhere it propagates.
    A later real signal still finds it fired and is only noted."""
    previous = sys.unraisablehook

    def redeliver() -> None:
        while swallowed:
            time.sleep(REDELIVER_AFTER_S)
            if swallowed:
                _thread.interrupt_main(swallowed[-1])

    def hook(unraisable: Any) -> None:
        if fired and isinstance(unraisable.exc_value, KeyboardInterrupt):
            if not swallowed:
                swallowed.append(fired[-1])
                threading.Thread(target=redeliver, name="rlaunch-signal-redelivery", daemon=True).start()
            return
        previous(unraisable)

    sys.unraisablehook = hook


@contextlib.contextmanager
def teardown_shield(note: Callable[[str], None] | None = None) -> Iterator[None]:
    """Keep SIGTERM and SIGINT from aborting a teardown in progress (issue 12).

    `timeout`, systemd and Slurm signal the launcher and then its whole process group, often twice within a
    second: a teardown cut short leaves the job running. So while tearing down, SIGTERM is noted and ignored; a
    human at a terminal may abandon with a second Ctrl-C within ABANDON_WINDOW_S of being told so. Signal handlers
    belong to the main thread: elsewhere (tests, the validation runner's threads) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    say = note or (lambda text: sys.stderr.write(f"rlaunch: {text}\n"))
    warned_at: list[float] = []
    human = sys.stdin is not None and sys.stdin.isatty()

    def on_signal(signum: int, _frame: object) -> None:
        now = time.monotonic()
        if signum == signal.SIGINT and human:
            if warned_at and now - warned_at[-1] <= ABANDON_WINDOW_S:
                raise KeyboardInterrupt
            warned_at.append(now)
            say(
                f"stopping the job on every node… press Ctrl-C again within {ABANDON_WINDOW_S:g} s to abandon"
            )
            return
        say(f"{signal.Signals(signum).name} received while stopping: finishing the teardown first")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def sigterm_interrupts(*, daemon: bool = False) -> None:
    """The supervisor's: SIGTERM (from `rlaunch down`) takes the path Ctrl-C takes in a foreground `up` (stop the
    job everywhere). Every SIGTERM raises: the teardown itself runs under `teardown_shield`. A daemon (no
    terminal, its own session) also ignores SIGHUP. A swallowed one is raised again (`_redeliver_swallowed`)."""
    fired: list[int] = []
    swallowed: list[int] = []

    def as_interrupt(signum: int, frame: Any) -> None:
        swallowed.clear()
        fired.append(signum)
        raise KeyboardInterrupt

    if daemon:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, as_interrupt)
    _redeliver_swallowed(fired, swallowed)
