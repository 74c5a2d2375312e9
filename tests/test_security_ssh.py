"""Host keys like OpenSSH (docs/security.md, issue 11 item 10), against the real sshd nodes of tests/simnodes.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from simnodes import SimCluster

from cluster import ssh
from cluster.inventory import from_mapping
from cluster.ssh import SSHTransport
from cluster.transport import Endpoint

pytestmark = pytest.mark.ssh


def transport(sim: SimCluster, **overrides: Any) -> SSHTransport:
    inv = from_mapping(sim.inventory_dict(**overrides))
    return SSHTransport(Endpoint.all_from(inv))


def test_accept_new_without_a_known_hosts_file_is_refused(sim3: SimCluster) -> None:
    """It used to accept every key on every connection and remember none."""
    with transport(sim3, ssh={"known_hosts": "", "host_key_policy": "accept-new"}) as t:
        result = t.run("node1", ["true"], timeout=20)
    assert result.error and "accept-new needs a known_hosts file" in result.error


def test_accept_new_writes_through_a_symlinked_known_hosts(sim3: SimCluster, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "known_hosts"
    real.parent.mkdir()
    real.write_text("")
    link = tmp_path / "known_hosts"
    link.symlink_to(real)
    with transport(sim3, ssh={"known_hosts": str(link), "host_key_policy": "accept-new"}) as t:
        assert t.run("node1", ["true"], timeout=20).ok
    assert link.is_symlink()
    node = sim3.node("node1")
    assert real.read_text() == f"{node.known_hosts_name} {node.host_key_line}\n"


def test_the_global_known_hosts_file_is_trusted(
    sim3: SimCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = sim3.node("node2")
    system = (
        tmp_path / "ssh_known_hosts"
    )  # stands in for /etc/ssh/ssh_known_hosts, which tests must not touch
    system.write_text(f"{node.known_hosts_name} {node.host_key_line}\n")
    monkeypatch.setattr(ssh, "GLOBAL_KNOWN_HOSTS", str(system))
    user_file = tmp_path / "absent"
    with transport(sim3, ssh={"known_hosts": str(user_file)}) as t:
        assert t.run("node2", ["true"], timeout=20).ok
        assert "unknown host key" in (t.run("node1", ["true"], timeout=20).error or "")
    assert not user_file.exists()  # keys from the global file are never copied into the user's
