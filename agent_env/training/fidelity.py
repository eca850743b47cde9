"""Whether a chat template shows a tool without loss: exact, lossless, transformed, no tool block, or fails.

- **exact**: the published input schema's JSON appears in the prompt unchanged (in any layout).
- **lossless**: the template rewrites the schema (after its family's lowering, if it has one), and every keyword
  still reaches the model: for each keyword of the published schema (and the tool's description), both removing it
  and changing its value change the tool's part of the prompt, and a changed value's text appears in it.
- **transformed**: the template rewrites the schema and some keywords do not reach the model (`lost`).
- **no tool block**: the template writes no trace of the tool.
- **fails**: the template raises.

Each tool is rendered alone through the real `apply_chat_template`, so whatever changes is that tool's part of the
prompt. Verdicts are cached per template, lowering and tool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_env.schema import fingerprint
from agent_env.training.families import Family, lower
from agent_env.training.keywords import MARK, Occurrence, changed, is_default, occurrences, without
from agent_env.training.rendering import shows_exactly
from agent_env.training.templates import ChatTemplate

Status = Literal["exact", "lossless", "transformed", "no tool block", "fails"]
PROBE = [{"role": "user", "content": "Begin."}]
"""The conversation every tool is rendered with."""
SHOWN: frozenset[Status] = frozenset({"exact", "lossless"})
"""The verdicts under which a factory builds."""
TOOL_DESCRIPTION = "(tool description)"


@dataclass(frozen=True)
class ToolFidelity:
    """How one template shows one tool.

    Attributes:
        tool: The tool's name.
        status: The verdict (see the module docstring).
        lost: Under `transformed`, what does not reach the model: a keyword's place (`curves[].points.maxItems`:
            removing it leaves the prompt unchanged; outermost only, what lies under it goes with it), or the
            place with `(value)` (the keyword shows, but a changed value does not).
        tested: How many keywords were tried.
        lowering: The family whose lowering the tool is shown with, if any.
        error: Under `fails`, what the template raised.
    """

    tool: str
    status: Status
    lost: tuple[str, ...] = ()
    tested: int = 0
    lowering: str | None = None
    error: str | None = None

    @property
    def shown(self) -> bool:
        """Whether the model sees every constraint of the tool (exact or lossless)."""
        return self.status in SHOWN


@dataclass(frozen=True)
class TemplateFidelity:
    """How one template shows every tool of an environment."""

    template: str
    tools: list[ToolFidelity] = field(default_factory=list)
    refusals: tuple[str, ...] = ()
    """What the factory refuses under this template that no lowering fixes (a parameter a Gemma 4 revision leaves
    out, calls a trainer cannot read), each naming its fix."""

    def verdict(self) -> str:
        """The whole template in a word or two: `exact`, `lossless`, `transformed`, `no tool block`, `fails`, or
        `mixed` when its tools differ in a way none of those says."""
        statuses = {tool.status for tool in self.tools}
        if not statuses:
            return "exact"
        if len(statuses) == 1:
            return next(iter(statuses))
        if statuses <= SHOWN:
            return "lossless"
        if "transformed" in statuses and statuses <= {*SHOWN, "transformed"}:
            return "transformed"
        return "mixed"

    def shows_every_tool(self) -> bool:
        """Whether every tool reaches the model with all its constraints."""
        return all(tool.shown for tool in self.tools)

    def renders_tools(self) -> bool:
        """Whether the template writes a tool block at all (a template that raises is not judged)."""
        return any(tool.status != "no tool block" for tool in self.tools)


def entry(tool: dict[str, Any]) -> dict[str, Any]:
    """The tool entry transformers renders for a tool (`name`, `description`, `inputSchema`): the function
    wrapper around its input schema, which is what a SchemaTool holds."""
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool["description"],
            "parameters": tool["inputSchema"],
        },
    }


_cache: dict[tuple[str, str | None, str], ToolFidelity] = {}
_schema_cache: dict[tuple[str, str | None, str], tuple[list[str], int]] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every verdict (they are kept for the life of the process: a template renders the same way twice)."""
    with _cache_lock:
        _cache.clear()
        _schema_cache.clear()


def tool_fidelity(template: ChatTemplate, published: dict[str, Any], family: Family | None) -> ToolFidelity:
    """How `template` shows a published tool, lowered for `family` when the template does not show it exactly."""
    key = (template.key, family.name if family else None, fingerprint(published))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    found = _judge(template, published, family)
    with _cache_lock:
        _cache[key] = found
    return found


def template_fidelity(
    template: ChatTemplate, published: list[dict[str, Any]], family: Family | None
) -> TemplateFidelity:
    """How `template` shows each published tool."""
    return TemplateFidelity(template.label, [tool_fidelity(template, tool, family) for tool in published])


_FILLER = {"name": "zq", "description": "", "inputSchema": {"type": "object", "properties": {}}}


def tool_part(template: ChatTemplate, tool: dict[str, Any]) -> str:
    """The text that is this tool's own in a prompt where it is rendered alone: what differs between that prompt
    and one with a filler tool instead (the framing every tool gets is cut off at both ends)."""
    with_tool = template.render(PROBE, [entry(tool)])
    other = template.render(PROBE, [entry(_FILLER)])
    start = 0
    while start < min(len(with_tool), len(other)) and with_tool[start] == other[start]:
        start += 1
    end = 0
    while end < min(len(with_tool), len(other)) - start and with_tool[-1 - end] == other[-1 - end]:
        end += 1
    return with_tool[start : len(with_tool) - end]


def _judge(template: ChatTemplate, published: dict[str, Any], family: Family | None) -> ToolFidelity:
    name = published["name"]

    def render(tool: dict[str, Any]) -> str:
        return template.render(PROBE, [entry(tool)])

    try:
        bare = template.render(PROBE, None)
    except Exception:  # a template that needs tools to render at all
        bare = ""
    try:
        stock: str | None = render(published)
    except Exception as error:  # whatever a template raises is the finding, unless the lowering avoids it
        if family is None:
            return ToolFidelity(name, "fails", error=f"{type(error).__name__}: {error}")
        stock = None  # gpt-oss's template raises on an enum with a non-string default; its lowering says it in words
    if stock is not None and _no_trace(stock, bare, published):
        return ToolFidelity(name, "no tool block")
    if stock is not None and shows_exactly(stock, published):
        return ToolFidelity(name, "exact")

    def render_lowered(tool: dict[str, Any]) -> str:
        return render(lower(tool, family))

    try:
        baseline = render_lowered(published)
    except Exception as error:
        return ToolFidelity(name, "fails", error=f"{type(error).__name__}: {error}")
    if stock is None and _no_trace(baseline, bare, published):
        return ToolFidelity(name, "no tool block")
    lost: list[str] = []
    if published["description"]:
        problem = _tool_description_problem(published, render_lowered, baseline)
        lost += [problem] if problem else []
    # Tools with one input schema (check_offers and submit_dam_offers on the desk) have its keywords tried once.
    key = (template.key, family.name if family else None, fingerprint(published["inputSchema"]))
    with _cache_lock:
        found = _schema_cache.get(key)
    if found is None:
        found = _schema_lost(published, render_lowered, baseline, outermost=True)
        with _cache_lock:
            _schema_cache[key] = found
    lost += found[0]
    tested = found[1] + bool(published["description"])
    family_name = family.name if family else None
    return ToolFidelity(name, "transformed" if lost else "lossless", tuple(lost), tested, family_name)


def _no_trace(prompt: str, bare: str, published: dict[str, Any]) -> bool:
    if prompt == bare:
        return True
    names = [published["name"], *published["inputSchema"].get("properties", {})]
    return not any(str(name) in prompt for name in names)


def lost_keywords(
    published: dict[str, Any],
    render: Callable[[dict[str, Any]], str],
    baseline: str,
    *,
    outermost: bool = True,
) -> tuple[list[str], int]:
    """What of a published tool does not reach the model, and how many keywords were tried.

    Args:
        published: The published tool (`name`, `description`, `inputSchema`).
        render: The prompt for a variant of the tool.
        baseline: `render(published)`.
        outermost: Skip what lies under a keyword found lost (it goes with it); False tries every keyword.
    """
    lost: list[str] = []
    tested = 0
    if published["description"]:
        tested += 1
        problem = _tool_description_problem(published, render, baseline)
        if problem:
            lost.append(problem)
    schema_lost, schema_tested = _schema_lost(published, render, baseline, outermost=outermost)
    return lost + schema_lost, tested + schema_tested


def _schema_lost(
    published: dict[str, Any], render: Callable[[dict[str, Any]], str], baseline: str, *, outermost: bool
) -> tuple[list[str], int]:
    lost: list[str] = []
    gone: list[Occurrence] = []
    tested = 0
    for occurrence in occurrences(published["inputSchema"]):
        if outermost and any(occurrence.where[: len(g.where) + 1] == (*g.where, g.keyword) for g in gone):
            continue  # what lies under a lost keyword is lost with it
        tested += 1
        problem = _keyword_problem(published, occurrence, render, baseline)
        if problem == "removed":
            gone.append(occurrence)
            lost.append(occurrence.label())
        elif problem == "value":
            lost.append(f"{occurrence.label()} (value)")
    return lost, tested


def _keyword_problem(
    published: dict[str, Any], occurrence: Occurrence, render: Callable[[dict[str, Any]], str], baseline: str
) -> str | None:
    schema = published["inputSchema"]
    if not is_default(occurrence, schema) and _same(
        render, {**published, "inputSchema": without(schema, occurrence)}, baseline
    ):
        return "removed"
    change = changed(schema, occurrence)
    if change is None:
        return None
    variant = _rendered(render, {**published, "inputSchema": change.schema})
    if variant is None:  # the template read the new value and raised on it: it reads the keyword
        return None
    if variant == baseline:
        return "value"
    if change.evidence is None or _shows_more(variant, baseline, change.evidence):
        return None
    # The new value's text may show and still not outnumber the old prompt's: a changed `type` drops what it ruled
    # out, which can take the same word with it (an object whose boolean property goes, when its type becomes
    # boolean). Against the same change without the keyword, everything but the keyword is alike.
    unset = _rendered(render, {**published, "inputSchema": without(change.schema, occurrence)})
    if unset is not None and _shows_more(variant, unset, change.evidence):
        return None
    return "value"


def _tool_description_problem(
    published: dict[str, Any], render: Callable[[dict[str, Any]], str], baseline: str
) -> str | None:
    if _same(render, {**published, "description": ""}, baseline):
        return TOOL_DESCRIPTION
    variant = _rendered(render, {**published, "description": published["description"] + MARK})
    if variant is not None and not _shows_more(variant, baseline, MARK):
        return f"{TOOL_DESCRIPTION} (value)"
    return None


def _same(render: Callable[[dict[str, Any]], str], tool: dict[str, Any], baseline: str) -> bool:
    return _rendered(render, tool) == baseline


def _rendered(render: Callable[[dict[str, Any]], str], tool: dict[str, Any]) -> str | None:
    try:
        return render(tool)
    except Exception:
        return None


def _shows_more(variant: str, baseline: str, evidence: str) -> bool:
    needle = evidence.lower()
    return variant.lower().count(needle) > baseline.lower().count(needle)
