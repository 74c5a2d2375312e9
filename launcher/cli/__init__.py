"""The `rlaunch` command line: one module per verb group, each adding its verbs to the one `main` group of
`app.py`. Nothing here but the wiring, so no verb module imports another and none imports this package."""

from __future__ import annotations

from launcher.cli import detach, doctor, fleet, nodes, run, validate
from launcher.cli.app import main

VERB_MODULES = (
    run,
    detach,
    doctor,
    validate,
    nodes,
    fleet,
)  # imported for their @main.command() registrations

__all__ = ["VERB_MODULES", "main"]
