# Two commands for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test,demo,bench,mpi]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m tapegrad demo

test: $(STAMP)
	$(PY) -m pytest -q -rs -n 2

bench: $(STAMP)
	$(PY) -m tapegrad bench

lint: $(STAMP)
	$(PY) -m pip install -q ruff
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks

clean:
	rm -rf $(VENV) build src/*.egg-info
