# Two set-up commands on a fresh machine: `make test` and `make bench`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install test lint check clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# the CPU wheel first: a bare `torch` requirement would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: install
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check memvec tests benchmarks
	$(VENV)/bin/mypy

check: lint test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
