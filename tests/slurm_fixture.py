"""A real Slurm started from a test: one node (munged + slurmctld + slurmd on this host), or N nodes
(`start_slurm_cluster`: munged, slurmctld and, for `sacct`, MariaDB + slurmdbd on the head, and one slurmd per
simulated node of tests/simnodes.py, each in its own network, PID, mount and UTS namespaces, its hostname its
NodeName), for testing ops/ scripts, `nodes --drain` and the srun paths of `rlaunch up --from-slurm`.

Needs root and the Debian packages `slurmd slurmctld slurm-client munge` (scripts/setup.sh installs them);
`slurm_missing()` says which part is absent so the tests can skip with the reason. Everything lives in one
temp directory: munge key and socket, slurm.conf, state/spool dirs, logs. Ports are picked free on loopback.
Daemons run in the foreground in their own sessions and are stopped by process group at the end.

Settings follow slurm.conf(5) of Slurm 22.05 (Debian bookworm): proctrack/linuxproc and task/none need no
cgroups; SlurmdUser=root because the prolog/epilog must be able to signal any user's processes; PrologFlags=Alloc
runs the prolog at allocation (https://slurm.schedmd.com/prolog_epilog.html). munged refuses a socket directory
that is not executable for all, hence the 0755 run/ directory beside the 0700 key directory.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import simnodes

DAEMONS = ("munged", "slurmctld", "slurmd")
ACCOUNTING = (
    "slurmdbd",
    "mariadbd",
    "mariadb-install-db",
    "sacct",
)  # sacct needs slurmdbd, which needs MySQL
CLIENTS = ("srun", "sbatch", "sinfo", "scontrol")
APT_PACKAGES = "slurmd slurmctld slurm-client munge"
ACCOUNTING_PACKAGES = "slurmdbd mariadb-server"


# One Slurm at a time on this machine, across test sessions (another checkout's `make test`, a helper's loop): a
# one-node Slurm's slurmd is this host's own NodeName, and two of them would answer for each other. Held from start
# to stop; the kernel drops it with a killed holder (flock(2)).
MACHINE_LOCK = "/run/rlaunch-slurm.lock"


# The daemons die with the test process that started them, even when it is SIGKILLed (prctl(2) PR_SET_PDEATHSIG).
# The signal follows the thread that forked, not the process: the one-node cluster spawns from the session's main
# thread, the multi-node one from simnodes' long-lived spawner thread (both live as long as the process).
PDEATHSIG = ("setpriv", "--pdeathsig", "KILL")


def _machine_lock() -> int:
    fd = os.open(MACHINE_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the only descriptor drops the flock


def slurm_missing() -> str | None:
    """Why a one-node Slurm cannot start here, or None when it can."""
    if os.geteuid() != 0:
        return "a one-node Slurm with SlurmdUser=root needs root"
    absent = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name, path=_sbin_path()) is None]
    if absent:
        return f"missing {' '.join(absent)} (apt-get install {APT_PACKAGES})"
    return None


def multinode_missing() -> str | None:
    """Why a multi-node Slurm with accounting cannot start here, or None when it can."""
    if reason := slurm_missing() or simnodes.unavailable_reason():
        return reason
    absent = [name for name in ACCOUNTING if shutil.which(name, path=_sbin_path()) is None]
    if absent:
        return f"missing {' '.join(absent)} (apt-get install {ACCOUNTING_PACKAGES})"
    if not simnodes.netns_possible():
        return "a multi-node Slurm needs network namespaces (one address per slurmd)"
    return None


def _sbin_path() -> str:
    return os.environ.get("PATH", "") + ":/usr/sbin:/sbin"


def _client(
    env: dict[str, str], argv: Sequence[str], timeout: float, check: bool
) -> subprocess.CompletedProcess[str]:
    """A Slurm client command (sinfo, scontrol, salloc, sacct, srun) in a test cluster's environment (SLURM_CONF)."""
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=check)


def _log_tails(root: Path, lines: int) -> str:
    """The last lines of every daemon log under root/log, for assertion messages."""
    parts = []
    for path in sorted((root / "log").glob("*")):
        tail = path.read_text(errors="replace").splitlines()[-lines:]
        parts.append(f"--- {path.name}\n" + "\n".join(tail))
    return "\n".join(parts)


def _stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """A daemon we started, by its own process group: SIGTERM, then SIGKILL after grace seconds."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=grace)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class OneNodeSlurm:
    root: Path
    node: str
    conf: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    lock_fd: int | None = None

    def run(self, *argv: str, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster (SLURM_CONF points at our slurm.conf)."""
        return _client(self.env, argv, timeout, check)

    def node_state(self) -> tuple[str, str]:
        """(state, reason) as sinfo reports them, e.g. ("drained", "rlaunch: ...") or ("idle", "none")."""
        out = self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T|%E", timeout=30).stdout.strip()
        state, _, reason = out.splitlines()[0].partition("|") if out else ("", "", "")
        return state, reason

    def wait_state(self, want: str, timeout: float = 30) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        seen = self.node_state()
        while seen[0] != want and time.monotonic() < deadline:
            time.sleep(0.3)
            seen = self.node_state()
        return seen

    def drain(self, reason: str) -> None:
        self.run("scontrol", "update", f"nodename={self.node}", "state=drain", f"reason={reason}", check=True)

    def resume(self) -> None:
        state, _ = self.node_state()
        if "drain" in state or state.startswith("down"):
            self.run("scontrol", "update", f"nodename={self.node}", "state=resume", check=True)
        self.wait_state("idle")

    def logs(self) -> str:
        """Tails of the daemon logs, for assertion messages."""
        return _log_tails(self.root, 15)

    def stop(self) -> None:
        # Reverse order: slurmd before slurmctld before munged, each by its own process group.
        for name in reversed(list(self.procs)):
            _stop_group(self.procs[name], 15)
        self.procs.clear()
        run = self.root / "run"
        if run.is_symlink():
            shutil.rmtree(run.resolve(), ignore_errors=True)
        _release(self.lock_fd)
        self.lock_fd = None


def _shared_conf(run: Path, accounting: str) -> list[str]:
    """The slurm.conf lines the one-node and the multi-node test cluster share: munge on our own socket, the daemons
    as root, no cgroups (proctrack/linuxproc, task/none), linear selection, the prolog at allocation time; and
    `accounting` (slurmdbd's lines), else none."""
    return [
        "AuthType=auth/munge",
        # cred_expire (default 120 s) "also controls how long a requeued job must wait before starting again"
        # (slurm.conf(5), AuthInfo): the preemption test's requeued job waited 120 s for nothing. 30 s still covers
        # a step launch and our prologs on a loaded machine (a credential older than that is refused).
        f"AuthInfo=socket={run}/munge.sock,cred_expire=30",
        "CredType=cred/munge",
        "SlurmUser=root",
        "SlurmdUser=root",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/linear",
        "SchedulerType=sched/builtin",
        accounting or "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        "PrologFlags=Alloc",
        "PrologEpilogTimeout=120",
        "KillWait=5",
    ]


def _slurm_conf(
    root: Path, run: Path, node: str, prolog: Path | None, epilog: Path | None, extra: str
) -> str:
    ctld_port, slurmd_port = _free_port(), _free_port()
    lines = [
        f"ClusterName=rltest{ctld_port}",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/run/slurmctld.pid",
        f"SlurmdPidFile={root}/run/slurmd.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd.log",
        *_shared_conf(run, ""),
        "MinJobAge=60",
    ]
    if prolog:
        lines.append(f"Prolog={prolog}")
    if epilog:
        lines.append(f"Epilog={epilog}")
    lines += [
        extra,
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN",
        f"PartitionName=test Nodes={node} Default=YES MaxTime=10 State=UP",
    ]
    return "\n".join(lines) + "\n"


def start_one_node_slurm(
    root: Path, prolog: Path | None = None, epilog: Path | None = None, extra_conf: str = ""
) -> OneNodeSlurm:
    """Start munged, slurmctld and slurmd under `root` and wait until the node is idle (or raise)."""
    node = socket.gethostname().split(".")[0]
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    # munged wants every directory above its socket executable by all; pytest's tmp dirs are 0700.
    run = Path(tempfile.mkdtemp(prefix="rlaunch-slurm-run-"))
    run.chmod(0o755)
    (root / "run").symlink_to(run)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, run, node, prolog, epilog, extra_conf))
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": _sbin_path()}
    cluster = OneNodeSlurm(root=root, node=node, conf=conf, env=env, lock_fd=_machine_lock())

    def spawn(name: str, argv: list[str]) -> None:
        out = open(root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - the daemon owns it until it exits
        cluster.procs[name] = subprocess.Popen(
            [*PDEATHSIG, *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out.close()

    try:
        spawn(
            "munged",
            [
                "munged",
                "-F",
                f"--key-file={key}",
                f"--socket={run}/munge.sock",
                f"--pid-file={run}/munged.pid",
                f"--log-file={root}/log/munged.log",
                f"--seed-file={root}/munge/seed",
            ],
        )
        _wait_for(lambda: (run / "munge.sock").exists(), 15, "munged socket", cluster)
        spawn("slurmctld", ["slurmctld", "-D", "-f", str(conf)])
        spawn("slurmd", ["slurmd", "-D", "-f", str(conf), "-N", node])
        _wait_for(lambda: cluster.node_state()[0] == "idle", 40, "node idle", cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_for(
    ready: Callable[[], bool], timeout: float, what: str, cluster: OneNodeSlurm | SlurmCluster
) -> None:
    """Poll `ready` until true; fail at once when one of the cluster's daemons exited, naming it with the logs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, proc in cluster.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}\n{cluster.logs()}")
        try:
            if ready():
                return
        except (subprocess.SubprocessError, OSError):
            pass
        time.sleep(0.3)
    raise RuntimeError(f"timed out waiting for {what}\n{cluster.logs()}")


STANDIN_VALIDATE = """#!/bin/bash
# Stand-in for `rlaunch validate` with the same exit-code contract (0 pass, 1 check failed, 3 infrastructure).
# Usage: standin-validate pass|fail|hang|broken [CHECK]. `fail` writes JUnit to $RLAUNCH_PROLOG_JUNIT or
# $RLAUNCH_RUN_JUNIT when set, as `rlaunch validate --junit` does.
mode=$1 check=${2:-gpu_memory}
junit=${RLAUNCH_PROLOG_JUNIT:-${RLAUNCH_RUN_JUNIT:-}}
case $mode in
  pass) echo "all checks passed"; exit 0 ;;
  fail)
    if [[ -n $junit ]]; then
      printf '<testsuite name="single" tests="2" failures="1"><testcase name="torch_import"/>'\\
'<testcase name="%s"><failure message="below baseline"/></testcase></testsuite>\\n' "$check" >"$junit"
    fi
    echo "FAIL $check: below baseline"; exit 1 ;;
  hang) exec sleep 300 ;;
  *) echo "cannot run"; exit 3 ;;
esac
"""


def write_standin_validate(directory: Path) -> Path:
    """A real script with rlaunch validate's exit-code contract, for prolog/cron tests."""
    path = directory / "standin-validate"
    path.write_text(STANDIN_VALIDATE)
    path.chmod(0o755)
    return path


def write_wrapper(path: Path, target: Path, defaults: Path) -> Path:
    """What an operator may install as Prolog=/Epilog=: point the script at a defaults file, then exec it."""
    path.write_text(f'#!/bin/bash\nexport RLAUNCH_DEFAULTS="{defaults}"\nexec "{target}" "$@"\n')
    path.chmod(0o755)
    return path


# ------------------------------------------------------------------------------------- a multi-node Slurm


@dataclass
class SlurmNodes(simnodes.SimCluster):
    """Simulated nodes (tests/simnodes.py: namespaces, veths, addresses, process tables) that run `slurmd -D -N
    NAME` as their PID 1 instead of sshd, listening on the node's own address and port (SlurmdPort), so
    simnodes' readiness probe (a TCP connect to node.address:node.port) waits for slurmd. `prepare` runs once,
    after the addresses and networks exist and before the first node starts: it writes slurm.conf and starts the
    head's daemons."""

    conf: Path = Path("slurm.conf")
    prepare: Callable[[SlurmNodes], None] | None = None
    _prepared: bool = False

    def serve_argv(self, node: simnodes.SimNode) -> list[str]:
        # `ip netns exec` mounts a fresh sysfs, which hides the host's /sys/fs/cgroup, and slurmd 22.05 loads its
        # cgroup plugin whatever ProctrackType says (it stats /sys/fs/cgroup/systemd on a v1 host): the node gets
        # the host's hierarchies mounted again (a hierarchy may be mounted in several places, cgroups(7)).
        # proctrack/linuxproc and task/none never create cgroups there.
        script = "mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup\n"
        for where, fstype, options in host_cgroup_mounts():
            script += f"mkdir -p {where} && mount -t {fstype} -o {options} {fstype} {where}\n"
        script += 'exec "$@"\n'
        return ["sh", "-ec", script, "slurmd-init",
                "/usr/sbin/slurmd", "-D", "-f", str(self.conf), "-N", node.name]  # fmt: skip

    def _launch(self, node: simnodes.SimNode) -> None:
        with _PREPARE_LOCK:
            if not self._prepared and self.prepare is not None:
                self.prepare(self)
                self._prepared = True
        super()._launch(node)


_PREPARE_LOCK = threading.Lock()


def host_cgroup_mounts() -> list[tuple[str, str, str]]:
    """(mount point, type, options) of the host's cgroup hierarchies under /sys/fs/cgroup (/proc/self/mounts)."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, fstype, options, *_ = line.split()
        if fstype in ("cgroup", "cgroup2") and where.startswith("/sys/fs/cgroup"):
            kept = ",".join(
                o for o in options.split(",") if o not in ("rw", "relatime", "nosuid", "nodev", "noexec")
            )
            out.append((where, fstype, kept or "defaults"))
    return out


@dataclass
class SlurmCluster:
    """N slurmd nodes (`nodes`: SlurmNodes) and the head's daemons (`procs`: munged, mariadbd, slurmdbd,
    slurmctld), all under `root` (in /var/tmp: the nodes mount a private /tmp, and must read slurm.conf and the
    munge socket). `env` is what a client on the head needs (SLURM_CONF, PATH)."""

    n: int
    root: Path
    prefix: str = "sn"
    prolog: Path | None = None
    epilog: Path | None = None
    extra_conf: str = ""
    accounting: bool = True
    nodes: SlurmNodes | None = None
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    lock_fd: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    conf: Path = Path("slurm.conf")
    name: str = ""

    # --------------------------------------------------------------------------------------------- clients
    @property
    def node_names(self) -> list[str]:
        return [f"{self.prefix}{i}" for i in range(1, self.n + 1)]

    def run(self, *argv: str, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess[str]:
        return _client(self.env, argv, timeout, check)

    def node_states(self) -> dict[str, tuple[str, str]]:
        """node → (state, reason) as sinfo reports them."""
        out = self.run("sinfo", "-h", "-N", "-o", "%N|%T|%E", timeout=30).stdout
        states: dict[str, tuple[str, str]] = {}
        for line in out.splitlines():
            name, _, rest = line.partition("|")
            state, _, reason = rest.partition("|")
            states[name.strip()] = (state, reason)
        return states

    def wait_states(self, want: str, names: list[str] | None = None, timeout: float = 60) -> dict[str, Any]:
        names = names or self.node_names
        deadline = time.monotonic() + timeout
        while True:
            seen = self.node_states()
            if all(seen.get(n, ("",))[0] == want for n in names) or time.monotonic() > deadline:
                return {n: seen.get(n) for n in names}
            time.sleep(0.3)

    def resume_all(self) -> None:
        for name, (state, _) in self.node_states().items():
            if "drain" in state or state.startswith("down"):
                self.run("scontrol", "update", f"nodename={name}", "state=resume", check=True)
        self.wait_states("idle")

    def allocate(self, nodes: int | None = None, name: str = "rlaunch-test") -> str:
        """`salloc --no-shell`: an allocation of `nodes` nodes (all by default); returns its job id."""
        done = self.run(
            "salloc", "--no-shell", f"-N{nodes or self.n}", "-t", "10", f"--job-name={name}", timeout=90
        )
        for word in done.stderr.split():
            if word.isdigit() and "Granted job allocation" in done.stderr:
                return word
        raise RuntimeError(f"salloc failed: {done.stderr.strip()}\n{self.logs()}")

    def steps(self, job_id: str) -> list[tuple[str, str]]:
        """The job's steps as accounting knows them (sacct): [(step id, name)], without the job's own row."""
        out = self.run("sacct", "-j", job_id, "-n", "-P", "--format=JobID,JobName", timeout=30).stdout
        rows = [tuple(line.split("|", 1)) for line in out.splitlines() if "|" in line]
        return [(jid, name) for jid, name in rows if "." in jid]  # type: ignore[misc]

    def new_steps(self, job_id: str, seen: set[str], timeout: float = 30) -> list[tuple[str, str]]:
        """Steps of the job accounting recorded since `seen` (step ids; updated). A sentinel step goes last:
        slurmctld sends step records to slurmdbd in order, so once sacct shows it, every earlier step is there."""
        done = self.run("srun", f"--jobid={job_id}", "-N1", "-n1", "--overlap", "--job-name=sentinel", "true")
        if done.returncode != 0:
            raise RuntimeError(f"sentinel step failed: {done.stderr.strip()}")
        deadline = time.monotonic() + timeout
        while True:
            rows = self.steps(job_id)
            fresh = [r for r in rows if r[0] not in seen]
            if any(name == "sentinel" for _, name in fresh) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        seen.update(r[0] for r in rows)
        return [r for r in fresh if r[1] != "sentinel"]

    def node_pids(self, node: str) -> list[tuple[int, str]]:
        """Live processes inside the node's PID namespace other than its slurmd (its PID 1)."""
        assert self.nodes is not None
        return self.nodes.node_pids(node)

    def node_path(self, node: str, path: str) -> Path:
        assert self.nodes is not None
        return self.nodes.node_path(node, path)

    def logs(self) -> str:
        return _log_tails(self.root, 12)

    # ------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> SlurmCluster:
        for sub in ("munge", "state", "spool", "log", "run", "db"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)  # munged wants every directory above its socket executable by all
        (self.root / "run").chmod(0o755)
        (self.root / "munge").chmod(0o700)
        self.conf = self.root / "slurm.conf"
        self.name = f"rlm{secrets_token()}"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), "PATH": _sbin_path()}
        self.nodes = SlurmNodes(self.n, prefix=self.prefix, conf=self.conf, prepare=self._prepare)
        self.lock_fd = _machine_lock()
        try:
            self.nodes.start()
            _wait_for(self._all_idle, 90, "every node idle", self)
        except BaseException:
            self.stop()
            raise
        return self

    def _all_idle(self) -> bool:
        states = self.node_states()
        return all(states.get(name, ("",))[0] == "idle" for name in self.node_names)

    def _prepare(self, nodes: SlurmNodes) -> None:
        """The head's side, once the nodes' addresses exist: munged, (MariaDB + slurmdbd), slurmctld."""
        run = self.root / "run"
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._spawn("munged", ["munged", "-F", f"--key-file={key}", f"--socket={run}/munge.sock",
                               f"--pid-file={run}/munged.pid", f"--log-file={self.root}/log/munged.log",
                               f"--seed-file={self.root}/munge/seed"])  # fmt: skip
        _wait_for(lambda: (run / "munge.sock").exists(), 15, "munged socket", self)
        accounting = ""
        if self.accounting:
            accounting = self._start_accounting()
        ctld_addr = nodes.nodes[0].gateway  # the head's end of node 1's veth: every node routes to it
        ctld_port = _free_port()
        lines = [
            f"ClusterName={self.name}",
            f"SlurmctldHost={socket.gethostname().split('.')[0]}({ctld_addr})",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={simnodes.NODE_PORT}",  # each slurmd on its own address: simnodes' probe finds it
            f"StateSaveLocation={self.root}/state",
            f"SlurmdSpoolDir={self.root}/spool/%n",  # one per slurmd (slurm.conf(5): %n is the NodeName)
            f"SlurmctldPidFile={run}/slurmctld.pid",
            f"SlurmdPidFile={run}/slurmd-%n.pid",
            f"SlurmctldLogFile={self.root}/log/slurmctld.log",
            f"SlurmdLogFile={self.root}/log/slurmd-%n.log",
            *_shared_conf(run, accounting),
            "MinJobAge=300",
            "SlurmdTimeout=60",
        ]
        if self.prolog:
            lines.append(f"Prolog={self.prolog}")
        if self.epilog:
            lines.append(f"Epilog={self.epilog}")
        cpus = os.cpu_count() or 1
        lines += [self.extra_conf]
        lines += [f"NodeName={n.name} NodeAddr={n.address} CPUs={cpus} State=UNKNOWN" for n in nodes.nodes]
        lines.append(f"PartitionName=test Nodes={','.join(n.name for n in nodes.nodes)} Default=YES "
                     "MaxTime=30 State=UP")  # fmt: skip
        self.conf.write_text("\n".join(lines) + "\n")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])

    def _start_accounting(self) -> str:
        """A private MariaDB (TCP on loopback, no grant tables) and slurmdbd on it; the slurm.conf lines."""
        db, run, log = self.root / "db", self.root / "run", self.root / "log"
        done = subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={db}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {done.stderr.strip()[-500:]}")
        db_port = _free_port()
        self._spawn("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={db}", "--user=root",
                                 f"--socket={run}/mysqld.sock", f"--pid-file={run}/mysqld.pid",
                                 "--bind-address=127.0.0.1", f"--port={db_port}", "--skip-grant-tables",
                                 "--innodb-buffer-pool-size=16M", "--performance-schema=OFF",
                                 "--skip-log-bin", f"--log-error={log}/mariadb.log"])  # fmt: skip
        _wait_for(lambda: _port_open("127.0.0.1", db_port), 60, "MariaDB", self)
        dbd_port = _free_port()
        dbd_conf = self.root / "slurmdbd.conf"
        dbd_conf.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    # cred_expire (default 120 s) "also controls how long a requeued job must wait before starting again"
                    # (slurm.conf(5), AuthInfo): the preemption test's requeued job waited 120 s for nothing. 30 s still covers
                    # a step launch and our prologs on a loaded machine (a credential older than that is refused).
                    f"AuthInfo=socket={run}/munge.sock,cred_expire=30",
                    "DbdHost=localhost",
                    "DbdAddr=127.0.0.1",
                    f"DbdPort={dbd_port}",
                    "SlurmUser=root",
                    f"LogFile={log}/slurmdbd.log",
                    f"PidFile={run}/slurmdbd.pid",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    f"StoragePort={db_port}",
                    "StorageUser=root",
                    "StorageLoc=slurm_acct_db",
                ]
            )
            + "\n"
        )
        dbd_conf.chmod(0o600)  # slurmdbd refuses a config others can read
        self._spawn("slurmdbd", ["slurmdbd", "-D"], env={"SLURM_CONF": str(self.conf),
                                                         "SLURMDBD_CONF": str(dbd_conf)})  # fmt: skip
        _wait_for(lambda: _port_open("127.0.0.1", dbd_port), 60, "slurmdbd", self)
        return (
            "AccountingStorageType=accounting_storage/slurmdbd\n"
            f"AccountingStorageHost=127.0.0.1\nAccountingStoragePort={dbd_port}\n"
            # slurmctld's munge socket for slurmdbd is this setting, not AuthInfo (slurm.conf(5)).
            f"AccountingStoragePass={run}/munge.sock"
        )

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        out = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - the daemon owns it until it exits
        # From simnodes' one long-lived spawner thread: the parent-death signal follows the thread that forked
        # (prctl(2)), and `prepare` runs in a node-launching pool thread, whose end SIGKILLed munged at once.
        spawn = simnodes._SPAWNER.submit(
            subprocess.Popen,
            [*PDEATHSIG, *argv],
            env={**self.env, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self.procs[name] = spawn.result()
        finally:
            out.close()

    def stop(self) -> None:
        """The nodes first (each slurmd is its namespace's PID 1: killing it ends everything there), then the
        head's daemons in reverse order, each by its own process group; then check that none is left."""
        if self.nodes is not None:
            self.nodes.stop()
        for name in reversed(list(self.procs)):
            _stop_group(self.procs[name], 20)
        left = [name for name, proc in self.procs.items() if _group_alive(proc.pid)]
        self.procs.clear()
        _release(self.lock_fd)
        self.lock_fd = None
        if self.root.name.startswith("rlaunch-slurm-"):
            shutil.rmtree(self.root, ignore_errors=True)
        if left:
            raise RuntimeError(f"Slurm daemons still running after stop: {', '.join(left)}")


def start_slurm_cluster(
    n: int = 4,
    *,
    prolog: Path | None = None,
    epilog: Path | None = None,
    extra_conf: str = "",
    accounting: bool = True,
) -> SlurmCluster:
    """Start a Slurm of n slurmd nodes (sn1..snN) and wait until every node is idle (or raise)."""
    root = Path(tempfile.mkdtemp(prefix="rlaunch-slurm-", dir="/var/tmp"))
    cluster = SlurmCluster(
        n, root, prolog=prolog, epilog=epilog, extra_conf=extra_conf, accounting=accounting
    )
    return cluster.start()


def secrets_token() -> str:
    import secrets

    return secrets.token_hex(3)


def _port_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def _group_alive(pgid: int, wait: float = 10.0) -> bool:
    """Whether any process of the group is still there after `wait` s (a daemon's children exit after it)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.1)
