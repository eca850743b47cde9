"""τ²-bench's own prompts, taken from its files at the pinned commit as the data is (`data`), never written here.

- The agent is told upstream's `AGENT_INSTRUCTION` around the domain's policy, framed as upstream's `SYSTEM_PROMPT`:
  both are string constants of `src/tau2/agent/llm_agent.py`, read by parsing that file (it is never imported or
  run), and put together as its `LLMAgent.system_prompt` puts them (`llm_agent.py`, lines 80-83).
- In solo mode the agent is told upstream's `AGENT_SOLO_INSTRUCTION` (formatted with the name of the tool that ends
  the episode) around the policy and the task's ticket, framed as `SYSTEM_PROMPT_SOLO`, both of the same file, put
  together as its `LLMSoloAgent.system_prompt` puts them (lines 296-318 and 400-410).
- The simulated user is told upstream's guidelines (`data/tau2/user_simulator/simulation_guidelines.md`, or
  `simulation_guidelines_tools.md` for a user who has tools of its own), then its scenario between `<scenario>`
  tags, as `UserSimulator.system_prompt` frames them (`src/tau2/user/user_simulator.py`, lines 87-93 and 139-162,
  with no persona config: its placeholder left empty); the scenario is written as `str(task.user_scenario)` writes
  it (`src/tau2/data_model/tasks.py`, lines 34-47 and 71-78), which `runner/build.py` (line 170) hands the user.
"""

from __future__ import annotations

import ast
import hashlib
import os
import string
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

from agent_env.envs.tau2.data import (
    COMMIT,
    TEXT_PATHS,
    TEXTS,
    domain_folder,
    named_root,
    unreadable,
    unusable,
)
from agent_env.envs.tau2.tasks import Instructions, UserScenario

AGENT_FILE = ("agent", "llm_agent.py")
GUIDELINES = ("user_simulator", "simulation_guidelines.md")
GUIDELINES_TOOLS = ("user_simulator", "simulation_guidelines_tools.md")
PERSONA_PLACEHOLDER = "<PERSONA_GUIDELINES>"
"""Where upstream's guidelines take a persona config's extra guidelines (none in its default runs: left empty)."""
AGENT_FIELDS = {"agent_instruction", "domain_policy"}
"""The fields upstream's agent `SYSTEM_PROMPT` is formatted with."""
SOLO_FIELDS = {"agent_instruction", "domain_policy", "ticket"}
"""The fields upstream's `SYSTEM_PROMPT_SOLO` is formatted with."""
SOLO_INSTRUCTION_FIELDS = {"stop_function_name", "stop_token"}
"""The fields upstream's `AGENT_SOLO_INSTRUCTION` may be formatted with (`LLMSoloAgent.system_prompt`)."""
CONSTANTS = ("AGENT_INSTRUCTION", "SYSTEM_PROMPT", "AGENT_SOLO_INSTRUCTION", "SYSTEM_PROMPT_SOLO")
"""The string constants read from upstream's `llm_agent.py`."""


@dataclass(frozen=True)
class Prompts:
    """τ²-bench's texts for the agent and the simulated user, as read from its files.

    Attributes:
        agent_instruction: Upstream's `AGENT_INSTRUCTION`.
        agent_frame: Upstream's agent `SYSTEM_PROMPT`, with its `{agent_instruction}` and `{domain_policy}` fields.
        solo_instruction: Upstream's `AGENT_SOLO_INSTRUCTION`, with its `{stop_function_name}` field.
        solo_frame: Upstream's `SYSTEM_PROMPT_SOLO`, with its `{agent_instruction}`, `{domain_policy}` and
            `{ticket}` fields.
        guidelines: The user simulator's guidelines for a user without tools.
        guidelines_tools: Its guidelines for a user who has tools of its own.
        source: Where they were read from: the commit they were downloaded at, or the folder named.
        files: Each file read, by its path in tau2-bench's repository, with its SHA-256.
    """

    agent_instruction: str
    agent_frame: str
    solo_instruction: str
    solo_frame: str
    guidelines: str
    guidelines_tools: str
    source: str
    files: dict[str, str]

    def agent(self, policy: str) -> str:
        """The agent's system prompt for a domain's policy, as upstream's `LLMAgent.system_prompt` gives it."""
        return self.agent_frame.format(domain_policy=policy, agent_instruction=self.agent_instruction)

    def solo(self, policy: str, ticket: str, *, stop_function: str, stop_token: str) -> str:
        """The agent's system prompt in solo mode, as upstream's `LLMSoloAgent.system_prompt` gives it: its solo
        instruction naming `stop_function` (the tool that ends the episode) around the policy and the ticket."""
        instruction = self.solo_instruction.format(stop_function_name=stop_function, stop_token=stop_token)
        return self.solo_frame.format(agent_instruction=instruction, domain_policy=policy, ticket=ticket)

    def user(self, scenario: UserScenario, has_tools: bool) -> str:
        """The simulated user's system prompt for a scenario, as upstream's `UserSimulator.system_prompt` gives it."""
        guidelines = self.guidelines_tools if has_tools else self.guidelines
        return f"{guidelines.replace(PERSONA_PLACEHOLDER, '')}\n\n<scenario>\n{scenario_text(scenario)}\n</scenario>"

    def note(self, user: bool | None) -> str:
        """Which texts were told, for records: the agent's, and the user's when a model plays it (`user`: whether
        that user has tools of its own; None for a user no model plays, which is told nothing)."""
        told = [("the agent's", "/".join((TEXT_PATHS["agent"], AGENT_FILE[1])))]
        if user is not None:
            told.append(
                (
                    "the user's",
                    "/".join((TEXT_PATHS["user_simulator"], (GUIDELINES_TOOLS if user else GUIDELINES)[1])),
                )
            )
        said = ", ".join(f"{whose} from {path} (sha256 {self.files[path][:12]})" for whose, path in told)
        return f"prompts: τ²-bench's own, {self.source}: {said}"


def scenario_text(scenario: UserScenario) -> str:
    """A task's user scenario as upstream writes it for its user simulator (`str(task.user_scenario)`): its persona
    when it has one, then its instructions, each indented by a tab under its heading."""
    lines = []
    if scenario.persona is not None:
        lines += ["Persona:", textwrap.indent(scenario.persona, "\t")]
    lines += ["Instructions:", textwrap.indent(_instructions_text(scenario.instructions), "\t")]
    return "\n".join(lines)


def _instructions_text(instructions: Instructions | str) -> str:
    if isinstance(instructions, str):
        return instructions
    lines = [
        f"Domain: {instructions.domain}",
        f"Reason for call:\n{textwrap.indent(instructions.reason_for_call, chr(9))}",
    ]
    if instructions.known_info is not None:
        lines.append(f"Known info:\n{textwrap.indent(instructions.known_info, chr(9))}")
    if instructions.unknown_info is not None:
        lines.append(f"Unknown info:\n{textwrap.indent(instructions.unknown_info, chr(9))}")
    lines.append(f"Task instructions:\n{textwrap.indent(instructions.task_instructions, chr(9))}")
    return "\n".join(lines)


_loaded: dict[str, Prompts] = {}
_loaded_lock = threading.Lock()


def load_prompts(data_dir: str | os.PathLike[str] | None = None) -> Prompts:
    """τ²-bench's prompts, read once per process and folder: from the folder named (`data_dir`, else
    `$AGENT_ENV_TAU2_DATA`: `agent/llm_agent.py` and `user_simulator/<file>` beside the domains), else downloaded at
    the pinned commit into the cache and checked against their SHA-256.

    Raises:
        Tau2DataError: A file is missing, cannot be downloaded whole and as hashed, or cannot be read, or holds no
            such constants as upstream's (the message names the file and the ways out).
    """
    named = named_root(data_dir)
    key = str(named.resolve()) if named is not None else ""
    with _loaded_lock:
        found = _loaded.get(key)
        if found is None:
            found = _loaded[key] = _read(data_dir, named is not None)
        return found


def _read(data_dir: str | os.PathLike[str] | None, named: bool) -> Prompts:
    texts: dict[tuple[str, str], str] = {}
    files: dict[str, str] = {}
    paths = {}
    for folder_name, file in (AGENT_FILE, GUIDELINES, GUIDELINES_TOOLS):
        path = paths[folder_name, file] = domain_folder(folder_name, data_dir) / file
        raw = _bytes(path, folder_name, named)
        files[f"{TEXT_PATHS[folder_name]}/{file}"] = hashlib.sha256(raw).hexdigest()
        try:
            texts[folder_name, file] = raw.decode("utf-8").replace("\r\n", "\n")
        except UnicodeDecodeError as error:
            raise unusable(path, folder_name, f"it is not UTF-8 text ({error})", named=named) from None
    agent_path = paths[AGENT_FILE]
    constants = _string_constants(texts[AGENT_FILE], agent_path, named)
    for name, expected, exact in (
        ("SYSTEM_PROMPT", AGENT_FIELDS, True),
        ("SYSTEM_PROMPT_SOLO", SOLO_FIELDS, True),
        ("AGENT_SOLO_INSTRUCTION", SOLO_INSTRUCTION_FIELDS, False),
    ):
        fields = {field for _, field, _, _ in string.Formatter().parse(constants[name]) if field is not None}
        if fields != expected if exact else not fields <= expected:
            raise unusable(
                agent_path,
                "agent",
                f"its {name} takes the fields {sorted(fields)}, not upstream's {sorted(expected)}",
                named=named,
            )
    changed = [path for path, digest in files.items() if digest != _pinned(path)]
    source = f"read from {named_root(data_dir)}" if named else f"downloaded at commit {COMMIT[:12]}"
    if changed:
        source += f" (not the pinned commit's: {', '.join(changed)})"
    elif named:
        source += f" (commit {COMMIT[:12]}'s files)"
    return Prompts(
        agent_instruction=constants["AGENT_INSTRUCTION"],
        agent_frame=constants["SYSTEM_PROMPT"],
        solo_instruction=constants["AGENT_SOLO_INSTRUCTION"],
        solo_frame=constants["SYSTEM_PROMPT_SOLO"],
        guidelines=texts[GUIDELINES],
        guidelines_tools=texts[GUIDELINES_TOOLS],
        source=source,
        files=files,
    )


def _pinned(path: str) -> str:
    folder, _, file = path.rpartition("/")
    name = next(name for name, where in TEXT_PATHS.items() if where == folder)
    return TEXTS[name][file]


def _bytes(path: Path, folder: str, named: bool) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise unusable(path, folder, unreadable(error), named=named) from None


def _string_constants(source: str, path: Path, named: bool) -> dict[str, str]:
    """`CONSTANTS` as upstream's module defines them: each a string literal, or one with `.strip()` called on it,
    assigned at the top of the module. Parsed, never run."""
    try:
        module = ast.parse(source, filename=str(path))
    except SyntaxError as error:
        raise unusable(
            path, "agent", f"it is not Python ({error.msg}, line {error.lineno})", named=named
        ) from None
    found: dict[str, str] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in CONSTANTS:
                value = _literal(node.value)
                if value is None:
                    raise unusable(
                        path,
                        "agent",
                        f"its {name} is not a string constant (nor one with .strip())",
                        named=named,
                    )
                found[name] = value
    missing = [name for name in CONSTANTS if name not in found]
    if missing:
        raise unusable(path, "agent", f"it defines no {' nor '.join(missing)} at its top level", named=named)
    return found


def _literal(node: ast.expr) -> str | None:
    """The value of a string literal, or of `"...".strip()`; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (
        isinstance(node, ast.Call)
        and not node.args
        and not node.keywords
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "strip"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return node.func.value.value.strip()
    return None
