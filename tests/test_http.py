"""The HTTP API over a real uvicorn server on a loopback port (fake embedder: fast), once
over a SQLite file and once over PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from conftest import raw_execute, raw_rows
from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.http import MAX_BODY_BYTES, asgi
from episodic.model import Role
from episodic.store import open_store
from episodic.tenancy import ApiKey, hash_secret, new_secret
from servers import serve

NOW = datetime.now(UTC)


def ev(i: str, ws: str, summary: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": i,
        "workspace": ws,
        "type": "peer.escalation",
        "summary": summary,
        "ts": (NOW - timedelta(days=float(extra.pop("days", 1)))).isoformat(),
        **extra,
    }


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def mem(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Episodic]:
    # One database per backend for the whole module: the tests below build on each
    # other's writes (keys, events), as a long-running server's would.
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('http') / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_module_url")
    m = Episodic(store=open_store(url), embedder=FakeEmbedder(dim=256), settings=Settings())
    yield m
    m.close()


@pytest.fixture(scope="module")
def base(mem: Episodic) -> Iterator[str]:
    with serve(asgi(mem)) as url:
        yield url


@pytest.fixture(scope="module")
def keys(mem: Episodic) -> dict[str, str]:
    out = {
        "admin": mem.create_key("acme", role="admin")[1],
        "deployer": mem.create_key("acme", role="agent", agent="deployer")[1],
        "agent_unbound": unbound_agent_key(mem, "acme"),
        "lead": mem.create_key("acme", role="lead", crew="ops")[1],
        "orbit": mem.create_key("orbit", role="admin")[1],
    }
    mem.ingest(
        [
            ev(
                "a1",
                "acme",
                "checkout OOM after cache TTL change",
                agent="deployer",
                crew="ops",
            ),
            ev(
                "a2",
                "acme",
                "checkout deploy denied by keeper",
                agent="reviewer",
                crew="ops",
                type="approval.denied",
            ),
            ev(
                "a3",
                "acme",
                "checkout flaky test retried",
                agent="reviewer",
                crew="qa",
                type="tool.call",
                refs={"episodic": True},
            ),
            ev("o1", "orbit", "checkout OOM in the orbit sandbox", agent="deployer"),
        ]
    )
    mem.index_once()
    return out


def unbound_agent_key(mem: Episodic, workspace: str) -> str:
    """An agent key bound to no agent, as older versions created: stored directly, since
    ``create_key`` now refuses to make one."""
    key_id, secret = new_secret()
    mem.store.add_api_key(ApiKey(key_id, workspace, Role.AGENT), hash_secret(secret))
    return secret


def client(base: str, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=base, headers=headers, timeout=30)


def error_of(r: httpx.Response) -> dict[str, Any]:
    body = r.json()
    assert set(body) == {"error"}, body
    return dict(body["error"])


def test_healthz_needs_no_key_and_names_the_mode(base: str) -> None:
    r = httpx.get(f"{base}/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["episodic"] == "vector"
    assert body["schema_version"] >= 5


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer nope", "Basic dXNlcjpwYXNz", "Bearer ep_k_000000000000_forged"],
)
def test_v1_without_a_valid_key_is_401(base: str, keys: dict[str, str], header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    r = httpx.post(f"{base}/v1/recall", json={"query": "checkout"}, headers=headers)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert error_of(r)["code"] == "unauthenticated"


def test_a_revoked_key_stops_working(base: str, mem: Episodic) -> None:
    key, secret = mem.create_key("acme", role="admin", label="temp")
    with client(base, secret) as c:
        assert c.get("/v1/whoami").json()["key_id"] == key.id
        mem.revoke_key(key.id)
        r = c.get("/v1/whoami")
    assert r.status_code == 401 and error_of(r)["message"].startswith(
        "unknown or revoked API key: "
    )
    assert "`episodic keys create --workspace W`" in error_of(r)["message"]


def test_another_workspace_is_403_with_no_existence_hint(base: str, keys: dict[str, str]) -> None:
    with client(base, keys["admin"]) as c:
        # One request id for both, so that the bodies may be compared whole.
        same = {"X-Request-ID": "same"}
        exists = c.post(
            "/v1/recall", json={"query": "checkout", "workspace": "orbit"}, headers=same
        )
        missing = c.post(
            "/v1/recall", json={"query": "checkout", "workspace": "nowhere"}, headers=same
        )
        assert exists.status_code == missing.status_code == 403
        assert exists.json() == missing.json()
        assert "orbit" not in exists.text
        # Another workspace's memory id looks exactly like one that does not exist.
        other = c.get("/v1/memories/o1")
        none = c.get("/v1/memories/zz")
        assert other.status_code == none.status_code == 404
        assert error_of(other)["message"] == "not found: o1"
        hits = c.post("/v1/recall", json={"query": "checkout OOM sandbox", "k": 10}).json()["hits"]
        assert hits and {h["workspace"] for h in hits} == {"acme"}


def test_roles_map_to_recall_scopes(base: str, keys: dict[str, str]) -> None:
    with client(base, keys["deployer"]) as c:
        r = c.post("/v1/recall", json={"query": "checkout", "k": 10, "explain": True})
        assert r.status_code == 200
        assert {h["agent"] for h in r.json()["hits"]} == {"deployer"}
        # The trace never names what the key's scope hides (an admin's trace would).
        assert "a2" not in r.text and "a3" not in r.text
        assert c.post("/v1/recall", json={"query": "x", "agent": "reviewer"}).status_code == 403
        assert c.post("/v1/recall", json={"query": "x", "scope": "crew_shared"}).status_code == 403
        assert c.get("/v1/memories/a2").status_code == 404  # not its own
    with client(base, keys["agent_unbound"]) as c:
        r = c.post("/v1/recall", json={"query": "checkout"})
        assert r.status_code == 422 and error_of(r)["field"] == "agent"
        assert "created with --agent" in error_of(r)["message"]  # the error names the fix
        r = c.post("/v1/recall", json={"query": "checkout", "agent": "reviewer", "k": 10})
        assert {h["agent"] for h in r.json()["hits"]} == {"reviewer"}
    with client(base, keys["lead"]) as c:
        ids = {
            h["id"]
            for h in c.post("/v1/recall", json={"query": "checkout", "k": 10}).json()["hits"]
        }
        # crew_shared: the crew's high-value entries (a1 escalation, a2 denial), not a3 (qa).
        assert ids == {"a1", "a2"}
    with client(base, keys["admin"]) as c:
        ids = {
            h["id"]
            for h in c.post("/v1/recall", json={"query": "checkout", "k": 10}).json()["hits"]
        }
        assert ids == {"a1", "a2", "a3"}
        r = c.post(
            "/v1/recall",
            json={
                "query": "checkout",
                "k": 10,
                "explain": True,
                "agent": "deployer",
                "scope": "own",
            },
        )
        hidden = {d["id"] for d in r.json()["trace"]["dropped"] if d["reason"] == "scope"}
        assert {"a2", "a3"} <= hidden  # an admin may see what a narrower scope hid


def test_events_batch_reports_bad_items_by_position_and_stores_the_rest(
    base: str, keys: dict[str, str], mem: Episodic
) -> None:
    with client(base, keys["admin"]) as c:
        r = c.post(
            "/v1/events",
            json={
                "events": [
                    {"id": "b1", "type": "peer.escalation", "summary": "batch one"},
                    {"id": "b2", "severity": "fatal"},
                    "not an object",
                    {"id": "b3", "type": "peer.escalation", "summary": "batch three"},
                ]
            },
        )
        assert r.status_code == 200
        report = r.json()
        assert (report["stored"], report["admitted"]) == (2, 2)
        assert [(e["index"], e["field"]) for e in report["errors"]] == [
            (1, "severity"),
            (2, "event"),
        ]
        # The key's workspace fills a blank one; a mistyped one is that event's error.
        r = c.post(
            "/v1/events",
            json={"events": [{"id": "b6", "workspace": " acme "}, {"workspace": 5}]},
        )
        assert r.status_code == 200
        assert [(e["index"], e["field"]) for e in r.json()["errors"]] == [(1, "workspace")]
        # An event naming another workspace refuses the whole batch.
        r = c.post(
            "/v1/events",
            json={"events": [{"id": "b4", "summary": "x"}, {"id": "b5", "workspace": "orbit"}]},
        )
        # The item naming another workspace is refused on its own, like any bad item.
        assert r.status_code == 200 and r.json()["stored"] == 1
        assert [(e["index"], e["field"]) for e in r.json()["errors"]] == [(1, "workspace")]
        assert "orbit" not in r.text  # no existence hint
    assert [m.id for m in mem.store.get_memories("acme", ["b1", "b3", "b4"])] == ["b1", "b3"]
    assert [e.id for e in mem.store.get_events("acme", ["b4", "b5"])] == ["b4"]


def test_an_agent_key_writes_as_its_agent(base: str, keys: dict[str, str], mem: Episodic) -> None:
    with client(base, keys["deployer"]) as c:
        event = {"id": "d1", "type": "peer.escalation", "summary": "deploy blocked"}
        r = c.post("/v1/events", json={"events": [event]})
        assert r.status_code == 200
        r = c.post("/v1/events", json={"events": [{"agent": "other"}]})
        assert r.status_code == 200 and r.json()["stored"] == 0
        assert [e["field"] for e in r.json()["errors"]] == ["agent"]
        r = c.post("/v1/memories", json={"content": "deployer prefers blue-green deploys"})
        assert r.status_code == 201 and r.json()["agent"] == "deployer"
    assert mem.store.get_events("acme", ["d1"])[0].agent == "deployer"


def test_memories_create_get_list_paginate_retire(base: str, keys: dict[str, str]) -> None:
    with client(base, keys["admin"]) as c:
        created = []
        for i in range(7):
            r = c.post(
                "/v1/memories",
                json={
                    "content": f"pagination note {i} about widgets",
                    "agent": "pager",
                    "importance": 0.9,
                    "source": "user_assertion",
                    "evidence": f"note {i}",
                    "id": f"p{i}",
                },
            )
            assert r.status_code == 201, r.text
            created.append(r.json())
        assert created[0]["importance"] == 0.9 and created[0]["evidence"] == "note 0"
        assert c.get("/v1/memories/p3").json()["content"] == "pagination note 3 about widgets"
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            params: dict[str, Any] = {"agent": "pager", "limit": 3}
            if cursor:
                params["cursor"] = cursor
            page = c.get("/v1/memories", params=params).json()
            seen += [m["id"] for m in page["items"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == 3 and sorted(seen) == [f"p{i}" for i in range(7)] and len(set(seen)) == 7
        r = c.post("/v1/memories/p2/retire")
        assert r.status_code == 200 and r.json()["status"] == "retired"
        hits = c.post("/v1/recall", json={"query": "pagination note widgets", "k": 10}).json()[
            "hits"
        ]
        assert "p2" not in {h["id"] for h in hits} and "p1" in {h["id"] for h in hits}
        retired = c.get("/v1/memories", params={"status": "retired", "agent": "pager"}).json()
        assert [m["id"] for m in retired["items"]] == ["p2"]
        r = c.get("/v1/memories", params={"cursor": "garbage!"})
        assert r.status_code == 422 and error_of(r)["field"] == "cursor"


def test_recall_explain_render_and_no_vectors_leave(base: str, keys: dict[str, str]) -> None:
    with client(base, keys["admin"]) as c:
        r = c.post("/v1/recall", json={"query": "checkout OOM", "explain": True, "k": 2})
        body = r.json()
        assert r.status_code == 200 and body["mode"] == "vector"
        assert body["hits"][0]["id"] == "a1"
        assert body["trace"]["stages"] and body["trace"]["policy"] == "default"
        r = c.post("/v1/render", json={"query": "keeper denied deploy", "max_chars": 600})
        render = r.json()
        assert render["block"].startswith("<recalled-memory>") and len(render["block"]) <= 600
        assert "UNTRUSTED HINTS" in render["block"]
        for text in (r.text, c.get("/v1/memories").text, c.get("/openapi.json").text):
            assert 'vector"' not in text.replace('"vector",', "").replace('"vector"}', "")


def test_api_recalls_count_as_references_in_batches(
    base: str, keys: dict[str, str], mem: Episodic
) -> None:
    mem.flush_marks()
    before = mem.store.get_memory("acme", "a1").reference_count
    with client(base, keys["admin"]) as c:
        for _ in range(3):
            hits = c.post("/v1/recall", json={"query": "checkout OOM cache", "k": 1}).json()
            assert [h["id"] for h in hits["hits"]] == ["a1"]
        c.post("/v1/recall", json={"query": "checkout OOM cache", "k": 1, "mark": False})
    mem.flush_marks()  # the server writes them about once a second; now, here
    assert mem.store.get_memory("acme", "a1").reference_count == before + 3


def test_messages_become_episodes_listed_by_recent(
    base: str, keys: dict[str, str], mem: Episodic
) -> None:
    with client(base, keys["admin"]) as c:
        for i, text in enumerate(
            ["The refund failed because card B expired.", "We moved the refund to card A."]
        ):
            r = c.post(
                "/v1/messages",
                json={
                    "conversation": "chat-9",
                    "text": text,
                    "name": "Dana",
                    "agent": "helper",
                    "ts": (NOW - timedelta(minutes=10 - i)).isoformat(),
                },
            )
            assert r.status_code == 201, r.text
        mem.segment(flush=True)
        episodes = c.get("/v1/recent", params={"conversation": "chat-9"}).json()["episodes"]
        assert len(episodes) == 1 and episodes[0]["message_count"] == 2


def test_health_is_404_until_a_snapshot_then_newest_first(
    base: str, keys: dict[str, str], mem: Episodic
) -> None:
    with client(base, keys["orbit"]) as c:
        r = c.get("/v1/health")
        assert r.status_code == 404 and error_of(r)["code"] == "not_found"
        raw_execute(
            mem.store.url,
            "INSERT INTO memory_health_snapshots VALUES "
            "('orbit', '', '2026-11-20', 80, 80, 80, 80, 80, 40.0), "
            "('orbit', '', '2026-11-21', 80, 80, 80, 80, 80, 62.0), "
            "('orbit', '', '2026-11-22', 80, 80, 80, 80, 80, 81.0)",
        )
        body = c.get("/v1/health", params={"history": 5}).json()
        assert (body["score"], body["band"], body["snapshot_date"]) == (81.0, "green", "2026-11-22")
        assert [(h["snapshot_date"], h["band"]) for h in body["history"]] == [
            ("2026-11-21", "yellow"),
            ("2026-11-20", "red"),
        ]


def test_forget_needs_admin_except_for_ones_own_memory(base: str, keys: dict[str, str]) -> None:
    with client(base, keys["deployer"]) as c:
        mine = c.post("/v1/memories", json={"content": "forget me later zyxwv"}).json()["id"]
        assert c.post("/v1/forget", json={"agent": "deployer"}).status_code == 403
        assert c.post("/v1/forget", json={"memory": "a2"}).status_code == 404  # not its own
    with client(base, keys["lead"]) as c:  # sees the crew's a1, but may not forget it
        assert c.get("/v1/memories/a1").status_code == 200
        assert c.delete("/v1/memories/a1").status_code == 403
        assert c.post("/v1/memories/a1/retire").status_code == 403
    with client(base, keys["deployer"]) as c:
        r = c.delete(f"/v1/memories/{mine}")
        assert r.status_code == 200 and r.json()["memories"] == 1
        assert c.get(f"/v1/memories/{mine}").status_code == 404
    with client(base, keys["admin"]) as c:
        c.post("/v1/events", json={"events": [ev("old1", "acme", "ancient zyxwv", days=400)]})
        r = c.post("/v1/forget", json={"older_than_days": 365})
        assert r.status_code == 200 and r.json()["events"] >= 1
        assert c.get("/v1/memories/old1").status_code == 404


def test_openapi_types_every_request_and_response(base: str) -> None:
    spec = httpx.get(f"{base}/openapi.json").json()
    ops = [
        (path, method, op) for path, item in spec["paths"].items() for method, op in item.items()
    ]
    assert {p for p, _, _ in ops} >= {
        "/healthz",
        "/v1/events",
        "/v1/messages",
        "/v1/memories",
        "/v1/memories/{memory_id}",
        "/v1/memories/{memory_id}/retire",
        "/v1/recall",
        "/v1/render",
        "/v1/recent",
        "/v1/health",
        "/v1/forget",
    }
    for path, method, op in ops:
        ok = op["responses"].get("200") or op["responses"].get("201")
        assert ok and "$ref" in ok["content"]["application/json"]["schema"], (path, method)
        bodiless = path.endswith(("/retire", "/restore", "/index"))  # the path says it all
        if method in ("post", "put", "patch") and path.startswith("/v1") and not bodiless:
            assert "$ref" in op["requestBody"]["content"]["application/json"]["schema"], path
        if path.startswith("/v1"):
            assert "401" in op["responses"] and "422" in op["responses"]
    schemas = spec["components"]["schemas"]
    for name, schema in schemas.items():
        assert "vector" not in schema.get("properties", {}), name


def test_a_message_batch_is_answered_with_the_200_its_schema_documents(
    base: str, keys: dict[str, str]
) -> None:
    spec = httpx.get(f"{base}/openapi.json").json()
    documented = spec["paths"]["/v1/messages"]["post"]["responses"]
    assert documented["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/MessagesOut"
    }
    assert "201" in documented  # one message
    with client(base, keys["admin"]) as c:
        # A batch of nothing but bad items: each reported, none stored, still a report.
        r = c.post("/v1/messages", json={"messages": [[], [False, None, "x"], {"": "y"}]})
    assert r.status_code == 200
    report = r.json()
    assert (report["received"], report["stored"]) == (3, 0)
    assert [e["index"] for e in report["errors"]] == [0, 1, 2]


def test_oversized_bodies_are_413_with_a_json_error(base: str, keys: dict[str, str]) -> None:
    with client(base, keys["admin"]) as c:
        big = {"query": "x" * (MAX_BODY_BYTES + 10)}
        r = c.post("/v1/recall", json=big)
        assert r.status_code == 413 and error_of(r)["field"] == "body"

        def chunks() -> Iterator[bytes]:
            yield b'{"query": "'
            for _ in range(MAX_BODY_BYTES // 65536 + 2):
                yield b"y" * 65536
            yield b'"}'

        r = c.post("/v1/recall", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413


MALFORMED: list[tuple[str, str, Any, str]] = [
    ("post", "/v1/recall", {}, "query"),
    ("post", "/v1/recall", {"query": ""}, "query"),
    ("post", "/v1/recall", {"query": 5}, "query"),
    ("post", "/v1/recall", {"query": "x", "k": "many"}, "k"),
    ("post", "/v1/recall", b'{"query": "x", "k": 1e400}', "k"),
    ("post", "/v1/recall", {"query": "x", "policy": "nope"}, "policy"),
    ("post", "/v1/recall", {"query": "x", "detail": "everything"}, "detail"),
    ("post", "/v1/recall", {"query": "x", "scope": "everyone"}, "scope"),
    ("post", "/v1/recall", {"query": "x", "types": []}, "types"),
    ("post", "/v1/recall", {"query": "x", "bogus": 1}, "bogus"),
    ("post", "/v1/recall", b'{"query": "\\ud800"}', "query"),
    ("post", "/v1/recall", [1, 2], "body"),
    ("post", "/v1/recall", "just a string", "body"),
    ("post", "/v1/render", {"query": "x", "max_chars": -1}, "max_chars"),
    ("post", "/v1/events", {"events": []}, "events"),
    ("post", "/v1/events", {"events": "nope"}, "events"),
    ("post", "/v1/events", {"events": [{}] * 1001}, "events"),
    ("post", "/v1/messages", {"conversation": "c", "text": "hi", "role": "robot"}, "role"),
    ("post", "/v1/messages", {"text": "hi"}, "conversation"),
    ("post", "/v1/messages", {"conversation": "c", "text": "hi", "ts": "yesterday"}, "ts"),
    ("post", "/v1/memories", {"content": "x", "importance": 2}, "importance"),
    ("post", "/v1/memories", {"content": "x", "source": "rumour"}, "source"),
    ("post", "/v1/memories", {"content": "   "}, "content"),
    ("post", "/v1/memories", {"content": "x", "type": "message"}, "type"),
    ("post", "/v1/memories", {"content": "x", "id": "a" * 300}, "id"),
    ("post", "/v1/forget", {"older_than_days": 0}, "older_than_days"),
    ("post", "/v1/forget", {"older_than_days": "soon"}, "older_than_days"),
    ("get", "/v1/memories?limit=0", None, "limit"),
    ("get", "/v1/memories?status=lost", None, "status"),
    ("get", "/v1/recent?limit=abc", None, "limit"),
    ("get", "/v1/health?history=-1", None, "history"),
    ("get", "/v1/memories/" + "x" * 5000, None, None),
    ("get", "/v1/memories/..%2F..%2Fetc", None, None),
    ("delete", "/v1/memories/%00", None, None),
    ("post", "/v1/memories/nope/retire", None, None),
    ("put", "/v1/recall", {"query": "x"}, None),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), MALFORMED)
def test_malformed_requests_get_a_4xx_naming_the_field(
    base: str, keys: dict[str, str], method: str, path: str, body: Any, field: str
) -> None:
    with client(base, keys["admin"]) as c:
        if isinstance(body, bytes):
            r = c.request(method, path, content=body, headers={"content-type": "application/json"})
        else:
            r = c.request(method, path, json=body) if body is not None else c.request(method, path)
    assert 400 <= r.status_code < 500, r.text
    got = error_of(r)["field"]
    assert got == field or (got or "").split(".")[0] == field, r.text


@pytest.mark.parametrize(
    "raw",
    [b"{", b'{"query": "x",}', b"\xff\xfe\x00", b"[" * 100_000 + b"]" * 100_000, b"nul\x00l"],
)
def test_undecodable_bodies_are_4xx(base: str, keys: dict[str, str], raw: bytes) -> None:
    with client(base, keys["admin"]) as c:
        r = c.post("/v1/recall", content=raw, headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500 and error_of(r)["field"] == "body"


def test_a_body_not_sent_as_json_says_to_send_it_as_json(base: str, keys: dict[str, str]) -> None:
    # What `curl -d '{"query": "x"}'` sends: a form's content type.
    with client(base, keys["admin"]) as c:
        r = c.post(
            "/v1/recall",
            content=b'{"query": "checkout"}',
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert r.status_code == 422
        error = error_of(r)
        assert error["field"] == "body"
        assert "Content-Type: application/json" in error["message"]
        assert "application/x-www-form-urlencoded" in error["message"]
        sent = c.post("/v1/recall", json={"query": "checkout", "k": "many"})
    assert "Content-Type" not in error_of(sent)["message"]  # JSON, just a wrong field


def test_a_json_body_that_is_no_object_says_the_route_takes_one(
    base: str, keys: dict[str, str]
) -> None:
    with client(base, keys["admin"]) as c:
        r = c.post("/v1/events", json=[ev("x1", "acme", "a batch sent as a bare list")])
    assert r.status_code == 422
    error = error_of(r)
    assert error["field"] == "body"
    assert error["message"].startswith("the body must be a JSON object with this route's")


def test_random_json_bodies_never_get_a_5xx(base: str, keys: dict[str, str]) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    )
    fields = st.sampled_from(
        [
            "query",
            "k",
            "policy",
            "scope",
            "agent",
            "types",
            "explain",
            "walk",
            "events",
            "content",
            "importance",
            "source",
            "conversation",
            "text",
            "role",
            "memory",
            "older_than_days",
            "max_chars",
        ]
    )
    bodies = st.dictionaries(fields, values, max_size=5) | values
    paths = st.sampled_from(
        ["/v1/recall", "/v1/render", "/v1/events", "/v1/memories", "/v1/messages", "/v1/forget"]
    )
    with client(base, keys["deployer"]) as c:

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(path=paths, body=bodies)
        def check(path: str, body: Any) -> None:
            r = c.post(path, json=body) if _jsonable(body) else c.post(path, content=repr(body))
            assert r.status_code < 500, (path, body, r.text)
            if r.status_code >= 400:
                assert "error" in r.json()

        check()


def _jsonable(value: Any) -> bool:
    import json
    import math

    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError):
        return False
    return not (isinstance(value, float) and math.isnan(value))


def test_keys_are_stored_only_as_hashes(mem: Episodic, keys: dict[str, str]) -> None:
    rows = raw_rows(mem.store.url, "SELECT * FROM api_keys")
    assert len(rows) >= len(keys)
    flat = repr(rows)
    for secret in keys.values():
        assert secret not in flat


def test_the_page_uses_the_same_keys_and_scopes(
    base: str, keys: dict[str, str], mem: Episodic
) -> None:
    with httpx.Client(base_url=base, timeout=30) as c:
        r = c.get("/ui/memories")
        assert r.status_code == 401 and 'id="login"' in r.text
        r = c.post("/ui/login", data={"key": keys["deployer"]})
        assert r.status_code == 303
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
        page = c.get("/ui/memories").text
        assert 'data-id="a1"' in page and 'data-id="a2"' not in page  # own scope only
        r = c.post("/ui/memories/a2/retire", follow_redirects=True)
        assert "no memory a2 here" in r.text
        assert mem.store.get_memory("acme", "a2").status.value == "active"
        r = c.get("/ui/recall", params={"q": "checkout", "k": "10"})
        assert r.status_code == 200 and 'data-id="a2"' not in r.text
        c.post("/ui/logout")
        assert c.get("/ui/memories").status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/v1/recent?agent=%00", None),
        ("get", "/v1/recent?conversation=a%00b", None),
        ("get", "/v1/memories?agent=%00", None),
        ("get", "/v1/memories?crew=%00", None),
        # Under a scope the agent filters (without one it only says who asks).
        ("post", "/v1/recall", {"query": "checkout", "agent": "\x00", "scope": "own"}),
        ("post", "/v1/render", {"query": "checkout", "agent": "dep\x00loyer", "scope": "own"}),
    ],
)
def test_a_nul_in_a_filter_matches_nothing(
    base: str, keys: dict[str, str], method: str, path: str, body: Any
) -> None:
    # SQLite text can hold NUL; PostgreSQL's cannot, so the store must answer "nothing
    # here" instead of failing on the parameter.
    with client(base, keys["admin"]) as c:
        r = c.request(method, path, json=body) if body is not None else c.request(method, path)
    assert r.status_code == 200, r.text
    found = r.json()
    assert not (found.get("episodes") or found.get("items") or found.get("hits")), found


def test_random_query_strings_and_paths_never_get_a_5xx(
    mem: Episodic, base: str, keys: dict[str, str]
) -> None:
    from urllib.parse import quote

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    names = st.sampled_from(
        [
            "agent",
            "crew",
            "scope",
            "resource",
            "conversation",
            "type",
            "status",
            "limit",
            "cursor",
            "history",
            "workspace",
            "x",
        ]
    )
    params = st.lists(st.tuples(names, st.text(max_size=30)), max_size=5)
    paths = st.sampled_from(["/v1/memories", "/v1/recent", "/v1/health", "/ui/memories"])
    ids = st.text(min_size=1, max_size=40)
    with client(base, keys["lead"]) as c:
        c.cookies.set("episodic_session", mem.sign_in(keys["lead"]))

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(path=paths, query=params, memory_id=ids)
        def check(path: str, query: list[tuple[str, str]], memory_id: str) -> None:
            r = c.get(path, params=query)
            assert r.status_code < 500, (path, query, r.text)
            quoted = f"{base}/v1/memories/{quote(memory_id, safe='')}"
            for method in ("GET", "DELETE"):
                r = c.request(method, quoted)
                assert r.status_code < 500, (method, memory_id, r.text)

        check()
