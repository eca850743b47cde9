"""`import agent_env` stays light, and each layer imports only what the core and its own extra declare."""

import json
import subprocess
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, packages_distributions, requires

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# Imported by a declared dependency only when it happens to be installed: transformers uses Pillow, httpcore
# (under huggingface_hub's httpx) sniffio, the MCP SDK's logging rich (with its pygments), and numpy's f2py
# charset_normalizer (which Ray's requests brings), when present; httpx before 0.28 (the eval extra's openai at its
# floor) click, for its `cli` extra.
OPTIONAL_IMPORTS = {"PIL", "sniffio", "rich", "pygments", "charset_normalizer", "click"}
HEAVY = (
    "transformers",
    "torch",
    "trl",
    "mcp",
    "starlette",
    "uvicorn",
    "httpx",
    "datasets",
    "numpy",
    "scipy",
    "ray",
)


def imported_top_level_modules(code: str) -> set[str]:
    """Top-level modules that `code` imports, beyond those the interpreter loads at start-up."""
    script = code + "\nimport sys, json\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"

    def run(source: str) -> set[str]:
        result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, check=True)
        return set(json.loads(result.stdout.strip().splitlines()[-1]))

    return run(script) - run(
        "import sys, json\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )


def declared_closure(extras: tuple[str, ...]) -> set[str]:
    """Every distribution that agent-env's core and `extras` require, transitively, as installed here."""
    seen: set[str] = set()
    pending = [("agent-env", extras)]
    while pending:
        name, wanted = pending.pop()
        try:
            requirements = requires(name) or []
        except PackageNotFoundError:
            continue
        for text in requirements:
            requirement = Requirement(text)
            marker_ok = requirement.marker is None or any(
                requirement.marker.evaluate({"extra": extra}) for extra in (*wanted, "")
            )
            dependency = canonicalize_name(requirement.name)
            if marker_ok and (dependency, tuple(requirement.extras)) not in seen:
                seen.add(dependency)
                pending.append((dependency, tuple(requirement.extras)))
    return seen


def undeclared(modules: set[str], extras: tuple[str, ...]) -> set[str]:
    allowed = declared_closure(extras) | {"agent-env"}
    distributions = packages_distributions()
    found = set()
    for module in (
        modules - set(sys.stdlib_module_names) - OPTIONAL_IMPORTS - {"agent_env", "tst", "__main__"}
    ):
        owners = {canonicalize_name(owner) for owner in distributions.get(module, [])}
        if owners and not owners & allowed:
            found.add(f"{module} (from {', '.join(sorted(owners))})")
    return found


def test_import_agent_env_loads_no_heavy_dependency():
    modules = imported_top_level_modules("import agent_env")
    assert not modules & set(HEAVY)


def test_the_core_imports_only_what_the_core_declares():
    modules = imported_top_level_modules("import agent_env; from agent_env.envs import load_environment")
    assert undeclared(modules, ()) == set()


def test_the_training_layer_at_work_imports_only_what_the_trl_extra_declares():
    code = textwrap.dedent(
        """
        from agent_env import LocalProvider
        from agent_env.training import EnvironmentFactory
        from testbed.toy import ToyDesk
        EnvironmentFactory(LocalProvider(ToyDesk))().reset()
        """
    )
    modules = imported_top_level_modules(code)
    assert "transformers" in modules  # the render check ran
    assert "torch" not in modules and "trl" not in modules
    assert undeclared(modules, ("trl",)) == set()


def test_the_ray_package_loads_ray_only_when_its_provider_is_touched():
    modules = imported_top_level_modules("import agent_env.ray; from agent_env.ray import PoolMismatchError")
    assert "ray" not in modules and not modules & set(HEAVY)


def test_the_check_catches_a_module_no_extra_declares():
    modules = imported_top_level_modules("import agent_env, hypothesis")
    assert any(entry.startswith("hypothesis") for entry in undeclared(modules, ()))


def test_a_tau2_episode_with_its_scripted_user_imports_only_what_the_core_declares():
    code = "from agent_env import AgentEnv\nAgentEnv.local('tau2-mock').open().reset(task_id='create_task_1')"
    modules = imported_top_level_modules(code)
    assert "openai" not in modules and not modules & set(HEAVY)
    assert undeclared(modules, ()) == set()


def test_a_model_played_user_imports_only_what_the_llm_extra_declares():
    code = textwrap.dedent(
        """
        from agent_env.users import LLMUser, Scenario
        from agent_env.users import Chat, ChatMessage
        user = LLMUser.from_settings({"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_retries": 0})
        try:
            user.reply(Chat(Scenario("x"), [ChatMessage("agent", "hi")]))
        except Exception:
            pass
        """
    )
    modules = imported_top_level_modules(code)
    assert "openai" in modules and not modules & {"torch", "trl", "transformers", "mcp"}
    assert undeclared(modules, ("llm",)) == set()


@pytest.mark.parametrize("extra", ["trl", "server", "cli", "ray", "llm", "eval"])
def test_every_extra_is_declared(extra):
    markers = [Requirement(text).marker for text in requires("agent-env") or []]
    assert any(marker is not None and marker.evaluate({"extra": extra}) for marker in markers)


def test_the_server_layer_at_work_imports_only_what_the_server_extra_declares():
    code = textwrap.dedent(
        """
        import asyncio, httpx
        from agent_env.server import build_app
        from testbed.toy import ToyDesk
        app = build_app(ToyDesk)
        async def main():
            async with app.router.lifespan_context(app):
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                    assert (await client.get("/tools")).status_code == 200
        asyncio.run(main())
        import agent_env.server.client  # the client side: httpx
        """
    )
    modules = imported_top_level_modules(code)
    assert {"mcp", "starlette", "httpx"} <= modules
    assert not modules & {"torch", "trl", "transformers"}
    assert undeclared(modules, ("server",)) == set()


def test_the_openenv_layer_at_work_imports_only_what_the_server_extra_declares():
    code = textwrap.dedent(
        """
        from starlette.testclient import TestClient
        from agent_env import AgentEnv
        from agent_env.openenv import OpenEnvProvider, OpenEnvSurface
        from agent_env.server import build_app
        from testbed.toy import ToyDesk
        from tst.unit.openenv.transports import InProcess
        with TestClient(build_app(ToyDesk, surfaces=[OpenEnvSurface()])) as client:
            transport = InProcess(client)
            session = OpenEnvProvider("http://testserver/openenv", transport=transport).open()
            session.reset()
            session.call_tool("battery_status", {})
            session.close()
            transport.close()
        from agent_env.openenv.client import WebSocketTransport  # the default transport: websockets and httpx
        import websockets.sync.client
        assert WebSocketTransport("http://127.0.0.1:9", {}, 1.0).environment_name() is None
        """
    )
    modules = imported_top_level_modules(code)
    assert {"starlette", "websockets", "httpx"} <= modules
    assert not modules & {"torch", "trl", "transformers"}
    assert undeclared(modules, ("server",)) == set()


def test_importing_agent_env_openenv_loads_nothing_heavy():
    assert not imported_top_level_modules("import agent_env.openenv") & {*HEAVY, "websockets"}


def test_import_agent_env_does_not_load_the_evaluation_layer():
    assert not imported_top_level_modules("import agent_env") & {"openai", "httpx", "httpx2"}
    code = "import agent_env, sys; assert 'agent_env.evaluation' not in sys.modules"
    imported_top_level_modules(code)  # raises if the assertion fails


def test_the_evaluation_layer_at_work_imports_only_what_the_eval_extra_declares():
    code = textwrap.dedent(
        """
        import tempfile, pathlib
        from agent_env import AgentEnv
        from agent_env.evaluation import Endpoint, evaluate
        from testbed.toy import ToyDesk
        from testbed.scripted import scripted, toy_policy
        with scripted(toy_policy) as server, tempfile.TemporaryDirectory() as folder:
            report = evaluate(AgentEnv.local(ToyDesk), Endpoint(server.url), out=pathlib.Path(folder) / "r.jsonl")
            assert report.summaries[0].reward.n == 4
        """
    )
    modules = imported_top_level_modules(code)
    assert "openai" in modules
    assert not modules & {"torch", "trl", "transformers", "mcp", "starlette"}
    assert undeclared(modules, ("eval",)) == set()
