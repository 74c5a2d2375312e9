"""The text of a node script (launcher/node/NAME) as the head sends it: launcher/nodecall.py `node_script`, under
the name the run loop's modules and tests imported it by (its own small room kept the old run.py <-> hangs.py
circle away; nodecall is now that room for every node-script call).
"""

from __future__ import annotations

from launcher.nodecall import node_script

__all__ = ["node_script"]
