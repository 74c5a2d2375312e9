"""Simulated cluster nodes: one real OpenSSH server per node, each in its own namespaces.

Every node gets its own network namespace (a veth pair to the head, an address in 198.18.0.0/15, the RFC 2544
benchmarking range, so it collides with no real network), and runs `/usr/sbin/sshd -D` as PID 1 of its own
PID + mount + UTS namespaces: its own hostname, a private tmpfs /tmp, an /etc/hosts naming every node and an empty
~/.bashrc (Debian's bash reads ~/.bashrc for SSH commands; on the dev machines it runs `pyenv init`, ~230 ms).
Killing that PID 1 makes the kernel kill everything else in the node, which is how `kill_node` and `stop` clean up.

Nodes reach each other through the head (IP forwarding on, each node's default route via its veth peer), so
multi-node jobs can rendezvous. `partition(node)` takes the node's side of the veth down: packets from the head
and the other nodes are dropped silently (no RST), like a pulled cable. Where network namespaces are impossible,
nodes listen on 127.0.0.N instead and a partition SIGSTOPs the node's sshd processes (the kernel then still
ACKs, so only an application heartbeat notices).

Nodes live no longer than the harness that started them: each node's launcher carries a parent-death signal
(setpriv(1) --pdeathsig, prctl(2) PR_SET_PDEATHSIG) and `unshare --kill-child` passes it to the node's PID 1,
so a SIGKILLed test worker takes its nodes along. What such a death cannot take (network namespaces, veths, the
state directory) is recorded in an owner file under OWNERS and reaped by the next harness that starts.

Also usable by hand (scripts/simnodes.sh) and by bench/fanout.py: `SimCluster(n).start()` ... `.stop()`.
sshd options: sshd_config(5) (https://man.openbsd.org/sshd_config); namespaces: unshare(1), ip-netns(8).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import ipaddress
import json
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e_helpers import scaled_inventory

SSHD = "/usr/sbin/sshd"
NODE_PORT = 2222  # every node has its own network namespace, so they can all share one port
SUBNETS = ipaddress.ip_network("198.18.0.0/15")  # RFC 2544: reserved for network benchmarks
ALLOC_LOCK = "/run/rlaunch-simnodes.lock"  # serialises address allocation between concurrent test sessions
OWNERS = Path(
    "/run/rlaunch-simnodes"
)  # one <state dir name>.json per live cluster: who started it, what it made
STALE_LEGACY_S = (
    600.0  # a token's namespaces with no owner file and no process for this long: a dead harness's
)
START_TIMEOUT = 20.0

# Runs as PID 1 of the node's namespaces, then becomes the node's daemon (`SimCluster.serve_argv`: sshd, or a
# slurmd in tests/slurm_fixture.py). Paths arrive as arguments, never spliced in. Paths under /tmp given after the
# fifth argument, up to `--` (the checkout and its venv, when CI clones into /tmp), stay visible through the
# private /tmp: the host's /tmp is held at $5 first, then bound back path by path; the daemon's argv follows `--`.
NODE_INIT = r"""
set -e
hostname "$1"
hold="$5"
mount --bind /tmp "$hold"
mount -t tmpfs -o mode=1777,size=256m tmpfs /tmp
mount --bind "$2" /etc/hosts
if [ -f "$3" ]; then mount --bind "$4" "$3"; fi
shift 5
while [ "$1" != "--" ]; do
  rel="${1#/tmp/}"
  mkdir -p "/tmp/$rel"
  mount --bind "$hold/$rel" "/tmp/$rel"
  shift
done
shift
exec "$@"
"""
CHECKOUT = Path(__file__).resolve().parents[1]


def paths_to_keep() -> list[str]:
    """What nodes must see although it lives under /tmp: this checkout (with its .venv) and the interpreter."""
    wanted = {str(CHECKOUT), sys.prefix}
    return sorted(p for p in wanted if p.startswith("/tmp/"))


def unavailable_reason() -> str | None:
    """Why simulated nodes cannot run here (None when they can); tests skip with this reason."""
    if os.geteuid() != 0:
        return "simulated SSH nodes need root (namespaces, sshd)"
    for tool in (SSHD, "unshare", "setpriv", "ssh-keygen", "mount"):
        if not (os.access(tool, os.X_OK) if tool.startswith("/") else shutil.which(tool)):
            return f"simulated SSH nodes need {tool} (scripts/setup.sh installs it)"
    return None


def netns_possible() -> bool:
    if not shutil.which("ip"):
        return False
    name = f"rlprobe{secrets.token_hex(3)}"
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ok


@dataclass
class SimNode:
    name: str
    index: int
    address: str
    port: int
    state_dir: Path
    netns: str | None = None  # network namespace name (netns mode)
    host_veth: str | None = None
    gateway: str | None = None  # the head's end of the node's veth
    host_key_line: str = ""  # "ssh-ed25519 AAAA..." as the node presents it
    proc: subprocess.Popen[bytes] | None = None  # `unshare` (parent of the node's PID 1)
    init_pid: int | None = None  # the node's PID 1 (sshd) as the head sees it
    pidns: str | None = None  # readlink of /proc/<init_pid>/ns/pid
    partitioned: bool = False
    frozen: bool = False

    @property
    def known_hosts_name(self) -> str:
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"


@dataclass
class SimCluster:
    """N simulated nodes. Use as a context manager or call start() / stop()."""

    n: int
    prefix: str = "node"
    namespaces: bool = True  # own PID/mount/UTS namespaces per node (False: plain sshd, faster to start)
    network: str = "auto"  # "netns", "loopback" or "auto"
    nodes: list[SimNode] = field(default_factory=list)
    base: Path = field(default_factory=lambda: Path("."))
    token: str = field(default_factory=lambda: secrets.token_hex(2))
    started: bool = False
    _nets: list[ipaddress.IPv4Network] = field(default_factory=list)

    # ----------------------------------------------------------------------------------------- lifecycle
    def start(self) -> SimCluster:
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        if self.network == "auto":
            self.network = "netns" if netns_possible() else "loopback"
        # Not under /tmp: each node mounts its own tmpfs over /tmp, which would hide its config.
        parent = "/var/tmp" if os.path.isdir("/var/tmp") else None
        self.base = Path(tempfile.mkdtemp(prefix="rlaunch-sim-", dir=parent))
        self.started = True
        _LIVE.append(self)
        try:
            # The lock spans choosing addresses and creating the veths, so concurrent test sessions never collide.
            with open(ALLOC_LOCK, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                reap_leftovers()
                if self.network == "netns":
                    self.token = _free_token(self.token)
                self._write_owner()
                self._write_client_files_and_nodes()
                if self.network == "netns":
                    self._make_networks()
            with ThreadPoolExecutor(max_workers=min(16, self.n)) as pool:
                list(pool.map(self._launch, self.nodes))
                list(pool.map(self._wait_ready, self.nodes))
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> SimCluster:
        return self.start() if not self.started else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Kill every node (by its namespace's PID 1), delete namespaces, veths and temp files. Idempotent."""
        for node in self.nodes:
            self._kill(node)
        # Veths first (deleting one end deletes the pair, synchronously; a namespace's own cleanup is deferred),
        # then the namespaces: one forced batch, errors (already gone) ignored.
        doomed = [f"link del {node.host_veth}" for node in self.nodes if node.host_veth]
        doomed += [f"netns del {node.netns}" for node in self.nodes if node.netns]
        if doomed:
            subprocess.run(
                ["ip", "-force", "-batch", "-"],
                input="\n".join(doomed) + "\n",
                text=True,
                capture_output=True,
            )
        if self.started and self.base.name.startswith("rlaunch-sim-"):
            shutil.rmtree(self.base, ignore_errors=True)
            (OWNERS / f"{self.base.name}.json").unlink(missing_ok=True)
        self.started = False
        if self in _LIVE:
            _LIVE.remove(self)

    def _write_owner(self) -> None:
        """What reap_leftovers needs should this process die without stop(): its identity and what it makes."""
        OWNERS.mkdir(mode=0o700, exist_ok=True)
        owner = {"pid": os.getpid(), "start": _start_time(os.getpid()), "base": str(self.base),
                 "token": self.token if self.network == "netns" else None}  # fmt: skip
        (OWNERS / f"{self.base.name}.json").write_text(json.dumps(owner))

    # ---------------------------------------------------------------------------------------- client side
    @property
    def identity_file(self) -> Path:
        return self.base / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.base / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        """An ssh_config(5) naming every node, for `ssh -F`, scp and pdsh."""
        return self.base / "ssh_config"

    def node(self, name: str) -> SimNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no simulated node {name!r} (have {', '.join(n.name for n in self.nodes)})")

    def inventory_dict(self, **overrides: Any) -> dict[str, Any]:
        """A mapping for `cluster.inventory.from_mapping`; nested dicts in overrides are merged, not replaced. Its
        stall and start-up limits and the job's timeout follow the machine's load (e2e_helpers.scaled_inventory)."""
        data: dict[str, Any] = {
            "cluster": f"sim{self.n}",
            "transport": "ssh",
            "python": sys.executable,
            "ssh": {
                "user": "root",
                "identity_file": str(self.identity_file),
                "known_hosts": str(self.known_hosts),
                "host_key_policy": "strict",
                "connect_timeout": 5.0,
                "keepalive": 2.0,
            },
            "nodes": [{"host": n.name, "address": n.address, "port": n.port, "gpus": 0} for n in self.nodes],
            "env": {"OMP_NUM_THREADS": "1"},  # docs/facts.md: 5x slower without it on simulated nodes
            "workdir": "/tmp/rlaunch",  # the node's private tmpfs: nothing piles up in the host's shared /var/tmp
            "job": {"kind": "command", "command": ["true"]},
        }
        return scaled_inventory(_merge(data, overrides))

    # ------------------------------------------------------------------------------------------ inspection
    def node_path(self, node: str, path: str) -> Path:
        """A path as the node sees it (its private /tmp included), reachable from the head via /proc."""
        sim = self.node(node)
        if not self.namespaces or sim.init_pid is None:
            return Path(path)
        return Path(f"/proc/{sim.init_pid}/root") / path.lstrip("/")

    def node_pids(self, node: str) -> list[tuple[int, str]]:
        """(pid, cmdline) of live processes inside the node's PID namespace, except its sshd processes."""
        sim = self.node(node)
        if sim.pidns is None:
            return []
        out: list[tuple[int, str]] = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") != sim.pidns or _is_zombie(pid):
                    continue
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue  # exited while we looked
            argv = raw.rstrip(b"\0").split(b"\0")
            if pid == sim.init_pid or os.path.basename(argv[0]).startswith(b"sshd"):
                continue
            out.append((pid, " ".join(a.decode(errors="replace") for a in argv)))
        return sorted(out)

    # ------------------------------------------------------------------------------------------- failures
    def partition(self, node: str) -> None:
        """Silently drop all traffic between the head and node (no RST, no ICMP from the node)."""
        sim = self.node(node)
        if sim.netns:
            _ip("-n", sim.netns, "link", "set", "eth0", "down")
        else:
            self._signal_node(sim, signal.SIGSTOP)
        sim.partitioned = True

    def heal(self, node: str) -> None:
        sim = self.node(node)
        if sim.netns:
            self._link_up(sim)
        else:
            self._signal_node(sim, signal.SIGCONT)
        sim.partitioned = False

    def freeze(self, node: str) -> None:
        """The host hangs: every process of the node (sshd, guard, job) stops. Its kernel, shared with the head,
        still acknowledges TCP, like a node deep in swap: no connection breaks and nobody shouts."""
        sim = self.node(node)
        if sim.pidns is None:
            raise RuntimeError("freeze needs the node's own PID namespace (namespaces=True)")
        sim.frozen = True
        for _ in range(2):  # a process forked while we stopped the others is caught on the second pass
            self._signal_node(sim, signal.SIGSTOP)

    def thaw(self, node: str) -> None:
        sim = self.node(node)
        self._signal_node(sim, signal.SIGCONT)
        sim.frozen = False

    def drop_connections(self, node: str) -> int:
        """End every SSH session of the node (its per-connection sshd processes), as a restarted sshd, a NAT that
        forgot the flow or a client-side protocol error would: the head's connection drops, the node and what its
        guard runs stay. Returns how many sessions were ended."""
        sim = self.node(node)
        if sim.pidns is None:
            raise RuntimeError("drop_connections needs the node's own PID namespace (namespaces=True)")
        ended = 0
        for pid in self._sshd_pids(sim):
            if pid == sim.init_pid:
                continue  # the listener: new connections must still be accepted
            try:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if os.path.basename(argv0).startswith(b"sshd"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    ended += 1
        return ended

    def kill_node(self, node: str) -> None:
        """The node dies: its sshd and everything it ran. Its address stays (connections are refused).

        Returns once a connection is refused: the namespace's processes die after its PID 1 is reaped, and a
        connection made in between was accepted and then reset ("failed during SSH setup", make test, turn 13)."""
        sim = self.node(node)
        self._kill(sim)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((sim.address, sim.port), timeout=1.0):
                    pass
            except ConnectionRefusedError:
                return
            except OSError:
                pass
            time.sleep(0.05)

    def restart_node(self, node: str) -> None:
        sim = self.node(node)
        self._kill(sim)
        self._launch(sim)
        self._wait_ready(sim)

    # -------------------------------------------------------------------------------------------- internals
    def _write_client_files_and_nodes(self) -> None:
        _run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "rlaunch-sim",
                "-f",
                str(self.identity_file),
            ]
        )
        (self.base / "authorized_keys").write_text(Path(f"{self.identity_file}.pub").read_text())
        (self.base / "empty_bashrc").write_text("")
        addresses = self._allocate_addresses() if self.network == "netns" else self._loopback_addresses()
        for i, (address, port) in enumerate(addresses, 1):
            state = self.base / f"{self.prefix}{i}"
            state.mkdir()
            node = SimNode(f"{self.prefix}{i}", i, address, port, state)
            if self.network == "netns":
                node.netns = f"rl{self.token}n{i}"
                node.host_veth = f"rl{self.token}h{i}"
            self.nodes.append(node)
        with ThreadPoolExecutor(max_workers=4) as pool:  # ssh-keygen per node; cheap but not free
            list(pool.map(self._make_host_key, self.nodes))
        hosts = "127.0.0.1 localhost\n" + "".join(f"{n.address} {n.name}\n" for n in self.nodes)
        known = "".join(f"{n.known_hosts_name} {n.host_key_line}\n" for n in self.nodes)
        self.known_hosts.write_text(known)
        config = [f"Host {n.name}\n  HostName {n.address}\n  Port {n.port}\n" for n in self.nodes] + [
            "Host *\n  User root\n"
            f"  IdentityFile {self.identity_file}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.known_hosts}\n  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n  ConnectTimeout 10\n"
        ]
        self.ssh_config.write_text("".join(config))
        for node in self.nodes:
            (node.state_dir / "hosts").write_text(hosts)
            (node.state_dir / "sshd_config").write_text(self._sshd_config(node))

    def _make_host_key(self, node: SimNode) -> None:
        key = node.state_dir / "ssh_host_ed25519_key"
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", node.name, "-f", str(key)])
        node.host_key_line = " ".join(Path(f"{key}.pub").read_text().split()[:2])

    def _sshd_config(self, node: SimNode) -> str:
        return "\n".join(
            [
                f"ListenAddress {node.address}:{node.port}",
                f"HostKey {node.state_dir / 'ssh_host_ed25519_key'}",
                f"AuthorizedKeysFile {self.base / 'authorized_keys'}",
                "PidFile none",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "UseDNS no",
                "PrintMotd no",
                "MaxStartups 256",
                "MaxSessions 256",
                "Subsystem sftp internal-sftp",  # OpenSSH >= 9 scp speaks SFTP
                "LogLevel INFO",
                "",
            ]
        )

    def _loopback_addresses(self) -> list[tuple[str, int]]:
        out = []
        for i in range(self.n):
            address = f"127.0.{(i + 2) // 256}.{(i + 2) % 256}"
            out.append((address, _free_port(address)))
        return out

    def _allocate_addresses(self) -> list[tuple[str, int]]:
        """n consecutive /30s (head .1, node .2) in 198.18.0.0/15 that no interface here uses yet."""
        used = {ipaddress.ip_interface(a).network for a in _ip_addresses()}
        blocks = SUBNETS.num_addresses // 4
        base = int(SUBNETS.network_address)
        for _ in range(100):
            first = random.randrange(0, blocks - self.n)
            nets = [ipaddress.ip_network((base + 4 * (first + k), 30)) for k in range(self.n)]
            if not any(net.overlaps(u) for net in nets for u in used):
                self._nets = nets
                return [(str(net.network_address + 2), NODE_PORT) for net in nets]
        raise RuntimeError("no free 198.18.0.0/15 block for simulated nodes")

    def _make_networks(self) -> None:
        head_side = []
        for node, net in zip(self.nodes, self._nets, strict=True):
            head_mac, node_mac = self._mac(node, 0), self._mac(node, 1)
            head_side += [
                f"netns add {node.netns}",
                f"link add {node.host_veth} address {head_mac} type veth peer name eth0 address {node_mac} "
                f"netns {node.netns}",
                f"addr add {net.network_address + 1}/30 dev {node.host_veth}",
                f"link set {node.host_veth} up",
                # Permanent neighbours: with ARP out of the way a partition stays silent (timeouts), instead
                # of turning into "No route to host" once the ARP entry expires.
                f"neigh replace {node.address} lladdr {node_mac} dev {node.host_veth} nud permanent",
            ]
        # `ip -batch` instead of one process per command: it matters on 2 cores at 64 nodes.
        _ip_batch([], head_side)

        # Nodes reach each other through the head (multi-node torchrun: node2 -> node1's rendezvous port).
        Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
        for node, net in zip(self.nodes, self._nets, strict=True):
            node.gateway = str(net.network_address + 1)
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda node: self._link_up(node, first=True), self.nodes))

    def _link_up(self, node: SimNode, first: bool = False) -> None:
        """Bring the node's side up with its routes (a downed link loses them), then wait until both ends pass
        traffic: the kernel activates a link whose carrier came back up to a second later (linkwatch)."""
        assert node.netns and node.host_veth
        commands = [f"addr add {node.address}/30 dev eth0"] if first else []
        commands += [
            "link set lo up",
            "link set eth0 up",
            f"route replace default via {node.gateway}",
            f"neigh replace {node.gateway} lladdr {self._mac(node, 0)} dev eth0 nud permanent",
        ]
        _ip_batch(["-n", node.netns], commands)
        deadline = time.monotonic() + 10
        while True:
            head = Path(f"/sys/class/net/{node.host_veth}/operstate").read_text().strip()
            inside = subprocess.run(
                ["ip", "-n", node.netns, "-o", "link", "show", "eth0"], capture_output=True, text=True
            ).stdout
            if head == "up" and "state UP" in inside:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node.name}: link did not come up (head side {head})")
            time.sleep(0.02)

    def _mac(self, node: SimNode, side: int) -> str:
        """Locally administered, unique per cluster token, node and side (0 = head, 1 = node)."""
        t = int(self.token, 16)
        return f"02:{t >> 8:02x}:{t & 0xFF:02x}:{side:02x}:{node.index >> 8:02x}:{node.index & 0xFF:02x}"

    def serve_argv(self, node: SimNode) -> list[str]:
        """What the node runs as its PID 1 (in the foreground, listening on node.address:node.port): sshd here; a
        subclass may serve something else (tests/slurm_fixture.py: one slurmd per node)."""
        return [SSHD, "-D", "-e", "-f", str(node.state_dir / "sshd_config")]

    def _launch(self, node: SimNode) -> None:
        log = open(node.state_dir / "sshd.log", "ab")  # noqa: SIM115 - handed to the child
        prefix = ["ip", "netns", "exec", node.netns] if node.netns else []
        if self.namespaces:
            bashrc = os.path.join(pwd.getpwuid(0).pw_dir, ".bashrc")
            hold = node.state_dir / "host-tmp"
            argv = [
                *prefix,
                "unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--mount-proc", "--uts", "--mount", "--propagation", "private",
                "sh", "-c", NODE_INIT, "node-init",
                node.name, str(node.state_dir / "hosts"), bashrc, str(self.base / "empty_bashrc"),
                str(hold), *paths_to_keep(), "--", *self.serve_argv(node),
            ]  # fmt: skip
            hold.mkdir(exist_ok=True)
        else:
            argv = [*prefix, *self.serve_argv(node)]
        # The parent-death signal follows the thread that forked (prctl(2)): spawn from one thread that lives as
        # long as this process, never from the short-lived pool threads that start nodes side by side.
        argv = ["setpriv", "--pdeathsig", "KILL", *argv]
        spawn = _SPAWNER.submit(
            subprocess.Popen, argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
        try:
            node.proc = spawn.result()
        finally:
            log.close()

    def _wait_ready(self, node: SimNode) -> None:
        """Poll the port (no fixed sleeps); then find the node's PID 1 and PID namespace."""
        assert node.proc is not None
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if node.proc.poll() is not None:
                log = (node.state_dir / "sshd.log").read_text(errors="replace").strip().splitlines()
                raise RuntimeError(
                    f"{node.name}: sshd exited ({node.proc.returncode}): {' | '.join(log[-3:])}"
                )
            try:
                with socket.create_connection((node.address, node.port), timeout=1.0):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{node.name}: sshd not listening on {node.address}:{node.port}"
                    ) from None
                time.sleep(0.01)
        if self.namespaces:
            node.init_pid = _only_child(node.proc.pid)
            node.pidns = os.readlink(f"/proc/{node.init_pid}/ns/pid")
        else:
            node.init_pid = node.proc.pid

    def _signal_node(self, node: SimNode, sig: signal.Signals) -> None:
        """Every process of the node (its sshd and, in its own PID namespace, all it runs), by PID."""
        for pid in self._sshd_pids(node):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def _sshd_pids(self, node: SimNode) -> list[int]:
        pids = [node.init_pid] if node.init_pid else []
        if node.pidns:
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    with contextlib.suppress(OSError):
                        if os.readlink(f"/proc/{entry.name}/ns/pid") == node.pidns:
                            pids.append(int(entry.name))
        return sorted(set(pids))

    def _kill(self, node: SimNode) -> None:
        if node.partitioned:
            self.heal(node.name)  # SIGSTOPped processes or a downed link must not outlive us
        if node.frozen:
            self.thaw(node.name)
        if node.proc is None:
            return
        if node.init_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.init_pid, signal.SIGKILL)  # PID 1 of the namespace: the kernel kills the rest
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.proc.pid, signal.SIGKILL)  # its own session (start_new_session), never a name
        node.proc.wait(timeout=10)
        node.proc = None
        node.init_pid = None
        node.pidns = None


_LIVE: list[SimCluster] = []
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="simnodes-spawn")


def reap_leftovers() -> list[str]:
    """Remove what harnesses that died without stop() left (call under ALLOC_LOCK); returns what it removed.

    An owner file whose process is gone (or is another process by now: its start time differs): the processes
    inside its namespaces, its veths and namespaces, its state directory. Namespaces of a token without an owner
    file (a harness from before owner files) only when none of them holds a process and all are older than
    STALE_LEGACY_S. Never a live cluster's: its owner is alive, or its fresh namespaces are younger than that."""
    removed: list[str] = []
    owned: set[str] = set()
    netns = _netns_names()
    for path in sorted(OWNERS.glob("rlaunch-sim-*.json")) if OWNERS.is_dir() else []:
        try:
            owner = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        token = owner.get("token")
        if token:
            owned.add(token)
        if _start_time(int(owner.get("pid", 0))) == owner.get("start"):
            continue  # alive
        names = [n for n in netns if token and _token_of(n) == token]
        for name in names:
            for pid in _netns_pids(name):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        _delete_links_and_netns(token, names)
        base = Path(str(owner.get("base", "")))
        if base.name.startswith("rlaunch-sim-"):
            shutil.rmtree(base, ignore_errors=True)
        path.unlink(missing_ok=True)
        removed.append(base.name)
    legacy: dict[str, list[str]] = {}
    for name in netns:
        token = _token_of(name)
        if token and token not in owned:
            legacy.setdefault(token, []).append(name)
    for token, names in legacy.items():
        try:
            old = all(time.time() - os.stat(f"/run/netns/{n}").st_mtime > STALE_LEGACY_S for n in names)
        except OSError:
            continue
        if old and not any(_netns_pids(n) for n in names):
            _delete_links_and_netns(token, names)
            removed.append(f"rl{token}")
    return removed


def _token_of(netns: str) -> str | None:
    """The cluster token of a namespace this module names `rl<token>n<i>` (token: 4 hex digits)."""
    if len(netns) > 7 and netns.startswith("rl") and netns[6] == "n" and netns[7:].isdigit():
        token = netns[2:6]
        if all(c in "0123456789abcdef" for c in token):
            return token
    return None


def _netns_names() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _netns_pids(name: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout
    return [int(word) for word in out.split() if word.isdigit()]


def _delete_links_and_netns(token: str | None, names: list[str]) -> None:
    if not token:
        return
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    veths = {word.split("@")[0].rstrip(":") for word in links.split() if word.startswith(f"rl{token}h")}
    doomed = [f"link del {v}" for v in sorted(veths)] + [f"netns del {n}" for n in names]
    if doomed:
        subprocess.run(["ip", "-force", "-batch", "-"], input="\n".join(doomed) + "\n", text=True,
                       capture_output=True)  # fmt: skip


def _start_time(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (proc(5) field 22): a PID and this name one process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


@atexit.register
def _stop_leftovers() -> None:
    for cluster in list(_LIVE):
        cluster.stop()


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {proc.stderr.strip()}")


def _ip(*args: str) -> None:
    _run(["ip", *args])


def _ip_batch(options: list[str], commands: list[str]) -> None:
    proc = subprocess.run(
        ["ip", *options, "-batch", "-"], input="\n".join(commands) + "\n", text=True, capture_output=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"setting up simulated node networks failed: {proc.stderr.strip()}")


def _ip_addresses() -> list[str]:
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines() if len(line.split()) > 3]


def _free_token(wanted: str) -> str:
    """A cluster token no namespace or link here uses yet (`rl<token>n1`, `rl<token>h1`), `wanted` if it is free.

    Called under ALLOC_LOCK, so parallel test workers (pytest-xdist) and concurrent sessions never pick the same
    names: a random token alone collides now and then once a few dozen clusters run at once."""
    names = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names += subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    token = wanted
    while f"rl{token}" in names:
        token = secrets.token_hex(2)
    return token


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _only_child(pid: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            if children:
                return int(children[0])
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} has no child (the node's PID 1)")
        time.sleep(0.01)


def _is_zombie(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def main(argv: list[str] | None = None) -> None:
    """By hand: `python tests/simnodes.py 3 --inventory sim.yaml` starts nodes until SIGTERM / Ctrl-C."""
    import argparse

    import yaml

    parser = argparse.ArgumentParser(description="run N simulated SSH nodes until interrupted")
    parser.add_argument("n", type=int)
    parser.add_argument("--inventory", help="write a cluster.yaml for these nodes here")
    parser.add_argument(
        "--no-namespaces", action="store_true", help="plain sshd per node (no PID/mount/UTS ns)"
    )
    args = parser.parse_args(argv)
    import threading

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with SimCluster(args.n, namespaces=not args.no_namespaces) as cluster:
        if args.inventory:
            Path(args.inventory).write_text(yaml.safe_dump(cluster.inventory_dict(), sort_keys=False))
        print(
            f"{args.n} nodes up ({cluster.network}); try: ssh -F {cluster.ssh_config} {cluster.nodes[0].name}"
        )
        for node in cluster.nodes:
            print(f"  {node.name} {node.address}:{node.port} init pid {node.init_pid}")
        sys.stdout.flush()
        while not done.wait(1.0):
            pass


if __name__ == "__main__":
    main()
