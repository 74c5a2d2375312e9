"""TEST-ONLY stand-in for torchaudio.functional (see the package docstring)."""


def resample(*_args: object, **_kwargs: object) -> None:
    raise NotImplementedError("torchaudio test stub (rlaunch tests/stubs): resampling is not available")
