"""The command line's own way to ask a server (``EPISODIC_URL``) for a recall or a block:
the client's requests and answers (``episodic.client.calls``, ``answers``) sent over the
standard library's ``http.client``.

An agent's hook runs ``episodic render`` before every turn, in a new process each time;
httpx costs that process more to import than the whole request takes. What a call means
(its body, its retries on 503, how its answer or error is read) stays the client's, so
the two answer the same. With a proxy set in the environment, which httpx honours and
``http.client`` does not, the request goes through ``episodic.client.Client``.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlencode, urlsplit

from episodic.client import DEFAULT_TIMEOUT_S, answers, calls
from episodic.client.answers import ServerError

if TYPE_CHECKING:
    from episodic.client import Client
    from episodic.client.calls import Call, RecallOptions, RenderOptions
    from episodic.recall.result import RecallResult

T = TypeVar("T")

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def proxied() -> bool:
    """Whether the environment names a proxy (any case, as httpx reads them)."""
    return any(os.environ.get(v) or os.environ.get(v.upper()) for v in PROXY_VARIABLES)


class Remote:
    """Recall and render over HTTP, one connection a request."""

    def __init__(self, base_url: str, key: str | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.attempts = calls.DEFAULT_ATTEMPTS

    # The options are the command line's, by the names ``Episodic`` and the client take.
    def recall(self, query: str, options: Mapping[str, Any]) -> RecallResult:
        given = cast("RecallOptions", options)
        if proxied():
            with self._client() as client:
                return client.recall(query, **given)
        return self._send(calls.recall(query, given))

    def render_explained(self, query: str, options: Mapping[str, Any]) -> tuple[str, RecallResult]:
        given = cast("RenderOptions", options)
        if proxied():
            with self._client() as client:
                return client.render_explained(query, **given)
        return self._send(calls.render_explained(query, given))

    def _client(self) -> Client:
        from episodic.client import Client

        return Client(self.base_url, self.key, timeout=DEFAULT_TIMEOUT_S, attempts=self.attempts)

    def _send(self, call: Call[T]) -> T:
        for attempt in range(self.attempts):
            status, headers, body = self._exchange(call)
            if status != 503:
                break
            wait = calls.retry_after(headers.get("retry-after"), attempt)
            if not calls.should_retry(status, wait, attempt, self.attempts):
                break
            time.sleep(wait)
        if status >= 400 and status != call.absent:
            raise answers.error_of(status, body, headers.get("x-request-id"))
        return call.parse(body)

    def _exchange(self, call: Call[Any]) -> tuple[int, dict[str, str], Any]:
        """One request: the status, the headers (lower-case names) and the JSON answer
        (its text when it is not JSON)."""
        url = urlsplit(self.base_url)
        path = url.path + call.path
        if call.params:
            path += "?" + urlencode(call.params, doseq=True)
        headers = {"accept": "application/json"}
        if self.key:
            headers["authorization"] = f"Bearer {self.key}"
        data = None
        if call.json is not None:
            data = json.dumps(call.json, ensure_ascii=False).encode()
            headers["content-type"] = "application/json"
        kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        connection = kind(url.hostname or "", url.port, timeout=DEFAULT_TIMEOUT_S)
        try:
            connection.request(call.method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            got = {name.lower(): value for name, value in response.getheaders()}
        except (OSError, http.client.HTTPException) as exc:
            raise ServerError(0, "unreachable", f"cannot reach {self.base_url}: {exc}") from exc
        finally:
            connection.close()
        text = raw.decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        return response.status, got, body
