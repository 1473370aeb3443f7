"""What a JSON payload may hold, checked once on the way in and repaired on the way out.

Every interface (Python, CLI, HTTP, MCP) hands memories back as JSON, and JSON output has
limits the input side did not: the HTTP response serialiser refuses nesting past about
255 levels, ``NaN``/``Infinity`` have no JSON form, and Python will not print an integer
of over 4300 digits. One stored payload past those limits used to break every list,
get and recall that returned it. So:

- ``check_json`` refuses such a value at input, naming the field it sits in (the event
  parser calls it for ``payload`` and ``refs``, which every write goes through);
- ``stored_object`` turns stored JSON text back into an object the outputs can carry,
  whatever an older version (or another tool) wrote: a too-deep subtree becomes the
  ``TOO_DEEP`` marker, a non-finite number ``None``, a lone surrogate U+FFFD, text that
  is not a JSON object at all the ``UNREADABLE`` marker.

Both are pure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from episodic.errors import InvalidInput

# Levels of nesting a payload may have, counting the payload object itself as one. Far
# more than structured metadata needs, and far below the response serialiser's limit
# (about 255 levels, which the response's own envelope eats into) and Python's recursion
# limit, so every output can carry whatever was let in.
MAX_DEPTH = 64
TOO_DEEP = f"(nested deeper than {MAX_DEPTH} levels: not shown)"
# What a stored payload that is not a JSON object reads as: its key says why.
UNREADABLE = "_unreadable"
# Python refuses to print an integer of over 4300 digits (int_max_str_digits), so JSON
# output cannot carry one; 14,000 bits is about 4,200 digits.
MAX_INT_BITS = 14_000
_SURROGATE = re.compile("[\ud800-\udfff]")
# Stored text that holds none of these cannot need repair, and is decoded as is.
_NEEDS_REPAIR = re.compile(r"NaN|Infinity|\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_MAX_FIELD_CHARS = 200


def check_json(field: str, value: Any, *, check_text: bool = True) -> None:
    """Raise ``InvalidInput`` naming where in ``value`` (``field``, ``field.key``,
    ``field.items[2]``) the first thing sits that JSON output cannot carry: nesting past
    ``MAX_DEPTH``, a non-finite number, an integer too long to print, a key that is not a
    string, a value that is not JSON at all. ``check_text`` False skips the scan for lone
    surrogates (the caller knows the source was valid UTF-8)."""
    try:
        _check(value, 1, check_text)
    except _Refused as refused:
        if refused.whole:
            raise InvalidInput(field, refused.message) from None
        path = field + "".join(reversed(refused.steps))
        if len(path) > _MAX_FIELD_CHARS:  # a long key must not flood the message
            path = path[: _MAX_FIELD_CHARS - 1] + "…"
        raise InvalidInput(path, refused.message) from None


class _Refused(Exception):
    """Where the walk stopped: each level it unwinds through adds its step to the path,
    so the path is built only for a refusal, never for the payloads let in."""

    def __init__(self, message: str, *, whole: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.whole = whole  # named by the top field alone (a path 64 levels long helps no one)
        self.steps: list[str] = []


def _check(value: Any, depth: int, check_text: bool) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        if check_text and _SURROGATE.search(value):
            raise _Refused("contains text that is not valid UTF-8")
        return
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise _Refused("an integer too long for JSON output")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused("not a finite number (JSON has no NaN or Infinity)")
        return
    if not isinstance(value, Mapping | list | tuple):
        raise _Refused(f"not a JSON value: {type(value).__name__}")
    if depth > MAX_DEPTH:
        raise _Refused(f"nested more than {MAX_DEPTH} levels deep", whole=True)
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Refused(f"keys must be strings, not {type(key).__name__}")
            if check_text and _SURROGATE.search(key):
                raise _Refused("a key contains text that is not valid UTF-8")
            try:
                _check(item, depth + 1, check_text)
            except _Refused as refused:
                refused.steps.append(f".{key}")
                raise
    else:
        for n, item in enumerate(value):
            try:
                _check(item, depth + 1, check_text)
            except _Refused as refused:
                refused.steps.append(f"[{n}]")
                raise


def stored_object(text: str | bytes) -> dict[str, Any]:
    """Stored JSON text as an object every output can carry (see the module docstring)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {UNREADABLE: "stored JSON that cannot be read back"}
    if not isinstance(value, dict):
        return {UNREADABLE: f"stored JSON that is not an object: {type(value).__name__}"}
    body = text if isinstance(text, str) else text.decode("utf-8", "replace")
    # Counting brackets bounds the depth: few enough, and nothing else to repair, means
    # the common payload is handed back as decoded, without a walk.
    if body.count("{") + body.count("[") <= MAX_DEPTH and not _NEEDS_REPAIR.search(body):
        return value
    repaired: dict[str, Any] = safe_json(value)
    return repaired


def safe_json(value: Any, depth: int = 1) -> Any:
    """``value`` with what JSON output cannot carry replaced: a subtree past ``MAX_DEPTH``
    by ``TOO_DEEP``, a non-finite float by None, a lone surrogate by U+FFFD (in keys and
    text). ``depth`` is the level ``value`` sits at (the payload itself is 1)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping | list | tuple) and depth > MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, Mapping):
        return {safe_json(str(k)): safe_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_json(v, depth + 1) for v in value]
    return value
