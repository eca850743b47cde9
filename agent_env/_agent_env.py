"""`AgentEnv`: one environment, in process, served or on Ray, in every form a trainer or a script needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_env._deadline import DEFAULT_CALL_TIMEOUT, DEFAULT_EPISODE_BUDGET
from agent_env.envs import DEFAULT_ENVIRONMENT, EnvironmentReference, load_environment
from agent_env.session import LocalProvider, Provider, Session
from agent_env.training.templates import TemplateSource
from agent_env.training.trl import EnvironmentFactory

MCP_GRACE = 5.0
"""Seconds an MCP environment's session call timeout stays above its servers' `call_timeout`."""

if TYPE_CHECKING:
    import datasets

    from agent_env.mcp import HttpServer, StdioServer


class AgentEnv:
    """One environment: `factory` for TRL, `dataset(split)` for its tasks, `open()` for a session in a script.

    Every constructor takes `chat_template=`: the template the factory's render check uses when no TRL trainer
    calls it (a TRL shipped name, a `.jinja` file, a tokenizer folder, or a tokenizer or processor). A trainer's
    own template always wins; see `EnvironmentFactory`.

    Attributes:
        provider: Where sessions come from.
        factory: The picklable `environment_factory` to give `GRPOTrainer` or AsyncGRPO; a plain attribute.
    """

    def __init__(self, provider: Provider, *, chat_template: TemplateSource | None = None) -> None:
        self.provider = provider
        self.factory = EnvironmentFactory(provider, chat_template=chat_template)

    @classmethod
    def local(
        cls,
        environment: EnvironmentReference = DEFAULT_ENVIRONMENT,
        *,
        chat_template: TemplateSource | None = None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        episode_budget: float | None = DEFAULT_EPISODE_BUDGET,
        **config: Any,
    ) -> AgentEnv:
        """An environment in this process: a built-in name (`gridsim-desk`), `module:Class`, a class, or an
        `MCPEnvironment` (whose servers then start here).

        Args:
            environment: Which environment.
            chat_template: The template to check when no TRL trainer calls the factory (see the class).
            call_timeout: Seconds one call (a reset, a tool call, the reward) may run (60): past it the model reads
                `CallTimeoutError`, and the episode ends unscored (None under TRL). None: no limit, and calls run in
                the caller's thread.
            episode_budget: Seconds all of an episode's calls may run together (600; the model's time between calls
                is not counted): past it the call running fails with `EpisodeBudgetError`, and the episode ends
                unscored. None: no limit.
            **config: Passed to the environment's constructor (for the desk, `bundle="desk-v4"`).
        """
        provider = LocalProvider(
            load_environment(environment), call_timeout=call_timeout, episode_budget=episode_budget, **config
        )
        return cls(provider, chat_template=chat_template)

    @classmethod
    def mcp(
        cls,
        servers: StdioServer | HttpServer | Mapping[str, StdioServer | HttpServer],
        *,
        chat_template: TemplateSource | None = None,
        episode_budget: float | None = DEFAULT_EPISODE_BUDGET,
        **options: Any,
    ) -> AgentEnv:
        """MCP servers' tools as an environment in this process: their servers start now (the first one of each
        ahead of the episodes), and their tools are listed and published with full schemas.

        The same description runs anywhere an environment does: `AgentEnv.ray(MCPEnvironment(...))`, or
        `agent-env serve module:name` for an `MCPEnvironment` at module level. See `agent_env.mcp.MCPEnvironment`.

        Args:
            servers: A `StdioServer` (a command) or `HttpServer` (a URL), or several by name (their tools prefixed).
            chat_template: The template to check when no TRL trainer calls the factory (see the class).
            episode_budget: Seconds all of an episode's calls may run together, as for `local`.
            **options: The rest of `MCPEnvironment`: `reward`, `rows`, `setup`, `tools`, `skip_unpublishable`,
                `name`, `warm`, `call_timeout` (an MCP server's call, past which the server is stopped; the
                session's own call timeout, for the setup and reward functions too, stays at least
                `MCP_GRACE` seconds longer, so that the server's error is the one the model reads),
                `start_timeout`, `max_result_chars`.
        """
        from agent_env.mcp import MCPEnvironment

        environment = MCPEnvironment(servers, **options)
        call_timeout = max(DEFAULT_CALL_TIMEOUT, environment.call_timeout + MCP_GRACE)
        return cls.local(
            environment, chat_template=chat_template, call_timeout=call_timeout, episode_budget=episode_budget
        )

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        capacity_wait: float | None = None,
        chat_template: TemplateSource | None = None,
    ) -> AgentEnv:
        """An environment served by `agent-env serve` (or `build_app`) at `url`; needs the `server` extra.

        The server bounds each call and each episode (`--call-timeout`, `--episode-budget`); `timeout` bounds each
        request here, and `capacity_wait` (30 s when None) how long a new episode waits for room on a full server
        before its reset fails as an infrastructure error (see `RemoteProvider`).
        """
        from agent_env.server.capacity import DEFAULT_CAPACITY_WAIT
        from agent_env.server.client import RemoteProvider

        provider = RemoteProvider(
            url,
            token=token,
            timeout=timeout,
            capacity_wait=DEFAULT_CAPACITY_WAIT if capacity_wait is None else capacity_wait,
        )
        return cls(provider, chat_template=chat_template)

    @classmethod
    def ray(
        cls,
        environment: EnvironmentReference = DEFAULT_ENVIRONMENT,
        *,
        chat_template: TemplateSource | None = None,
        **options: Any,
    ) -> AgentEnv:
        """An environment whose episodes run on a pool of Ray actors; needs the `ray` extra.

        Args:
            environment: A built-in name, `package.module:Class`, a class importable by that name, or an
                `MCPEnvironment` (each actor starts its servers).
            chat_template: The template to check when no TRL trainer calls the factory (see the class).
            **options: The pool's settings (`actors`, `episodes_per_actor`, `pool`, `namespace`, `address`,
                `actor_options`, `call_timeout`, ...: see `agent_env.ray.RayProvider`); the rest are passed to
                the environment's constructor.
        """
        from agent_env.ray._provider import RayProvider

        return cls(RayProvider(environment, **options), chat_template=chat_template)

    @classmethod
    def openenv(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        name: str | None = None,
        chat_template: TemplateSource | None = None,
        episode_budget: float | None = DEFAULT_EPISODE_BUDGET,
        capacity_wait: float | None = None,
    ) -> AgentEnv:
        """An OpenEnv environment with MCP tools at `url`, over its `/ws`; needs the `server` extra.

        Its tools are listed now, each schema normalized and checked; calls are validated here before they are
        sent, and the reward is the last one a step returned. `timeout` bounds each answer, `episode_budget` all of
        an episode's answers together, and `capacity_wait` (30 s when None) how long a new session waits for room on
        a full server. See docs/openenv.md.
        """
        from agent_env.openenv.client import OpenEnvProvider
        from agent_env.server.capacity import DEFAULT_CAPACITY_WAIT

        provider = OpenEnvProvider(
            url,
            headers=headers,
            timeout=timeout,
            name=name,
            episode_budget=episode_budget,
            capacity_wait=DEFAULT_CAPACITY_WAIT if capacity_wait is None else capacity_wait,
        )
        return cls(provider, chat_template=chat_template)

    @classmethod
    def ors(
        cls,
        base_url: str,
        env_name: str | None = None,
        *,
        api_key_env: str | None = None,
        chat_template: TemplateSource | None = None,
        **options: Any,
    ) -> AgentEnv:
        """An environment of an Open Reward Standard server, in this process; needs the `server` extra.

        Its tools are listed now, each schema normalized and checked; calls are validated here before they are
        sent; its tasks are `dataset(split)`'s rows; each episode is an ORS session of its own, and its reward is
        what its results carried. The same description runs anywhere an environment does:
        `AgentEnv.ray(ORSEnvironment(...))`, `agent-env serve module:name`. See docs/ors.md.

        Args:
            base_url: The server's URL.
            env_name: The environment's name on the server; None: the server's only one.
            api_key_env: The name of the variable that holds the key (never the key itself); None sends none.
            chat_template: The template to check when no TRL trainer calls the factory (see the class).
            **options: The rest of `ORSEnvironment`: `name`, `tools`, `skip_unpublishable`, `timeout`,
                `call_timeout`, `retries`, `start_timeout`, `ping_interval`, `max_result_chars`.
        """
        from agent_env.ors import ORSEnvironment

        environment = ORSEnvironment(base_url, env_name, api_key_env, **options)
        return cls.local(environment, chat_template=chat_template)

    def tools(self) -> list[dict[str, Any]]:
        """The published tools: `name`, `description`, `inputSchema`."""
        return self.provider.tools()

    def open(self) -> Session:
        """A new session (one episode at a time) for a script; close it when done, or use it in a `with`."""
        return self.provider.open()

    def close(self) -> None:
        """Free what this process holds for the environment (an MCP environment's spare servers, a served one's
        HTTP client); sessions still open keep what is theirs, and the environment stays usable."""
        self.provider.close()

    def dataset(self, split: str = "train") -> datasets.Dataset:
        """The tasks of a split as a `datasets.Dataset` whose rows `reset(**row)` accepts, each value given back as
        it was given (a column Arrow cannot hold as is is stored as JSON); needs the `trl` extra.

        Raises:
            DatasetRowsError: A row `reset` cannot take, or a value no dataset can carry (an integer past 64 bits, a
                set): the message names the row and the key.
        """
        from agent_env._dataset import rows_dataset

        return rows_dataset(self.provider.dataset_rows(split), environment=self.provider.name, split=split)

    def __repr__(self) -> str:
        return f"AgentEnv({self.provider.name!r})"
