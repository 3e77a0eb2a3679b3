# Two entry points: `make report` (the main job) and `make test` (the whole suite, proofs included).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# OpenBLAS with several threads is erratic on small matrices: one thread for every target.
export OPENBLAS_NUM_THREADS = 1
export OMP_NUM_THREADS = 1

.PHONY: report test test-slow bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.core

report: $(VENV)/.core
	$(BIN)/riccati-tf report --out report

lint: $(VENV)/.test
	$(BIN)/ruff check riccati_tf tests proofs benchmarks

test: lint
	$(BIN)/python -m pytest -q

test-slow: $(VENV)/.test
	$(BIN)/python -m pytest -q -m slow

bench: $(VENV)/.test
	$(BIN)/python -m benchmarks.flows

clean:
	rm -rf $(VENV) report .pytest_cache
