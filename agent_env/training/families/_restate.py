"""Say in words what a chat template would drop from a schema: fixed, short phrases a model can read.

Two forms share one vocabulary. `sentences(schema, keywords)` restates some keywords of one schema as sentences for
its `description` ("From 1 to 24.", "2-10 items.", "Default: \"all\"."). `describe(schema)` says a whole schema as a
noun phrase ("an array of integers from 1 to 24"), for the branches of a union or a nested type a template cannot
show. Every keyword is said: one this module has no words for is quoted as JSON (`also {"if": ...}`), so restating
never loses anything, whatever the schema holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Schema = Mapping[str, Any]

_ANNOTATION_ONLY = frozenset({"title", "examples", "$comment", "$schema", "$id"})
_COUNTS = {  # keyword pairs that bound a count, and what they count
    ("minItems", "maxItems"): ("item", "items"),
    ("minLength", "maxLength"): ("character", "characters"),
    ("minProperties", "maxProperties"): ("property", "properties"),
    ("minContains", "maxContains"): ("matching item", "matching items"),
}
_RANGE_STARTS = ("from ", "at least ", "at most ", "greater than ", "less than ")
_TYPE_NOUNS = {
    "string": ("a string", "strings"),
    "integer": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "boolean": ("a boolean", "booleans"),
    "null": ("null", "nulls"),
    "object": ("an object", "objects"),
    "array": ("an array", "arrays"),
}


def json_text(value: Any) -> str:
    """A value as compact JSON, the way every phrase quotes one (`"all"`, `[7, 8]`, `null`)."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def number_text(value: Any) -> str:
    """A number as JSON writes it (`24`, not `24.0`, for a whole float)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return json_text(value)


def sentences(schema: Schema, keywords: Iterable[str]) -> list[str]:
    """The given keywords of `schema` as sentences, in a fixed order: `["From 1 to 24.", "Default: 7."]`."""
    wanted = [keyword for keyword in keywords if keyword in schema]
    said: set[str] = set()
    found: list[str] = []
    for phrase, used in _qualifiers(schema, wanted, sentence=True):
        if not used & said:
            found.append(_sentence(phrase))
            said |= used
    return found


def describe(schema: Any, *, plural: bool = False) -> str:
    """A whole schema as a noun phrase: `an array of 2-10 items, each an array [a number, a number]`."""
    if schema is True or schema == {}:
        return "any values" if plural else "any value"
    if schema is False:
        return "nothing"
    if not isinstance(schema, Mapping):
        return f"also {json_text(schema)}"
    core, used = _core(schema, plural)
    rest = [keyword for keyword in schema if keyword not in used and keyword not in ("description", "type")]
    qualifiers = [phrase for phrase, _ in _qualifiers(schema, rest, sentence=False)]
    text = core
    for index, phrase in enumerate(qualifiers):  # "integers from 1 to 24", then ", default 3"
        text += " " + phrase if index == 0 and phrase.startswith(_RANGE_STARTS) else ", " + phrase
    if schema.get("description"):
        text += f" ({schema['description']})"
    return text


def whole(schema: Any) -> str:
    """A whole schema as one sentence: `One of: a string or null.`, `An integer from 1 to 7.`"""
    said = describe(schema)
    union = isinstance(schema, Mapping) and "type" not in schema and ("anyOf" in schema or "oneOf" in schema)
    return _sentence(
        f"one of: {said}" if union and not said.startswith(("one of", "exactly one of")) else said
    )


def _sentence(phrase: str) -> str:
    phrase = phrase[0].upper() + phrase[1:]
    return phrase if phrase.endswith((".", "?", "!")) else phrase + "."


def _core(schema: Schema, plural: bool) -> tuple[str, set[str]]:
    """The noun a schema is (`a string`, `one of "a", "b"`, `a string or null`) and the keywords it says."""
    declared = schema.get("type")
    listed = (
        schema["enum"]
        if isinstance(schema.get("enum"), list)
        else [schema["const"]]
        if "const" in schema
        else None
    )
    if listed is not None:
        text = _one_of_values(listed) if "enum" in schema else f"exactly {json_text(schema['const'])}"
        if declared is not None and not _all_of_type(
            listed, declared
        ):  # a type the values do not already say
            text += f" (of type {json_text(declared)})"
        return text, {"enum" if "enum" in schema else "const", "type"}
    if isinstance(declared, list) and declared:
        nouns = [_type_noun(schema, name, plural) for name in declared]
        return _or([noun for noun, _ in nouns]), {"type"}.union(*(used for _, used in nouns))
    if isinstance(declared, str):
        noun, used = _type_noun(schema, declared, plural)
        return noun, used | {"type"}
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list) and schema[keyword]:
            text = _or([describe(branch, plural=plural) for branch in schema[keyword]])
            if keyword == "oneOf" and len(schema[keyword]) > 1:
                text = f"exactly one of: {text}"
            return text, {keyword}
    return ("any values" if plural else "any value"), set()


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


def _all_of_type(values: list[Any], declared: Any) -> bool:
    """Whether every value is of the declared JSON type, so naming the values says the type too."""
    if not isinstance(declared, str):
        return False
    kinds = _PYTHON_TYPES.get(declared, ())
    numeric = declared in ("integer", "number")
    return all(isinstance(value, kinds) and not (numeric and isinstance(value, bool)) for value in values)


def _type_noun(schema: Schema, name: str, plural: bool) -> tuple[str, set[str]]:
    singular_noun, plural_noun = _TYPE_NOUNS.get(
        name, (f'a value of type "{name}"', f'values of type "{name}"')
    )
    noun = plural_noun if plural else singular_noun
    if name == "array":
        return _array_noun(schema, noun)
    if name == "object" and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return f"{noun} {_property_list(schema)}", {"properties", "required"}
    return noun, set()


def _array_noun(schema: Schema, noun: str) -> tuple[str, set[str]]:
    """`an array of 2-10 items, each ...`, `an array of integers from 1 to 24`, `an array [a number, a number]`:
    the count of items belongs to the array, so it is said with it and never read as the items' own."""
    used = {key for key in ("minItems", "maxItems") if key in schema}
    count, singular = _count_words(schema.get("minItems"), schema.get("maxItems"))
    prefix = schema.get("prefixItems")
    items = schema.get("items")
    if isinstance(prefix, list) and prefix:
        listed = "[" + ", ".join(describe(item) for item in prefix) + "]"
        noun += f" of {count} {'item' if singular else 'items'}: {listed}" if count else f" {listed}"
        used.add("prefixItems")
        if "items" in schema:
            noun += ", then " + ("no more items" if items is False else describe(items, plural=True))
            used.add("items")
    elif isinstance(items, Mapping) and items:
        used.add("items")
        if _is_plain_plural(items):
            inner = describe(items, plural=not singular)
            if singular:
                inner = inner.split(" ", 1)[1]  # "an integer ..." -> "integer ..."
            noun += f" of {count} {inner}" if count else f" of {inner}"
        else:
            noun += (
                f" of {count} {'item' if singular else 'items'}, each {describe(items)}"
                if count
                else (f" of items, each {describe(items)}")
            )
    elif items is False:
        noun += " with no items"
        used.add("items")
    elif count:
        noun += f" of {count} {'item' if singular else 'items'}"
    return noun, used


def _is_plain_plural(items: Schema) -> bool:
    """Whether `items` reads well in the plural (`integers from 1 to 24`), not as `each ...`."""
    declared = items.get("type")
    return (
        isinstance(declared, str)
        and declared in ("string", "integer", "number", "boolean")
        and not (items.keys() & {"enum", "const", "description"})
    )


def _count_words(low: Any, high: Any) -> tuple[str, bool]:
    """How many, in words (`2-10`, `exactly 2`, `at least 1`), and whether the noun after it is singular."""
    if low is None and high is None:
        return "", False
    if low is not None and high is not None and low == high:
        return f"exactly {number_text(low)}", low == 1
    if low is not None and high is not None:
        return f"{number_text(low)}-{number_text(high)}", False
    if low is not None:
        return f"at least {number_text(low)}", low == 1
    return f"at most {number_text(high)}", high == 1


def _property_list(schema: Schema) -> str:
    required = set(schema.get("required") or [])
    entries = []
    for name, subschema in schema["properties"].items():
        notes = ["required"] if name in required else []
        if isinstance(subschema, Mapping) and subschema.get("description"):
            notes.append(str(subschema["description"]))
            subschema = {key: value for key, value in subschema.items() if key != "description"}
        label = f"{name} ({'; '.join(notes)})" if notes else name
        entries.append(f"{label}: {describe(subschema)}")
    missing = sorted(required - set(schema["properties"]), key=str)
    if missing:
        entries.append("also required: " + ", ".join(missing))
    return "{" + "; ".join(entries) + "}"


def _one_of_values(values: list[Any]) -> str:
    if len(values) == 1:
        return f"exactly {json_text(values[0])}"
    return "one of " + ", ".join(json_text(value) for value in values)


def _or(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]


Qualifier = tuple[str, set[str]]


def _qualifiers(schema: Schema, keywords: list[str], *, sentence: bool) -> list[Qualifier]:
    """Phrases for `keywords` of `schema`, each with the keywords it says; what has no words is quoted as JSON."""
    wanted = set(keywords)
    found: list[Qualifier] = []
    for rule in _RULES:
        found.extend(rule(schema, wanted, sentence))
    said = set().union(*(used for _, used in found)) if found else set()
    for keyword in keywords:
        if keyword not in said and keyword not in _ANNOTATION_ONLY:
            found.append((f"also {json_text({keyword: schema[keyword]})}", {keyword}))
    return found


_RANGE_WORDS = {
    "minimum": "at least",
    "exclusiveMinimum": "greater than",
    "maximum": "at most",
    "exclusiveMaximum": "less than",
}


def _range(schema: Schema, wanted: set[str], sentence: bool) -> list[Qualifier]:
    """`from 1 to 24` when both ends are inclusive, else `at least 0 and less than 10`, one phrase per side."""
    keys = [key for key in _RANGE_WORDS if key in wanted]
    if not keys:
        return []
    if "minimum" in keys and "maximum" in keys:
        found = [
            (
                f"from {number_text(schema['minimum'])} to {number_text(schema['maximum'])}",
                {"minimum", "maximum"},
            )
        ]
        keys = [key for key in keys if key not in ("minimum", "maximum")]
    else:
        found = []
    if keys:
        found.append(
            (" and ".join(f"{_RANGE_WORDS[key]} {number_text(schema[key])}" for key in keys), set(keys))
        )
    return found


def _counts(schema: Schema, wanted: set[str], sentence: bool) -> list[Qualifier]:
    found: list[Qualifier] = []
    for (low_key, high_key), (one, many) in _COUNTS.items():
        low = schema.get(low_key) if low_key in wanted else None
        high = schema.get(high_key) if high_key in wanted else None
        used = {key for key in (low_key, high_key) if key in wanted}
        if not used:
            continue
        if low is not None and high is not None and low == high:
            text = f"exactly {number_text(low)} {one if low == 1 else many}"
        elif low is not None and high is not None:
            text = f"{number_text(low)}-{number_text(high)} {many}"
        elif low is not None:
            text = f"at least {number_text(low)} {one if low == 1 else many}"
        else:
            text = f"at most {number_text(high)} {one if high == 1 else many}"
        found.append((text, used))
    return found


def _values(schema: Schema, wanted: set[str], sentence: bool) -> list[Qualifier]:
    found: list[Qualifier] = []
    if "enum" in wanted and isinstance(schema["enum"], list):
        text = _one_of_values(schema["enum"])
        found.append(
            (f"one of: {text[len('one of ') :]}" if sentence and len(schema["enum"]) > 1 else text, {"enum"})
        )
    if "const" in wanted:
        found.append((f"exactly {json_text(schema['const'])}", {"const"}))
    if "default" in wanted:
        found.append((f"{'Default:' if sentence else 'default'} {json_text(schema['default'])}", {"default"}))
    return found


def _strings(schema: Schema, wanted: set[str], sentence: bool) -> list[Qualifier]:
    found: list[Qualifier] = []
    if "pattern" in wanted:
        found.append((f"matching the regular expression {json_text(schema['pattern'])}", {"pattern"}))
    if "format" in wanted:
        found.append((f"in the {json_text(schema['format'])} format", {"format"}))
    if "multipleOf" in wanted:
        found.append((f"a multiple of {number_text(schema['multipleOf'])}", {"multipleOf"}))
    if "uniqueItems" in wanted:
        found.append(
            ("no duplicate items" if schema["uniqueItems"] else "duplicate items allowed", {"uniqueItems"})
        )
    for flag, word in (("deprecated", "deprecated"), ("readOnly", "read-only"), ("writeOnly", "write-only")):
        if flag in wanted and isinstance(schema[flag], bool):
            found.append((word if schema[flag] else f"not {word}", {flag}))
    return found


def _structure(schema: Schema, wanted: set[str], sentence: bool) -> list[Qualifier]:
    """Keywords holding subschemas, for when the template shows none of them."""
    found: list[Qualifier] = []
    if "additionalProperties" in wanted:
        extra = schema["additionalProperties"]
        if extra is False:
            found.append(("no other properties", {"additionalProperties"}))
        elif extra is True:
            found.append(("other properties allowed", {"additionalProperties"}))
        else:
            found.append((f"other properties: {describe(extra, plural=True)}", {"additionalProperties"}))
    for keyword in ("anyOf", "oneOf"):
        if keyword in wanted and isinstance(schema[keyword], list):
            branches = _or([describe(branch) for branch in schema[keyword]])
            if keyword == "oneOf":
                found.append((f"exactly one of: {branches}", {keyword}))
            else:  # `one of "a", "b" or null` already says it
                found.append(
                    (branches if branches.startswith("one of") else f"one of: {branches}", {keyword})
                )
    if "allOf" in wanted and isinstance(schema["allOf"], list):
        found.append(("all of: " + " and ".join(describe(branch) for branch in schema["allOf"]), {"allOf"}))
    if "not" in wanted:
        found.append((f"not {describe(schema['not'])}", {"not"}))
    if "nullable" in wanted and schema["nullable"] is True:
        found.append(("may be null", {"nullable"}))
    if "items" in wanted and "prefixItems" not in schema:
        items = schema["items"]
        found.append((f"each item {describe(items)}" if items is not False else "no items", {"items"}))
    if "prefixItems" in wanted and isinstance(schema["prefixItems"], list):
        listed = ", ".join(describe(item) for item in schema["prefixItems"])
        found.append((f"items in order: {listed}", {"prefixItems"}))
        if "items" in wanted:
            after = schema["items"]
            found.append(
                (
                    "no more items" if after is False else f"then {describe(after, plural=True)}",
                    {"items"},
                )
            )
    if "properties" in wanted and isinstance(schema["properties"], Mapping) and schema["properties"]:
        found.append((f"with properties {_property_list(schema)}", {"properties", "required"}))
    elif "required" in wanted and isinstance(schema["required"], list) and schema["required"]:
        found.append(("required: " + ", ".join(str(name) for name in schema["required"]), {"required"}))
    if "contains" in wanted:
        found.append((f"containing {describe(schema['contains'])}", {"contains"}))
    return found


_RULES: tuple[Callable[[Schema, set[str], bool], list[Qualifier]], ...] = (
    _structure,
    _range,
    _counts,
    _strings,
    _values,
)
