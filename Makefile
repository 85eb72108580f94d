# Athena KB — two commands: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DO_NOT_TRACK := 1

.PHONY: run test test-fast stop install lint typecheck pytest faults cluster-sim bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@# torch first and pinned: a looser requirement would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	@# torchvision/timm break sentence-transformers; make sure nothing pulled them in
	-$(PY) -m pip uninstall -q -y torchvision timm 2>/dev/null
	@# the question encoder for ONNX Runtime, exported from the packaged weights (knowledge/onnx_query.py)
	$(PY) manage.py export_query_model
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) manage.py bootstrap
	$(PY) manage.py stack run

stop:
	@test -x $(PY) && $(PY) manage.py stack down || true

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy athena audit screening knowledge retrieval agents

pytest: $(STAMP)
	bash scripts/browser-deps.sh
	$(PY) manage.py stack up --only postgres,redis
	DJANGO_SETTINGS_MODULE=athena.settings.test $(VENV)/bin/pytest -q -m "not faults"

# the unit layer: pure functions, no database, broker or model (every test module declares its layer with a
# pytestmark; `slow` marks the ones that load a model); under a minute, no stack needed
test-fast: $(STAMP)
	DJANGO_SETTINGS_MODULE=athena.settings.test $(VENV)/bin/pytest -q -m "unit and not slow"

# fault injection: each module starts a stack of its own (own var/ folder and ports) and kills its processes
faults: $(STAMP)
	$(PY) manage.py stack up --only postgres,redis
	DJANGO_SETTINGS_MODULE=athena.settings.test $(VENV)/bin/pytest -q -s -m faults tests/faults
	$(MAKE) cluster-sim

# the deploy/ topology on one box (db, two worker hosts, web) in network namespaces; needs root
cluster-sim: $(STAMP)
	@if [ "$$(id -u)" != 0 ] || ! command -v ip >/dev/null; then \
		echo "cluster-sim skipped: it needs root and iproute2 (network namespaces)"; exit 0; fi; \
	bash scripts/cluster-sim.sh down >/dev/null 2>&1 || true; \
	status=0; bash scripts/cluster-sim.sh up && bash scripts/cluster-sim.sh test || status=$$?; \
	bash scripts/cluster-sim.sh down; exit $$status

test: lint typecheck pytest

bench: $(STAMP)
	$(PY) tests/benchmarks/retrieval.py

clean: stop
	rm -rf var
