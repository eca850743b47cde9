"""The registry's episodes as ORS sessions: which episode each session id plays, its prompt, and its last call.

A session id is minted by `/create_session` and holds nothing until `/create` opens an episode of the server's
registry for it (`Episodes`, the registry's face a surface sees), so the sessions live are the episodes live,
under the same limits (`max_episodes`, the idle timeout, which `/ping` holds off). A session id the registry has
closed behind its back (idled out, timed out) is forgotten when next seen. The last call of each session keeps its
answer for a while after it is sent, so that a client whose stream was cut short can resume it by its `task_id`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

from agent_env.server.errors import EpisodeNotFoundError
from agent_env.server.surface import ClientAdvice, Episodes

ORS = ClientAdvice(
    start_hint="create a session on a task (POST /create_session, then POST /create)",
    start_again="create a new session (POST /create_session, then POST /create)",
    make_room="delete sessions you no longer use (POST /delete)",
)
"""ORS clients start an episode by creating a session on a task, and end it by deleting the session."""

LINGER_SECONDS = 60.0
"""How long a call's answer is kept to be resumed, once sent (the SDK server keeps one as long)."""
SESSION_ID = re.compile(r"[A-Za-z0-9._~-]{1,128}")
"""What a session id may be: the SDK's (a UUID) and any other short token."""


@dataclass(eq=False)
class Call:
    """One call of a session: running, then answered (its events' data) until it lingers out."""

    task_id: str
    task: asyncio.Task[tuple[str, str]]
    """What it answers: `("end", result JSON)` or `("error", message)`."""
    done_at: float | None = None


@dataclass(eq=False)
class Session:
    """One ORS session: the episode it plays, its first prompt as a conversation, and its last call."""

    sid: str
    episode_id: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    last_call: Call | None = None


class ORSSessions:
    """The ORS view of one registry's episodes."""

    def __init__(self, episodes: Episodes) -> None:
        self.episodes = episodes
        self._sessions: dict[str, Session] = {}
        self._calls: dict[str, Call] = {}
        """Every call that can still be resumed, by its `task_id` (at most one per session)."""

    def live(self, sid: str) -> Session | None:
        """The session `sid` plays, or None: never created, deleted, or its episode closed by the registry."""
        session = self._sessions.get(sid)
        if session is None or session.episode_id is None:
            return session
        if not self.episodes.is_live(session.episode_id):
            self._forget(session)
            return None
        return session

    def claim(self, sid: str) -> Session | None:
        """Hold `sid` for a `/create` under way; None if it plays an episode already (or one is being created)."""
        if self.live(sid) is not None:
            return None
        self._forget_closed()
        session = Session(sid)
        self._sessions[sid] = session
        return session

    def release(self, session: Session) -> None:
        """Give up a claim whose `/create` failed."""
        if self._sessions.get(session.sid) is session:
            self._forget(session)

    def delete(self, sid: str) -> None:
        """Close the session's episode and forget it; a session not known is deleted already."""
        session = self._sessions.get(sid)
        if session is None:
            return
        episode_id = session.episode_id
        self._forget(session)
        if episode_id is not None and self.episodes.is_live(episode_id):
            with contextlib.suppress(EpisodeNotFoundError):
                self.episodes.close(episode_id, ORS)

    def start(self, session: Session, task_id: str, task: asyncio.Task[tuple[str, str]]) -> Call:
        """Record a new call of `session`; the one before it can no longer be resumed."""
        if session.last_call is not None:
            self._calls.pop(session.last_call.task_id, None)
        call = Call(task_id, task)
        session.last_call = call
        self._calls[task_id] = call
        return call

    def resumed(self, sid: str, task_id: str) -> Call | None:
        """The call `task_id` of session `sid`, if it can still be resumed."""
        self._linger_out()
        call = self._calls.get(task_id)
        session = self._sessions.get(sid)
        if call is None or session is None or session.last_call is not call:
            return None
        return call

    def count(self) -> int:
        """How many sessions are known (created, or being created)."""
        return len(self._sessions)

    def _forget(self, session: Session) -> None:
        self._sessions.pop(session.sid, None)
        if session.last_call is not None:
            self._calls.pop(session.last_call.task_id, None)

    def _forget_closed(self) -> None:
        """Forget the sessions whose episodes the registry closed behind our back (idled out, timed out)."""
        for session in list(self._sessions.values()):
            if session.episode_id is not None and not self.episodes.is_live(session.episode_id):
                self._forget(session)

    def _linger_out(self) -> None:
        now = time.monotonic()
        for task_id, call in list(self._calls.items()):
            if call.done_at is not None and now - call.done_at > LINGER_SECONDS:
                del self._calls[task_id]


__all__ = ["LINGER_SECONDS", "ORS", "SESSION_ID", "Call", "ORSSessions", "Session"]
