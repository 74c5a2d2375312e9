"""Cadence and activity: what the watcher needs to tell a hang from a silent-but-busy phase. No I/O, no clock.

Two inputs, both plain data so that a run can be replayed:

- progress lines (``step=N``, ``step N``, DeepSpeed ``[Rank 0] step=N``, HF Trainer / LLaMA-Factory log dicts
  ``{'loss': ...}``, tqdm ``12/100 [..., 2.1it/s]``, or ``health.progress_regex``), from which the job's step
  interval is learned (over the recent steps);
- per-rank samples from the node guard (cumulative CPU seconds and I/O bytes of each rank's process).

A **hang** is no progress for ``max(hang_factor × interval, hang_floor)`` while every rank has been quiescent
(CPU below ``idle_cpu`` of a core and no I/O) for ``quiet_window`` seconds. A rank computing, writing a
checkpoint or reading data is busy, so an evaluation or a save that prints nothing is never a hang; a job
spinning in a busy loop is left to ``stall_timeout``.

A node whose guard stops sending samples altogether while the others keep reporting (a frozen host, a node deep
in swap: its kernel still acknowledges TCP, so no connection breaks and no peer shouts) is **unheard**: its ranks
are left out of the quiescence test, and the watcher names that node when the rest of the job is hung waiting for
it, instead of waiting for ``stall_timeout``.

Where the guard samples the rank's GPU (amd-smi / rocm-smi, every 5 s; launcher/node/gpuact.py), the GPU speaks
first over the quiet window: a GPU doing real work (busy with memory-controller activity or power clearly above its
idle power) makes the rank busy even with an idle CPU (a long evaluation kernel); a GPU that only shows the
spinning signature of a hung collective (busy engine, quiet memory controller, about idle power) on every sample
makes the rank quiescent even while its CPU spins (RCCL's proxy thread busy-polls, the host may spin-wait) unless
its I/O advanced. An idle GPU, mixed samples or no samples leave the CPU/IO rule as it is.

A **straggler** is a node whose ranks spend persistently more CPU time per step than the other nodes' ranks
(``straggler_ratio`` × their median and at least ``straggler_min_s`` more, over ``straggler_window`` seconds, on
``straggler_confirm`` consecutive checks). In a synchronous job the fast ranks wait idle inside the collective
(gloo and RCCL block rather than spin on CPU), so extra busy time per step is the straggler's signature.
"""

from __future__ import annotations

import re
import statistics
from collections import deque
from dataclasses import dataclass, field

from launcher.node import gpuact

PROGRESS_PATTERNS = (
    re.compile(
        r"\bstep[\s=:]+(\d{1,18})(?!\d)", re.IGNORECASE
    ),  # "step=12", "step 12", "Step: 12", DeepSpeed's "step=12,"
    re.compile(
        r"\|\s*(\d{1,18})/\d{1,18}\s*\[[^\]]*(?:it/s|s/it)"
    ),  # tqdm: "| 12/100 [00:05<00:40,  2.10it/s]"
    re.compile(r"^\{.*'(?:loss|train_loss|eval_loss)': "),  # HF Trainer / LLaMA-Factory log dicts (no step)
)
INTERVALS_KEPT = 32
SAMPLES_KEPT_S = 120.0


@dataclass(frozen=True)
class Settings:
    """The detection rules' knobs; defaults are what `health:` gives without settings (see README)."""

    hang_floor: float = 30.0  # never call a hang before this much silence
    hang_factor: float = 10.0  # ... nor before this many learned step intervals
    quiet_window: float = 20.0  # every rank idle this long
    idle_cpu: float = 0.02  # of one core: below this a rank is idle (blocked in a collective, sleeping)
    min_steps: int = 3  # progress lines before a cadence counts as learned
    straggler_ratio: float = 1.2
    straggler_min_s: float = 0.1  # extra busy seconds per step, so tiny steps never raise a warning
    straggler_window: float = 30.0
    straggler_confirm: int = 3
    progress_regex: str | None = None
    # GPU activity (gpuact.gpu_state): graphics activity that counts as busy, memory-controller activity that
    # proves real work, and the multiple of the GPU's lowest power reading below which it counts as "near idle".
    gpu_busy_pct: float = gpuact.GFX_BUSY_PCT
    gpu_mem_pct: float = gpuact.UMC_ACTIVE_PCT
    gpu_idle_power_ratio: float = gpuact.IDLE_POWER_RATIO


def progress_step(text: str, custom: re.Pattern[str] | None = None) -> int | bool | None:
    """The step number a progress line reports; True for a progress line without a number; None otherwise."""
    for pattern in (custom, *PROGRESS_PATTERNS) if custom is not None else PROGRESS_PATTERNS:
        m = pattern.search(text)
        if m:
            if not m.groups() or m.group(1) is None:
                return True
            return _bounded_int(m.group(1))
    return None


MAX_STEP_DIGITS = 18  # int() refuses more than 4300 digits (issue 21); no job counts past 10**18 steps


def _bounded_int(text: str) -> int | bool:
    """A step number, or True (progress without a usable number) for one too long or not a number at all: a
    custom progress_regex may capture anything."""
    text = text.strip()
    if not text.isdigit() or not text.isascii() or len(text) > MAX_STEP_DIGITS:
        return True
    return int(text)


@dataclass
class RankSeries:
    """Cumulative CPU seconds and I/O bytes of one rank's process over time."""

    samples: deque[tuple[float, float, float]] = field(default_factory=deque)  # (time, cpu, io)
    gpu: deque[tuple[float, str]] = field(default_factory=deque)  # (time, gpuact state) of the rank's GPU

    def add(self, time: float, cpu: float, io: float, gpu: str | None = None) -> None:
        if self.samples and (cpu < self.samples[-1][1] or io < self.samples[-1][2]):
            self.samples.clear()  # a new process under the same rank (a restart): counters began again
        self.samples.append((time, cpu, io))
        while self.samples and time - self.samples[0][0] > SAMPLES_KEPT_S:
            self.samples.popleft()
        if gpu is not None:
            self.gpu.append((time, gpu))
        while self.gpu and time - self.gpu[0][0] > SAMPLES_KEPT_S:
            self.gpu.popleft()

    def gpu_since(self, since: float) -> list[str]:
        return [state for t, state in self.gpu if t > since]

    def delta(self, since: float) -> tuple[float, float, float] | None:
        """(seconds covered, CPU seconds, I/O bytes) from the last sample at or before `since` to the newest."""
        older = [s for s in self.samples if s[0] <= since]
        if not older:
            return None
        first, last = older[-1], self.samples[-1]
        return last[0] - first[0], last[1] - first[1], last[2] - first[2]


@dataclass
class Progress:
    settings: Settings = field(default_factory=Settings)
    steps: deque[tuple[float, int]] = field(default_factory=deque)  # (time, job-wide progress count)
    last_progress: float | None = None
    count: int = 0
    _last_step: int | None = None
    ranks: dict[tuple[str, int], RankSeries] = field(default_factory=dict)
    _straggling: dict[str, int] = field(default_factory=dict)
    heard: dict[str, float] = field(default_factory=dict)  # node → when its guard last sent samples
    _custom: re.Pattern[str] | None = None

    def __post_init__(self) -> None:
        if self.settings.progress_regex:
            self._custom = re.compile(self.settings.progress_regex)

    # ---- inputs ---------------------------------------------------------------------------------

    def observe_line(self, time: float, text: str) -> bool:
        """Count a progress line; the same step printed by several ranks counts once. True if it was progress."""
        step = progress_step(text, self._custom)
        if step is None:
            return False
        if step is not True and step == self._last_step:
            return True
        if step is not True:
            self._last_step = int(step)
        self.last_progress = time
        self.count += 1
        self.steps.append((time, self.count))
        while self.steps and time - self.steps[0][0] > SAMPLES_KEPT_S:
            self.steps.popleft()
        return True

    def observe_rank(
        self, time: float, node: str, rank: int, cpu: float, io: float, gpu: dict | None = None
    ) -> None:
        """One sample of a rank: cumulative CPU seconds and I/O bytes, and when the guard sent one, a fresh reading
        of its GPU ({"gfx", "umc", "w", "idle_w"}, as launcher/node/guard.py's GpuWatch.annotate writes it)."""
        self.ranks.setdefault((node, rank), RankSeries()).add(time, cpu, io, self.gpu_state(gpu))

    def gpu_state(self, gpu: dict | None) -> str | None:
        if not isinstance(gpu, dict):
            return None
        s = self.settings

        def number(key: str) -> float | None:
            value = gpu.get(key)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        return gpuact.gpu_state(
            number("gfx"), number("umc"), number("w"), number("idle_w"),
            s.gpu_busy_pct, s.gpu_mem_pct, s.gpu_idle_power_ratio,
        )  # fmt: skip

    def observe_heard(self, time: float, node: str) -> None:
        """The node's guard sent a snapshot of its job processes (about every second, even an empty one)."""
        self.heard[node] = max(time, self.heard.get(node, time))

    # ---- questions ------------------------------------------------------------------------------

    @property
    def interval(self) -> float | None:
        """The learned step interval (median of recent ones), once enough steps were seen."""
        if self.count < self.settings.min_steps or len(self.steps) < 2:
            return None
        # Over the recent steps, not between consecutive lines: the guard forwards lines in batches, so several
        # steps can arrive with the same time stamp.
        recent = list(self.steps)[-INTERVALS_KEPT:]
        (t0, c0), (t1, c1) = recent[0], recent[-1]
        return (t1 - t0) / (c1 - c0) if c1 > c0 else None

    def hang_after(self) -> float | None:
        interval = self.interval
        if interval is None:
            return None
        return max(self.settings.hang_factor * interval, self.settings.hang_floor)

    def unheard_nodes(self, now: float) -> list[str]:
        """Nodes not heard from for the quiet window while another node was: frozen, not merely quiet."""
        window = self.settings.quiet_window
        if not any(now - t < window for t in self.heard.values()):
            return []  # nobody heard: the head's own link or load, not one node's fault
        return sorted(node for node, t in self.heard.items() if now - t >= window)

    def busy_ranks(self, now: float, skip: frozenset[str] = frozenset()) -> list[tuple[str, int]] | None:
        """Ranks busy over the quiet window (real GPU work, I/O, or CPU unless every GPU sample showed the spinning
        signature); None when the samples do not cover the window yet. Ranks of the ``skip`` nodes (unheard) are
        left out; None when no other rank is left."""
        window = self.settings.quiet_window
        if not any(node not in skip for node, _ in self.ranks):
            return None
        busy = []
        for key, series in self.ranks.items():
            if key[0] in skip:
                continue
            delta = series.delta(now - window)
            if delta is None or delta[0] < window * 0.75:
                return None
            seconds, cpu, io = delta
            gpu = series.gpu_since(now - window)
            if gpuact.BUSY in gpu or io > 0:
                busy.append(key)  # the GPU does real work (a long kernel with an idle CPU), or data moves
            elif len(gpu) >= 2 and all(state == gpuact.SPINNING for state in gpu):
                continue  # a hung collective's kernels spin: the CPU time is spin-waiting, not work
            elif cpu > self.settings.idle_cpu * seconds:
                busy.append(key)
        return busy

    def hung(self, now: float) -> tuple[float, float] | None:
        """(silent seconds, threshold) when the job is hung by the rule above, else None."""
        threshold = self.hang_after()
        if threshold is None or self.last_progress is None:
            return None
        silent = now - self.last_progress
        if silent < threshold:
            return None
        busy = self.busy_ranks(now, frozenset(self.unheard_nodes(now)))
        if busy is None or busy:
            return None
        return silent, threshold

    def busy_per_step(self, now: float) -> dict[tuple[str, int], float]:
        """CPU seconds per job step of each rank over the straggler window (ranks without enough samples left out)."""
        window = self.settings.straggler_window
        counted = [c for t, c in self.steps if t >= now - window]
        before = [c for t, c in self.steps if t < now - window]
        if not counted or not before:
            return {}
        steps = counted[-1] - before[-1]
        interval = self.interval
        if steps < self.settings.min_steps or interval is None or self.last_progress is None:
            return {}
        # Only while the job steps steadily through the whole window: a silent phase (an evaluation on one rank)
        # is busy time that belongs to no step.
        if now - self.last_progress > max(3 * interval, 2.0) or steps < 0.75 * window / max(interval, 1e-6):
            return {}
        out = {}
        for key, series in self.ranks.items():
            delta = series.delta(now - window)
            if delta is not None and delta[0] >= window * 0.75:
                out[key] = delta[1] / steps
        return out

    def stragglers(self, now: float) -> dict[str, str]:
        """Nodes confirmed as stragglers at this check → the evidence, in words. Call about once a second."""
        per_rank = self.busy_per_step(now)
        nodes = {node for node, _ in per_rank}
        found: dict[str, str] = {}
        if len(nodes) < 2:
            self._straggling.clear()
            return found
        s = self.settings
        for node in sorted(nodes):
            mine = max(v for (n, _), v in per_rank.items() if n == node)
            others = statistics.median(v for (n, _), v in per_rank.items() if n != node)
            if mine >= s.straggler_ratio * others and mine - others >= s.straggler_min_s:
                self._straggling[node] = self._straggling.get(node, 0) + 1
                if self._straggling[node] == s.straggler_confirm:
                    found[node] = (
                        f"{node} is a straggler: its ranks are busy {mine:.2f} s per step, the other nodes' "
                        f"median {others:.2f} s (+{mine - others:.2f} s per step) over "
                        f"the last {s.straggler_window:.0f} s; the others wait for it in every collective"
                    )
            else:
                self._straggling[node] = 0
        return found
