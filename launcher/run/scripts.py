"""The text of a node script (launcher/node/NAME) as the head sends it: `python -I -c TEXT` (protocol.script_argv).

Its own small room so that the attempt, the forensics and the loop read node scripts without importing each
other (the old run.py <-> hangs.py circle).
"""

from __future__ import annotations

from importlib import resources


def node_script(name: str) -> str:
    return resources.files("launcher.node").joinpath(name).read_text()
