# Two entry points: `make report` (the main job) and `make test` (the whole suite, proofs included).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# OpenBLAS with several threads is erratic on small matrices: one thread for every target.
export OPENBLAS_NUM_THREADS = 1
export OMP_NUM_THREADS = 1

.PHONY: report test pytest test-slow test-long bench lint mypy typecheck browser clean docs

#: pytest-xdist workers of `make test`: one per core (CI has 2); nproc counts the cores this
#: process may use, but reads OMP_NUM_THREADS as the answer when it is set (above): unset here
JOBS ?= $(shell env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
#: the tests that share an expensive fixture (the docs build, the quick report) stay together on
#: one worker (pytest.mark.xdist_group); the rest are spread test by test
XDIST = -n $(JOBS) --dist loadgroup

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

#: pip install into the virtual environment, then the byte code of what it installed compiled
#: on every core (pip compiles file by file on one: half of the install's time with torch);
#: a file that does not compile is skipped, as pip skips it
INSTALL = $(BIN)/pip install -q --no-compile
COMPILE = $(BIN)/python -m compileall -qq -j 0 \
	"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true

$(VENV)/.report: pyproject.toml | $(BIN)/python
	$(INSTALL) -e '.[report]'
	$(COMPILE)
	touch $@

# the test extra and the documentation's in one install (the suite builds the documentation)
$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(INSTALL) -e '.[test,docs]'
	$(COMPILE)
	touch $@ $(VENV)/.report $(VENV)/.docs

$(VENV)/.docs: pyproject.toml | $(BIN)/python
	$(INSTALL) -e '.[docs]'
	$(COMPILE)
	touch $@

report: $(VENV)/.report
	$(BIN)/riccati-tf report --out report

lint: $(VENV)/.test
	$(BIN)/ruff check riccati_tf tests proofs benchmarks docs

mypy: $(VENV)/.test
	$(BIN)/mypy

# mypy over the package (configuration in pyproject.toml; riccati_tf ships py.typed), then
# mypy --strict on a user script made of the README's Python examples
typecheck: mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_api.py -k type_check_strictly

# The report's browser check needs a headless Chromium. This target installs it from Debian's
# packages (as root, with apt-get); `make test` never does: without a browser, the browser
# checks are skipped and say so.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || \
	  [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || \
	  { echo "installing chromium-headless-shell for the report's browser check"; \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium-headless-shell >/dev/null 2>&1 || \
	    echo "note: could not install chromium-headless-shell; its test will be skipped"; }

# The whole suite: lint, mypy and pytest side by side (each one's output printed whole when it
# ends; the exit status is non-zero when any fails). pytest runs on every core: the docstring
# examples (doctests), the notebooks (executed once, by the documentation build), the slow
# checks (the documentation build with warnings as errors, long integrations) and the hostile
# corpus; mypy --strict on the README's examples is one of its tests. Installs nothing outside
# the virtual environment.
test: $(VENV)/.test
	@$(MAKE) --no-print-directory -k -j3 --output-sync=target lint mypy pytest

pytest: $(VENV)/.test
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not long" $(XDIST)

test-slow: $(VENV)/.test
	$(BIN)/python -m pytest -q -p no:cacheprovider -m slow $(XDIST)

# the checks that take tens of minutes on one core (real-size encoders, hundreds of random
# layers); not part of `make test`
test-long: $(VENV)/.test
	$(BIN)/python -m pytest -q -p no:cacheprovider -m long $(XDIST)

bench: $(VENV)/.test
	for b in flows symbolic bernoulli equilibria certify multihead factored particles sweep encoders realscale; do $(BIN)/python -m benchmarks.$$b; done

# The documentation site: warnings are errors; the notebooks run at every build.
docs: $(VENV)/.docs
	$(BIN)/python -m sphinx -b html -W --keep-going docs docs/_build/html

clean:
	rm -rf $(VENV) report .pytest_cache
