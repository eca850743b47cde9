"""Transports for the OpenEnv client without a network: a server scripted with recorded frames, and an agent_env
server in process (Starlette's TestClient), each recording every message the client sent."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from agent_env.server.errors import ServerUnavailableError

Answer = Callable[[dict[str, Any]], "str | Exception"]
"""A scripted server: the frame answering a message (or an error for the connection to raise)."""


class Scripted:
    """A transport whose every connection is answered by `answer`; `sent` holds what each connection sent."""

    def __init__(self, answer: Answer, name: str | None = "Ledger") -> None:
        self.answer = answer
        self.name = name
        self.sent: list[list[dict[str, Any]]] = []

    def connect(self) -> ScriptedConnection:
        self.sent.append([])
        return ScriptedConnection(self, self.sent[-1])

    def environment_name(self) -> str | None:
        return self.name

    def messages(self) -> list[dict[str, Any]]:
        """Every message sent on every connection, in order, but the `close` ones."""
        return [message for sent in self.sent for message in sent if message != {"type": "close"}]


class ScriptedConnection:
    def __init__(self, transport: Scripted, sent: list[dict[str, Any]]) -> None:
        self.transport = transport
        self.sent = sent
        self.pending: list[str | Exception] = []
        self.closed = False

    def send(self, text: str) -> None:
        if self.closed:
            raise ServerUnavailableError("the scripted server closed the connection")
        message = json.loads(text)
        self.sent.append(message)
        if message != {"type": "close"}:
            self.pending.append(self.transport.answer(message))

    def recv(self, timeout: float | None = None) -> str:
        answer = self.pending.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self) -> None:
        self.closed = True


class InProcess:
    """A transport to an agent_env app's OpenEnv surface, through the TestClient's in-memory WebSocket."""

    def __init__(
        self, client: TestClient, prefix: str = "/openenv", headers: dict[str, str] | None = None
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.headers = headers or {}
        self.sent: list[dict[str, Any]] = []
        self.connections: list[InProcessConnection] = []

    def connect(self) -> InProcessConnection:
        session = self.client.websocket_connect(f"{self.prefix}/ws", headers=self.headers)
        self.connections.append(InProcessConnection(session.__enter__(), self.sent))
        return self.connections[-1]

    def close(self) -> None:
        """Close every connection still open (the TestClient waits for them when it stops)."""
        for connection in self.connections:
            connection.close()

    def environment_name(self) -> str | None:
        name: str = self.client.get(f"{self.prefix}/metadata", headers=self.headers).json()["name"]
        return name


class InProcessConnection:
    def __init__(self, session: Any, sent: list[dict[str, Any]]) -> None:
        self.session = session
        self.sent = sent

    def send(self, text: str) -> None:
        self.sent.append(json.loads(text))
        self.session.send_text(text)

    def recv(self, timeout: float | None = None) -> str:
        try:
            text: str = self.session.receive_text()
        except WebSocketDisconnect as error:
            raise ServerUnavailableError(f"the server closed the connection ({error.code})") from None
        return text

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.session.__exit__(None, None, None)
