"""`python -m launcher.cli`: the same entry point as the `rlaunch` console script."""

from launcher.cli import main

main()
