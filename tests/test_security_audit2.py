"""Issue 21: the second audit's findings, each the attack that worked, against a second real local user
(`rlaunch-other`, tests/otheruser.py) where a user is involved, with real files, symlinks and processes.

docs/security.md states the rules these tests hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import otheruser
import pytest

ROOT = Path(__file__).resolve().parents[1]
FACTS = ROOT / "launcher" / "node" / "facts.py"


# ------------------------------------------------------------------------------------------ 1. doctor's write probe
def test_doctor_write_probes_never_write_through_a_strangers_symlinks(tmp_path: Path) -> None:
    """rlaunch-other pre-creates the default workdir and checkpoint marker folder full of links named like the
    probe files (the old names were `<dir>/.rlaunch-write-test-<pid>` and `<marker>.<pid>.tmp`): the wrapper
    below plants them for the very PID the probe will have (exec keeps it). Nothing may be written through them,
    and the doctor reports the foreign directories as errors."""
    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher.doctor.gather import gather
    from launcher.doctor.checks import checks

    other = otheruser.ensure()
    with otheruser.shared_sticky_dir() as shared:
        victim = shared / "root-owned-precious"
        victim.write_text("precious\n")
        victim.chmod(0o644)
        workdir, ckpt = shared / "rlaunch-root", shared / "ckpt"
        for folder in (workdir, ckpt, ckpt / ".rlaunch-doctor"):
            otheruser.run_as_other(["mkdir", "-m", "0777", str(folder)])
        as_other = f"setpriv --reuid={other.pw_uid} --regid={other.pw_gid} --clear-groups --"
        python = tmp_path / "python"
        python.write_text(
            "#!/bin/sh\n"
            f"{as_other} ln -s {victim} {workdir}/.rlaunch-write-test-$$\n"
            f"{as_other} ln -s {victim} {ckpt}/.rlaunch-write-test-$$\n"
            f"{as_other} ln -s {victim} {ckpt}/.rlaunch-doctor/n1.marker.$$.tmp\n"
            f'exec {sys.executable} "$@"\n'
        )
        python.chmod(0o755)
        args = {"token": "t", "fast": True, "workdir": str(workdir), "ckpt_dir": str(ckpt)}
        transport = LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")})
        facts = gather(transport, ["n1"], FACTS.read_bytes(), args, 120, python_for={"n1": str(python)})
        assert facts["n1"].error is None, facts["n1"].error
        assert victim.read_text() == "precious\n"
        for key, folder in (("workdir", workdir), ("ckpt", ckpt)):
            probe = facts["n1"].probe(key)
            assert probe["ok"] is False and probe["unsafe"] is True, probe
            assert f"{folder} is owned by {otheruser.NAME} (uid {other.pw_uid})" in probe["error"]
        assert facts["n1"].probe("marker")["ok"] is False
        found = {c.name: c for c in checks(facts)}
        for name in ("workdir_writable", "checkpoint_writable"):
            assert found[name].status == "fail" and found[name].severity == "error", found[name]
            assert "owned by rlaunch-other" in json.dumps(found[name].__dict__, default=str)


def test_doctor_write_probe_leaves_no_file_in_a_safe_workdir(tmp_path: Path) -> None:
    from cluster.local import LocalTransport
    from cluster.transport import Endpoint
    from launcher.doctor.gather import gather

    workdir, ckpt = tmp_path / "w", tmp_path / "c"
    args = {"token": "t", "fast": True, "workdir": str(workdir), "ckpt_dir": str(ckpt)}
    transport = LocalTransport({"n1": Endpoint(host="n1", address="127.0.0.1")})
    facts = gather(transport, ["n1"], FACTS.read_bytes(), args, 120, python_for={"n1": sys.executable})
    assert facts["n1"].probe("workdir")["ok"] and facts["n1"].probe("ckpt")["ok"]
    assert list(workdir.iterdir()) == []
    assert (ckpt / ".rlaunch-doctor" / "n1.marker").read_text() == "t"
    assert workdir.stat().st_mode & 0o777 == 0o700
