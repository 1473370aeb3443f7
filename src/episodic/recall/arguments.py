"""What a recall or render accepts, checked in one place for every interface.

The Python API, the CLI, HTTP, MCP and the layer all reach ``Episodic.recall`` and
``Episodic.render``, which check their arguments here first: a value of the wrong kind is
an ``InvalidInput`` naming the field, never an ``AttributeError`` from deep inside, and
never coerced (``"no"`` is not false, ``True`` is not 1, ``"100"`` is not 100). HTTP's
request models take their bounds from the same constants.
"""

from __future__ import annotations

from episodic.errors import InvalidInput

# Seed 000's memory_walk_depth: 0 (off) or 1 (one `similar` edge).
WALK_DEPTHS = (0, 1)
# The largest injection block a render may ask for.
MAX_RENDER_CHARS = 100_000


def check_query(query: object) -> str:
    if not isinstance(query, str):
        raise InvalidInput("query", f"expected text, got {type(query).__name__}")
    return query


def check_k(k: object) -> int | None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int)):
        # Not coerced: True is not 1 and "5" is not 5 (out-of-range whole numbers still
        # fall back to 5 with a warning, as seed 000 does).
        raise InvalidInput("k", "expected a whole number (1-50)")
    return k


def check_walk(walk: object) -> int | None:
    if walk is None:
        return None
    if isinstance(walk, bool) or not isinstance(walk, int) or walk not in WALK_DEPTHS:
        raise InvalidInput("walk", f"use 0 or 1 (how many `similar` edges), got {walk!r}")
    return walk


def check_flag(field: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(field, f"expected true or false, got {value!r}")
    return value


def check_optional_flag(field: str, value: object) -> bool | None:
    return None if value is None else check_flag(field, value)


def check_max_chars(max_chars: object) -> int | None:
    if max_chars is None:
        return None
    if isinstance(max_chars, bool) or not isinstance(max_chars, int):
        raise InvalidInput("max_chars", f"expected a whole number of characters, got {max_chars!r}")
    if not 1 <= max_chars <= MAX_RENDER_CHARS:
        raise InvalidInput(
            "max_chars", f"must be between 1 and {MAX_RENDER_CHARS} characters, got {max_chars}"
        )
    return max_chars
