"""Remember a lowering's result per subschema object, so the lossless verdict's hundreds of variants are cheap.

The verdict lowers a tool once per keyword variant, and a variant shares every subschema it does not change with the
tool it came from (`agent_env.training.keywords` copies only the path to the change). Published schemas and their
variants are never changed in place, so a subschema's lowering can be looked up by the object itself.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")

MAX_ENTRIES = 4096


def by_identity(function: Callable[[Any], R]) -> Callable[[Any], R]:
    """`function` of one schema, its result kept (for the most recent `MAX_ENTRIES` objects) per schema object.

    The cache holds each object it keys on, so no other object can take its `id` while it is there.
    """
    cache: OrderedDict[int, tuple[Any, R]] = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(function)
    def remembered(schema: Any) -> R:
        key = id(schema)
        with lock:
            hit = cache.get(key)
            if hit is not None and hit[0] is schema:
                cache.move_to_end(key)
                return hit[1]
        result = function(schema)
        with lock:
            cache[key] = (schema, result)
            if len(cache) > MAX_ENTRIES:
                cache.popitem(last=False)
        return result

    return remembered
