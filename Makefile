# labreplay — the two set-up commands are `make demo` and `make test`; both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= dev,materials,chem,bo,llm,dist,gym,mcp,inspect,sign,docs
export LABREPLAY_DATA_DIR ?= $(abspath ../shared/data)
OUT ?= out
ANY_SHARE_MAX ?= 20.0

.PHONY: venv demo test lint typecheck bench docs clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch is pinned in the `bo` extra; pip takes the CPU build from the local wheel.
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/labreplay data verify
	$(BIN)/python -m labreplay.demo --out $(OUT)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts examples
	$(BIN)/ruff format --check src tests benchmarks scripts examples
	# the share of loosely typed signatures (Any, its aliases, bare object, str-to-object
	# mappings): 31.5% at 735fbfd, under 20% since the payload TypedDicts (the engine issue's bound)
	$(BIN)/python scripts/any_share.py --max $(ANY_SHARE_MAX)
	# the published export schema is what the event and row TypedDicts give
	$(BIN)/python scripts/export_schema.py --check

typecheck: $(STAMP)
	$(BIN)/mypy --strict src/labreplay
	# the README's fourth suite, written against the SDK only
	MYPYPATH=examples/fourth_suite $(BIN)/mypy --strict examples/fourth_suite/meltsuite

# pytest's exit 5 (no test collected) is a failure too. The tests run on PYTEST_WORKERS
# pytest-xdist workers (CI has two cores; much of the suite waits on subprocesses, local
# servers and the model server); --dist loadfile keeps a test file on one worker, so its
# module fixtures are made once and its tests run in file order. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2
test: $(STAMP) lint typecheck
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$rc

# the docs site into site/ (git-ignored); the CLI reference is generated from the app
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(OUT) site
