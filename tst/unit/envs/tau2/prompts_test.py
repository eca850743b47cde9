"""`agent_env/envs/tau2/prompts.py`: the agent and the simulated user are told τ²-bench's own texts, taken from its
files as the data is (downloaded at the pinned commit and checked, or read from the folder named), never written in
agent_env; and every task's prompts equal what upstream's `LLMAgent.system_prompt` and `UserSimulator.system_prompt`
give. The expected texts here are built from the shared files by this test's own reading of them (bench/
tau2_upstream.py holds them to upstream's installed code as well)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.envs.tau2 import data, prompts
from agent_env.envs.tau2.data import COMMIT, Tau2DataError
from agent_env.envs.tau2.prompts import load_prompts
from agent_env.users import ScriptedUser
from tst.unit.envs.tau2.data_test import Server, server  # noqa: F401  (the fixture)

SHARED = Path(os.environ["AGENT_ENV_TAU2_DATA"])
FILES = {
    "llm_agent.py": SHARED / "agent" / "llm_agent.py",
    "simulation_guidelines.md": SHARED / "user_simulator" / "simulation_guidelines.md",
    "simulation_guidelines_tools.md": SHARED / "user_simulator" / "simulation_guidelines_tools.md",
}


def constant(source: str, name: str) -> str:
    """A `NAME = \"\"\"...\"\"\".strip()` constant of upstream's module, read with a regular expression."""
    found = re.search(rf'^{name} = """(.*?)"""\.strip\(\)$', source, re.S | re.M)
    assert found is not None, name
    return found.group(1).strip()


def upstream_agent_prompt(policy: str) -> str:
    source = FILES["llm_agent.py"].read_text()
    frame = constant(source, "SYSTEM_PROMPT")
    return frame.replace("{agent_instruction}", constant(source, "AGENT_INSTRUCTION")).replace(
        "{domain_policy}", policy
    )


def upstream_solo_prompt(policy: str, ticket: str) -> str:
    """`LLMSoloAgent.system_prompt`, its stop tool named `end_turn` (agent_env's, where upstream's is `done`)."""
    source = FILES["llm_agent.py"].read_text()
    instruction = constant(source, "AGENT_SOLO_INSTRUCTION").replace("{stop_function_name}", "end_turn")
    frame = constant(source, "SYSTEM_PROMPT_SOLO")
    return (
        frame.replace("{agent_instruction}", instruction)
        .replace("{domain_policy}", policy)
        .replace("{ticket}", ticket)
    )


def telecom_policy(main: str, tech: str) -> str:
    """telecom's policy as its `get_environment` puts its two files together."""
    read = (SHARED / "telecom" / main).read_text(), (SHARED / "telecom" / tech).read_text()
    return (
        f"<main_policy>\n{read[0]}\n</main_policy>\n<tech_support_policy>\n{read[1]}\n</tech_support_policy>"
    )


def tabbed(text: str) -> str:
    return "\n".join("\t" + line if line.strip() else line for line in text.split("\n"))


def upstream_scenario(scenario: dict[str, Any]) -> str:
    """`str(task.user_scenario)` as tau2-bench writes it, from the task's JSON."""
    instructions = scenario["instructions"]
    if not isinstance(instructions, str):
        parts = [
            f"Domain: {instructions['domain']}",
            f"Reason for call:\n{tabbed(instructions['reason_for_call'])}",
        ]
        for key, title in (("known_info", "Known info"), ("unknown_info", "Unknown info")):
            if instructions.get(key) is not None:
                parts.append(f"{title}:\n{tabbed(instructions[key])}")
        parts.append(f"Task instructions:\n{tabbed(instructions['task_instructions'])}")
        instructions = "\n".join(parts)
    lines = ["Persona:", tabbed(scenario["persona"])] if scenario.get("persona") is not None else []
    return "\n".join([*lines, "Instructions:", tabbed(instructions)])


def upstream_user_prompt(scenario: dict[str, Any], has_tools: bool) -> str:
    file = "simulation_guidelines_tools.md" if has_tools else "simulation_guidelines.md"
    guidelines = FILES[file].read_text().replace("<PERSONA_GUIDELINES>", "")
    return f"{guidelines}\n\n<scenario>\n{upstream_scenario(scenario)}\n</scenario>"


@pytest.mark.parametrize(("domain", "has_tools"), [("airline", False), ("retail", False), ("mock", True)])
def test_every_rows_system_message_and_every_users_prompt_are_upstreams(domain, has_tools):
    env = AgentEnv.local(f"tau2-{domain}")
    policy = (SHARED / domain / "policy.md").read_text()
    expected_agent = upstream_agent_prompt(policy)
    rows = env.provider.dataset_rows("base")
    assert rows and all(row["prompt"][0] == {"role": "system", "content": expected_agent} for row in rows)
    assert "<instructions>\nYou are a customer service agent" in expected_agent  # upstream's own, not ours
    tasks = json.loads((SHARED / domain / "tasks.json").read_text())
    instance = env.provider.environment()
    for task in tasks:
        told = instance.scenario(instance.data.task(task["id"])).prompt
        assert told == upstream_user_prompt(task["user_scenario"], has_tools), task["id"]


@pytest.mark.parametrize(
    ("name", "main", "tech"),
    [
        ("tau2-telecom", "main_policy.md", "tech_support_manual.md"),
        ("tau2-telecom-workflow", "main_policy.md", "tech_support_workflow.md"),
        ("tau2-telecom-solo", "main_policy_solo.md", "tech_support_manual.md"),
        ("tau2-telecom-workflow-solo", "main_policy_solo.md", "tech_support_workflow_solo.md"),
    ],
)
def test_telecoms_rows_are_upstreams_agent_or_solo_prompt_and_its_user_is_told_the_guidelines_for_tools(
    name, main, tech
):
    env = AgentEnv.local(name)
    policy = telecom_policy(main, tech)
    instance = env.provider.environment()
    tasks = {task.id: task for task in instance.data.split("base")}
    rows = env.provider.dataset_rows("base")
    assert len(rows) == len(tasks) == 114
    if (
        instance.solo
    ):  # the solo instruction, the policy and the ticket, alone: upstream's solo agent has no user
        assert all(
            row["prompt"]
            == [{"role": "system", "content": upstream_solo_prompt(policy, tasks[row["task_id"]].ticket)}]
            for row in rows
        )
        assert "You cannot communicate with the user" in rows[0]["prompt"][0]["content"]
        return
    assert all(
        row["prompt"][0] == {"role": "system", "content": upstream_agent_prompt(policy)} for row in rows
    )
    written = {task["id"]: task for task in json.loads((SHARED / "telecom" / "tasks.json").read_text())}
    for task_id, task in tasks.items():
        told = instance.scenario(task).prompt
        assert told == upstream_user_prompt(written[task_id]["user_scenario"], True), task_id


def test_an_llm_user_is_told_upstreams_prompt_and_a_scripted_user_says_its_script():
    from testbed.scripted import Answer, completion, scripted

    with scripted(lambda body, headers: Answer(completion("Hi, I need help."))) as user:
        env = AgentEnv.local("tau2-airline", user={"base_url": user.url, "backoff": 0.001})
        with env.open() as session:
            session.reset(task_id="3")
    task = next(t for t in json.loads((SHARED / "airline" / "tasks.json").read_text()) if t["id"] == "3")
    assert user.requests[0][0]["messages"][0] == {
        "role": "system",
        "content": upstream_user_prompt(task["user_scenario"], False),
    }
    scripted_env = AgentEnv.local("tau2-airline", user=ScriptedUser(["hello"]))
    assert scripted_env.provider.dataset_rows("test")[0]["prompt"][-1] == {"role": "user", "content": "hello"}


def test_the_prompts_are_read_by_parsing_upstreams_module_never_by_running_it(tmp_path):
    folder = own_folder(tmp_path)
    source = (folder / "agent" / "llm_agent.py").read_text()
    # A line that would fail if the module ran: parsed, the constants are read all the same.
    (folder / "agent" / "llm_agent.py").write_text("raise SystemExit('ran')\n" + source)
    assert load_prompts(folder).agent("P").endswith("<policy>\nP\n</policy>")


def own_folder(tmp_path: Path) -> Path:
    """A folder of the user's own with the prompts' files (copies, to change)."""
    for name, path in FILES.items():
        where = tmp_path / "mine" / path.parent.name
        where.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, where / name)
    return tmp_path / "mine"


SOLO = 'AGENT_SOLO_INSTRUCTION = "{stop_function_name}"\nSYSTEM_PROMPT_SOLO = "{agent_instruction}{domain_policy}{ticket}"\n'
"""Upstream's solo constants, in a module of one's own."""


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ('AGENT_INSTRUCTION = "x"\n' + SOLO,
         "defines no SYSTEM_PROMPT at its top level"),
        ('AGENT_INSTRUCTION = "x"\nSYSTEM_PROMPT = "{agent_instruction}{domain_policy}"\n',
         "defines no AGENT_SOLO_INSTRUCTION nor SYSTEM_PROMPT_SOLO at its top level"),
        ('AGENT_INSTRUCTION = f"{1}"\nSYSTEM_PROMPT = "{agent_instruction}{domain_policy}"\n' + SOLO,
         "its AGENT_INSTRUCTION is not a string constant"),
        ('AGENT_INSTRUCTION = "x"\nSYSTEM_PROMPT = "{agent_instruction}"\n' + SOLO,
         "its SYSTEM_PROMPT takes the fields ['agent_instruction'], not upstream's"),
        ('AGENT_INSTRUCTION = "x"\nSYSTEM_PROMPT = "{agent_instruction}{domain_policy}"\n'
         'AGENT_SOLO_INSTRUCTION = "{stop_function_name}"\nSYSTEM_PROMPT_SOLO = "{agent_instruction}{ticket}"\n',
         "its SYSTEM_PROMPT_SOLO takes the fields ['agent_instruction', 'ticket'], not upstream's"),
        ('AGENT_INSTRUCTION = "x"\nSYSTEM_PROMPT = "{agent_instruction}{domain_policy}"\n'
         'AGENT_SOLO_INSTRUCTION = "{stop}"\nSYSTEM_PROMPT_SOLO = "{agent_instruction}{domain_policy}{ticket}"\n',
         "its AGENT_SOLO_INSTRUCTION takes the fields ['stop'], not upstream's"),
        ("def broken(:\n", "it is not Python"),
    ],
)  # fmt: skip
def test_a_module_without_upstreams_constants_is_refused_naming_the_file_and_the_ways_out(
    tmp_path, source, problem
):
    folder = own_folder(tmp_path)
    (folder / "agent" / "llm_agent.py").write_text(source)
    with pytest.raises(Tau2DataError) as raised:
        load_prompts(folder)
    message = str(raised.value)
    assert f"τ²-bench's agent/llm_agent.py at {folder / 'agent' / 'llm_agent.py'}" in message
    assert problem in message
    assert "Fix or replace the file" in message and "name no folder" in message


def test_a_named_folder_without_the_prompts_is_refused_naming_the_file_and_the_layout(tmp_path):
    shutil.copytree(SHARED / "mock", tmp_path / "data" / "mock")
    with pytest.raises(Tau2DataError) as raised:
        AgentEnv.local("tau2-mock", data_dir=tmp_path / "data").open()
    message = str(raised.value)
    assert "τ²-bench's agent/llm_agent.py is not in" in message
    assert "with agent/llm_agent.py and user_simulator/<file> beside the domains" in message
    assert f"download the data at commit {COMMIT[:12]}" in message


def test_a_changed_file_is_read_as_it_is_and_the_prompts_say_so(tmp_path, caplog):
    folder = own_folder(tmp_path)
    with (folder / "user_simulator" / "simulation_guidelines.md").open("a") as file:
        file.write("\nBe brief.\n")
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        loaded = load_prompts(folder)
    assert loaded.guidelines.endswith("Be brief.\n")
    assert "not the pinned commit's: data/tau2/user_simulator/simulation_guidelines.md" in loaded.source
    assert "its SHA-256 differs" in caplog.text


def test_without_a_folder_the_prompts_are_downloaded_at_the_pinned_commit_and_checked(
    server: Server,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(data.DATA_ENV, raising=False)
    monkeypatch.delenv(data.URL_ENV, raising=False)
    port = server.server_address[1]
    monkeypatch.setattr(data, "TEXTS_URL_PATTERN", f"http://127.0.0.1:{port}/{{commit}}/{{path}}/{{file}}")
    monkeypatch.setattr(prompts, "_loaded", {})
    data._checked_digest.cache_clear()
    server.files.update({name: path.read_bytes() for name, path in FILES.items()})
    loaded = load_prompts()
    assert sorted(server.asked) == [
        f"/{COMMIT}/data/tau2/user_simulator/simulation_guidelines.md",
        f"/{COMMIT}/data/tau2/user_simulator/simulation_guidelines_tools.md",
        f"/{COMMIT}/src/tau2/agent/llm_agent.py",
    ]
    assert loaded.source == f"downloaded at commit {COMMIT[:12]}"
    assert loaded.agent("P") == upstream_agent_prompt("P")
    # A changed file on the wire is refused, and nothing of it stays in the cache.
    monkeypatch.setattr(prompts, "_loaded", {})
    shutil.rmtree(tmp_path / "cache")
    server.files["simulation_guidelines.md"] = b"Say anything.\n"
    with pytest.raises(Tau2DataError, match="does not match its SHA-256"):
        load_prompts()
    assert not (
        tmp_path / "cache" / "tau2" / COMMIT[:12] / "user_simulator" / "simulation_guidelines.md"
    ).exists()


def test_the_breakdown_and_so_evals_summary_say_which_texts_were_told():
    with AgentEnv.local("tau2-mock").open() as session:
        session.reset(task_id="update_task_1")
        note = session.score().breakdown["prompts_note"]
    assert note == (
        f"prompts: τ²-bench's own, read from {SHARED} (commit {COMMIT[:12]}'s files): the agent's from "
        "src/tau2/agent/llm_agent.py (sha256 d13412ff5028)"
    )  # a scripted user is told nothing
    modelled = AgentEnv.local("tau2-mock", user={"base_url": "http://127.0.0.1:9/v1"}).provider.environment()
    assert modelled.prompts.note(True).endswith(
        "the user's from data/tau2/user_simulator/simulation_guidelines_tools.md (sha256 cbf3d8a4d864)"
    )
