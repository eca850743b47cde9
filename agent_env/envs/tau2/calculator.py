"""τ²-bench's `calculate` tool, shared by its domains: Python's own arithmetic on an expression of digits, operators,
dots, parentheses and spaces, as tau2-bench's `eval` gives it (the same values, the same errors), except that a whole
number too large to compute in time is refused rather than left to take the process's time and memory."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from agent_env.errors import ToolError

CALCULATOR_CHARACTERS = frozenset("0123456789+-*/(). ")
MAX_INTEGER_BITS = 100_000
"""The largest whole number `calculate` computes, in bits (30,000 digits): tau2-bench's `eval` would compute
`9**9**9` for hours; here a power or product beyond this is refused. Any result this large fails anyway (a float
holds at most 1,024 bits); only a huge number divided back down (2**200000 / 2**199999) differs: refused here, 2.0
there."""


PARSER_OVERFLOW = "Parser stack overflowed - Python source too complex to parse"
"""What Python (3.12 and later, as tau2-bench runs) says of an expression nested too deep to parse, such as a
hundred thousand signs before a number; Python 3.11 raises the same MemoryError with no message at all."""


def calculate(expression: str) -> str:
    """`expression`'s value rounded to two decimals, as tau2-bench's `calculate` gives it, or its error.

    The expression is compiled as `eval` compiles it (the same syntax errors, the same limits on nesting), then
    evaluated here, operand by operand in Python's order, with Python's own operators: the same values and the same
    errors, except that a `**` or `*` whose whole-number result would exceed `MAX_INTEGER_BITS` is refused.

    Raises:
        ToolError: With tau2-bench's message (Python's own, for a syntax or arithmetic error), or ours beyond
            `MAX_INTEGER_BITS`.
    """
    if not all(char in CALCULATOR_CHARACTERS for char in expression):
        raise ToolError("Invalid characters in expression")
    source = expression.lstrip(" \t")  # as `eval` reads a string: leading spaces are not an indent
    try:
        compile(source, "<string>", "eval")
        value = _evaluate(ast.parse(source, filename="<string>", mode="eval").body)
        return str(round(float(value), 2))
    except ToolError:
        raise
    except (
        MemoryError
    ) as error:  # the parser's stack: Python 3.11 says nothing, 3.12 (tau2-bench's) says this
        raise ToolError(str(error) or PARSER_OVERFLOW) from None
    except Exception as error:  # what `eval` would raise: its message is the result
        raise ToolError(str(error) or f"{type(error).__name__}: the expression cannot be computed") from None


def _too_large() -> ToolError:
    return ToolError(
        f"Expression too large to compute: a whole number in it would exceed {MAX_INTEGER_BITS} bits"
    )


def _power(base: Any, exponent: Any) -> Any:
    if (
        type(base) is int
        and type(exponent) is int
        and abs(base) > 1
        and exponent > 0
        and (exponent.bit_length() > 32 or exponent * math.log2(abs(base)) > MAX_INTEGER_BITS)
    ):
        raise _too_large()
    return operator.pow(base, exponent)


def _times(left: Any, right: Any) -> Any:
    if (
        type(left) is int
        and type(right) is int
        and left.bit_length() + right.bit_length() > MAX_INTEGER_BITS + 1
    ):
        raise _too_large()
    return operator.mul(left, right)


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _times,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: _power,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _evaluate(root: ast.expr) -> Any:
    """The value of an expression made of what `CALCULATOR_CHARACTERS` can spell: numbers and `...`, the binary
    and unary operators, `()`, and calls (`(1)(2)`, which fail as Python's do). Iterative, so that any depth the
    compiler accepts is evaluated."""
    values: dict[int, Any] = {}
    pending: list[tuple[ast.expr, bool]] = [(root, False)]
    while pending:
        node, ready = pending.pop()
        operands = _operands(node)
        if not ready:
            pending.append((node, True))
            pending.extend((operand, False) for operand in reversed(operands))
            continue
        values[id(node)] = _apply(node, [values.pop(id(operand)) for operand in operands])
    return values[id(root)]


def _operands(node: ast.expr) -> list[ast.expr]:
    """The expressions a node's value needs, in the order Python evaluates them."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Tuple):
        return list(node.elts)
    if isinstance(node, ast.Call):
        arguments = [item.value if isinstance(item, ast.Starred) else item for item in node.args]
        return [node.func, *arguments, *(item.value for item in node.keywords)]
    return []


def _apply(node: ast.expr, operands: list[Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](*operands)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](*operands)
    if isinstance(node, ast.Tuple):
        return tuple(operands)
    if isinstance(node, ast.Call):  # nothing here is callable: Python's own call raises its own TypeError
        function, *arguments = operands
        if node.keywords:
            return function(**arguments[0])
        if node.args and isinstance(node.args[0], ast.Starred):
            return function(*arguments[0])
        return function(*arguments)
    raise ToolError(f"Unsupported expression: {ast.dump(node)}")  # the characters allowed spell nothing else
