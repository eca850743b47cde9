"""TRL's `parse_response(..., tools=...)` types a call's arguments from the factory's SchemaTools, under every
template that writes arguments as raw text (XML-style: Qwen3.5, 3.6 and 3.8, GLM-4-MoE, Nemotron 3).

Those templates write a string argument `"0042"` and a number `42` alike, so only the tool's schema tells them
apart: transformers' response parser reads it from the tools it is given (calling `get_json_schema` on anything
that is a function or a method, which a bound SchemaTool is). Each test renders the prompt with the real template
and the tools TRL discovers on a factory instance, writes the model's call the way the template writes calls, and
parses it through TRL's `parse_response`, which calls the real transformers `tokenizer.parse_response`.
"""

from __future__ import annotations

from typing import Any

import pytest
from typing_extensions import TypedDict

from agent_env import AgentEnv, Environment, tool
from agent_env.training._render_check import discovered_tools

XML_TEMPLATES = [
    "qwen3_5_nothink",
    "qwen3_5_think",
    "qwen3_6",
    "qwen3_8",
    "glm4moe",
    "nemotron_3_nano",
    "nemotron_3_super",
    "nemotron_3_ultra",
    "nemotron_3_5_lightning",
]
"""The shipped templates TRL parses with an `xml-inline` response template (raw-text argument values)."""


class Item(TypedDict):
    sku: str
    qty: int


class Shipping(Environment):
    def reset(self, **row: Any) -> str | None:
        self.shipped: list[dict[str, Any]] = []
        return None

    def reward(self) -> float:
        return float(len(self.shipped))

    @tool
    def ship(self, order_id: str, zip_code: str, weight: float, items: list[Item]) -> str:
        """Ship an order.

        Args:
            order_id: The order's id, as printed on it (digits, leading zeros kept).
            zip_code: The destination's postal code.
            weight: Kilograms.
            items: What goes in the parcel.
        """
        self.shipped.append({"order_id": order_id, "zip_code": zip_code, "weight": weight, "items": items})
        return f"shipped {order_id}"


CALL = {
    "order_id": "0042",
    "zip_code": "75001",
    "weight": 2.5,
    "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}],
}


def tokenizer_for(template_name: str) -> Any:
    from transformers import AutoTokenizer
    from trl.chat_template_utils import add_response_schema

    from agent_env.training.templates import load_template
    from tst.support import qwen3_tokenizer_folder

    tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
    tokenizer.chat_template = load_template(template_name)
    return add_response_schema(
        tokenizer
    )  # what GRPOTrainer does with a tokenizer that has no response template


def model_call(tokenizer: Any, prompt_messages: list[dict[str, Any]], tools: list[Any]) -> tuple[str, str]:
    """The prompt, and the call as the template itself writes it: the rendering of the conversation with the
    assistant's call, past the prompt. Raw-text templates write each argument's value as its text (a string as
    is, anything else as JSON)."""
    kwargs = {"tools": tools, "tokenize": False}
    prompt = tokenizer.apply_chat_template(prompt_messages, add_generation_prompt=True, **kwargs)
    call = {"type": "function", "function": {"name": "ship", "arguments": CALL}}
    full = tokenizer.apply_chat_template(
        [*prompt_messages, {"role": "assistant", "content": "", "tool_calls": [call]}], **kwargs
    )
    common = 0
    while common < min(len(prompt), len(full)) and prompt[common] == full[common]:
        common += 1
    # The generation prompt may open a block (`<think>`) that the finished turn renders otherwise: the model's text
    # is what follows the prompt, and it must still open with a tool call.
    completion = full[common:]
    assert "0042" in completion and "75001" in completion
    return prompt, completion


@pytest.mark.parametrize("template_name", XML_TEMPLATES)
def test_digits_stay_a_string_where_the_schema_says_string_and_arrays_of_objects_parse(template_name):
    from trl.chat_template_utils import parse_response

    tokenizer = tokenizer_for(template_name)
    env = AgentEnv.local(Shipping, chat_template=template_name)
    environment = env.factory()
    tools = discovered_tools(environment)  # what TRL passes: `self._env_tools[name]`, from the probe instance
    messages = [{"role": "user", "content": "Ship order 0042 to 75001."}]
    prompt, completion = model_call(tokenizer, messages, tools)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    ids = tokenizer(completion, add_special_tokens=False)["input_ids"]

    parsed = parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)

    arguments = parsed["tool_calls"][0]["function"]["arguments"]
    assert arguments == CALL
    assert isinstance(arguments["order_id"], str) and isinstance(arguments["zip_code"], str)
    untyped = parse_response(tokenizer, ids, prefix=prompt_ids, tools=None)["tool_calls"][0]["function"]
    assert untyped["arguments"]["items"] != CALL["items"]  # without the tools, the array stays text
    environment.reset()
    assert environment.ship(**arguments) == "shipped 0042"  # and the typed call passes the published schema
    assert environment._session.environment.shipped[0]["zip_code"] == "75001"
    env.close()
