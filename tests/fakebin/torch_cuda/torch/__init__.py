"""Fake torch reporting a CUDA build: the wrong wheel on a ROCm node."""

from types import SimpleNamespace

__version__ = "2.5.0+cu124"
version = SimpleNamespace(hip=None, cuda="12.4")
cuda = SimpleNamespace(device_count=lambda: 0, nccl=SimpleNamespace(version=lambda: (2, 21, 5)))
