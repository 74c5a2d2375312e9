"""A real one-node Slurm (munged + slurmctld + slurmd) started from a test, for testing ops/ scripts and the
srun path of `rlaunch up --from-slurm`.

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

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("srun", "sbatch", "sinfo", "scontrol")
APT_PACKAGES = "slurmd slurmctld slurm-client munge"


def slurm_missing() -> str | None:
    """Why a one-node Slurm cannot start here, or None when it can."""
    if os.geteuid() != 0:
        return "a one-node Slurm with SlurmdUser=root needs root"
    absent = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name, path=_sbin_path()) is None]
    if absent:
        return f"missing {' '.join(absent)} (apt-get install {APT_PACKAGES})"
    return None


def _sbin_path() -> str:
    return os.environ.get("PATH", "") + ":/usr/sbin:/sbin"


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

    def run(self, *argv: str, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster (SLURM_CONF points at our slurm.conf)."""
        return subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=check
        )

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
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            lines = path.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    def stop(self) -> None:
        # Reverse order: slurmd before slurmctld before munged, each by its own process group.
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=15)
        self.procs.clear()
        run = self.root / "run"
        if run.is_symlink():
            shutil.rmtree(run.resolve(), ignore_errors=True)


def _slurm_conf(
    root: Path, run: Path, node: str, prolog: Path | None, epilog: Path | None, extra: str
) -> str:
    ctld_port, slurmd_port = _free_port(), _free_port()
    lines = [
        f"ClusterName=rltest{ctld_port}",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "AuthType=auth/munge",
        f"AuthInfo=socket={run}/munge.sock",
        "CredType=cred/munge",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/run/slurmctld.pid",
        f"SlurmdPidFile={root}/run/slurmd.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/linear",
        "SchedulerType=sched/builtin",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        "PrologFlags=Alloc",
        "PrologEpilogTimeout=120",
        "KillWait=5",
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
    cluster = OneNodeSlurm(root=root, node=node, conf=conf, env=env)

    def spawn(name: str, argv: list[str]) -> None:
        out = open(root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - the daemon owns it until it exits
        cluster.procs[name] = subprocess.Popen(
            argv,
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


def _wait_for(ready, timeout: float, what: str, cluster: OneNodeSlurm) -> None:
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
