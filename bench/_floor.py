"""The floor under a served call: a bare ASGI app that does only what no server of tool calls can skip.

It answers the control API's two requests the load makes (`POST /episodes`, `POST /episodes/{id}/tools/{name}`) and
`GET /health`, under the same uvicorn stack `agent-env serve` runs (httptools on uvloop where they install, the same
protocol and options), and for a call it parses the body, runs `LocalSession.call_tool` on agent_env's own worker
pool (the same hop off the event loop, as many workers), and sends the result in one response. It has no guard (Host, Origin, token,
body limits), no routing beyond splitting the path, no episode registry (locks, timeouts, idle reaping), no error
forms: a server without these is not one anyone should run, which is why it lives in bench/. Its CPU per call, beside
the in-process call's, is the least that serving over HTTP from Python costs here; what `agent-env serve` spends
above it is agent_env's part.

    python bench/_floor.py ENVIRONMENT PORT [uvicorn|granian]
"""

from __future__ import annotations

import gc
import json
import sys
import uuid
from typing import Any

from agent_env.envs import load_environment
from agent_env.server._episodes import WORKERS
from agent_env.server._workers import WorkerPool
from agent_env.session import LocalSession

Scope = dict[str, Any]


class FloorApp:
    """The bare ASGI app: one `LocalSession` an episode, each call run on a worker."""

    def __init__(self, environment: str) -> None:
        self.environment = load_environment(environment)
        self.sessions: dict[str, LocalSession] = {}
        self.workers = WorkerPool(WORKERS)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                gc.freeze()  # as a serving registry does: the startup's objects stay out of the collector's passes
                await send({"type": "lifespan.startup.complete"})
            self.workers.shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        segments = scope["path"].split("/")
        if scope["path"] == "/health":
            status, answer = 200, {"status": "ok", "episodes": len(self.sessions)}
        elif scope["path"] == "/episodes":
            session = LocalSession(self.environment())
            row = json.loads(body) if body else {}
            observation = await self.workers.run(lambda: session.reset(**row), None)
            episode_id = uuid.uuid4().hex
            self.sessions[episode_id] = session
            status, answer = 201, {"episode_id": episode_id, "observation": observation}
        elif len(segments) >= 5 and segments[3] == "tools":
            session = self.sessions[segments[2]]
            name, arguments = "/".join(segments[4:]), json.loads(body) if body else {}
            result = await self.workers.run(lambda: session.call_tool(name, arguments), None)
            status, answer = 200, {"result": result}
        else:
            status, answer = 404, {"error": {"code": "invalid_request", "message": "no such path"}}
        encoded = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(encoded)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": encoded})


def main() -> None:
    import uvicorn

    from agent_env.server._serve import uvicorn_options

    app = FloorApp(sys.argv[1])
    if len(sys.argv) > 3 and sys.argv[3] == "granian":
        from testbed.granian import run_granian

        run_granian(app, int(sys.argv[2]))
        return
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[2]),
        log_level="warning",
        access_log=False,
        **uvicorn_options(),
    )


if __name__ == "__main__":
    main()
