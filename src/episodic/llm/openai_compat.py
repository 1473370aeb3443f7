"""``OpenAICompatLLM``: any OpenAI-compatible chat-completions API, via the ``openai`` SDK.

Works with OpenAI itself, Ollama (``http://localhost:11434/v1``), vLLM and the llama.cpp
server. Every failure reaches callers as ``LLMError`` with the server, the model and what
went wrong in the message: transport problems (refused connection, timeout, HTTP error)
immediately, unusable replies (not JSON, schema violation, empty) after one corrective retry.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.shared_params import ResponseFormatJSONObject

from episodic.config import Settings
from episodic.errors import InvalidInput, LLMError
from episodic.llm.base import (
    BAD_REPLY_RETRIES,
    DEFAULT_MAX_TOKENS,
    LLM,
    BadReply,
    check_reply,
    check_schema,
    snippet,
)
from episodic.llm.prompts import JSON_CORRECTION

log = logging.getLogger("episodic.llm")

DEFAULT_TIMEOUT_S = 30.0
# Servers without an API key (Ollama, llama.cpp) still need the SDK to send one.
KEYLESS_API_KEY = "no-key"
JSON_OBJECT: ResponseFormatJSONObject = {"type": "json_object"}
# How much of a bad reply goes back to the model in the corrective turn.
_ECHO_CHARS = 2_000


class OpenAICompatLLM:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` is the API root including ``/v1``. JSON output is requested with
    ``response_format={"type": "json_object"}``; a server that refuses that parameter
    (HTTP 400/422) is asked again without it, and if that works the parameter is dropped
    for the life of this client. The SDK's own retries are off by default (``max_retries``)
    because every caller has an offline fallback and a recall should not wait for backoff.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        temperature: float = 0.0,
        max_retries: int = 0,
    ) -> None:
        if not base_url:
            raise InvalidInput("base_url", "the LLM server URL is required (EPISODIC_LLM_URL)")
        if not model:
            raise InvalidInput("model", "an LLM model name is required (EPISODIC_LLM_MODEL)")
        if not timeout_s > 0 or not math.isfinite(timeout_s):
            raise InvalidInput("llm_timeout_s", f"must be a positive number, got {timeout_s}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.temperature = temperature
        self._json_mode = True
        self._client = openai.OpenAI(
            base_url=self.base_url,
            # Never fall back to OPENAI_API_KEY from the environment: that would send an
            # OpenAI key to whatever server EPISODIC_LLM_URL names.
            api_key=api_key or KEYLESS_API_KEY,
            timeout=timeout_s,
            max_retries=max_retries,
        )

    # -- the LLM protocol -----------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return f"openai-compat/{self.model}"

    @property
    def json_mode(self) -> bool:
        """Whether requests still carry ``response_format`` (False once the server refused it)."""
        return self._json_mode

    def complete_json(
        self,
        system: str,
        user: str,
        schema: Mapping[str, Any],
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> dict[str, Any]:
        check_schema(schema)
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        problem = ""
        for attempt in range(1 + BAD_REPLY_RETRIES):
            text, finish = self._chat(messages, max_tokens)
            try:
                return check_reply(text, schema)
            except BadReply as exc:
                problem = exc.reason
                if finish == "length":
                    problem += f" (the reply was cut off at max_tokens={max_tokens})"
                log.info("%s: unusable reply (attempt %d): %s", self._where, attempt + 1, problem)
            messages = [
                *messages[:2],
                {"role": "assistant", "content": snippet(text or "", _ECHO_CHARS)},
                {
                    "role": "user",
                    "content": JSON_CORRECTION.format(
                        problem=problem,
                        schema=json.dumps(schema, separators=(",", ":"), default=dict),
                    ),
                },
            ]
        raise LLMError(
            f"{self._where} gave no usable reply in {1 + BAD_REPLY_RETRIES} attempts: {problem}"
        )

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAICompatLLM(base_url={self.base_url!r}, model={self.model!r})"

    # -- internals ------------------------------------------------------------------------
    @property
    def _where(self) -> str:
        return f"LLM {self.model!r} at {self.base_url}"

    def _chat(
        self, messages: list[ChatCompletionMessageParam], max_tokens: int
    ) -> tuple[str | None, str | None]:
        """The reply's text and finish reason (either may be None on an odd server)."""
        params: CompletionCreateParamsNonStreaming = {
            "model": self.model,
            "messages": messages,
            # max_tokens, not max_completion_tokens: it is the one local servers understand.
            "max_tokens": max_tokens,
            "temperature": self.temperature,
        }
        with self._map_errors():
            if self._json_mode:
                with_format: CompletionCreateParamsNonStreaming = {
                    **params,
                    "response_format": JSON_OBJECT,
                }
                try:
                    return _text(self._client.chat.completions.create(**with_format))
                except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                    log.warning(
                        "%s refused the request with response_format (%s); retrying without",
                        self._where,
                        _server_message(exc),
                    )
                reply = _text(self._client.chat.completions.create(**params))
                # Only now is it clear the parameter was the problem, not the request.
                self._json_mode = False
                return reply
            return _text(self._client.chat.completions.create(**params))

    @contextmanager
    def _map_errors(self) -> Iterator[None]:
        where = self._where
        try:
            yield
        except openai.APITimeoutError as exc:
            raise LLMError(f"{where} did not answer within {self.timeout_s:g} s") from exc
        except openai.APIConnectionError as exc:
            raise LLMError(
                f"cannot reach {where}: {exc}; is the server running? (EPISODIC_LLM_URL)"
            ) from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise LLMError(
                f"{where} refused the API key (HTTP {exc.status_code}); check EPISODIC_LLM_API_KEY"
            ) from exc
        except openai.NotFoundError as exc:
            raise LLMError(
                f"{where} answered HTTP 404 ({_server_message(exc)}); the URL must be the "
                "API root ending in /v1, and the model must exist on that server"
            ) from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                f"{where} answered HTTP {exc.status_code}: {_server_message(exc)}"
            ) from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{where} failed: {snippet(str(exc), 200)}") from exc
        except json.JSONDecodeError as exc:
            # The SDK lets this through when a proxy answers 200 with an HTML page.
            raise LLMError(f"{where} answered with a body that is not JSON ({exc.msg})") from exc


def _server_message(exc: openai.APIStatusError) -> str:
    # The SDK's own message is "Error code: 500 - {...}"; the server's words are more useful.
    body: object = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return snippet(body["message"], 200)
    return snippet(exc.response.text or exc.message, 200)


def _text(completion: ChatCompletion) -> tuple[str | None, str | None]:
    # The SDK does not validate replies strictly, so a server that omits fields yields a
    # half-built object; a missing piece is an empty reply, which gets retried.
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        return None, None
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    finish = getattr(choice, "finish_reason", None)
    return (
        content if isinstance(content, str) else None,
        finish if isinstance(finish, str) else None,
    )


def make_llm(settings: Settings) -> LLM | None:
    """The configured LLM, or None when no LLM is configured (the offline fallbacks run)."""
    url, model = settings.llm_url, settings.llm_model
    if not url and not model:
        return None
    if not url:
        raise InvalidInput(
            "EPISODIC_LLM_URL",
            "EPISODIC_LLM_MODEL is set but no server URL; set EPISODIC_LLM_URL to the API root, "
            "e.g. http://localhost:11434/v1 for Ollama",
        )
    if not model:
        raise InvalidInput(
            "EPISODIC_LLM_MODEL",
            "EPISODIC_LLM_URL is set but no model; set EPISODIC_LLM_MODEL, e.g. llama3.1",
        )
    return OpenAICompatLLM(
        base_url=url,
        model=model,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout_s,
    )
