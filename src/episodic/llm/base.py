"""The LLM protocol, reply checking shared by every client, and ``ScriptedLLM``.

An LLM implements one method, ``complete_json``: a system prompt and a user message in, one
JSON object that validates against a JSON schema out, or ``LLMError``. Steps built on it
never see raw text, so a model that rambles, fences its answer or invents keys is handled
once, here, instead of in every step.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from episodic.errors import InvalidInput, LLMError

DEFAULT_MAX_TOKENS = 512
# One corrective round trip fixes most formatting slips; more only burns latency on a
# model that cannot follow the format at all.
BAD_REPLY_RETRIES = 1
# Enough of a bad reply to recognise it in an error message or echo it back to the model.
REPLY_SNIPPET_CHARS = 300

# Reasoning models served over /v1 (deepseek-r1, qwen3 on Ollama) prefix their answer with
# their chain of thought.
_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json[ \t]*)?\n?(.*?)```", re.DOTALL | re.IGNORECASE)


@runtime_checkable
class LLM(Protocol):
    """A chat model that answers with one JSON object matching a schema."""

    @property
    def model_id(self) -> str: ...

    def complete_json(
        self,
        system: str,
        user: str,
        schema: Mapping[str, Any],
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> dict[str, Any]:
        """The reply parsed as a JSON object valid against ``schema``; ``LLMError`` otherwise."""
        ...


class BadReply(Exception):
    """The model answered, but not with a usable JSON object. ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def snippet(text: str, limit: int = REPLY_SNIPPET_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def parse_reply(text: str | None) -> Any:
    """Decode a model's text as JSON, tolerating a leading <think> block and ``` fences."""
    if text is None or not text.strip():
        raise BadReply("empty reply")
    body = _THINK.sub("", text, count=1).strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        # Chatty models wrap the object in prose ("Here you go: {...}"); the outermost braces
        # are the object if anything is.
        start, end = body.find("{"), body.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(body[start : end + 1])
            except json.JSONDecodeError:
                pass
        raise BadReply(f"not JSON ({exc.msg} at char {exc.pos}): {snippet(text)!r}") from None


def check_schema(schema: Mapping[str, Any]) -> None:
    """Refuse an invalid schema up front: that is a programming error, not a bad reply."""
    # Imported with the first schema checked, not with the module: a process that never
    # asks an LLM (a recall) does not load jsonschema. It ships no type information; the
    # ignore also tolerates types-jsonschema being installed, so mypy stays strict either way.
    import jsonschema  # type: ignore[import-untyped, unused-ignore]
    import jsonschema.exceptions  # type: ignore[import-untyped, unused-ignore]

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise InvalidInput("schema", f"not a valid JSON schema: {exc.message}") from exc


def validate_reply(value: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` itself if it is a JSON object valid against ``schema``; ``BadReply`` if not."""
    import jsonschema  # type: ignore[import-untyped, unused-ignore]
    import jsonschema.exceptions  # type: ignore[import-untyped, unused-ignore]

    if not isinstance(value, dict):
        raise BadReply(f"expected a JSON object, got {type(value).__name__}")
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        raise BadReply(f"schema violation at {error.json_path}: {snippet(str(error.message))}")
    return value


def check_reply(text: str | None, schema: Mapping[str, Any]) -> dict[str, Any]:
    return validate_reply(parse_reply(text), schema)


# -- the fake ------------------------------------------------------------------------------
Reply = Mapping[str, Any] | str | BaseException


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    system: str
    user: str
    schema: Mapping[str, Any]
    max_tokens: int


class ScriptExhausted(AssertionError):
    """A ScriptedLLM was asked for more replies than its test scripted.

    Deliberately not an ``LLMError``: code under test falls back on ``LLMError``, which
    would hide a test that makes more calls than it meant to.
    """


class ScriptedLLM:
    """An in-process LLM for unit tests: answers each call with the next scripted reply.

    A reply is a dict (the JSON object), a string (the model's raw text, parsed like a real
    reply, fences and all) or an exception (raised as is). Dicts and strings are checked
    against the call's schema; a bad one consumes the next reply as the corrective retry,
    exactly like ``OpenAICompatLLM``, and a second bad one raises ``LLMError``. ``calls``
    records every ``complete_json`` call; ``replies_used`` counts replies consumed.
    """

    def __init__(self, replies: Sequence[Reply] = (), *, model: str = "scripted") -> None:
        self.replies: list[Reply] = list(replies)
        self.calls: list[ScriptedCall] = []
        self.replies_used = 0
        self._model = model

    @property
    def model_id(self) -> str:
        return f"scripted/{self._model}"

    def complete_json(
        self,
        system: str,
        user: str,
        schema: Mapping[str, Any],
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> dict[str, Any]:
        check_schema(schema)
        self.calls.append(ScriptedCall(system, user, schema, max_tokens))
        problem = ""
        for _ in range(1 + BAD_REPLY_RETRIES):
            reply = self._next()
            if isinstance(reply, BaseException):
                raise reply
            try:
                if isinstance(reply, str):
                    return check_reply(reply, schema)
                # A copy, so a caller mutating the result cannot change the script.
                return validate_reply(copy.deepcopy(dict(reply)), schema)
            except BadReply as exc:
                problem = exc.reason
        raise LLMError(
            f"{self.model_id} gave no usable reply in {1 + BAD_REPLY_RETRIES} attempts: {problem}"
        )

    def _next(self) -> Reply:
        if not self.replies:
            raise ScriptExhausted(
                f"ScriptedLLM has no reply left (used {self.replies_used} "
                f"over {len(self.calls)} calls)"
            )
        self.replies_used += 1
        return self.replies.pop(0)
