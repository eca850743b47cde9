"""The error a normalization pass raises, in a module of its own so every pass can raise it."""

from __future__ import annotations


class SchemaNormalizationError(ValueError):
    """A schema cannot be made self-contained (for example, a recursive type), or accepts no value at all."""
