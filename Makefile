# Every target installs what it needs first: on a machine with only Python and pip, `make test` bootstraps uv,
# syncs the locked environment, and runs the suite. `make demo` syncs only what the demo needs (no TRL, no torch).
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
VENV ?= $(if $(UV_PROJECT_ENVIRONMENT),$(UV_PROJECT_ENVIRONMENT),.venv)
export UV_PROJECT_ENVIRONMENT := $(VENV)
RUN := $(UV) run --frozen
UV_READY := $(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv

.PHONY: install test unit-test trl-test ray-test matrix lint format bench soak demo

# Everything uv.lock pins: every extra and the dev group (TRL, torch, the test and lint tools).
$(VENV)/.installed: pyproject.toml uv.lock
	@$(UV_READY)
	$(UV) sync --frozen
	@touch $@

# What `agent-env demo` needs, the cli extra, and nothing else. --inexact: it removes nothing, so after `make install`
# it changes nothing; and `make install` after it adds the rest (its stamp is its own).
$(VENV)/.demo-installed: pyproject.toml uv.lock
	@$(UV_READY)
	$(UV) sync --frozen --no-default-groups --extra cli --inexact
	@touch $@

install: $(VENV)/.installed

# The suite includes tst/unit/cli/demo_test.py, which runs `agent-env demo` as `make demo` does.
test: install
	$(RUN) pytest tst

unit-test: install
	$(RUN) pytest tst/unit

trl-test: install
	$(RUN) pytest tst/trl

ray-test: install
	$(RUN) pytest tst/contract tst/ray

# The unit and TRL tiers in a clean venv per supported combination (.ci/matrix.py): the floors on Python 3.11,
# uv.lock's newest on 3.12 and 3.13. Venvs are cached in .cache/matrix and rebuilt when their inputs change.
ROWS ?=
matrix: install
	UV="$(UV)" $(RUN) python .ci/matrix.py $(ROWS)

lint: install
	$(RUN) ruff check agent_env tst bench .ci
	$(RUN) ruff format --check agent_env tst bench .ci
	$(RUN) mypy

format: install
	$(RUN) ruff format agent_env tst bench
	$(RUN) ruff check --fix agent_env tst bench

# --no-sync: `uv run` would otherwise sync the dev group (torch and all) first.
demo: $(VENV)/.demo-installed
	$(UV) run --frozen --no-sync agent-env demo

bench: install
	@for script in $(filter-out bench/soak.py bench/_%,$(wildcard bench/*.py)); do \
		echo "== $$script"; PYTHONPATH=. $(RUN) python $$script || exit 1; done

soak: install
	PYTHONPATH=. $(RUN) python bench/soak.py
