"""Ollama and OpenAI-compatible embedders against a real local HTTP server with scripted replies."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from episodic.config import Settings
from episodic.embed import Embedder, OllamaEmbedder, OpenAIEmbedder, make_embedder
from episodic.embed.http import PROBE_TEXT
from episodic.errors import BadEmbedding, EmbedderUnavailable

Reply = tuple[int, bytes, float]  # status, body, seconds to wait before answering


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Server:
    url: str
    requests: list[Recorded] = field(default_factory=list)
    # Each request takes the next scripted reply; when none is left, ``default`` builds one.
    replies: list[Reply] = field(default_factory=list)
    default: Callable[[Any], Reply] | None = None
    release: threading.Event = field(default_factory=threading.Event)

    def reply_json(self, payload: Any, status: int = 200, delay: float = 0.0) -> None:
        self.replies.append((status, json.dumps(payload).encode(), delay))


def _vectors_for(texts: list[str], dim: int = 3) -> list[list[float]]:
    """A deterministic, text-dependent, not-normalised vector per text."""
    return [[float(len(t) + 1), float(i + 1), 2.0][:dim] for i, t in enumerate(texts)]


def ollama_default(body: Any) -> Reply:
    return 200, json.dumps({"embeddings": _vectors_for(body["input"])}).encode(), 0.0


def openai_default(body: Any) -> Reply:
    vectors = _vectors_for(body["input"])
    # Reversed on purpose: clients must reorder by "index".
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return 200, json.dumps({"object": "list", "data": data[::-1]}).encode(), 0.0


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw) if raw else None
            srv.requests.append(Recorded("POST", self.path, dict(self.headers.items()), body))
            if srv.replies:
                status, payload, delay = srv.replies.pop(0)
            elif srv.default is not None:
                status, payload, delay = srv.default(body)
            else:
                status, payload, delay = 500, b"no reply scripted", 0.0
            if delay:
                srv.release.wait(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (timeout tests); nothing to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    srv.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def dead_url() -> str:
    """A local URL where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _expected(texts: list[str]) -> npt.NDArray[np.float64]:
    raw = np.array(_vectors_for(texts), dtype=np.float64)
    out: npt.NDArray[np.float64] = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return out


# -- Ollama ---------------------------------------------------------------------------------
def test_ollama_happy_path_sends_the_documented_request(server: Server) -> None:
    server.default = ollama_default
    emb = OllamaEmbedder(url=server.url + "/", model="nomic-embed-text", timeout_s=5)
    texts = ["first text", "second, longer text", "ü"]
    out = emb.embed_batch(texts)

    assert isinstance(emb, Embedder)
    assert [(r.method, r.path) for r in server.requests] == [("POST", "/api/embed")]
    assert server.requests[0].body == {"model": "nomic-embed-text", "input": texts}
    assert out.dtype == np.float32 and out.shape == (3, 3)
    np.testing.assert_allclose(out, _expected(texts), atol=1e-6)
    assert emb.dim == 3 and emb.model_id == "ollama/nomic-embed-text"
    assert len(server.requests) == 1  # the dim came from the answer, not another request


def test_ollama_batches_requests(server: Server) -> None:
    server.default = ollama_default
    emb = OllamaEmbedder(url=server.url, timeout_s=5, batch_size=2)
    texts = [f"text {i}" for i in range(5)]
    out = emb.embed_batch(texts)
    assert [r.body["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    assert out.shape == (5, 3)
    # Row i must belong to text i even though each request numbers its own rows from zero.
    np.testing.assert_allclose(
        out,
        np.vstack([_expected(texts[0:2]), _expected(texts[2:4]), _expected(texts[4:5])]),
        atol=1e-6,
    )


def test_dim_is_probed_when_asked_before_any_answer(server: Server) -> None:
    server.default = ollama_default
    emb = OllamaEmbedder(url=server.url, timeout_s=5)
    assert emb.dim == 3
    assert server.requests[0].body["input"] == [PROBE_TEXT]
    assert emb.probe() == 3


def test_slow_server_is_unavailable_within_about_the_timeout(server: Server) -> None:
    server.reply_json({"embeddings": [[1.0, 0.0]]}, delay=5.0)
    emb = OllamaEmbedder(url=server.url, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable) as info:
        emb.embed_batch(["hello"])
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 2.0
    assert server.url in str(info.value) and "0.3s" in str(info.value)


def test_timeout_comes_from_settings(server: Server) -> None:
    server.reply_json({"embeddings": [[1.0, 0.0]]}, delay=5.0)
    settings = Settings(embedder="ollama", ollama_url=server.url, embed_timeout_s=0.3)
    emb = make_embedder(settings)
    assert isinstance(emb, OllamaEmbedder)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable):
        emb.embed_batch(["hello"])
    assert time.monotonic() - started < 2.0


def test_server_error_is_unavailable_and_shows_the_reason(server: Server) -> None:
    server.replies.append((500, b'{"error":"llama runner process has terminated"}', 0.0))
    emb = OllamaEmbedder(url=server.url, timeout_s=5)
    with pytest.raises(EmbedderUnavailable) as info:
        emb.embed_batch(["hello"])
    message = str(info.value)
    assert "500" in message and "llama runner process has terminated" in message
    assert server.url in message


def test_missing_model_says_to_pull_it(server: Server) -> None:
    server.replies.append((404, b'{"error":"model \\"nomic-embed-text\\" not found"}', 0.0))
    emb = OllamaEmbedder(url=server.url, timeout_s=5)
    with pytest.raises(EmbedderUnavailable, match="ollama pull nomic-embed-text"):
        emb.embed_batch(["hello"])


def test_server_down_is_unavailable_and_says_how_to_fix(dead_url: str) -> None:
    emb = OllamaEmbedder(url=dead_url, timeout_s=2)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable) as info:
        emb.embed_batch(["hello"])
    assert time.monotonic() - started < 2.0
    message = str(info.value)
    assert dead_url in message
    assert "ollama serve" in message and "EPISODIC_EMBEDDER" in message


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ({"embeddings": [[1.0, 2.0], [3.0, 4.0]]}, "2 vectors for 3 texts"),
        ({"embeddings": [[1.0, 2.0], [3.0, 4.0], [5.0]]}, "differing sizes"),
        ({"embeddings": [[1.0, 2.0], [3.0, float("nan")], [5.0, 6.0]]}, "NaN"),
        ({"embeddings": [[1.0, 2.0], [3.0, float("inf")], [5.0, 6.0]]}, "NaN/inf"),
        ({"embeddings": [[0.0, 0.0], [3.0, 4.0], [5.0, 6.0]]}, "zero"),
        ({"embeddings": [[1.0, "x"], [3.0, 4.0], [5.0, 6.0]]}, "not a matrix"),
        ({"embeddings": [[], [], []]}, "empty"),
        ({"vectors": [[1.0]]}, "embeddings"),
        ([1, 2, 3], "embeddings"),
    ],
)
def test_garbage_answers_are_bad_embeddings(server: Server, payload: Any, match: str) -> None:
    server.reply_json(payload)
    emb = OllamaEmbedder(url=server.url, timeout_s=5)
    with pytest.raises(BadEmbedding, match=match):
        emb.embed_batch(["a", "b", "c"])


def test_non_json_answer_is_a_bad_embedding(server: Server) -> None:
    server.replies.append((200, b"<html>proxy login</html>", 0.0))
    with pytest.raises(BadEmbedding, match="not JSON"):
        OllamaEmbedder(url=server.url, timeout_s=5).embed_batch(["a"])


def test_dimension_change_between_answers_is_a_bad_embedding(server: Server) -> None:
    server.reply_json({"embeddings": [[1.0, 2.0, 3.0]]})
    server.reply_json({"embeddings": [[1.0, 2.0]]})
    emb = OllamaEmbedder(url=server.url, timeout_s=5)
    emb.embed_batch(["a"])
    with pytest.raises(BadEmbedding, match="2-d vectors, expected 3-d"):
        emb.embed_batch(["b"])


def test_declared_dimension_is_enforced(server: Server) -> None:
    server.reply_json({"embeddings": [[1.0, 2.0, 3.0]]})
    emb = OllamaEmbedder(url=server.url, timeout_s=5, dim=768)
    assert emb.dim == 768 and not server.requests  # given, so nothing to probe
    with pytest.raises(BadEmbedding, match="3-d vectors, expected 768-d"):
        emb.embed_batch(["a"])


# -- OpenAI-compatible ----------------------------------------------------------------------
def test_openai_happy_path_reorders_by_index_and_sends_the_key(server: Server) -> None:
    server.default = openai_default
    emb = OpenAIEmbedder(
        base_url=server.url + "/v1", api_key="sk-test", model="text-embedding-3-small", timeout_s=5
    )
    texts = ["alpha", "a much longer beta", "gamma!"]
    out = emb.embed_batch(texts)

    request = server.requests[0]
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "text-embedding-3-small", "input": texts}
    assert request.headers["Authorization"] == "Bearer sk-test"
    np.testing.assert_allclose(out, _expected(texts), atol=1e-6)
    assert emb.model_id == "openai/text-embedding-3-small" and emb.dim == 3


def test_openai_without_key_sends_no_authorization(server: Server) -> None:
    server.default = openai_default
    emb = make_embedder(
        Settings(embedder="openai", openai_base_url=server.url, openai_api_key=None)
    )
    assert isinstance(emb, OpenAIEmbedder)
    emb.embed_batch(["local servers often need no key"])
    assert "Authorization" not in server.requests[0].headers
    assert server.requests[0].path == "/embeddings"


def test_openai_batches_and_keeps_order(server: Server) -> None:
    server.default = openai_default
    emb = OpenAIEmbedder(base_url=server.url, timeout_s=5, batch_size=2)
    texts = ["one", "two two", "three three three"]
    out = emb.embed_batch(texts)
    assert [r.body["input"] for r in server.requests] == [texts[:2], texts[2:]]
    np.testing.assert_allclose(
        out, np.vstack([_expected(texts[:2]), _expected(texts[2:])]), atol=1e-6
    )


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([{"index": 0, "embedding": [1.0, 0.0]}], "1 vectors for 2 texts"),
        (
            [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 0, "embedding": [0.0, 1.0]}],
            "repeated",
        ),
        (
            [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 5, "embedding": [0.0, 1.0]}],
            "outside",
        ),
        (
            [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [0.0, None]}],
            "NaN",
        ),
    ],
)
def test_openai_garbage_is_a_bad_embedding(server: Server, data: Any, match: str) -> None:
    server.reply_json({"data": data})
    with pytest.raises(BadEmbedding, match=match):
        OpenAIEmbedder(base_url=server.url, timeout_s=5).embed_batch(["a", "b"])


def test_openai_auth_failure_is_unavailable_and_points_at_the_key(server: Server) -> None:
    server.replies.append((401, b'{"error":{"message":"Incorrect API key provided"}}', 0.0))
    emb = OpenAIEmbedder(base_url=server.url, api_key="sk-wrong", timeout_s=5)
    with pytest.raises(EmbedderUnavailable) as info:
        emb.embed_batch(["a"])
    message = str(info.value)
    assert "401" in message and "EPISODIC_OPENAI_API_KEY" in message
    assert "sk-wrong" not in message


def test_openai_down_and_slow_are_unavailable(server: Server, dead_url: str) -> None:
    with pytest.raises(EmbedderUnavailable, match="cannot reach"):
        OpenAIEmbedder(base_url=dead_url, timeout_s=2).embed_batch(["a"])
    server.reply_json({"data": []}, delay=5.0)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable, match="did not answer within"):
        OpenAIEmbedder(base_url=server.url, timeout_s=0.3).embed_batch(["a"])
    assert time.monotonic() - started < 2.0


def test_factory_none_means_sparse_only() -> None:
    assert make_embedder(Settings(embedder="none")) is None
