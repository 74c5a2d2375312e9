# The two commands a newcomer needs (see README): `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test quick lint bench

setup:
	scripts/setup.sh

demo:  # only what the demo needs (scripts/setup.sh --demo): torch and rlaunch
	scripts/setup.sh --demo
	$(VENV)/bin/rlaunch up examples/local.yaml

test: setup
	$(PY) -m pytest -q --durations=25

quick: setup
	$(PY) -m pytest -q -m "not slow"

lint:
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

bench: setup
	$(PY) bench/fanout.py
