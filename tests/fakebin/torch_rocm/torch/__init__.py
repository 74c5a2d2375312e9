"""Fake torch reporting a ROCm build (as torch.version.hip is set on ROCm wheels)."""

from types import SimpleNamespace

__version__ = "2.5.1+rocm6.2"
version = SimpleNamespace(hip="6.2.41133", cuda=None)
cuda = SimpleNamespace(device_count=lambda: 2, nccl=SimpleNamespace(version=lambda: (2, 21, 5)))
