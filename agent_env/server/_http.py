"""The control API beside the MCP endpoint: open, reset, call, score and close episodes; list tools; read datasets.

Every error answers `{"error": {"code", "message"}}` with the status `errors.http_status` gives its class. The
protocol is written out in docs/server.md.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from agent_env.environment import class_reference
from agent_env.errors import AgentEnvError
from agent_env.schema._validator import short
from agent_env.server._bindings import SessionEpisodes
from agent_env.server._episodes import EpisodeRegistry
from agent_env.server._json import NotJsonError, parse_json
from agent_env.server._routes import ControlRoutes
from agent_env.server._row_references import ROW_PARAMETER, SPLIT_PARAMETER
from agent_env.server.errors import InvalidRequestError, ServerError, http_status

logger = logging.getLogger("agent_env.server")

MCP_SESSION_HEADER = "mcp-session-id"

BODY = "agent_env.body"
"""The scope key under which the request guard leaves the body it has read in full (bytes), so that a route need not
read it again from `receive` (which replays it too)."""

Endpoint = Callable[[Request], Awaitable[Response]]


def error_response(
    error: AgentEnvError, *, status: int | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The wire form of an error: `{"error": {"code", "message"}}` with its HTTP status, `"ended"` when the call
    that raised it ended its episode, and `"faults"` and `"cause"` when it carries them (a model endpoint's failed
    attempts; the agent_env error an unscored episode's environment raised, as a user endpoint's failing reset),
    so that the client raises what a session in process raises. A refusal for room says when to ask again
    (`Retry-After`)."""
    wire = wire_form(error)
    if error.ended is not None:
        wire["ended"] = error.ended
    body = {"error": wire}
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers = {**(headers or {}), "Retry-After": str(max(1, math.ceil(retry_after)))}
    return JSONResponse(body, status_code=status or http_status(error), headers=headers)


def wire_form(error: AgentEnvError) -> dict[str, Any]:
    """`{"code", "message"}` of `error`, with its `faults` when it has some, the `splits` a missing split's error
    names, and its `cause` when that is an agent_env error (in the same form)."""
    wire: dict[str, Any] = {"code": error.code, "message": str(error)}
    faults = getattr(error, "faults", None)
    if faults:
        wire["faults"] = dict(faults)
    splits = getattr(error, "splits", None)
    if splits:
        wire["splits"] = list(splits)
    cause = getattr(error, "cause", None)
    if isinstance(cause, AgentEnvError):
        wire["cause"] = wire_form(cause)
    return wire


def answered(endpoint: Endpoint) -> Endpoint:
    """An endpoint whose agent_env errors become their wire form, and whose other failures a 500 that says so."""

    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except AgentEnvError as error:
            return error_response(error)
        except Exception as error:
            logger.exception("agent_env: %s %s failed", request.method, request.url.path)
            return error_response(ServerError(f"the server failed: {type(error).__name__}: {error}"))

    return answer


async def unrouted(request: Request, exc: Exception) -> Response:
    """The wire form of Starlette's 404 and 405, for a path or method the server does not serve."""
    status = getattr(exc, "status_code", 404)
    what = "no such path" if status == 404 else f"{request.method} is not allowed there"
    error = InvalidRequestError(
        f"{what}: {request.method} {short(request.url.path)}; the control API's routes are listed in docs/server.md"
    )
    return error_response(error, status=status, headers=getattr(exc, "headers", None))


class ControlApi:
    """The HTTP routes that drive episodes of one registry."""

    def __init__(self, episodes: EpisodeRegistry, sessions: SessionEpisodes) -> None:
        self.episodes = episodes
        self.sessions = sessions
        environment = episodes.environment
        listing: dict[str, Any] = {"environment": environment.__name__, "tools": episodes.tools()}
        reference = class_reference(environment)
        if reference is not None:  # a client with the class at hand shows the lossy arm of its own methods
            listing["class"] = reference
        if environment.evaluation_split is not None:  # what eval plays untold, wherever the environment runs
            listing["evaluation_split"] = environment.evaluation_split
        self._tool_listing = json.dumps(listing, ensure_ascii=False, separators=(",", ":")).encode()

    def routes(self) -> list[BaseRoute]:
        """The routes, each answering errors in the wire form."""
        return [
            ControlRoutes(
                {
                    ("POST", "/episodes/{episode_id}/tools/{name:path}"): answered(self.call),
                    ("POST", "/episodes/{episode_id}/reset"): answered(self.reset),
                    ("POST", "/episodes/{episode_id}/reward"): answered(self.reward),
                    ("POST", "/episodes/{episode_id}/score"): answered(self.score),
                    ("POST", "/episodes"): answered(self.open),
                    ("DELETE", "/episodes/{episode_id}"): answered(self.close),
                    ("GET", "/health"): answered(self.health),
                    ("GET", "/tools"): answered(self.tools),
                    ("GET", "/datasets/{split}"): answered(self.dataset),
                }
            )
        ]

    async def health(self, request: Request) -> Response:
        """`GET /health`: 200 while the server runs, with its live episodes, the most it holds, and its calls stuck
        past their timeout; needs no token."""
        return JSONResponse({"status": "ok", **self.episodes.health()})

    async def tools(self, request: Request) -> Response:
        """`GET /tools`: the environment's class name and its published tools, exactly as in process, and, when the
        class can be imported by name, that name (`package.module:Class`)."""
        return Response(self._tool_listing, media_type="application/json")

    async def dataset(self, request: Request) -> Response:
        """`GET /datasets/{split}`: the split's rows, each one a valid body for `POST /episodes`."""
        split = request.path_params["split"]
        return JSONResponse({"split": split, "rows": await self.episodes.dataset_rows(split)})

    async def open(self, request: Request) -> Response:
        """`POST /episodes` (body: a dataset row): a new episode, reset from the row; `?reset=false` opens it
        without starting it. With an `Mcp-Session-Id` header, that MCP session acts on the new episode."""
        row = await self._row(request)
        start = request.query_params.get("reset", "true").lower() != "false"
        mcp_session_id = request.headers.get(MCP_SESSION_HEADER)
        if mcp_session_id:
            episode_id, observation = await self.sessions.open(mcp_session_id, row if start else None)
        else:
            episode_id, observation = await self.episodes.open(row if start else None)
        return JSONResponse({"episode_id": episode_id, "observation": observation}, status_code=201)

    async def reset(self, request: Request) -> Response:
        """`POST /episodes/{id}/reset` (body: a dataset row): the next episode on the same environment instance."""
        episode_id = request.path_params["episode_id"]
        row = await self._row(request)
        observation = await self.episodes.reset(episode_id, row)
        return JSONResponse({"episode_id": episode_id, "observation": observation})

    async def _row(self, request: Request) -> dict[str, Any]:
        """The dataset row a reset starts from: the body, or with `?row=<digest>` (and `&split=`) a row this server
        served, named by its digest (see `_row_references`)."""
        reference = request.query_params.get(ROW_PARAMETER)
        if reference is None:
            return await json_object(request, "a dataset row")
        if (await body_of(request)).strip():
            raise InvalidRequestError(
                f"send the dataset row in the body, or name a row this server served with ?{ROW_PARAMETER}=, not both"
            )
        return await self.episodes.served_row(reference, request.query_params.get(SPLIT_PARAMETER))

    async def call(self, request: Request) -> Response:
        """`POST /episodes/{id}/tools/{name}` (body: the arguments): the tool's result text, and, when the call
        ended the episode (`end_turn`, or a call that ended it from within), why."""
        arguments = await json_value(request, "the tool's arguments")  # the session judges any JSON value
        episode_id = request.path_params["episode_id"]
        result = await self.episodes.call(episode_id, request.path_params["name"], arguments)
        ended = self.episodes.ended(episode_id)
        return JSONResponse({"result": result} if ended is None else {"result": result, "ended": ended})

    async def reward(self, request: Request) -> Response:
        """`POST /episodes/{id}/reward`: the episode's reward, ending it first if it is running (so not a GET)."""
        return JSONResponse({"reward": await self.episodes.reward(request.path_params["episode_id"])})

    async def score(self, request: Request) -> Response:
        """`POST /episodes/{id}/score`: the episode's reward and its breakdown (null for a reward without parts),
        ending it first if it is running."""
        score = await self.episodes.score(request.path_params["episode_id"])
        return JSONResponse({"reward": score.reward, "breakdown": score.breakdown})

    async def close(self, request: Request) -> Response:
        """`DELETE /episodes/{id}`: close the episode and free it."""
        self.episodes.close(request.path_params["episode_id"])
        return Response(status_code=204)


async def body_of(request: Request) -> bytes:
    """The request's body: as the guard left it, or read."""
    body = request.scope.get(BODY)
    return body if isinstance(body, bytes) else await request.body()


async def json_value(request: Request, what: str) -> Any:
    """The request body as a JSON value; an empty body is `{}`."""
    body = await body_of(request)
    if not body.strip():
        return {}
    try:
        return await parse_json(body)
    except NotJsonError as error:
        raise InvalidRequestError(f"the body must be a JSON object ({what}); {error}") from None


async def json_object(request: Request, what: str) -> dict[str, Any]:
    """The request body as a JSON object; an empty body is `{}`."""
    value = await json_value(request, what)
    if not isinstance(value, dict):
        raise InvalidRequestError(
            f"the body must be a JSON object ({what}), not a JSON {_JSON_NAMES[type(value)]}"
        )
    return value


_JSON_NAMES = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
