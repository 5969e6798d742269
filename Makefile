# graphq — set-up and checks. Every target creates the local venv it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv browser demo test test-loaded lint docs docs-serve bench chaos clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,test,docs]'
	touch $(STAMP)

venv: $(STAMP)

## The main job: run code-inventory over the Python standard library (embedded Redis unless GRAPHQ_REDIS_URL).
demo: $(STAMP)
	$(VENV)/bin/graphq run code-inventory

## Debian's chromium, for the console's browser tests (tests/test_console_browser.py; Playwright drives it).
## apt-get needs root: sudo is used when make is not run as root. Nothing happens when chromium is there.
browser:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

## The tests in two pytest processes (pytest-xdist, whole files to each), each on a private redis-server
## started by its session fixture. Run serially, the suite used under half of one core (its tests mostly wait
## on worker subprocesses): two at once use the two cores of a 2-core machine.
test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile

## The tests beside two busy-loop processes (a loaded laptop or CI runner): no test may assume a speed.
test-loaded: $(STAMP)
	$(PY) -m pytest -q -p tests.busy

## Fault-injection tests too long for make test (marked chaos: a 20 s Redis outage, signal loops, 300 runs of
## admission, ...; make test keeps a fast test of each behaviour), then the chaos
## harness: 100 runs (20 of them wide: a split super-step), 4 workers, a random worker SIGKILLed every 2-4 s
## for 60 s (bench/chaos.py), then the same with SIGTERMs (rolling deploys: nothing may need the reaper).
chaos: $(STAMP)
	$(PY) -m pytest -q -m chaos
	$(PY) -m bench.chaos
	$(PY) -m bench.chaos --signal term

lint: $(STAMP)
	$(VENV)/bin/ruff check graphcore graphq worker scheduler console cli examples tests bench docs_hooks
	$(VENV)/bin/ruff format --check graphcore graphq worker scheduler console cli examples tests bench docs_hooks
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy docs_hooks

## The documentation site (mkdocs.yml), built strictly into site/: a broken link or anchor fails it.
## Its reference pages (commands, settings, metrics) are generated from the code (docs_hooks/reference.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

## The site served on http://127.0.0.1:8000, rebuilt on each change.
docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict

## Benchmarks (P1–P9), printed as ratios against baselines measured in the same run.
bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m bench

clean:
	rm -rf $(VENV) .graphq .pytest_cache .mypy_cache .ruff_cache site
