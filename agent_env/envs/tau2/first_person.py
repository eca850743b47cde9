"""A scenario's words for the user, rewritten as the customer's own: the scripted user's opening, in the first person.

tau2-bench writes what the simulated user knows as instructions to it ("You want to cancel reservation EHGLP3. You
are Emma Kim. Your user id is emma_kim_9957."). A scripted user says it to the agent as its opening, so it is said in
the customer's voice instead ("I want to cancel reservation EHGLP3. I am Emma Kim. My user id is emma_kim_9957."),
by rule and without a model: each sentence's second person becomes the first ("you are" -> "I am", "you were" ->
"I was", "you're" -> "I'm", "your" -> "my", "yours" -> "mine", "yourself" -> "myself"; "you" -> "I" as a subject
and "me" after a preposition or a verb such as "tell" or "help"). Quoted text ('Important Meeting', "pending") is
never changed, and neither is a name or an id.

A sentence that tells the simulated user how to act ("Make sure you mention ...", "If the agent asks you to double
check, then say that you made a mistake ...", "Ask the agent how much money you can save") is kept as it is by
`first_person`: said by the customer in the first person it would be wrong, and no rule rewrites it into something
the customer would say without losing what it reveals. `customer_opening`, what the scripted user opens with, leaves
such sentences out: no customer says them, and they would tell the agent the scenario's plan. `addressed_to_the_user`
tells them apart.
"""

from __future__ import annotations

import itertools
import re

SENTENCE_BREAK = re.compile(r"(?<=[.!?])(?<!i\.e\.)(?<!e\.g\.)\s+|\n\s*")
"""Between two sentences: after a full stop (not of "i.e." or "e.g."), or at a line break."""
QUOTED = re.compile(r"""("[^"\n]*"|(?<![\w'])'[^'\n]*'(?![\w']))""")
"""Text in double quotes, or in single quotes that are not an apostrophe ("you're", "friend's")."""
_ALONE = r"(?<![\w@.'-])(?:{})(?![\w@'-]|\.\w)"
"""A word standing alone: not part of an id, an address or a longer word (`your_user_id`, `you@example.com`)."""
SECOND_PERSON = re.compile(_ALONE.format(r"you(?:'re|'ve|'d|'ll)?|yours(?:elf)?|your"), re.IGNORECASE)
_REWRITTEN = re.compile(_ALONE.format(r"you(?:'re|'ve|'d|'ll)?|yours(?:elf)?|your|are|were"), re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z']+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_OBJECT_AFTER = _words(
    "to for with about from at by of on into toward towards tell tells told help helps allow allows let "
    "lets cause caused ask asks asked upgrade upgrades save saves give gives gave provide provides show shows send sends "
    "charge charges cost costs call calls contact contacts remind reminds transfer transfers offer offers assure assures"
)
"""Words after which "you" is an object ("me"): prepositions, and the verbs of the scenarios that take a person."""
_FUSED_YOUR = frozenset({"name", "reservation", "skateboard", "mobile"})
"""Nouns tau2-bench's scenarios write after "You" where they mean "Your" ("You name is Sofia Li", telecom's "You
mobile data is not working properly")."""
_FUSED_YOU = frozenset({"forgot"})
"""Verbs they write after "your" where they mean "you" ("your forgot what")."""
_CONTRACTED = {"you're": "I'm", "you've": "I've", "you'd": "I'd", "you'll": "I'll"}
_BE = {"are": "am", "were": "was", "aren't": "am not", "weren't": "wasn't"}

_OPENERS = _words(
    "if when after once as before while halfway since because for in unless until whenever due from during at"
)
"""Words that open a clause before the main one, up to its comma ("If the agent asks, ...")."""
_LEADING = _words(
    "first then finally lastly also otherwise so and but or now next additionally however plus well just "
    "still never always please only"
)
"""Words that may come before a main clause's verb ("Then, ask ...", "also cancel ...")."""
_ACTS_OF_THE_USER = _words(
    "ask tell mention say insist be make provide respond use see continue try request dismiss wait "
    "repeat explain remember pretend act refuse give let show answer reply claim inquire reveal share"
)
"""Imperatives that tell the simulated user how to talk ("mention", "insist", "make sure"): kept as written. Others
("cancel the charger you just bought") ask the agent for something and read right in the customer's voice."""
_CLAUSE_START = re.compile(r"^|[;:(\u2014)]\s*|,\s*(?!(?:and|then|but|or|plus)\b)")
"""Where a clause may start: a sentence's start, after a semicolon, colon, dash or parenthesis, and after a comma
not followed by a conjunction (", so insist ..."; not ", and use your gift card", which shares its subject)."""


def first_person(text: str) -> str:
    """`text` in the customer's voice: each sentence's second person made the first, quotes, names and ids
    unchanged, and sentences addressed to the simulated user (`addressed_to_the_user`) kept as written; the spacing
    and line breaks between sentences are kept."""
    parts = SENTENCE_BREAK.split(text)
    breaks = SENTENCE_BREAK.findall(text)
    rewritten = [sentence if kept(sentence) else _rewrite_sentence(sentence) for sentence in parts]
    return "".join(
        part + (breaks[index] if index < len(breaks) else "") for index, part in enumerate(rewritten)
    )


def customer_opening(text: str) -> str:
    """What a customer would say of `text`: `first_person`, without the sentences that tell the simulated user how
    to act (`kept`), which no customer says to an agent and which would hand the agent the scenario's plan; all of
    `text` in the first person if every sentence is such a one."""
    parts = SENTENCE_BREAK.split(text)
    breaks = [*SENTENCE_BREAK.findall(text), ""]
    said: list[tuple[str, str]] = []
    for part, gap in zip(parts, breaks, strict=True):
        if part and kept(part):  # left out; a paragraph break after it still ends the paragraph before it
            if said and "\n" in gap and "\n" not in said[-1][1]:
                said[-1] = (said[-1][0], gap)
            continue
        said.append((part, gap))
    if not any(part for part, _ in said):
        return first_person(text)
    return "".join(_rewrite_sentence(part) + gap for part, gap in said).strip()


def sentences(text: str) -> list[str]:
    """The sentences of `text`, as `first_person` takes them one at a time."""
    return [sentence for sentence in SENTENCE_BREAK.split(text) if sentence]


def kept(sentence: str) -> bool:
    """Whether `first_person` keeps `sentence` as written: it speaks to the user in the second person, and some
    clause of it tells the user how to act."""
    return bool(SECOND_PERSON.search(unquoted(sentence))) and addressed_to_the_user(sentence)


def unquoted(text: str) -> str:
    """`text` without what it quotes."""
    return QUOTED.sub("''", text)


def addressed_to_the_user(sentence: str) -> bool:
    """Whether a clause of `sentence` is an imperative telling the simulated user how to act: its verb (after any
    opening clause, connective or adverb) is one of `_ACTS_OF_THE_USER`, or is "change your mind"."""
    text = unquoted(sentence).lstrip(" .")
    return any(_tells_the_user(text[start.end() :]) for start in _CLAUSE_START.finditer(text))


def _tells_the_user(clause: str) -> bool:
    rest = clause
    while (word := _WORD.match(rest)) is not None:
        lower = word.group(0).lower()
        if lower in _OPENERS:  # an opening clause: the main one starts after its comma
            comma = rest.find(",")
            if comma < 0:
                return False
            rest = rest[comma + 1 :].lstrip()
        elif lower in _LEADING or (lower.endswith("ly") and len(lower) > 3):
            rest = rest[word.end() :].lstrip(" ,")
        else:
            following = itertools.islice(_WORD.finditer(rest, word.end()), 2)
            return _act_of_the_user(lower, [later.group(0).lower() for later in following])
    return False


def _act_of_the_user(verb: str, following: list[str]) -> bool:
    if verb in ("do", "don't"):  # "do not say yes", "don't process anything": the verb after it decides
        verb = following[1] if following[:1] == ["not"] and len(following) > 1 else (following or [""])[0]
        return verb in _ACTS_OF_THE_USER
    if following == ["your", "mind"]:
        return True
    if verb == "ask" and following[:1] == ["for"]:  # asking for something: the customer's own request
        return False
    return verb in _ACTS_OF_THE_USER


def _rewrite_sentence(sentence: str) -> str:
    return "".join(part if QUOTED.fullmatch(part) else _rewrite(part) for part in QUOTED.split(sentence))


def _rewrite(text: str) -> str:
    """Unquoted text with its second person made the first."""
    out: list[str] = []
    done = 0
    subject = False  # a "you" was made "I": a later "and are" ("... and are in a bad mood") is "and am"
    for found in _REWRITTEN.finditer(text):
        if found.start() < done:
            continue
        word, end = found.group(0), found.end()
        lower = word.lower()
        following, following_end = _next_word(text, end)
        if lower in ("are", "were"):
            if not (subject and _previous_word(text, found.start()) in ("and", "but", "or")):
                continue
            new = _BE[lower]
        elif lower in _CONTRACTED:
            new, subject = _CONTRACTED[lower], True
        elif lower in ("yourself", "yours"):
            new = _cased(word, "myself" if lower == "yourself" else "mine")
        elif lower == "your":
            fused = following in _FUSED_YOU
            new, subject = ("I", True) if fused else (_cased(word, "my"), subject)
        elif following in _FUSED_YOUR:
            new = _cased(word, "my")
        elif _previous_word(text, found.start()) in _OBJECT_AFTER:
            new = _cased(word, "me")
        else:
            new, subject = "I", True
            if following in _BE:  # "you are" -> "I am", keeping what stands between them
                new, end = "I" + text[end:following_end][: -len(following)] + _BE[following], following_end
        out += [text[done : found.start()], new]
        done = end
    return "".join(out) + text[done:]


def _previous_word(text: str, start: int) -> str | None:
    found = re.search(r"([A-Za-z']+)[ \t]*$", text[:start])
    return found.group(1).lower() if found else None


def _next_word(text: str, end: int) -> tuple[str | None, int]:
    found = re.match(r"[ \t]*([A-Za-z']+)", text[end:])
    return (found.group(1).lower(), end + found.end()) if found else (None, end)


def _cased(original: str, word: str) -> str:
    return word[0].upper() + word[1:] if original[0].isupper() else word
