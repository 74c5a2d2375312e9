"""Cadence and activity: what the watcher needs to tell a hang from a silent-but-busy phase. No I/O, no clock.

Two inputs, both plain data so that a run can be replayed:

- progress lines (``step=N``, ``step N``, ``Epoch N``, ``iter N``, ``[N/M]``, DeepSpeed ``[Rank 0] step=N`` and
  ``steps: N``, HF Trainer / LLaMA-Factory log dicts ``{'loss': ...}``, the training tqdm bar ``12/100 [...]`` but
  not start-up bars such as datasets' ``Map`` nor banners such as ``Total optimization steps = 400``, or
  ``health.progress_regex``), from which the job's step interval is learned (over the recent steps).
  ``parse_progress`` is the one parser: goodput, ``status`` and the run report read steps and losses through it too;
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

# The one progress parser (issue 20): the hang rule, goodput, `status` and the report all read a line's step and loss
# here. Digit runs are bounded (\d{1,12}) so that no line can make int() chew on thousands of digits.
_N = r"(\d{1,12})(?!\d)"
_FLOAT = r"(-?\d{1,12}(?:\.\d{0,20})?(?:e[-+]?\d{1,3})?|nan|-?inf)"
# Most specific first. A program prints one of these shapes consistently; the first that matches names the step.
# Each comes with a lower-case word the line must contain, so most lines cost a few substring tests.
STEP_PATTERNS = (
    # DeepSpeed's ThroughputTimer "global_step=12", HF trainer state
    ("global_step", re.compile(r"\bglobal_step['\"]?\s*[=:]?\s*" + _N, re.IGNORECASE)),
    # "step=12", "step 12", "Step: 12", "'step': 12", DeepSpeed's "[Rank 0] step=12,", "Step [100/600]"
    ("step", re.compile(r"\bstep\b['\"]?\s*[=:]?\s*\[?\s*" + _N, re.IGNORECASE)),
    (
        "epoch",
        re.compile(r"\bepoch\b['\"]?\s*[=:]?\s*\[?\s*" + _N + r"(?![.\d])", re.IGNORECASE),
    ),  # "Epoch 7 | ..."
    ("iter", re.compile(r"\biter(?:ation)?\b\s*[=:]?\s*" + _N, re.IGNORECASE)),  # "iter 30", "iteration: 30"
    ("]", re.compile(r"\[\s*" + _N + r"\s*/\s*\d{1,12}\s*\]")),  # "[30/100]"
    # "steps: 30", last: after "Epoch N" the tutorial's "| Steps: 64" is a count, not progress
    ("steps", re.compile(r"\bsteps\s*[=:]\s*" + _N, re.IGNORECASE)),
)
_WORDS = ("step", "epoch", "iter", "oss")
_COUNT = re.compile(r"\d/\d")  # tqdm's "12/100 [" and "[12/100]"
# tqdm: "Label:  12%|█▏        | 12/100 [00:05<00:40,  2.10it/s]" (the label and the percentage are optional).
TQDM = re.compile(r"(?:^|\s)" + _N + r"/(\d{1,12}) \[(?:[\d:]{1,12}|\?)<")
_BAR = re.compile(r"\d{1,3}%\|.*$")
# The training bar is unlabelled (HF Trainer, LLaMA-Factory) or says so; every other labelled bar is start-up work:
# datasets' "Map", "Filter", "Running tokenizer on dataset", LLaMA-Factory's "Converting format of dataset",
# Transformers' "Loading checkpoint shards", downloads, "Generating train split".
TRAINING_LABELS = ("epoch", "train", "iter", "step")
# HF Trainer / LLaMA-Factory log dicts; only the training "loss" key is a point of the loss curve.
LOG_DICT = re.compile(r"^\s*\{.*'(?:loss|train_loss|eval_loss)': ")
LOSS = re.compile(r"""\bloss['"]?\s*[=:]?\s*['"]?""" + _FLOAT + r"\b", re.IGNORECASE)
# Prose about steps, not progress: "resumed from step-6 at step 6", "Loading snapshot", "Epoch 5 | Training snapshot
# saved at snapshot.pt", "Saving model checkpoint to ...".
# Transformers 4.x's "Continuing training from epoch 1" / "... from global step 200" is resume prose too.
PROSE = re.compile(
    r"\b(?:resum\w*|restor\w*|continuing|loading|loaded|saving|saved|snapshot)\b", re.IGNORECASE
)
# A start-up banner names a count, not a step: HF Trainer's "***** Running training *****" block ("  Total
# optimization steps = 1,000", "  Gradient Accumulation steps = 4", "  Num update steps per epoch = 250";
# transformers 5.6 trainer.py, Trainer._inner_training_loop), LLaMA-Factory's PPO trainer ("  Total training steps =
# 400"). Its shape: a label of two words or more, one of them a plural count noun, then " = " and one number that
# ends the line (perhaps with a parenthesised note). "step = 8" and DeepSpeed's "steps: 40 loss: ..." stay progress.
BANNER = re.compile(
    r"(?:^|\s\s|[^\w\s] ?)([A-Za-z][\w-]*(?: [A-Za-z][\w-]*)+) = \d[\d,]*(?: \([^()]*\))?\s*$"
)
_COUNT_NOUNS = frozenset(("steps", "epochs", "iters", "iterations"))
# tqdm redraws with "\r" and no newline, and torchrun's tee writes each partial chunk with its "[defaultN]:" prefix:
# one log line can hold many bar states and a log dict. Each piece is read; the last step wins.
_PIECES = re.compile(r"\r|\[[A-Za-z_][\w-]{0,30}?\d{1,6}\]:")


@dataclass(frozen=True)
class ProgressLine:
    """What a progress line says: its step (None for a line without one, e.g. a log dict) and training loss."""

    step: int | None
    loss: float | None = None
    bar: bool = False  # the step is a tqdm bar's drawn count (it may lag the real step)


def _banner(text: str) -> bool:
    """A start-up banner's "Label of counts = N" line (see BANNER)."""
    m = BANNER.search(text) if " = " in text else None
    return m is not None and any(word.lower() in _COUNT_NOUNS for word in m.group(1).split())


def _piece(text: str, low: str, custom: re.Pattern[str] | None) -> ProgressLine | None:
    loss_match = LOSS.search(text) if "oss" in low else None
    loss = float(loss_match.group(1)) if loss_match else None
    if custom is not None and (m := custom.search(text)):
        groups = [g for g in m.groups() if g is not None]
        digits = (
            groups[0] if groups and groups[0].isdecimal() and len(groups[0]) <= 12 else None
        )  # "²".isdigit()
        return ProgressLine(int(digits) if digits else None, loss)
    if "{" in text and LOG_DICT.search(text):
        return ProgressLine(None, loss)
    if "/" in text and " [" in text and (m := TQDM.search(text)):
        name = _BAR.sub("", text[: m.start(1)]).strip().rstrip(":").strip().lower()
        if name and not name.startswith(TRAINING_LABELS):
            return None  # a start-up bar
        return ProgressLine(int(m.group(1)), loss, bar=True)
    for word, pattern in STEP_PATTERNS:
        if word in low and (m := pattern.search(text)):
            return None if PROSE.search(text) or _banner(text) else ProgressLine(int(m.group(1)), loss)
    return None


def parse_progress(text: str, custom: re.Pattern[str] | None = None) -> ProgressLine | None:
    """The step and loss a line reports, or None when it shows no training progress (see STEP_PATTERNS)."""
    # Substring tests first: this runs for every line of every rank, and most lines are neither.
    low = text.lower()
    if custom is None and not any(w in low for w in _WORDS) and not ("/" in text and _COUNT.search(text)):
        return None
    if "\r" in text or ("]:" in text and ("it/s" in text or "%|" in text)):
        pieces = _PIECES.split(text)
    else:
        pieces = [text]
    step: int | None = None
    loss: float | None = None
    bar = False
    found = False
    for piece in pieces:
        parsed = _piece(piece, piece.lower() if len(pieces) > 1 else low, custom)
        if parsed is None:
            continue
        found = True
        if parsed.step is not None:
            step, bar = parsed.step, parsed.bar
        loss = parsed.loss if parsed.loss is not None else loss
    return ProgressLine(step, loss, bar) if found else None


def progress_step(text: str, custom: re.Pattern[str] | None = None) -> int | bool | None:
    """The step number a progress line reports; True for a progress line without a number; None otherwise."""
    parsed = parse_progress(text, custom)
    if parsed is None:
        return None
    return parsed.step if parsed.step is not None else True


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
        of its GPU ({"gfx", "umc", "w", "idle_w"}, as launcher/node/gpuwatch.py's GpuWatch.annotate writes it)."""
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
