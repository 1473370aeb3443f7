"""Payloads that JSON output cannot carry: refused by field at every way in, and a
database that already holds one (written by older code) still reads back everywhere.
On both backends, through the real HTTP server, the CLI and the Python API."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from episodic.payloads import (
    MAX_DEPTH,
    TOO_DEEP,
    UNREADABLE,
    check_json,
    safe_json,
    stored_object,
)
from episodic.store import open_store
from episodic.write.events import parse_event
from episodic.write.journal import admitted_memories
from servers import serve

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def nested(levels: int) -> dict[str, Any]:
    """An object ``levels`` deep counting itself: nested(1) == {}."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def strict_json(text: str) -> Any:
    """Parse as a strict JSON reader would: NaN and Infinity are not JSON."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


# -- the pure pieces ---------------------------------------------------------------------


def test_check_json_names_where_the_bad_value_sits() -> None:
    check_json("payload", nested(MAX_DEPTH))  # the cap itself is fine
    cases: list[tuple[Any, str, str]] = [
        (nested(MAX_DEPTH + 1), "payload", "nested more than 64"),
        (nested(256), "payload", "nested more than 64"),
        ({"lat": {"p99": math.nan}}, "payload.lat.p99", "not a finite number"),
        ({"xs": [1, math.inf]}, "payload.xs[1]", "not a finite number"),
        ({"big": 10**5000}, "payload.big", "too long"),
        ({1: "one"}, "payload", "keys must be strings"),
        ({"k\ud800": 1}, "payload", "not valid UTF-8"),
        ({"when": datetime.now(UTC)}, "payload.when", "not a JSON value: datetime"),
    ]
    for value, field, words in cases:
        with pytest.raises(InvalidInput) as info:
            check_json("payload", value)
        assert (info.value.field, words in info.value.message) == (field, True), info.value


def test_safe_json_keeps_what_output_can_carry_and_marks_the_rest() -> None:
    fine = {"a": [1, 2.5, "x", None, True, {"b": -(2**70)}]}
    assert safe_json(fine) == fine
    repaired = safe_json({"deep": nested(300), "n": math.nan, "i": -math.inf, "s": "a\udc80"})
    assert depth(repaired) == MAX_DEPTH
    assert repaired["n"] is None and repaired["i"] is None and repaired["s"] == "a\ufffd"
    cut = repaired["deep"]
    while isinstance(cut, dict):
        cut = cut["a"]
    assert cut == TOO_DEEP
    # Stored text, as an older version may have written it.
    assert stored_object('{"x": NaN, "y": [Infinity]}') == {"x": None, "y": [None]}
    assert depth(stored_object(json.dumps(nested(500)))) == MAX_DEPTH
    assert stored_object("[" * 100_000 + "]" * 100_000)[UNREADABLE]
    assert UNREADABLE in stored_object("[1, 2]") and UNREADABLE in stored_object("{oops")
    assert stored_object('{"k": "\\ud800"}') == {"k": "\ufffd"}


# -- every way in refuses, and nothing is committed --------------------------------------


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(),
        clock=lambda: NOW,
    )
    yield m
    m.close()


def client(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_http_writes_refuse_by_field_and_commit_nothing(mem: Episodic) -> None:
    _, admin = mem.create_key("acme", role="admin")
    good = {"id": "ok1", "type": "peer.escalation", "summary": "checkout outage"}
    with serve(asgi(mem)) as base, client(base, admin) as c:
        r = c.post(
            "/v1/events",
            json={"events": [good, {**good, "id": "bad1", "payload": nested(256)}]},
        )
        assert r.status_code == 200
        body = r.json()
        assert body["stored"] == 1
        assert body["errors"] == [
            {"index": 1, "field": "payload", "message": "nested more than 64 levels deep"}
        ]
        r = c.post("/v1/memories", json={"content": "deep note", "payload": nested(256)})
        assert r.status_code == 422 and r.json()["error"]["field"] == "payload"
        # The refused writes left nothing behind, so a retry cannot duplicate them.
        items = c.get("/v1/memories").json()["items"]
        assert [m["id"] for m in items] == ["ok1"]
        assert c.post("/v1/recall", json={"query": "deep note checkout"}).status_code == 200
    with pytest.raises(InvalidInput) as info:
        mem.add_message(
            "hello", workspace="acme", conversation="c1", payload={"trace": nested(100)}
        )
    assert info.value.field == "payload"
    with pytest.raises(InvalidInput) as info:
        mem.remember("a note", workspace="acme", payload={"score": math.nan})
    assert info.value.field == "payload.score"
    assert [m.id for m in mem.list_memories(mem.authenticate(admin).reading()).items] == ["ok1"]


def test_cli_ingest_reports_each_bad_line_and_stores_the_rest(
    db_url: str, mem: Episodic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    line = {"workspace": "acme", "type": "peer.escalation", "summary": "checkout outage"}
    file = tmp_path / "events.jsonl"
    file.write_text(
        "\n".join(
            [
                json.dumps({**line, "id": "e1"}),
                json.dumps({**line, "id": "e2", "payload": nested(300)}),
                '{"workspace": "acme", "id": "e3", "summary": "x", "payload": {"v": NaN}}',
                json.dumps({**line, "id": "e4", "refs": {"deep": nested(MAX_DEPTH)}}),
                json.dumps({**line, "id": "e5"}),
            ]
        )
        + "\n"
    )
    result = CliRunner().invoke(app, ["--db", db_url, "ingest", str(file), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["stored"] == 2
    assert [(e["line"], e["field"]) for e in report["errors"]] == [
        (2, "payload"),
        (3, "payload.v"),
        (4, "refs"),
    ]


# -- a database that already holds such payloads reads back everywhere --------------------


def plant(mem: Episodic, memory_id: str, payload: dict[str, Any]) -> None:
    """Store a memory with ``payload`` straight through the store, past the input check,
    as older code did."""
    event = parse_event(
        {
            "id": memory_id,
            "workspace": "acme",
            "agent": "deployer",
            "type": "peer.escalation",
            "summary": f"checkout outage poisoned {memory_id}",
        },
        settings=Settings(),
        now=NOW,
    )
    event = replace(event, payload=payload)
    mem.store.append([event], admitted_memories([event], NOW, keys=False))


def test_stored_poison_never_breaks_a_read(
    db_url: str, mem: Episodic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(mem, "p1", {"deep": nested(300)})
    plant(mem, "p2", {"n": math.nan, "i": math.inf})
    _, admin = mem.create_key("acme", role="admin")
    _, agent = mem.create_key("acme", role="agent", agent="deployer")
    mem.index_once()

    # Python
    got = mem.memory(mem.authenticate(admin).reading(), "p2")
    assert dict(got.payload) == {"n": None, "i": None}
    hits = mem.recall("checkout outage poisoned", workspace="acme", k=5).hits
    assert {h.id for h in hits} == {"p1", "p2"}
    for h in hits:
        strict_json(json.dumps(h.to_json()))

    # HTTP: list, get one, recall, render; as an admin and as the agent whose memory it is.
    with serve(asgi(mem)) as base:
        for key in (admin, agent):
            with client(base, key) as c:
                r = c.get("/v1/memories")
                assert r.status_code == 200 and {m["id"] for m in r.json()["items"]} == {
                    "p1",
                    "p2",
                }
                one = c.get("/v1/memories/p1")
                assert one.status_code == 200 and TOO_DEEP in one.text
                assert c.get("/v1/memories/p2").json()["payload"] == {"n": None, "i": None}
                r = c.post("/v1/recall", json={"query": "checkout outage poisoned"})
                assert r.status_code == 200 and len(r.json()["hits"]) == 2
                r = c.post("/v1/render", json={"query": "checkout outage poisoned"})
                assert r.status_code == 200
        session = {"episodic_session": mem.sign_in(admin)}
        page = httpx.get(f"{base}/ui/memories", cookies=session, timeout=30)
        assert page.status_code == 200 and "poisoned p1" in page.text

    # CLI: recall --json is strict JSON; export writes both.
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    runner = CliRunner()
    result = runner.invoke(
        app, ["--db", db_url, "recall", "checkout outage poisoned", "-w", "acme", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert {h["id"] for h in strict_json(result.stdout)} == {"p1", "p2"}
    result = runner.invoke(app, ["--db", db_url, "export", str(tmp_path / "out"), "-w", "acme"])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "out").rglob("*.md"))) == 2

    # A learning-type filter reads the payload: a row that is not JSON has no type, and
    # replacing that payload (read by the vector index's reload) breaks nothing either.
    ask = {"workspace": "acme", "k": 5, "mark": False}
    assert mem.recall("checkout outage poisoned", learning_type="corrective", **ask).hits == []
    mem.update("p2", workspace="acme", payload={"learning_type": "corrective"})
    found = mem.recall("checkout outage poisoned", learning_type="corrective", **ask).hits
    assert [h.id for h in found] == ["p2"]


def test_stored_poison_through_mcp(mem: Episodic) -> None:
    plant(mem, "p1", {"deep": nested(300), "n": math.nan})
    server = build_server(mem, Binding.of("acme", "deployer", None, None))

    async def main() -> Any:
        async with Client(server) as c:
            return await c.call_tool("recall_memory", {"query": "checkout outage poisoned"})

    result = anyio.run(main)
    assert not result.is_error
    assert [m["id"] for m in result.structured_content["memories"]] == ["p1"]


def test_markdown_import_refuses_payloads_by_file_and_field(mem: Episodic, tmp_path: Path) -> None:
    folder = tmp_path / "hand" / "acme"
    folder.mkdir(parents=True)
    head = "---\nid: {id}\nworkspace: acme\ntype: note\n{extra}---\nA hand-written note.\n"
    deep = "{a: " * 100 + "1" + "}" * 100
    for name, extra in (
        ("good", ""),
        ("nan", "payload:\n  ratio: .nan\n"),
        ("deep", f"payload: {deep}\n"),
    ):
        (folder / f"{name}.md").write_text(head.format(id=name, extra=extra), encoding="utf-8")
    report = mem.import_markdown(tmp_path / "hand")
    assert {e.path: e.field for e in report.errors} == {
        "acme/nan.md": "payload.ratio",
        "acme/deep.md": "payload",
    }
    assert report.inserted == 1


def test_python_ingest_checks_events_built_by_the_caller(mem: Episodic) -> None:
    good = parse_event(
        {"id": "b1", "workspace": "acme", "type": "peer.escalation", "summary": "fine"},
        settings=Settings(),
        now=NOW,
    )
    report = mem.ingest([good, replace(good, id="b2", refs={"x": math.inf})])
    assert report.stored == 1
    assert [(e.line, e.field) for e in report.errors] == [(2, "refs.x")]
