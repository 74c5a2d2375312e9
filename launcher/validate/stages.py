"""Validation stages: `single` (each node alone), `dual` (two ranks on one node), `cluster` (all nodes).

A stage is a list of named checks (pass / fail / skip with value and threshold). Workloads run through the
real runner (launcher/validate/runner.py → lifecycle.up); the verdicts come from the pure checks in
launcher/validate/checks.py. Later stages build on earlier ones: `dual` reuses the 1-rank probe of `single` as
its reference, and a node that failed `single` is left out of the work that needs it (a skip says why).
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from cluster.inventory import Inventory, NodeSpec
from cluster.transport import Transport, make_transport
from launcher import nodecall
from launcher.errors import ExitCode
from launcher.node.protocol import SAFE_PATH
from launcher.rocm import BF16_ARCHS, PROFILE_ARCH
from launcher.validate import checks as C
from launcher.validate.baseline import (
    Metric,
    Tolerance,
    allreduce_metrics,
    compare_to_baseline,
    probe_metrics,
)
from launcher.validate.checks import Check, Record
from launcher.validate.lossplot import write_loss_svg
from launcher.validate.report import StageResult
from launcher.validate.runner import DEFAULT_STALL_TIMEOUT, WorkloadResult, run_attempts, run_workload

STAGES = ("single", "dual", "cluster")
EXIT_INFRA = ExitCode.INFRA
CKPT_EVERY = 2
# Same seed, same global batch: a 2-rank DDP run differs from the 1-rank run only by float summation order.
DDP_TOLERANCE = 1e-6
# Resume on CPU reproduces the losses bitwise (docs/facts.md); GPU kernels may differ in the last bits.
RESUME_TOLERANCE = {"cpu": 0.0, "cuda": 1e-5}
DATALOADER_WORKERS = 2
INJECTIONS = ("wrong-checkpoint",)

# Run with the node's python: never raises, so a node without torch is reported, not a crash.
ENV_SCRIPT = (
    SAFE_PATH
    + """
import json, sys
out = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import torch
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
else:
    out["torch"] = torch.__version__
    out["hip"] = getattr(torch.version, "hip", None)
    out["gpus"] = torch.cuda.device_count()
    out["bf16"] = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
print(json.dumps(out))
"""
)
RMTREE_SCRIPT = "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)"


class ValidateInputError(ValueError):
    """Options that cannot work with this inventory (exit 2)."""


@dataclass
class Options:
    device: str = "cpu"
    steps: int = 8
    only: bool = False
    ckpt_dir: str | None = None
    budget: float | None = None
    inject: str | None = None  # hidden: fault the validator itself, to prove its checks can fail
    fault: bool = True  # kill a rank mid-run and resume (dual, cluster); off for a quicker check
    min_busbw: float | None = None
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    dual_node: str | None = None
    baseline: Mapping[str, Metric] | None = None
    tolerances: Mapping[str, Tolerance] | None = None
    progress: Callable[[str], None] = lambda text: None


@dataclass
class ValidationRun:
    stages: list[StageResult]
    metrics: list[Metric] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.unreachable:
            return EXIT_INFRA
        return ExitCode.FAILED if any(s.failed for s in self.stages) else ExitCode.OK


def stages_to_run(stage: str, only: bool) -> list[str]:
    if stage not in STAGES:
        raise ValidateInputError(f"unknown stage {stage!r} (one of {', '.join(STAGES)})")
    return [stage] if only else list(STAGES[: STAGES.index(stage) + 1])


def batch_for(world: int) -> int:
    """A global batch divisible by the rank count, near 8 samples (tiny on purpose)."""
    return world * max(2, 8 // world)


def fail_step(steps: int) -> int:
    """The step a fault-injection run dies at: after at least one checkpoint, before the end."""
    return steps // 2 + 1


def default_ckpt_dir(inv: Inventory) -> tuple[str, str | None]:
    """(directory, warning). Fault injection on several nodes needs storage every node sees."""
    if inv.job.checkpoint_dir:
        return f"{inv.job.checkpoint_dir.rstrip('/')}/rlaunch-validate", None
    path = f"{inv.workdir.rstrip('/')}/rlaunch-validate/ckpt"
    warning = (
        f"checkpoints go to {path} (no job.checkpoint_dir): multi-node resume needs it on storage every node "
        "sees; pass --ckpt-dir on shared storage"
    )
    return path, warning if len(inv.nodes) > 1 else None


def check_inputs(inv: Inventory, stages: Sequence[str], opts: Options) -> None:
    """Everything that is bad input, before any node is touched."""
    if opts.steps < 4:
        raise ValidateInputError(f"--steps {opts.steps}: need at least 4 (fault injection resumes mid-run)")
    if opts.inject and opts.inject not in INJECTIONS:
        raise ValidateInputError(f"--inject {opts.inject!r}: known: {', '.join(INJECTIONS)}")
    hosts = [n.host for n in inv.nodes]
    if opts.dual_node and opts.dual_node not in hosts:
        raise ValidateInputError(f"--node {opts.dual_node!r} is not in the inventory ({', '.join(hosts)})")
    if opts.device == "cuda":
        need = {"single": 1, "dual": 2, "cluster": 1}
        for stage in stages:
            nodes = [dual_node(inv, opts)] if stage == "dual" else list(inv.nodes)
            for node in nodes:
                if len(node.gpus) < need[stage]:
                    raise ValidateInputError(
                        f"stage {stage} runs {need[stage]} rank(s) per GPU but node '{node.host}' lists "
                        f"{len(node.gpus)} GPU(s) (nodes[].gpus); use --device cpu for a CPU-only check"
                    )


def dual_node(inv: Inventory, opts: Options) -> NodeSpec:
    return next(n for n in inv.nodes if n.host == (opts.dual_node or inv.nodes[0].host))


# ---------------------------------------------------------------------------------------------------------


class Session:
    """State shared by the stages of one `rlaunch validate`: deadline, reference runs, metrics, failures."""

    def __init__(self, inv: Inventory, opts: Options, transport: Transport) -> None:
        self.inv, self.opts, self.transport = inv, opts, transport
        self.deadline = time.monotonic() + opts.budget if opts.budget else None
        base, self.ckpt_warning = (opts.ckpt_dir, None) if opts.ckpt_dir else default_ckpt_dir(inv)
        self.ckpt_root = f"{base.rstrip('/')}/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
        self.single_probe: dict[str, list[Record]] = {}
        self.bad_nodes: dict[str, str] = {}  # host → why it is left out of later stages
        self.unreachable: set[str] = set()
        self.metrics: list[Metric] = []
        self.ckpt_hosts: set[str] = set()
        self._lock = threading.Lock()

    # --- budget -------------------------------------------------------------------------------------
    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def stall_timeout(self) -> float:
        if self.deadline is None:
            return self.opts.stall_timeout
        return max(5.0, min(self.opts.stall_timeout, self.deadline - time.monotonic()))

    # --- helpers ------------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.opts.progress(text)

    def add_metrics(self, metrics: Sequence[Metric]) -> None:
        with self._lock:
            self.metrics.extend(metrics)

    def mark_bad(self, host: str, why: str) -> None:
        with self._lock:
            self.bad_nodes.setdefault(host, why)

    def run(
        self, name: str, hosts: Sequence[str], script: str, args: Sequence[str], nproc: int, **env: str
    ) -> WorkloadResult:
        result = run_workload(
            self.inv, name, hosts, script, args, nproc=nproc, env=env, stall_timeout=self.stall_timeout()
        )
        self._note_unreachable(result)
        return result

    def _note_unreachable(self, result: WorkloadResult) -> None:
        if result.infra:
            with self._lock:
                self.unreachable.update(result.unreachable)  # the transport's kind, not words in a message

    def run_attempts(
        self,
        name: str,
        hosts: Sequence[str],
        script: str,
        args: Sequence[str],
        nproc: int,
        checkpoint_dir: str,
        **env: str,
    ) -> list[WorkloadResult]:
        """A workload with one restart through rlaunch's restart path: one result per attempt."""
        results = run_attempts(
            self.inv,
            name,
            hosts,
            script,
            args,
            nproc=nproc,
            env=env,
            stall_timeout=self.stall_timeout(),
            checkpoint_dir=checkpoint_dir,
            max_restarts=1,
        )
        self._note_unreachable(results[-1])
        return results

    def probe_args(self, world: int, *extra: str) -> list[str]:
        return [
            "--device",
            self.opts.device,
            "--steps",
            str(self.opts.steps),
            "--global-batch",
            str(batch_for(world)),
            *extra,
        ]

    def allreduce_args(self) -> list[str]:
        if self.opts.device == "cuda":
            sizes = [
                "--min-bytes",
                "1048576",
                "--max-bytes",
                str(256 * 2**20),
                "--warmup",
                "5",
                "--iters",
                "20",
            ]
        else:  # gloo on CPU: small sizes and few iterations keep the stage short
            sizes = ["--min-bytes", "4096", "--max-bytes", str(2**20), "--warmup", "2", "--iters", "5"]
        return ["--device", self.opts.device, *sizes]

    def nproc(self) -> int:
        """Ranks per node for the cluster stage: one per GPU, or one on --device cpu."""
        if self.opts.device == "cuda":
            return len(self.inv.nodes[0].gpus) or 1
        return 1

    def remove_checkpoints(self) -> None:
        for host in sorted(self.ckpt_hosts):
            node = next(n for n in self.inv.nodes if n.host == host)
            nodecall.call(
                self.transport, host, self.inv.python_for(node), RMTREE_SCRIPT, self.ckpt_root, timeout=60
            )


def skipped(names: Sequence[str], node: str, why: str) -> list[Check]:
    return [Check(name, node, "skip", message=why) for name in names]


def explain(check: Check, result: WorkloadResult) -> Check:
    """A failed workload check carries the run's own reason and record, so the table says why."""
    if check.status != "fail" or result.ok:
        return check
    where = f" (run {result.run_id})" if result.run_id else ""
    return Check(
        check.name,
        check.node,
        "fail",
        check.value,
        check.threshold,
        check.unit,
        f"{check.message}; {result.why()}{where}".strip("; "),
    )


# ---------------------------------------------------------------------------------------------------------
# single: every node alone, in parallel

SINGLE_ENV = ("reachable", "torch_import", "gpus_visible", "bf16")
SINGLE_PROBE = ("probe_completed", "loss_decreases")
SINGLE_LOADER = ("dataloader_completed", "dataloader_matches")


def stage_single(session: Session, nodes: Sequence[NodeSpec]) -> StageResult:
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(nodes)))) as pool:
        per_node = list(pool.map(lambda node: single_node(session, node), nodes))
    return StageResult("single", [c for checks in per_node for c in checks])


def single_node(session: Session, node: NodeSpec) -> list[Check]:
    host = node.host
    if session.out_of_time():
        session.mark_bad(host, "not checked (budget)")
        return skipped([*SINGLE_ENV, *SINGLE_PROBE, *SINGLE_LOADER], host, "budget")
    session.say(f"single: {host} environment…")
    out = env_checks(session, node)
    failed = [c for c in out if c.status == "fail"]
    if failed:
        session.mark_bad(host, f"{failed[0].name} failed in stage single")
        return out + skipped([*SINGLE_PROBE, *SINGLE_LOADER], host, f"{failed[0].name} failed")

    if session.out_of_time():
        return out + skipped([*SINGLE_PROBE, *SINGLE_LOADER], host, "budget")
    # One launch: the probe, then the same steps again from a fresh model with batches made by DataLoader worker
    # processes (probe.py --loader-pass). It was two launches; start-up (torch imported by torchrun and the
    # rank) was most of each.
    session.say(f"single: {host} probe, then again with {DATALOADER_WORKERS} dataloader workers…")
    loader_pass = ["--loader-pass", str(DATALOADER_WORKERS)]
    probe = session.run("single-probe", [host], "probe.py", session.probe_args(1, *loader_pass), nproc=1)
    records = [r for r in probe.probe if r.get("pass") != "loader"]
    loaded = [r for r in probe.probe if r.get("pass") == "loader"]
    out += [
        explain(C.check_completed(records, host), probe),
        explain(C.check_loss_decreases(records, host), probe),
    ]
    session.single_probe[host] = records
    session.add_metrics(_renamed(probe_metrics(records, host), "single"))
    out.append(explain(C.check_completed(loaded, host, name="dataloader_completed"), probe))
    # The data of step s depends on (seed, s) only: worker processes must not change a single loss.
    same = C.check_losses_equal(records, loaded, DDP_TOLERANCE, host, name="dataloader_matches")
    out.append(explain(same, probe))
    if any(c.status == "fail" for c in out):
        session.mark_bad(host, "failed stage single")
    return out


def env_checks(session: Session, node: NodeSpec) -> list[Check]:
    host, python = node.host, session.inv.python_for(node)
    reply = nodecall.call(session.transport, host, python, ENV_SCRIPT, timeout=120, isolated=False)
    result = reply.result
    if result.error is not None:
        # Result.error is set only when the transport itself failed (no connection, auth, timeout).
        with session._lock:
            session.unreachable.add(host)
        return [
            Check("reachable", host, "fail", message=result.error),
            *skipped(SINGLE_ENV[1:], host, "node unreachable"),
        ]
    checks = [Check("reachable", host, "pass")]
    facts = reply.data
    if facts is None:
        why = result.why() if result.exit_code else "no answer from the environment probe"
        return [
            *checks,
            Check("torch_import", host, "fail", message=f"python {python!r}: {why}"),
            *skipped(SINGLE_ENV[2:], host, "no python environment"),
        ]
    if "torch" not in facts:
        return [
            *checks,
            Check(
                "torch_import", host, "fail", message=f"{facts.get('executable', python)}: {facts['error']}"
            ),
            *skipped(SINGLE_ENV[2:], host, "torch not importable"),
        ]
    checks.append(
        Check("torch_import", host, "pass", message=f"torch {facts['torch']}, python {facts['python']}")
    )
    if session.opts.device == "cpu":
        return checks + skipped(SINGLE_ENV[2:], host, "--device cpu")
    expected = len(node.gpus)
    seen = int(facts.get("gpus") or 0)
    checks.append(
        Check(
            "gpus_visible",
            host,
            C.verdict(seen >= max(expected, 1)),
            float(seen),
            float(expected),
            "GPUs",
            f"torch sees {seen} GPU(s), the inventory lists {expected} (hip {facts.get('hip')})",
        )
    )
    arch = PROFILE_ARCH.get(session.inv.profile) if session.inv.profile else None
    if arch in BF16_ARCHS:
        checks.append(
            Check("bf16", host, C.verdict(bool(facts.get("bf16"))), message=f"bf16 expected on {arch}")
        )
    else:
        checks.append(Check("bf16", host, "skip", message=f"not expected (profile {session.inv.profile})"))
    return checks


def _renamed(metrics: Sequence[Metric], stage: str, part: str | None = None) -> list[Metric]:
    """Prefix metric names with the stage (and workload), so single's and cluster's numbers never collide."""
    out = []
    for m in metrics:
        name = f"{stage}.{m.name}" if part is None else f"{stage}.{part}.{m.name.split('.', 1)[-1]}"
        out.append(Metric(name, m.node, m.value))
    return out


# ---------------------------------------------------------------------------------------------------------
# dual: two ranks on one node

DUAL_ALLREDUCE = ("allreduce_correct", "allreduce_busbw")
FAULT = ("fault_injected", "resume_losses_match", "resume_jump", "resume_from_latest")


def stage_dual(session: Session) -> StageResult:
    node = dual_node(session.inv, session.opts)
    host = node.host
    stage = StageResult("dual")
    names = [*DUAL_ALLREDUCE, "ddp_completed", "ddp_matches_single", *FAULT]
    if host in session.bad_nodes:
        stage.checks = skipped(names, host, f"{host}: {session.bad_nodes[host]}")
        return stage
    nproc = 2
    stage.checks += allreduce_checks(session, "dual", [host], nproc, node=host)

    if session.out_of_time():
        stage.checks += skipped(["ddp_completed", "ddp_matches_single", *FAULT], host, "budget")
        return stage
    reference = session.single_probe.get(host)
    if reference is None:  # --only: the 1-rank reference was not run yet
        session.say(f"dual: {host} 1-rank reference probe…")
        reference = session.run("dual-ref", [host], "probe.py", session.probe_args(1), nproc=1).probe
    session.say(f"dual: {host} DDP probe, 2 ranks…")
    clean_dir = f"{session.ckpt_root}/dual-clean"
    session.ckpt_hosts.add(host)
    ckpt = ["--ckpt-dir", clean_dir, "--ckpt-every", str(CKPT_EVERY)]
    ddp = session.run("dual-ddp", [host], "probe.py", session.probe_args(nproc, *ckpt), nproc=nproc)
    stage.checks.append(explain(C.check_completed(ddp.probe, host, name="ddp_completed"), ddp))
    stage.checks.append(explain(C.check_losses_equal(reference, ddp.probe, DDP_TOLERANCE, host), ddp))
    session.add_metrics(_renamed(probe_metrics(ddp.probe, host), "dual", "ddp"))
    stage.checks += fault_injection(session, stage, "dual", [host], nproc, ddp, fail_rank=1, node=host)
    return stage


def allreduce_checks(
    session: Session, stage: str, hosts: Sequence[str], nproc: int, node: str
) -> list[Check]:
    if session.out_of_time():
        return skipped(DUAL_ALLREDUCE, node, "budget")
    where = hosts[0] if len(hosts) == 1 else f"{len(hosts)} nodes"
    session.say(f"{stage}: all-reduce on {where}, {nproc * len(hosts)} ranks…")
    run = session.run(f"{stage}-allreduce", hosts, "allreduce.py", session.allreduce_args(), nproc=nproc)
    records = run.allreduce
    session.add_metrics(_renamed(allreduce_metrics(records, node), stage))
    return [
        explain(C.check_allreduce_correct(records, node), run),
        explain(C.check_busbw(records, session.opts.min_busbw, node), run),
    ]


def fault_injection(
    session: Session,
    stage: StageResult,
    name: str,
    hosts: Sequence[str],
    nproc: int,
    clean: WorkloadResult,
    *,
    fail_rank: int,
    node: str,
) -> list[Check]:
    """Kill rank `fail_rank` mid-run and let rlaunch's own restart path resume it from the latest complete
    checkpoint (`restart.max_restarts: 1`, the path users rely on); compare with the clean run."""
    if session.out_of_time():
        return skipped(FAULT, node, "budget")
    if not session.opts.fault:
        return skipped(FAULT, node, "--no-fault")
    if not clean.ok:
        return skipped(FAULT, node, "the uninterrupted run failed")
    k = fail_step(session.opts.steps)
    fault_dir = f"{session.ckpt_root}/{name}-fault"
    session.ckpt_hosts.update(hosts)
    ckpt = ["--ckpt-dir", fault_dir, "--ckpt-every", str(CKPT_EVERY)]
    session.say(f"{name}: fault injection, rank {fail_rank} killed at step {k}, then rlaunch's restart…")
    fault = ["--fail-at-step", str(k), "--fail-rank", str(fail_rank)]
    world = nproc * len(hosts)
    # Deliberately wrong for --inject wrong-checkpoint: the probe resumes from the oldest checkpoint instead.
    env = {"RLAUNCH_PROBE_RESUME_OLDEST": "1"} if session.opts.inject == "wrong-checkpoint" else {}
    attempts = session.run_attempts(
        f"{name}-fault", hosts, "probe.py", session.probe_args(world, *ckpt, *fault), nproc, fault_dir, **env
    )
    killed, resumed = attempts[0], (attempts[1] if len(attempts) > 1 else None)
    saved = C.last_checkpoint(killed.probe)
    injected = Check(
        "fault_injected",
        node,
        C.verdict(not killed.ok and saved is not None and resumed is not None),
        float(saved) if saved is not None else None,
        unit="step",
        message=f"run {'failed' if not killed.ok else 'did NOT fail'} after rank {fail_rank} was killed at "
        f"step {k}; latest checkpoint: step {saved}"
        + ("" if resumed is not None or killed.ok else "; rlaunch did not restart it"),
    )
    if injected.status == "fail" or resumed is None:
        return [injected, *skipped(FAULT[1:], node, "fault injection did not happen")]

    tolerance = RESUME_TOLERANCE[session.opts.device]
    checks = [
        explain(c, resumed) for c in C.check_resume(clean.probe, resumed.probe, killed.probe, tolerance, node)
    ]
    if resumed.record_dir and resumed.record_dir.is_dir():
        svg = resumed.record_dir / "loss.svg"
        write_loss_svg(
            svg, C.step_losses(clean.probe), C.step_losses(resumed.probe), C.resumed_from(resumed.probe)
        )
        stage.artifacts[f"{name}.loss_plot"] = str(svg)
    return [injected, *checks]


# ---------------------------------------------------------------------------------------------------------
# cluster: every node together

CLUSTER_ZERO3 = ("zero3_completed", "zero3_loss_decreases")


def stage_cluster(session: Session) -> StageResult:
    stage = StageResult("cluster")
    hosts = [n.host for n in session.inv.nodes]
    names = [*DUAL_ALLREDUCE, *CLUSTER_ZERO3, "ddp_completed", *FAULT]
    if session.bad_nodes:
        bad = ", ".join(f"{h} ({why})" for h, why in sorted(session.bad_nodes.items()))
        stage.checks = skipped(names, "", f"left out: {bad}")
        return stage
    if len(hosts) < 2:
        stage.checks = skipped(names, "", "the inventory has one node")
        return stage
    nproc = session.nproc()
    stage.checks += allreduce_checks(session, "cluster", hosts, nproc, node="")
    if any(c.status == "fail" for c in stage.checks):
        stage.checks += pairwise_isolation(session, hosts, nproc)
        stage.checks += skipped(names[2:], "", "the cluster all-reduce failed")
        return stage

    world = nproc * len(hosts)
    if session.out_of_time():
        stage.checks += skipped(CLUSTER_ZERO3, "", "budget")
    else:
        session.say(f"cluster: ZeRO-3 probe on {len(hosts)} nodes…")
        zero3 = session.run(
            "cluster-zero3", hosts, "probe.py", session.probe_args(world, "--engine", "zero3"), nproc=nproc
        )
        stage.checks.append(explain(C.check_completed(zero3.probe, name="zero3_completed"), zero3))
        stage.checks.append(explain(C.check_loss_decreases(zero3.probe, name="zero3_loss_decreases"), zero3))
        session.add_metrics(_renamed(probe_metrics(zero3.probe), "cluster", "zero3"))

    if session.out_of_time():
        stage.checks += skipped(["ddp_completed", *FAULT], "", "budget")
        return stage
    session.say(f"cluster: DDP probe on {len(hosts)} nodes with checkpoints…")
    ckpt = ["--ckpt-dir", f"{session.ckpt_root}/cluster-clean", "--ckpt-every", str(CKPT_EVERY)]
    session.ckpt_hosts.update(hosts)
    ddp = session.run("cluster-ddp", hosts, "probe.py", session.probe_args(world, *ckpt), nproc=nproc)
    stage.checks.append(explain(C.check_completed(ddp.probe, name="ddp_completed"), ddp))
    # A rank on the last node, never on the master: the survivors must notice a peer's death over the network.
    stage.checks += fault_injection(
        session, stage, "cluster", hosts, nproc, ddp, fail_rank=world - nproc, node=""
    )
    return stage


def round_robin_pairs(hosts: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Every pair of hosts exactly once, grouped in rounds where no host appears twice (circle method), so
    each round's pairs can run at the same time."""
    ring: list[str | None] = list(hosts) + ([None] if len(hosts) % 2 else [])
    rounds = []
    for _ in range(len(ring) - 1):
        half = len(ring) // 2
        pairs = [(ring[i], ring[-1 - i]) for i in range(half)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def bad_from_pairs(hosts: Sequence[str], pair_ok: Mapping[tuple[str, str], bool]) -> list[str]:
    """A node that fails with every partner is bad. Pure, for tests: pair_ok holds every tested pair."""
    bad = []
    for host in hosts:
        mine = [ok for (a, b), ok in pair_ok.items() if host in (a, b)]
        if mine and not any(mine):
            bad.append(host)
    return bad


def pairwise_isolation(session: Session, hosts: Sequence[str], nproc: int) -> list[Check]:
    """Two-node all-reduces over every pair, to name the node(s) that break the cluster all-reduce."""
    if len(hosts) < 3:
        return [Check("pairwise_isolation", "", "skip", message="needs 3+ nodes to tell which node is bad")]
    pair_ok: dict[tuple[str, str], bool] = {}
    checks: list[Check] = []
    for pairs in round_robin_pairs(hosts):
        if session.out_of_time():
            checks.append(Check("pairwise_isolation", "", "skip", message="budget"))
            return checks
        session.say(f"cluster: pairwise all-reduce {', '.join(f'{a}+{b}' for a, b in pairs)}…")
        with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
            runs = list(
                pool.map(
                    lambda pair: session.run(
                        "cluster-pair", list(pair), "allreduce.py", session.allreduce_args(), nproc=nproc
                    ),
                    pairs,
                )
            )
        for pair, run in zip(pairs, runs, strict=True):
            correct = C.check_allreduce_correct(run.allreduce)
            speed = C.check_busbw(run.allreduce, session.opts.min_busbw)
            ok = run.ok and correct.status == "pass" and speed.status != "fail"
            pair_ok[pair] = ok
            checks.append(
                Check(
                    f"pair_allreduce[{pair[0]}+{pair[1]}]",
                    "",
                    C.verdict(ok),
                    speed.value,
                    session.opts.min_busbw,
                    "GB/s",
                    "ok" if ok else run.why(),
                )
            )
    bad = bad_from_pairs(hosts, pair_ok)
    for host in bad:
        partners = sorted({b if a == host else a for a, b in pair_ok if host in (a, b)})
        checks.append(
            Check(
                "pairwise_isolation",
                host,
                "fail",
                message=f"{host} fails the all-reduce with every partner ({', '.join(partners)})",
            )
        )
    if not bad:
        failing = sorted(f"{a}+{b}" for (a, b), ok in pair_ok.items() if not ok)
        message = f"failing pairs: {', '.join(failing)}" if failing else "every pair passes alone"
        checks.append(Check("pairwise_isolation", "", "fail" if failing else "pass", message=message))
    return checks


# ---------------------------------------------------------------------------------------------------------


def run_validation(
    inv: Inventory, stage: str, opts: Options, transport: Transport | None = None
) -> ValidationRun:
    """Run `stage` (and the stages before it unless opts.only) on the inventory's nodes."""
    wanted = stages_to_run(stage, opts.only)
    check_inputs(inv, wanted, opts)
    own = transport is None
    transport = transport or make_transport(inv)
    session = Session(inv, opts, transport)
    warnings = [session.ckpt_warning] if session.ckpt_warning and set(wanted) & {"dual", "cluster"} else []
    results: list[StageResult] = []
    try:
        for name in wanted:
            t0 = time.monotonic()
            if name == "single":
                result = stage_single(session, inv.nodes)
            elif name == "dual":
                result = stage_dual(session)
            else:
                result = stage_cluster(session)
            result.duration_s = time.monotonic() - t0
            result.values.update({m.key: m.value for m in session.metrics if m.name.startswith(name + ".")})
            results.append(result)
        if opts.baseline is not None:
            regression = compare_to_baseline(session.metrics, opts.baseline, opts.tolerances or _defaults())
            results.append(StageResult("baseline", regression, duration_s=0.0))
        if session.ckpt_hosts:
            session.remove_checkpoints()
    finally:
        if own:
            transport.close()
    finite = [m for m in session.metrics if math.isfinite(m.value)]
    return ValidationRun(results, finite, sorted(session.unreachable), warnings)


def _defaults() -> Mapping[str, Tolerance]:
    from launcher.validate.baseline import DEFAULT_TOLERANCES

    return DEFAULT_TOLERANCES
