"""The SDK's `orders` environment as agent_env names it on the command line (`agent-env eval bench._ors_env:environment`):
an `ORSEnvironment` of the server at `$AGENT_ENV_BENCH_ORS_URL`, which `bench/ors_eval.py` starts."""

from __future__ import annotations

import os

from agent_env.ors import ORSEnvironment

environment = ORSEnvironment(os.environ.get("AGENT_ENV_BENCH_ORS_URL", "http://127.0.0.1:8080"), "orders")
