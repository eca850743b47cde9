# Every target installs what it needs first: on a machine with only Python and pip, `make test` bootstraps uv,
# syncs the locked environment, and runs the suite.
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
RUN := $(UV) run --frozen

.PHONY: install test unit-test trl-test ray-test hosts-test matrix lint format bench soak demo

.venv/.installed: pyproject.toml uv.lock
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(UV) sync --frozen
	@touch $@

install: .venv/.installed

# The suite includes tst/unit/cli/demo_test.py, which runs `agent-env demo` as `make demo` does. The hosts tier is
# its own target (below): it needs root, and minutes of its own.
test: install
	$(RUN) pytest tst --ignore=tst/hosts

unit-test: install
	$(RUN) pytest tst/unit

trl-test: install
	$(RUN) pytest tst/trl

ray-test: install
	$(RUN) pytest tst/contract tst/ray

# Hosts as network namespaces behind a router namespace: Ray and `agent-env serve` across them, and the faults of a
# network (node loss, partition, delay, loss). Needs root (CI runs as root); installs iproute2 and iptables with
# apt-get where they are missing. Where namespaces cannot be made it fails saying why; AGENT_ENV_SKIP_HOSTS=1 skips.
hosts-test: install
	@if [ "$$AGENT_ENV_SKIP_HOSTS" != 1 ] && ! { command -v ip && command -v iptables; } >/dev/null 2>&1; then \
		apt-get update -qq && apt-get install -y -qq iproute2 iptables; fi
	$(RUN) pytest tst/hosts

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

demo: install
	$(RUN) agent-env demo

bench: install
	@for script in $(filter-out bench/soak.py bench/_%,$(wildcard bench/*.py)); do \
		echo "== $$script"; PYTHONPATH=. $(RUN) python $$script || exit 1; done

soak: install
	PYTHONPATH=. $(RUN) python bench/soak.py
