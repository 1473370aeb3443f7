"""A local HTTP server speaking the chat-completions protocol with scripted replies.

Tests drive the real ``OpenAICompatLLM`` (and the ``openai`` SDK under it) against it: each
request is recorded with its path, headers and JSON body, and answered with the next
scripted reply. A request with no reply left gets HTTP 599, so a test that makes more
calls than it scripted fails loudly instead of hanging.

Use it from a fixture::

    @pytest.fixture
    def server() -> Iterator[ChatServer]:
        with running_chat_server() as srv:
            yield srv
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "test-model"

Reply = tuple[int, bytes, float]  # status, body, seconds to wait before answering


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ChatServer:
    """A chat-completions endpoint that answers each request with the next scripted reply."""

    base_url: str
    requests: list[Recorded] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    # Answers requests once ``replies`` is empty (instead of HTTP 599), for tests that
    # answer by what is asked rather than in a scripted order.
    responder: Callable[[Recorded], Reply] | None = None

    @staticmethod
    def completion(content: str | None, *, finish: str = "stop") -> bytes:
        """A chat-completions body whose message is ``content``."""
        return json.dumps(
            {
                "id": "chatcmpl-x",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": MODEL,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish,
                    }
                ],
            }
        ).encode()

    def reply(self, content: str | None, *, finish: str = "stop", delay: float = 0.0) -> None:
        self._reply_message({"role": "assistant", "content": content}, finish, delay)

    def reply_tool_call(self, name: str, arguments: dict[str, Any], *, call_id: str = "") -> None:
        """A reply in which the model calls the function tool ``name`` with ``arguments``."""
        call = {
            "id": call_id or f"call_{len(self.replies)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        self._reply_message(message, "tool_calls", 0.0)

    def _reply_message(self, message: dict[str, Any], finish: str, delay: float) -> None:
        body = {
            "id": f"chatcmpl-{len(self.replies)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        self.replies.append((200, json.dumps(body).encode(), delay))

    def reply_json(self, payload: Any) -> None:
        self.reply(json.dumps(payload))

    def reply_error(self, status: int, message: str, *, delay: float = 0.0) -> None:
        body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
        self.replies.append((status, json.dumps(body).encode(), delay))

    def sent(self, i: int = -1) -> dict[str, Any]:
        body: dict[str, Any] = self.requests[i].body
        return body

    def user_prompt(self, i: int = -1) -> str:
        """The user message of request ``i`` as the server received it."""
        content: str = self.sent(i)["messages"][1]["content"]
        return content

    def system_prompt(self, i: int = -1) -> str:
        content: str = self.sent(i)["messages"][0]["content"]
        return content


@contextmanager
def running_chat_server() -> Iterator[ChatServer]:
    """A ``ChatServer`` listening on a free local port for the life of the block."""
    srv: ChatServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            srv.requests.append(
                Recorded(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw)
                )
            )
            if srv.replies:
                status, body, delay = srv.replies.pop(0)
            elif srv.responder is not None:
                status, body, delay = srv.responder(srv.requests[-1])
            else:
                # A test that makes more requests than it scripted fails loudly, not silently.
                status, body, delay = 599, b'{"error": {"message": "no scripted reply"}}', 0.0
            if delay:
                srv.release.wait(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up (timeout tests)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    srv = ChatServer(base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
