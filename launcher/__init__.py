"""rlaunch: multi-node training launcher for AMD ROCm clusters."""

__version__ = "0.1.0"
