"""The head side of the guard protocol: the only code that speaks to a node guard.

It builds every guard call from a run's typed node targets (`GuardTarget`, stored in the run record when the run
starts: never re-derived from a plan's display JSON) in the words of `launcher/node/protocol.py`, and returns one
typed reply per node, as Fabric's Group does.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cluster.transport import TIMEOUT, First, RemoteProcess, Result, Transport, TransportError
from launcher.node import protocol


@dataclass(frozen=True)
class GuardTarget:
    """Where a run's guard lives on one node, and which interpreter runs it."""

    host: str
    python: str
    run_dir: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> GuardTarget:
        """From a run record; a tampered or truncated record is refused, never guessed at."""
        if not isinstance(data, Mapping):
            raise ValueError("node target is not an object")
        values = {}
        for name in ("host", "python", "run_dir"):
            value = data.get(name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"node target field {name!r} must be a non-empty string, not {value!r}")
            values[name] = value
        if not values["run_dir"].startswith("/"):
            raise ValueError(f"node target run_dir must be absolute, not {values['run_dir']!r}")
        return cls(**values)


@dataclass(frozen=True)
class GuardReply:
    """One node's answer to a verb: the guard's JSON reply (`data`) or why there is none (`error`)."""

    host: str
    data: dict[str, Any] | None
    error: str | None
    exit_code: int | None = None
    failure: str | None = None  # the transport's failure kind when it could not run the verb at all
    via: str = "node"  # who gave the answer: the node itself, or "supervisor" (its teardown record, `down`)

    @property
    def ok(self) -> bool:
        return self.error is None and self.data is not None

    @property
    def state(self) -> str | None:
        return (self.data or {}).get("state")

    @classmethod
    def of(cls, result: Result) -> GuardReply:
        data = protocol.reply_of(result.stdout) if result.error is None else None
        if data is not None and "error" in data and len(data) == 1:
            return cls(result.host, None, str(data["error"]), result.exit_code)
        # A guard verb that answered counts as an answer even when it exits non-zero (stop with survivors).
        error = None if data is not None else result.why()
        return cls(result.host, data, error, result.exit_code, result.failure)


RecordSink = Callable[[str, dict[str, Any]], None]  # (host, record)
RawSink = Callable[[str, str, str], None]  # (host, stream, line) for what is not a record


class GuardClient:
    """Every call to the guards of one run goes through here."""

    def __init__(self, transport: Transport):
        self.transport = transport

    def call(
        self,
        targets: Iterable[GuardTarget],
        verb: str,
        *,
        timeout: float = 60,
        grace: float | None = None,
    ) -> dict[str, GuardReply]:
        """Run `verb` on every target in parallel: host → reply."""
        by_host = {t.host: t for t in targets}
        if not by_host:
            return {}
        group = self.transport.run_all(
            by_host,
            lambda h: protocol.guard_argv(by_host[h].python, by_host[h].run_dir, verb, grace=grace),
            timeout=timeout,
        )
        return {host: GuardReply.of(result) for host, result in group.results.items()}

    def stop(
        self, targets: Iterable[GuardTarget], *, grace: float, timeout: float | None = None
    ) -> dict[str, GuardReply]:
        return self.call(
            targets, protocol.STOP, timeout=grace + 30 if timeout is None else timeout, grace=grace
        )

    def status(self, targets: Iterable[GuardTarget], *, timeout: float = 30) -> dict[str, GuardReply]:
        return self.call(targets, protocol.STATUS, timeout=timeout)

    def follow(
        self,
        target: GuardTarget,
        on_record: RecordSink,
        *,
        offset: int = 0,
        attached: bool = False,
        start: bool = False,
        on_other: RawSink | None = None,
        show: str | None = None,
        retry_until: float | None = None,
        stop: threading.Event | None = None,
    ) -> RemoteProcess:
        """Stream the guard's records (`run` for attached guards; `start-follow` to start the guard and stream on
        the same channel; else `follow` from `offset`); `show` names the local ranks whose healthy lines are
        forwarded (edge forwarding; None: every line).

        `retry_until` (time.monotonic): a node too busy to open a channel ("Timeout opening channel": sshd
        answering late at 250 simulated nodes on 2 cores, docs/scale.md) is asked again, 0.5 s apart then doubling,
        until then or until `stop` is set; the last TransportError is raised. A start is asked again only when its
        channel never opened (TIMEOUT: the command goes out only on an open channel, so no guard ran); a follow
        reads and is always safe to ask again. One home for the runner's starts and followers and for
        `rlaunch logs --follow`."""
        verb = protocol.RUN if attached else protocol.START_FOLLOW if start else protocol.FOLLOW
        argv = protocol.guard_argv(
            target.python,
            target.run_dir,
            verb,
            offset=None if attached or start else offset,
            show=None if attached else show,
            unbuffered=True,
        )

        def on_line(stream: str, line: str) -> None:
            record = protocol.parse_record(line) if stream == "stdout" else None
            if record is not None:
                on_record(target.host, record)
            elif on_other is not None:
                on_other(target.host, stream, line)

        pause = 0.5
        while True:
            try:
                return self.transport.start(target.host, argv, on_line)
            except TransportError as exc:
                stopped = stop is not None and stop.is_set()
                if stopped or retry_until is None or time.monotonic() + pause >= retry_until:
                    raise
                if start and exc.kind != TIMEOUT:
                    raise
                time.sleep(pause)
                # a start is a whole guard: a busy node is asked less often
                pause = min(pause * 2, 4.0 if start else 2.0)

    def run_attached(
        self,
        targets: Iterable[GuardTarget],
        on_record: RecordSink,
        *,
        on_other: RawSink | None = None,
        first: First | None = None,
    ) -> dict[str, RemoteProcess]:
        """Start every attached guard (`run`: it streams like follow) with one transport call: host → its
        channel. Per node in parallel on most transports; ONE job step for all nodes under Slurm
        (cluster/slurm.py `start_all`), which also runs `first` (the push) before the guards, so a launch
        costs one step whatever the node count."""
        by_host = {t.host: t for t in targets}

        def on_line(host: str, stream: str, line: str) -> None:
            record = protocol.parse_record(line) if stream == "stdout" else None
            if record is not None:
                on_record(host, record)
            elif on_other is not None:
                on_other(host, stream, line)

        return self.transport.start_all(
            by_host,
            lambda h: protocol.guard_argv(
                by_host[h].python, by_host[h].run_dir, protocol.RUN, unbuffered=True
            ),
            on_line,
            first=first,
        )


def stop_over_channels(
    channels: Mapping[str, RemoteProcess], ended: Callable[[str], bool], timeout: float
) -> set[str]:
    """Stop attached guards with the stop word on their open channels (protocol.STOP_WORD: the follower
    SIGTERMs its guard, which tears the job down and sends its exit record): no new process on the nodes, and
    under Slurm one write on the step's stdin for every node instead of a stop step. Waits until `ended(host)`
    for each (its exit record arrived) or the timeout; returns the hosts still running, for the stop verb."""
    word = (protocol.STOP_WORD + "\n").encode()
    left = set(channels)
    for channel in channels.values():
        with contextlib.suppress(TransportError):  # the stop verb asks this one
            channel.write(word)
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        left = {h for h in left if not ended(h)}
        time.sleep(0.1)
    return left


def heartbeat_interval(heartbeat_timeout: float) -> float:
    """How often the head beats: BEATS_PER_TIMEOUT times per timeout (protocol.py), at most every 0.3 s."""
    return max(0.3, float(heartbeat_timeout) / protocol.BEATS_PER_TIMEOUT)


@dataclass
class BeatStats:
    """What the heartbeat thread did, for the bench and for tests: beats sent, skipped (link full), rounds."""

    sent: int = 0
    skipped: int = 0
    rounds: int = 0
    late: list[float] = field(default_factory=list)  # how much later than planned each round began (s)


class Heartbeats:
    """The head's heartbeats to every follower, from a thread of their own (issue 23).

    Written from the watch loop, one node after another with a blocking send, anything that held that loop (the
    runner's lock, forensics, one node's full SSH window) starved every guard at once: at 250 simulated nodes
    guards tore their jobs down with "no heartbeat for 15.0 s". Here no beat waits: `try_write` sends only what the
    link takes at once (cluster/transport.py), a node that cannot take it misses that beat alone, and the guard
    gives up only after BEATS_PER_TIMEOUT missed beats in a row. The thread takes no lock of the runner's.

    `followers()` says whom to beat now (host → channel); `on_dead(host, why)` is told of a link that is gone."""

    def __init__(
        self,
        followers: Callable[[], Iterable[tuple[str, RemoteProcess]]],
        every: float,
        on_dead: Callable[[str, str], None],
    ):
        self.followers = followers
        self.every = every
        self.on_dead = on_dead
        self.stats = BeatStats()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._word = (protocol.HEARTBEAT + "\n").encode()

    def start(self) -> Heartbeats:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rlaunch-heartbeat", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def beat_once(self) -> None:
        for host, proc in list(self.followers()):
            self.beat(host, proc)
        self.stats.rounds += 1

    def beat(self, host: str, proc: RemoteProcess) -> None:
        """One beat to one follower, never waiting: also sent at once when a follower opens late (its guard has
        been counting since its start)."""
        try:
            if proc.try_write(self._word):
                self.stats.sent += 1
            else:
                self.stats.skipped += 1
        except TransportError as exc:
            self.on_dead(host, f"heartbeat failed: {exc.reason}")
        except Exception as exc:  # a broken channel object must not end the beats of every other node
            self.on_dead(host, f"heartbeat failed: {exc}")

    def _run(self) -> None:
        planned = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            self.stats.late.append(max(0.0, now - planned))
            del self.stats.late[:-1000]
            self.beat_once()
            planned = max(planned + self.every, time.monotonic())
            self._stop.wait(max(0.0, planned - time.monotonic()))
