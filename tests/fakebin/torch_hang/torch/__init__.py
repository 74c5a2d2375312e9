"""Fake torch whose import never returns (a wedged driver in a real one)."""

import time

time.sleep(600)
