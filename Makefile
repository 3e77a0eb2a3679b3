# Two entry points: `make report` (the main job) and `make test` (the whole suite, proofs included).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# OpenBLAS with several threads is erratic on small matrices: one thread for every target.
export OPENBLAS_NUM_THREADS = 1
export OMP_NUM_THREADS = 1

.PHONY: report test test-slow test-long bench lint typecheck browser clean docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# editable installs put the checkout on sys.path by a static .pth line (setuptools' compat
# mode), not an import hook, so that mypy finds the package for a user's script too
EDITABLE = --config-settings editable_mode=compat

$(VENV)/.report: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[report]' $(EDITABLE)
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]' $(EDITABLE)
	touch $@ $(VENV)/.report

$(VENV)/.docs: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[docs]' $(EDITABLE)
	touch $@

report: $(VENV)/.report
	$(BIN)/riccati-tf report --out report

lint: $(VENV)/.test
	$(BIN)/ruff check riccati_tf tests proofs benchmarks docs

# mypy over the package (configuration in pyproject.toml; riccati_tf ships py.typed), then
# mypy --strict on a user script made of the README's Python examples
typecheck: $(VENV)/.test
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_api.py -k type_check_strictly

# The report's browser check needs a headless Chromium: installed from Debian's packages when
# running as root with apt-get (skip with NO_BROWSER=1); without one that single test is skipped.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || \
	  [ -n "$(NO_BROWSER)" ] || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || \
	  { echo "installing chromium-headless-shell for the report's browser check"; \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium-headless-shell >/dev/null 2>&1 || \
	    echo "note: could not install chromium-headless-shell; its test will be skipped"; }

# The whole suite: the docstring examples (doctests), the slow checks (the documentation build
# with warnings as errors, long integrations) included.
test: lint typecheck browser $(VENV)/.docs
	$(BIN)/python -m pytest -q -m "not long"

test-slow: $(VENV)/.test
	$(BIN)/python -m pytest -q -m slow

# the checks that take tens of minutes on one core (real-size encoders, hundreds of random
# layers); not part of `make test`
test-long: $(VENV)/.test
	$(BIN)/python -m pytest -q -m long

bench: $(VENV)/.test
	for b in flows symbolic bernoulli equilibria certify multihead factored particles sweep encoders realscale; do $(BIN)/python -m benchmarks.$$b; done

# The documentation site: warnings are errors; the notebooks run at every build.
docs: $(VENV)/.docs
	$(BIN)/python -m sphinx -b html -W --keep-going docs docs/_build/html

clean:
	rm -rf $(VENV) report .pytest_cache
