"""Rendered config templates (DeepSpeed, LLaMA-Factory, env profiles), shipped as package data."""

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """Filesystem path of a shipped template (works for editable and regular installs)."""
    return Path(str(resources.files(__name__).joinpath(name)))


def read(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text()
