"""The log-probability of each token of a fixed sequence under the trainer's policy and under vLLM's weights: equal
when vLLM serves the policy's weights, apart when it serves others."""

from __future__ import annotations

from typing import Any

import requests
import torch


def policy(model: Any, ids: list[int]) -> torch.Tensor:
    """log p(ids[i] | ids[:i]) for i >= 1 under a transformers model."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids], device=model.device)).logits[0, :-1].float()
    return logits.log_softmax(-1).gather(-1, torch.tensor(ids[1:], device=logits.device)[:, None])[:, 0].cpu()


def policy_weights(folder: Any, model: Any, ids: list[int]) -> torch.Tensor:
    """`policy` of `model`'s weights in a plain copy of the model saved in `folder` (AsyncGRPO's own model runs only
    its packed attention, which needs the packing's inputs)."""
    from transformers import AutoModelForCausalLM

    plain = AutoModelForCausalLM.from_pretrained(folder)
    plain.load_state_dict(model.state_dict())
    return policy(plain, ids)


def engine(llm: Any, ids: list[int]) -> torch.Tensor:
    """The same under an in-process `vllm.LLM`, from its prompt log-probabilities."""
    from vllm import SamplingParams, TokensPrompt

    (output,) = llm.generate(
        [TokensPrompt(prompt_token_ids=ids)], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False
    )
    return torch.tensor(
        [entry[token].logprob for entry, token in zip(output.prompt_logprobs[1:], ids[1:], strict=True)]
    )


def served(url: str, ids: list[int]) -> torch.Tensor:
    """The same under a vLLM server, from `/v1/completions`' prompt log-probabilities."""
    name = requests.get(f"{url}/v1/models", timeout=30).json()["data"][0]["id"]
    body = {
        "model": name,
        "prompt": ids,
        "max_tokens": 1,
        "prompt_logprobs": 0,
        "return_tokens_as_token_ids": True,
    }
    response = requests.post(f"{url}/v1/completions", json=body, timeout=300)
    response.raise_for_status()
    entries = response.json()["choices"][0]["prompt_logprobs"][1:]
    return torch.tensor([entry[str(token)]["logprob"] for entry, token in zip(entries, ids[1:], strict=True)])


def gap(a: torch.Tensor, b: torch.Tensor) -> float:
    """The mean absolute difference of two sequences' log-probabilities, in nats."""
    return float((a - b).abs().mean())
