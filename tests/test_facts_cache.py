"""Doctor's slow facts are cached per node and its fast checks never import torch (issue 23).

facts.py runs exactly as a transport runs it (`python -` with gather.with_args: its modules and arguments) against a fake torch package
that counts its imports; the cache lives in the test's own directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from test_doctor import probe_here

from launcher import doctor

FAKE_TORCH = """
import os
from types import SimpleNamespace
with open(os.environ["FAKE_TORCH_IMPORTS"], "a") as f:
    f.write("imported\\n")
__version__ = "2.5.1+rocm6.2"
version = SimpleNamespace(hip="6.2.41133", cuda=None)
cuda = SimpleNamespace(device_count=lambda: 2, nccl=SimpleNamespace(version=lambda: (2, 21, 5)))
"""
# The shape torch's own generated torch/version.py has (annotated assignments).
VERSION_PY = """from typing import Optional
__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.5.1+rocm6.2'
debug = False
cuda: Optional[str] = None
hip: Optional[str] = '6.2.41133'
"""


def make_torch(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (site / "torch" / "version.py").write_text(VERSION_PY)
    return site


def probe(tmp_path: Path, site: Path, **args: Any) -> doctor.Facts:
    env = {
        **os.environ,
        "RLAUNCH_FACTS_CACHE": str(tmp_path / "cache"),
        "FAKE_TORCH_IMPORTS": str(tmp_path / "imports"),
        "PATH": "/usr/bin:/bin",
    }
    env.pop("PYTHONPATH", None)
    full = {"node": "n1", "token": "t", "env": {"PYTHONPATH": str(site)}, "tool_timeout": 2, **args}
    return probe_here(full, env)


def imports(tmp_path: Path) -> int:
    path = tmp_path / "imports"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_fast_checks_read_torch_without_importing_it(tmp_path: Path) -> None:
    facts = probe(tmp_path, make_torch(tmp_path), fast=True)
    assert imports(tmp_path) == 0
    assert facts.get("torch").value == "2.5.1+rocm6.2"
    assert facts.get("torch_build").value == "rocm (hip 6.2.41133)"
    assert facts.get("torch_build").source == "torch/version.py (not imported)"
    assert not facts.get("rccl").known and "not imported" in str(facts.get("rccl").reason)
    report = doctor.DoctorReport(["n1"], {"n1": facts}, [])
    assert report.sources() == ["torch facts torch/version.py (not imported): n1"]


def test_full_doctor_caches_torch_per_node_and_a_changed_install_asks_again(tmp_path: Path) -> None:
    site = make_torch(tmp_path)
    first = probe(tmp_path, site)
    assert (
        imports(tmp_path) == 1 and first.get("rccl").value == "2.21.5" and first.get("torch").source is None
    )
    again = probe(tmp_path, site)  # same interpreter, same torch files: the cached answer, said so
    assert imports(tmp_path) == 1
    assert again.get("rccl").value == "2.21.5" and str(again.get("torch").source).startswith(
        "cached (learnt "
    )
    fast = probe(tmp_path, site, fast=True)  # the fast checks use the cache too: RCCL known without an import
    assert imports(tmp_path) == 1 and fast.get("rccl").value == "2.21.5"
    os.utime(site / "torch" / "version.py", ns=(1, 1))  # an upgrade rewrites torch's files
    probe(tmp_path, site)
    assert imports(tmp_path) == 2
    fresh = probe(tmp_path, site, fresh=True)
    assert imports(tmp_path) == 3 and fresh.get("torch").source is None
    cache = list((tmp_path / "cache").iterdir())
    assert cache and all(p.stat().st_mode & 0o077 == 0 for p in cache)


def test_master_listens_through_every_batch_of_probes() -> None:
    """More nodes than ssh.max_parallel: later batches start after earlier ones end, so the master's probe (run
    first) must listen through all of them (at 128 simulated nodes, 64 at a time, nodes 65+ found it closed)."""
    from cluster.inventory import from_mapping

    nodes = [{"host": f"n{i}", "address": "127.0.0.1"} for i in range(5)]
    inv = from_mapping({"nodes": nodes, "master": {"port": 29500}, "ssh": {"max_parallel": 2},
                        "job": {"kind": "command", "command": ["true"]}})  # fmt: skip
    args = doctor.doctor_args(inv, "t", fast=True)
    master, peer = args(inv.master_node.host), args("n4")
    assert master["listen"] and master["expect_peers"] == [f"n{i}" for i in range(5)]
    assert master["connect_window"] == peer["connect_window"] * 4  # 3 batches, plus the master's own
