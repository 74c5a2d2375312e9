"""Node fact probe for `rlaunch doctor`: run on a node as `python - --json-args '{...}' < facts.py`.

Standard library only (the node's torch is probed in a child process, so a broken or slow torch cannot take this
script down). It collects raw facts, not conclusions: tool outputs are returned verbatim and parsed on the head
(launcher/doctor/), where parsers are pure and tested against captured outputs. It prints ONE JSON object on
the last line of stdout, tagged "rlaunch_facts", so shell start-up noise before it is harmless.

Arguments (all optional): node (our name for this node), env (the job's environment, applied before probing so
tools and torch are found as the job would find them), workdir, ckpt_dir, token (marks this doctor run),
mode ("facts" or "markers"), master_addr, master_port, listen (bind and serve master_port here),
expect_peers (names that should connect), connect_window (s), dataset (path to hash), fast (skip slow probes),
tool_timeout, torch_timeout (s), rocm_path.
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import json
import os
import platform
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata

MAX_OUTPUT = 1 << 20  # a tool printing megabytes is garbage for our purpose; keep the head's memory bounded
MARKER_DIR = ".rlaunch-doctor"
PACKAGES = ("torch", "deepspeed", "transformers", "llamafactory", "accelerate", "peft")
ENV_PREFIXES = (
    "NCCL_",
    "RCCL_",
    "HSA_",
    "HIP_",
    "ROCR_",
    "ROCM_",
    "CUDA_VISIBLE",
    "PYTORCH_",
    "TORCH_",
    "MASTER_",
)
ENV_NAMES = ("OMP_NUM_THREADS", "LD_LIBRARY_PATH", "PATH", "PYTHONPATH", "GPU_MAX_HW_QUEUES")
SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL")
HELLO = b"rlaunch-doctor "

# Run in a child `python -c`: importing torch can take many seconds, hang on a broken driver, or segfault.
# Its first line drops '' and relative sys.path entries (launcher/node/protocol.py SAFE_PATH): torch is imported
# with the job's PYTHONPATH, never from the directory the probe runs in.
TORCH_PROBE = r"""import sys; sys.path[:] = [p for p in sys.path if p.startswith('/')]
import json, sys
out = {"python": sys.version.split()[0]}
try:
    import torch
except BaseException as exc:
    out["import_error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out)); raise SystemExit(0)
out["version"] = str(getattr(torch, "__version__", ""))
v = getattr(torch, "version", None)
out["hip"] = getattr(v, "hip", None)
out["cuda"] = getattr(v, "cuda", None)
try:
    nccl = torch.cuda.nccl.version()
    out["rccl"] = ".".join(str(p) for p in nccl) if isinstance(nccl, tuple) else str(nccl)
except BaseException as exc:
    out["rccl_error"] = f"{type(exc).__name__}: {exc}"
try:
    out["device_count"] = int(torch.cuda.device_count())
except BaseException as exc:
    out["device_count_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""

LOAD_PROBE = "import ctypes, sys; ctypes.CDLL(sys.argv[1])"  # run with -I: nothing of the cwd is imported


def find_tool(name: str) -> str | None:
    """As launcher/node/protocol.py find_tool (this script runs standalone): beside the node's python, then
    /opt/rocm/bin, then PATH without empty, `.` or relative entries (they mean the current directory)."""
    for folder in (os.path.dirname(sys.executable), "/opt/rocm/bin"):
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p))
    return shutil.which(name, path=path) if path else None


def run_tool(argv: list[str], timeout: float) -> dict:
    """Run one command with a deadline; never raises. The whole process group dies on timeout."""
    out: dict = {"argv": argv, "rc": None, "stdout": "", "stderr": "", "error": None}
    exe = find_tool(argv[0]) if os.sep not in argv[0] else argv[0]
    if not exe:
        out["error"] = f"{argv[0]}: not found on PATH"
        return out
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            [exe, *argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # so a timeout can kill the tool's children too
        )
    except OSError as exc:
        out["error"] = f"{argv[0]}: {exc.strerror or exc}"
        return out
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            stdout, stderr = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe: give up on output
            stdout, stderr = b"", b""
        out["error"] = f"{argv[0]}: no answer after {timeout:g}s (killed)"
    out["rc"] = proc.returncode
    out["stdout"] = stdout[:MAX_OUTPUT].decode("utf-8", "replace")
    out["stderr"] = stderr[-4096:].decode("utf-8", "replace")
    out["seconds"] = round(time.monotonic() - started, 3)
    return out


def read_text(path: str, limit: int = 65536) -> dict:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return {"text": fh.read(limit), "error": None}
    except OSError as exc:
        return {"text": None, "error": f"{path}: {exc.strerror or exc}"}


def os_release() -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        text = read_text(path)["text"]
        if text:
            for line in text.splitlines():
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    return None


def memory() -> dict:
    text = read_text("/proc/meminfo")["text"] or ""
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("MemTotal", "MemAvailable"):
            with contextlib.suppress(ValueError, IndexError):
                values[name] = int(rest.split()[0]) * 1024
    return {"total": values.get("MemTotal"), "available": values.get("MemAvailable")}


def disk_free(path: str) -> int | None:
    probe = path
    while probe and not os.path.exists(probe):  # the workdir may not exist yet: measure where it would live
        parent = os.path.dirname(probe.rstrip("/"))
        if parent == probe:
            break
        probe = parent
    try:
        return shutil.disk_usage(probe or "/").free
    except OSError:
        return None


def user_groups() -> dict:
    uid = os.getuid()
    names = set()
    for gid in [*os.getgroups(), os.getgid()]:
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            names.add(str(gid))
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return {"user": user, "uid": uid, "groups": sorted(names)}


def relevant_env() -> dict:
    out = {}
    for name, value in os.environ.items():
        if not (name.startswith(ENV_PREFIXES) or name in ENV_NAMES):
            continue
        out[name] = "<redacted>" if any(w in name.upper() for w in SECRET_WORDS) else value
    return out


def packages() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
        except Exception as exc:  # a broken dist-info must not end the probe
            out[name] = f"error: {exc}"
    return out


# The rule push.py applies before it creates a run directory (docs/security.md), applied here before doctor's
# write probes: a stranger who pre-creates the predictable default workdir (/var/tmp/rlaunch-<user>) full of
# symlinks would otherwise have us truncate whatever their targets are (issue 21). Node scripts run standalone
# (`python -I -`), so the rule is repeated here; tests/test_contract.py keeps RULE the same as push.py's.
RULE = "every directory on it must be owned by you or root and not group/world-writable unless root-owned and sticky"


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def unsafe_path(path: str) -> str | None:
    """One line naming the first untrusted component of `path` (as written and as resolved), or None."""
    me = os.geteuid()
    for full in (os.path.abspath(path), os.path.realpath(path)):
        current = "/"
        for part in [""] + [p for p in full.split("/") if p]:
            current = os.path.join(current, part) if part else "/"
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                break  # created by us below, 0700
            except OSError as exc:
                return f"cannot inspect {current}: {exc.strerror}"
            why = None
            if st.st_uid not in (me, 0):
                why = "owned by " + _owner(st.st_uid)
            elif (
                not stat.S_ISLNK(st.st_mode)
                and st.st_mode & 0o022
                and not (st.st_uid == 0 and st.st_mode & stat.S_ISVTX)
            ):
                why = "writable by others"
            if why:
                return f"refusing {path}: {current} is {why}, mode {stat.S_IMODE(st.st_mode):04o} ({RULE})"
    return None


def _private_dirs(path: str) -> None:
    """Check, create (0700) and check again: a directory made by someone else between the two is caught."""
    for _ in (0, 1):
        problem = unsafe_path(path)
        if problem:
            raise PermissionError(problem)
        os.makedirs(path, mode=0o700, exist_ok=True)


def writable(path: str | None) -> dict | None:
    """Whether we can create a file in `path`: a fresh O_EXCL|O_NOFOLLOW temp file (mkstemp), removed again."""
    if not path:
        return None
    path = os.path.expanduser(path)
    try:
        _private_dirs(path)
        fd, test = tempfile.mkstemp(dir=path, prefix=".rlaunch-write-test-")
        os.close(fd)
        os.remove(test)
        return {"path": path, "ok": True, "error": None}
    except PermissionError as exc:
        if exc.args and str(exc.args[0]).startswith("refusing "):
            return {"path": path, "ok": False, "unsafe": True, "error": str(exc.args[0])}
        return {"path": path, "ok": False, "error": f"{exc.strerror or exc}"}
    except OSError as exc:
        return {"path": path, "ok": False, "error": f"{exc.strerror or exc}"}


def write_marker(ckpt_dir: str | None, node: str, token: str) -> dict | None:
    """One small file per node, replaced each run (rename never follows a link at the target), so repeated doctors
    leave no litter; written through a fresh mkstemp file in a directory that passed the path rule."""
    if not (ckpt_dir and token):
        return None
    folder = os.path.join(os.path.expanduser(ckpt_dir), MARKER_DIR)
    target = os.path.join(folder, f"{os.path.basename(node) or 'node'}.marker")
    try:
        _private_dirs(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".marker-")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(token)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return {"ok": True, "error": None}
    except PermissionError as exc:
        if exc.args and str(exc.args[0]).startswith("refusing "):
            return {"ok": False, "unsafe": True, "error": str(exc.args[0])}
        return {"ok": False, "error": f"{exc.strerror or exc}"}
    except OSError as exc:
        return {"ok": False, "error": f"{exc.strerror or exc}"}


def read_markers(ckpt_dir: str | None, token: str) -> dict:
    """Which nodes' markers of this run are visible here (the shared-directory test, second pass)."""
    folder = os.path.join(os.path.expanduser(ckpt_dir or ""), MARKER_DIR)
    seen = []
    try:
        names = os.listdir(folder)
    except OSError as exc:
        return {"seen": [], "error": f"{exc.strerror or exc}"}
    for name in names:
        if name.endswith(".marker"):
            text = read_text(os.path.join(folder, name), 256)["text"]
            if text is not None and text.strip() == token:
                seen.append(name[: -len(".marker")])
    return {"seen": sorted(seen), "error": None}


def dataset_probe(spec: str | dict | None) -> dict | None:
    """A path's sha256, or for a LLaMA-Factory job ({dataset_dir, names}) every file its names resolve to through
    dataset_info.json as this node sees them (file or folder entries), combined into one sha256."""
    if not isinstance(spec, dict):
        return sha256_of(spec)
    data_dir = os.path.expanduser(str(spec.get("dataset_dir") or "data"))
    info_path = os.path.join(data_dir, "dataset_info.json")
    label = f"{data_dir} ({', '.join(spec.get('names') or [])})"
    try:
        with open(info_path, encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, ValueError) as exc:
        return {
            "path": label,
            "sha256": None,
            "size": None,
            "error": f"{info_path}: {getattr(exc, 'strerror', None) or exc}",
        }
    paths = [info_path]
    for name in spec.get("names") or []:
        entry = info.get(name) if isinstance(info, dict) else None
        if not isinstance(entry, dict):
            return {"path": label, "sha256": None, "size": None, "error": f"{name} is not in {info_path}"}
        if entry.get("file_name"):
            target = os.path.join(data_dir, str(entry["file_name"]))
            if os.path.isdir(target):
                paths += sorted(os.path.join(d, f) for d, _, fs in os.walk(target) for f in fs)
            else:
                paths.append(target)
    files = {}
    for path in paths:
        one = sha256_of(path) or {}
        if one.get("error"):
            return {"path": label, "sha256": None, "size": None, "error": f"{path}: {one['error']}"}
        files[path] = one["sha256"]
    combined = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    size = sum(os.path.getsize(p) for p in files)
    return {"path": label, "sha256": combined, "size": size, "error": None, "files": files}


def sha256_of(path: str | None) -> dict | None:
    if not path:
        return None
    path = os.path.expanduser(path)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return {"path": path, "sha256": digest.hexdigest(), "size": os.path.getsize(path), "error": None}
    except OSError as exc:
        return {"path": path, "sha256": None, "size": None, "error": f"{exc.strerror or exc}"}


def net_plugin(timeout: float) -> dict | None:
    """RCCL reads NCCL_NET_PLUGIN: unset → default (absence is fine), `none` → off, X → librccl-net-X.so."""
    name = os.environ.get("NCCL_NET_PLUGIN")
    if not name or name.lower() == "none":
        return {"name": name, "library": None, "loaded": None, "error": None}
    library = name if (".so" in name or "/" in name) else f"librccl-net-{name}.so"
    result = run_tool([sys.executable, "-I", "-c", LOAD_PROBE, library], timeout)
    loaded = result["error"] is None and result["rc"] == 0
    error = None if loaded else (result["error"] or (result["stderr"].strip().splitlines() or ["failed"])[-1])
    return {"name": name, "library": library, "loaded": loaded, "error": error}


class MasterListener:
    """Holds the master port for the doctor run: proves it is free, and lets every node prove it can reach it."""

    def __init__(self, port: int, token: str):
        self.token = token
        self.peers: list[str] = []
        self.error: str | None = None
        self.sock: socket.socket | None = None
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("", port))
            sock.listen(64)
            sock.settimeout(0.2)
            self.sock = sock
        except OSError as exc:
            self.error = f"cannot bind port {port}: {exc.strerror or exc}"
            return
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.stop = threading.Event()
        self.thread.start()

    def _serve(self) -> None:
        assert self.sock is not None
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    line = conn.recv(256)
                    if line.startswith(HELLO):
                        self.peers.append(line[len(HELLO) :].decode("utf-8", "replace").strip())
                        conn.sendall(f"ok {self.token}\n".encode())
                except OSError:
                    pass

    def finish(self, expect: list[str], deadline: float) -> dict:
        if self.sock is not None:
            while time.monotonic() < deadline and not set(expect) <= set(self.peers):
                time.sleep(0.05)
            self.stop.set()
            self.thread.join(timeout=2)
            self.sock.close()
        return {"bound": self.sock is not None, "error": self.error, "peers": sorted(set(self.peers))}


def connect_master(addr: str, port: int, node: str, token: str, window: float) -> dict:
    """TCP connect from this node to master:port, retried while the master's listener may still be starting."""
    deadline = time.monotonic() + window
    last = "not tried"
    while True:
        try:
            with socket.create_connection((addr, port), timeout=min(3.0, window)) as conn:
                conn.settimeout(3.0)
                conn.sendall(HELLO + node.encode() + b"\n")
                reply = conn.recv(256).decode("utf-8", "replace").strip()
                if reply == f"ok {token}":
                    return {"ok": True, "error": None}
                last = f"something else answers on {addr}:{port} ({reply[:40]!r})"
        except TimeoutError:
            last = f"timed out connecting to {addr}:{port}"
        except OSError as exc:
            last = f"{addr}:{port}: {exc.strerror or exc}"
        if time.monotonic() >= deadline:
            return {"ok": False, "error": last}
        time.sleep(0.2)


def parse_args(argv: list[str]) -> dict:
    if "--json-args" in argv:
        i = argv.index("--json-args")
        if i + 1 < len(argv):
            value = json.loads(argv[i + 1])
            if isinstance(value, dict):
                return value
    return {}


def collect(args: dict) -> dict:
    started_wall = time.time()
    node = str(args.get("node") or socket.gethostname())
    token = str(args.get("token") or "")
    for name, value in (args.get("env") or {}).items():
        os.environ[str(name)] = str(value)  # tools, torch and the net plugin see the job's environment
    tool_timeout = float(args.get("tool_timeout", 10))
    torch_timeout = float(args.get("torch_timeout", 60))
    rocm_path = str(args.get("rocm_path") or os.environ.get("ROCM_PATH") or "/opt/rocm")
    fast = bool(args.get("fast"))
    workdir = args.get("workdir")

    listener = None
    port = args.get("master_port")
    if args.get("listen") and isinstance(port, int):
        listener = MasterListener(port, token)

    commands = {
        "amd_smi_static": ["amd-smi", "static", "--json"],
        "amd_smi_version": ["amd-smi", "version", "--json"],
        "rocm_smi": ["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"],
        "torch": [sys.executable, "-c", TORCH_PROBE],
    }
    if not fast:
        commands["rocminfo"] = ["rocminfo"]
    # Tools run side by side so a hanging one costs its timeout once, not once per tool.
    with ThreadPoolExecutor(max_workers=len(commands) + 2) as pool:
        futures = {
            name: pool.submit(run_tool, argv, torch_timeout if name == "torch" else tool_timeout)
            for name, argv in commands.items()
        }
        plugin = pool.submit(net_plugin, tool_timeout) if not fast else None
        connect = None
        if args.get("master_addr") and isinstance(port, int):
            connect = pool.submit(
                connect_master,
                str(args["master_addr"]),
                port,
                node,
                token,
                float(args.get("connect_window", 10)),
            )
        tools = {name: f.result() for name, f in futures.items()}
        net = plugin.result() if plugin else None
        master_connect = connect.result() if connect else None
    master_listen = None
    if listener is not None:
        deadline = time.monotonic() + float(args.get("connect_window", 10))
        master_listen = listener.finish([str(p) for p in args.get("expect_peers") or []], deadline)

    return {
        "rlaunch_facts": 1,
        "node": node,
        "time_start": started_wall,
        "time_end": time.time(),
        "hostname": socket.gethostname(),
        "os": os_release(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cmdline": read_text("/proc/cmdline")["text"],
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "rocm_version_file": read_text(os.path.join(rocm_path, ".info", "version")),
        "tools": tools,
        "packages": packages(),
        "groups": user_groups(),
        "memory": memory(),
        "disk_free": disk_free(os.path.expanduser(workdir)) if workdir else disk_free("/"),
        "env": relevant_env(),
        "net_plugin": net,
        "workdir": writable(workdir),
        "ckpt": writable(args.get("ckpt_dir")),
        "marker": write_marker(args.get("ckpt_dir"), node, token),
        "dataset": None if fast else dataset_probe(args.get("dataset")),
        "master_connect": master_connect,
        "master_listen": master_listen,
    }


def main() -> None:
    try:
        args = parse_args(sys.argv[1:])
    except ValueError as exc:
        print(json.dumps({"rlaunch_facts": 1, "fatal": f"bad --json-args: {exc}"}))
        return
    try:
        if args.get("mode") == "markers":
            out = {
                "rlaunch_facts": 1,
                "node": args.get("node"),
                **read_markers(args.get("ckpt_dir"), args["token"]),
            }
        else:
            out = collect(args)
    except Exception as exc:  # report, never crash: the head turns this into an "unknown" with a reason
        out = {"rlaunch_facts": 1, "fatal": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
