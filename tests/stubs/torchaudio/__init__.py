"""TEST-ONLY stand-in for torchaudio. Never install this; tests put tests/stubs on PYTHONPATH.

Why: LLaMA-Factory 0.9.5 imports torchaudio at module level (src/llamafactory/data/mm_plugin.py) although text-only
training never calls it, and PyPI's torchaudio wheel fails to load beside the CPU torch 2.13 wheel
(docs/facts.md, "Training stacks on CPU"). This module lets that import succeed; any real audio use fails
loudly instead of silently doing the wrong thing.
"""

from . import functional

__version__ = "0.0.0+rlaunch-test-stub"
IS_RLAUNCH_TEST_STUB = True


def load(*_args: object, **_kwargs: object) -> None:
    raise NotImplementedError("torchaudio test stub (rlaunch tests/stubs): audio loading is not available")


__all__ = ["IS_RLAUNCH_TEST_STUB", "functional", "load"]
