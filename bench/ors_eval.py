"""`agent-env eval --compare lossy` on an ORS environment: the lossy arm is TRL's own ORS port of each listed tool.

The environment is `orders`, written with the openreward SDK's own tools and served by its own server
(testbed/ors_orders.py, in the SDK's venv), named on the command line as `bench._ors_env:environment`. The model is a
scripted stand-in (no weights can be had here) that writes what the schema it is sent says, and so shows what each
arm costs a model that reads it: where `place_orders`' orders are objects with a `side` and a `qty`, it places the
task's target in one valid call; where they are a bare array (TRL's port of the listing), it guesses the item's
shape (`{"buy": N}`), reads the error agent_env's validation answers (which names the missing fields), and tries
again; then it submits the target. Its usage counts each request's prompt tokens (its tools and messages as JSON,
in the real Qwen3 vocabulary), so the prompt-token row is what each arm's schemas cost. It runs the real command (`agent-env eval`, in a subprocess) and prints what it
prints, for 8 episodes of the train split.

    PYTHONPATH=. uv run --frozen python bench/ors_eval.py
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from testbed import ors_venv
from testbed.scripted import Answer, call, completion, scripted, tool_results


@functools.cache
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    from agent_env.inspection.tokens import qwen3_tokenizer_folder

    return Tokenizer.from_file(str(qwen3_tokenizer_folder() / "tokenizer.json"))


def prompt_tokens(body: dict[str, Any]) -> int:
    """The request's tools and messages as JSON, in the real Qwen3 vocabulary: what its prompt costs, near enough."""
    return len(_tokenizer().encode(json.dumps(body["tools"]) + json.dumps(body["messages"])).ids)


def reads_its_schema(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """A model that writes what the tool schema it is sent says (see the module docstring); its usage counts the
    request's prompt tokens."""
    answer = _reply(body)
    answer.body["usage"] = {"prompt_tokens": prompt_tokens(body), "completion_tokens": 20, "total_tokens": 0}
    return answer


def _reply(body: dict[str, Any]) -> Answer:
    tools = {tool["function"]["name"]: tool["function"] for tool in body["tools"]}
    prompt = next(message["content"] for message in body["messages"] if message["role"] == "user")
    target = int(re.search(r"net quantity is (\d+)", prompt).group(1))  # type: ignore[union-attr]
    orders = tools["place_orders"]["parameters"]["properties"]["orders"]
    shown = "properties" in (orders.get("items") or {})
    results = tool_results(body)
    valid = {"orders": [{"side": "buy", "qty": target}]}
    if not results:
        return Answer(
            completion(tool_calls=[call("place_orders", valid if shown else {"orders": [{"buy": target}]})])
        )
    if "Invalid arguments" in results[-1]:
        return Answer(completion(tool_calls=[call("place_orders", valid)]))
    if not any(result in ("right", "wrong") for result in results):
        return Answer(completion(tool_calls=[call("submit", {"total": target})]))
    return Answer(completion("Done."))


def main() -> None:
    try:
        python = ors_venv.python()
    except ors_venv.PyPIUnreachableError as error:
        raise SystemExit(f"the openreward SDK cannot be installed: {error}") from None
    with tempfile.TemporaryDirectory() as folder:
        server = ors_venv.orders(python, Path(folder) / "sdk.log")
        try:
            url = server.url()
            with scripted(reads_its_schema) as model:
                command = [
                    str(Path(sys.executable).parent / "agent-env"),
                    "eval",
                    "bench._ors_env:environment",
                    "--split",
                    "train",
                    "--episodes",
                    "8",
                    "--compare",
                    "lossy",
                    "--base-url",
                    model.url,
                    "--out",
                    str(Path(folder) / "orders.jsonl"),
                ]
                environment = {**os.environ, "AGENT_ENV_BENCH_ORS_URL": url, "COLUMNS": "160"}
                result = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
            print(result.stdout)
            if result.returncode != 0:
                raise SystemExit(f"agent-env eval exited with {result.returncode}:\n{result.stderr[-2000:]}")
            header = json.loads((Path(folder) / "orders.jsonl").read_text().splitlines()[0])
            for arm in header["arms"]:
                print(f"{arm['name']}: {arm['shows']}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
