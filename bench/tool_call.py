"""What agent_env adds to a tool call, and what building TRL environments costs.

Prints figures and ratios measured in this run: a validated call of a desk-shaped tool (5 curves of 3 points and
2 AS offers) through a SchemaTool against calling the bound method directly, and again under the default call
timeout (the call on a worker thread); an instance from a built factory; the first build with its render check
(transformers already imported, as it is once a trainer exists).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from agent_env import Environment, LocalProvider, tool
from agent_env.training import EnvironmentFactory
from testbed.toy import ASOffer, Curve, ToyDesk

ARGUMENTS: dict[str, Any] = {
    "curves": [{"hours": f"HE{h:02d}", "points": [[-50, 10], [0, 30], [50, 60]]} for h in (1, 6, 12, 18, 22)],
    "as_offers": [
        {"product": "regup", "hours": "HE07-HE10", "mw": 10, "price": 4},
        {"product": "ecrs", "hours": [17, 18], "mw": 5, "price": 6},
    ],
}


def median_us(function: Callable[[], Any], repeat: int = 7, number: int = 2000) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            function()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs) * 1e6


class Bench(ToyDesk):
    """ToyDesk whose book does not grow without bound while it is being measured."""

    def submit_offers(self, curves: list[Curve], as_offers: list[ASOffer] | None = None) -> str:
        return f"accepted {len(curves)} curves and {len(as_offers or [])} AS offers"


def twelve_tools() -> type[Environment]:
    def make(index: int) -> Any:
        def method(self: Any, curves: list[Curve], as_offers: list[ASOffer] | None = None) -> str:
            """Submit offers.

            Args:
                curves: Curves.
                as_offers: AS offers.
            """
            return "ok"

        return tool(name=f"tool_{index:02d}")(method)

    namespace = {f"tool_{i:02d}": make(i) for i in range(11)}
    namespace.update(reset=lambda self, **row: "go", reward=lambda self: 0.0)
    return type("TwelveTools", (Environment,), namespace)


def main() -> None:
    factory = EnvironmentFactory(LocalProvider(twelve_tools()))
    start = time.perf_counter()
    import transformers  # noqa: F401  (imported once a trainer exists; its import is not the factory's cost)

    import_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    factory()
    first_build = (time.perf_counter() - start) * 1e3
    instance = median_us(factory, repeat=5, number=500)
    print("TRL factory, 12 tools")
    print(f"  (import transformers, once:     {import_ms:8.1f} ms)")
    print(f"  first build with render check:  {first_build:8.1f} ms (target <= 300)")
    print(f"  instance from a built factory:  {instance:8.1f} us (target <= 100)")

    unbounded = EnvironmentFactory(LocalProvider(Bench, call_timeout=None, episode_budget=None))()
    unbounded.reset()
    bounded = EnvironmentFactory(LocalProvider(Bench))()  # the default: a call timeout and an episode budget
    bounded.reset()
    direct_env = Bench()
    curves = [Curve.model_validate(c) for c in ARGUMENTS["curves"]]
    offers = [ASOffer.model_validate(o) for o in ARGUMENTS["as_offers"]]

    direct = median_us(lambda: direct_env.submit_offers(curves, offers))
    through = median_us(lambda: unbounded.submit_offers(**ARGUMENTS))
    with_deadline = median_us(lambda: bounded.submit_offers(**ARGUMENTS))
    validate_only = median_us(lambda: Bench.tools["submit_offers"].validator.validate("s", ARGUMENTS))
    convert_only = median_us(lambda: Bench.tools["submit_offers"].convert("s", ARGUMENTS))  # type: ignore[misc]
    print("validated call, desk-shaped arguments (5 curves x 3 points, 2 AS offers)")
    print(f"  bound method, typed arguments:  {direct:8.2f} us")
    print(
        f"  SchemaTool call (all included): {through:8.2f} us   added {through - direct:6.2f} us (target <= 20; "
        "call_timeout=None: the caller's thread)"
    )
    print(f"    of which schema validation:   {validate_only:8.2f} us (jsonschema-rs)")
    print(f"    of which pydantic conversion: {convert_only:8.2f} us")
    print(
        f"  under the default call timeout: {with_deadline:8.2f} us   added {with_deadline - through:6.2f} us more "
        f"({with_deadline / through:.2f}x): the hop to a worker thread, which a call given up on can be left on"
    )


if __name__ == "__main__":
    main()
