"""What the tests and the benchmarks both stand on: environments, scripted servers, OpenEnv's and ORS's real packages.

Neither `tst/` nor `bench/` is imported from here, and `bench/` imports nothing from `tst/`
(tst/unit/bench_test.py holds both). It is not in the wheel: `tst/` and `bench/` import it with the repository's root
on `sys.path` (pytest's `pythonpath`, or `PYTHONPATH=.`), and the processes they start get the root the same way.

- `toy`: ToyDesk, a small environment with the desk's argument shape, and its valid and malformed calls.
- `stuck`: StuckDesk, whose tools nap or never return (until released), for the deadline tests on every provider.
- `scripted`: an OpenAI-compatible server whose every reply a script decides.
- `scripted_mcp`: a real MCP server (the official SDK's, over stdio) that misbehaves on request; run as a script.
- `venvs`: third-party packages that cannot be installed beside agent_env, in venvs of their own built by uv.
- `openenv_venvs`: OpenEnv's real packages, each in a venv of its own; `openenv_ledger` is the OpenEnv environment
  their server runs (a script, run by a venv's python).
- `ors_venv`: the `openreward` SDK and TRL's ORS adapter in a venv of their own; `ors_orders` is the environment the
  SDK's own server runs (a script, written with the SDK's tools, run by that venv's python).
- `vllm_venv`: vLLM's CPU build, TRL and agent_env in a venv of their own (`make vllm-test`); `vllm_server` is vLLM's
  server on a tiny random Qwen3 in that venv, `forced_calls` the structured outputs that make a random model call
  tools, `gpu_standins` the CPU stand-ins for what TRL runs only on a GPU.
- `processes`: a subprocess with a log, and a server polled until it answers `/health`, each stopped by its handle.

Some modules here run as scripts, with this folder first on `sys.path`, so none is named for a package they import
(no `openenv.py`, no `mcp.py`).
"""
