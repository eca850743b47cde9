"""The error a normalization pass raises, in a module of its own so every pass can raise it."""

from __future__ import annotations


class SchemaNormalizationError(ValueError):
    """A schema cannot be made self-contained (for example, a recursive type), or accepts no value at all.

    Attributes:
        problem: What is wrong, without `authors_fix`.
        authors_fix: What the tool's author can do (write the type otherwise, give an explicit `input_schema`),
            when only they can; the message says it after the problem. Whoever publishes a tool another server
            wrote (an MCP server's) cannot, and says its own way out instead.
    """

    def __init__(self, problem: str, *, authors_fix: str = "") -> None:
        super().__init__(f"{problem}; {authors_fix}" if authors_fix else problem)
        self.problem = problem
        self.authors_fix = authors_fix
