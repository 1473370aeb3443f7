"""Long messages, notes and event summaries are stored whole, up to 1 Mi characters, on
both backends and through HTTP; a longer one is refused naming its field while the rest of
its batch is kept. The payload's own cap is unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from episodic import Episodic, Settings
from episodic.config import MAX_CONTENT_CHARS
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import MAX_BODY_BYTES, asgi
from episodic.model import ScopeFilter
from episodic.store import open_store
from servers import serve

TS = datetime(2025, 3, 1, tzinfo=UTC).isoformat()
KEEP = {"episodic": True}  # admission keeps events marked worth remembering


def long_answer(chars: int, *, alphabet: str = "") -> str:
    """An assistant's answer with code and logs: many distinct words, quotes and newlines
    (what JSON escapes), ``chars`` characters long."""
    lines: list[str] = []
    size = n = 0
    while size < chars:
        lines.append(f'    log("step {n}", token_{n:06d}{alphabet}) # "quoted" \\ tab\t{n * 7919}')
        size += len(lines[-1]) + 1
        n += 1
    return "\n".join(lines)[:chars]


def event(event_id: str, summary: str) -> dict[str, Any]:
    return {
        "id": event_id,
        "workspace": "w",
        "type": "note",
        "refs": KEEP,
        "summary": summary,
        "ts": TS,
    }


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=64), settings=Settings())
    yield m
    m.close()


def test_the_default_cap_is_a_mebibyte_of_characters() -> None:
    assert Settings().max_text_chars == MAX_CONTENT_CHARS == 1_048_576
    assert Settings().max_payload_bytes == 65_536  # the payload's cap stays


def test_events_up_to_the_cap_are_stored_whole_and_a_longer_one_is_refused(
    mem: Episodic,
) -> None:
    whole = long_answer(MAX_CONTENT_CHARS)
    report = mem.ingest(
        [
            event("big", whole),
            event("over", whole + "x"),
            event("small", "short"),
        ]
    )
    assert [(e.line, e.field) for e in report.errors] == [(2, "summary")]
    assert "1048577 characters is over the cap of 1048576" in report.errors[0].message
    assert report.stored == 2
    (big,) = mem.memories(ScopeFilter("w"), ["big"])
    assert big.content == whole  # stored whole: the last characters are there
    assert mem.memories(ScopeFilter("w"), ["small"])[0].content == "short"
    # found by words near its end on the keyword leg
    last_token = f"token_{(len(whole.splitlines()) - 2):06d}"
    hits = mem.recall(last_token, workspace="w", policy="bm25", mark=False).hits
    assert [h.id for h in hits][:1] == ["big"]


def test_a_long_message_in_a_batch_is_refused_by_its_content_field(mem: Episodic) -> None:
    report = mem.add_messages(
        [
            {"content": long_answer(300_000), "role": "assistant", "id": "m1"},
            {"content": "y" * (MAX_CONTENT_CHARS + 1), "role": "assistant", "id": "m2"},
            {"content": "thanks", "role": "user", "id": "m3"},
        ],
        workspace="w",
        conversation="c",
    )
    assert [(e.line, e.field) for e in report.ingest.errors] == [(1, "content")]
    assert report.ids == ["m1", None, "m3"]
    (m1,) = mem.memories(ScopeFilter("w"), ["m1"])
    assert len(m1.content) == 300_000


def test_a_long_note(mem: Episodic) -> None:
    note = mem.remember(long_answer(200_000), workspace="w")
    assert len(note.content) == 200_000
    with pytest.raises(InvalidInput) as refused:
        mem.remember("z" * (MAX_CONTENT_CHARS + 1), workspace="w")
    assert refused.value.field == "content"


@pytest.fixture
def http_base(db_url: str) -> Iterator[tuple[str, str]]:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=64), settings=Settings())
    key = m.create_key("w", role="admin")[1]
    with serve(asgi(m)) as url:
        yield url, key
    m.close()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(long_answer(MAX_CONTENT_CHARS), id="code"),
        # three UTF-8 bytes a character: 3 MiB of body for one message
        pytest.param(long_answer(MAX_CONTENT_CHARS, alphabet="記録"), id="cjk"),
    ],
)
def test_http_takes_a_message_at_the_cap(http_base: tuple[str, str], text: str) -> None:
    url, key = http_base
    auth = {"Authorization": f"Bearer {key}"}
    body: dict[str, Any] = {"conversation": "c", "content": text, "role": "assistant"}
    assert len(text) == MAX_CONTENT_CHARS
    assert len(httpx.Request("POST", url, json=body).content) < MAX_BODY_BYTES
    answer = httpx.post(f"{url}/v1/messages", json=body, headers=auth, timeout=60)
    assert answer.status_code in (200, 201), answer.text
    stored = httpx.get(f"{url}/v1/memories/{answer.json()['id']}", headers=auth, timeout=60)
    assert stored.json()["content"] == text
    over = httpx.post(
        f"{url}/v1/messages", json={**body, "content": text + "x"}, headers=auth, timeout=60
    )
    assert over.status_code == 422 and "content" in over.text
    note = httpx.post(f"{url}/v1/memories", json={"content": text}, headers=auth, timeout=60)
    assert note.status_code in (200, 201), note.text
