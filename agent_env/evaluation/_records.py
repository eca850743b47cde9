"""The run's JSONL file: a first line with the run's settings, then one complete line per finished episode, each
written and flushed as the episode ends, so a killed run loses only the episodes in flight.

A run that finishes ends its file with a summary line (`{"type": "summary", ...}`: what the command prints, pass^k
included, as `agent-env eval --json` gives it). `--resume` reads the file back: its settings must be this run's, a
last line cut short by the kill is dropped, so is the summary a finished run ended with (the resumed run writes its
own at its end), and every episode that ran to a reward is not played again (one that ended in an `error` is: the
server failed it, not the model; and so is one an earlier version ended as `agent_error`, by a protocol rule since
dropped). Where an episode appears twice, its last line is the one that counts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from agent_env.errors import AgentEnvError
from agent_env.evaluation._episode import Episode

RESUMED_SETTINGS = ("environment", "tool_set", "model", "split", "rows", "max_turns", "sampling", "arms")
"""The settings a resumed run must share with the file's: what makes its episodes comparable."""


class RunFileError(AgentEnvError, ValueError):
    """The `--out` file cannot take this run: it holds another run, is not one, or exists without `--resume`."""

    code = "run_file"


class RunFile:
    """The JSONL file of one run, open for appending.

    Args:
        path: Where it is.
        header: This run's settings (the first line).
        resume: Continue the run the file holds; without it, a file that exists and is not empty is refused.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: Mapping[str, Any],
        *,
        resume: bool,
    ) -> None:
        self.path = Path(path)
        self.episodes: dict[tuple[str, str], Episode] = {}
        """Every episode in the file, the last line of each (arm, episode) only, without its transcript."""
        exists = self.path.exists() and self.path.stat().st_size > 0
        if exists and not resume:
            raise RunFileError(
                f"{self.path} already holds a run: pass --resume to continue it, or name another --out"
            )
        self._file: IO[str]
        if exists:
            self._read(dict(header))
            self._file = self.path.open("a", encoding="utf-8")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")
            self._write({"type": "run", **header})

    def finished(self, arm: str, episode: str) -> bool:
        """Whether `episode` of `arm` already ran to a reward this run keeps: not one that ended in an `error`, nor
        one an earlier version ended as `agent_error` (scored 0 for a reply with both text and calls, which
        τ²-bench's default protocol plays on), so a resumed run scores every episode by one protocol."""
        found = self.episodes.get((arm, episode))
        return found is not None and found.scored() and found.ended_by != "agent_error"

    def append(self, episode: Episode) -> None:
        """Write `episode`'s line and flush it."""
        self._write(episode.to_json())
        self.episodes[(episode.arm, episode.episode)] = episode.light()

    def summarize(self, summary: Mapping[str, Any]) -> None:
        """End the file with the run's summary line."""
        self._write({"type": "summary", **summary})

    def close(self) -> None:
        self._file.close()

    def _write(self, line: Mapping[str, Any]) -> None:
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)
        self._file.write(text + "\n")
        self._file.flush()  # in the operating system's hands: a killed process loses none of it

    def _read(self, header: dict[str, Any]) -> None:
        data = self.path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        last = complete[complete.rfind(b"\n", 0, len(complete) - 1) + 1 :]
        if last.startswith(b'{"type":"summary"'):  # the run finished once: this run writes its own summary
            complete = complete[: len(complete) - len(last)]
        if len(complete) < len(data):  # the kill cut the last line short, or a summary ends it: drop it
            with self.path.open("r+b") as file:
                file.truncate(len(complete))
        lines = complete.decode("utf-8").splitlines()
        first = _parse(lines[0], self.path, 1) if lines else None
        if not isinstance(first, dict) or first.get("type") != "run":
            raise RunFileError(
                f"{self.path} is not an agent-env eval run (its first line is not the run's settings)"
            )
        differing = [key for key in RESUMED_SETTINGS if first.get(key) != header.get(key)]
        if differing:
            raise RunFileError(
                f"{self.path} holds a run with other settings ({', '.join(_difference(k, first, header) for k in differing)}): "
                "resume it with the same ones, or name another --out"
            )
        for number, text in enumerate(lines[1:], start=2):
            line = _parse(text, self.path, number)
            if isinstance(line, dict) and line.get("type") == "episode":
                episode = Episode.from_json(line).light()
                self.episodes[(episode.arm, episode.episode)] = episode


def _parse(text: str, path: Path, number: int) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise RunFileError(f"{path}, line {number}: not JSON; is it an agent-env eval run?") from None


ABSENT = object()
"""Stands for a field or item one side of a comparison has and the other lacks."""


def _difference(key: str, file: Mapping[str, Any], run: Mapping[str, Any]) -> str:
    """Where setting `key` first differs between the file's run and this one, and both values there: the differing
    field or item is named (`sampling.temperature`, `arms[1]`), so what differs shows even in long settings."""
    path, there, here = first_difference(key, file.get(key, ABSENT), run.get(key, ABSENT))
    return f"{path} {_short(there)} there, {_short(here)} here"


def first_difference(path: str, there: Any, here: Any) -> tuple[str, Any, Any]:
    """The path to the first field or item that differs between `there` and `here`, and its two values."""
    if isinstance(there, dict) and isinstance(here, dict):
        for name in [*there, *(name for name in here if name not in there)]:
            if there.get(name, ABSENT) != here.get(name, ABSENT):
                return first_difference(f"{path}.{name}", there.get(name, ABSENT), here.get(name, ABSENT))
    if isinstance(there, list) and isinstance(here, list):
        for index in range(max(len(there), len(here))):
            old = there[index] if index < len(there) else ABSENT
            new = here[index] if index < len(here) else ABSENT
            if old != new:
                return first_difference(f"{path}[{index}]", old, new)
    return path, there, here


def _short(value: Any) -> str:
    if value is ABSENT:
        return "absent"
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
