"""Seed 002's layer hooks over HTTP (``/v1/layer/*``, ``/v1/sessions/{id}/end``): bad
input is a 422 naming the field, and a key sees and writes only what it may."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from episodic import Client, Episodic, Settings
from episodic.errors import Forbidden
from episodic.http import asgi
from episodic.model import ScopeFilter
from episodic.store import open_store
from servers import serve

NOW = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
RUN = [
    {"role": "user", "content": "The nightly refund batch timed out at the payment gateway."},
    {"role": "assistant", "content": "Raising the gateway connection pool to 20 fixed it."},
]


@pytest.fixture
def served(db_url: str) -> Iterator[tuple[Episodic, str]]:
    mem = Episodic(
        store=open_store(db_url),
        embedder=None,
        settings=Settings(embedder="none"),
        clock=lambda: NOW,
    )
    with mem, serve(asgi(mem)) as base:
        yield mem, base


def post(base: str, key: str, path: str, body: object) -> httpx.Response:
    return httpx.post(
        f"{base}{path}", json=body, headers={"authorization": f"Bearer {key}"}, timeout=60
    )


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/v1/layer/complete",
            {"transcript": [{"role": "robot", "content": "x"}]},
            "transcript.0.role",
        ),
        ("/v1/layer/complete", {"outcome": "success"}, "transcript"),
        (
            "/v1/layer/complete",
            {"transcript": [{"role": "user", "content": 5}]},
            "transcript.0.content",
        ),
        ("/v1/layer/recall", {"budget_tokens": "800"}, "budget_tokens"),
        ("/v1/layer/recall", {"budget_tokens": 0}, "budget_tokens"),
        ("/v1/layer/recall", {"budget_tokens": 800, "order": "relevant"}, "query"),
        ("/v1/layer/recall", {"budget_tokens": 800, "order": "oldest"}, "order"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    served: tuple[Episodic, str], path: str, body: dict[str, object], field: str
) -> None:
    mem, base = served
    key = mem.create_key("acme", role="admin")[1]
    r = post(base, key, path, body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field
    assert mem.stats("acme").events == 0  # nothing of a refused run was stored


def test_an_agent_key_completes_and_recalls_only_its_own_runs(
    served: tuple[Episodic, str],
) -> None:
    mem, base = served
    admin = mem.create_key("acme", role="admin")[1]
    agent = mem.create_key("acme", role="agent", agent="deployer")[1]
    done = post(base, admin, "/v1/layer/complete", {"agent": "other", "transcript": RUN})
    assert done.status_code == 200 and done.json()["episodes"], done.text
    mine = post(base, agent, "/v1/layer/complete", {"transcript": RUN, "outcome": "success"})
    assert mine.status_code == 200, mine.text
    assert {e["agent"] for e in mine.json()["episodes"]} == {"deployer"}
    found = post(base, agent, "/v1/layer/recall", {"budget_tokens": 2000}).json()
    assert [e["agent"] for e in found["episodes"]] == ["deployer"]
    assert "(outcome: success)" in found["text"]
    refused = post(base, agent, "/v1/layer/recall", {"budget_tokens": 800, "agent": "other"})
    assert refused.status_code == 403, refused.text


def reinforcement(mem: Episodic, ids: set[str]) -> dict[str, int]:
    return {
        m.id: int(m.payload.get("reinforcement_count", 0))
        for m in mem.memories(ScopeFilter("acme"), list(ids))
    }


def test_a_session_is_ended_only_by_the_agent_that_recalled_in_it(
    served: tuple[Episodic, str],
) -> None:
    """Ending a session reinforces what its recalls returned: an agent key may not end
    another agent's session (that would count the other agent's recalls), an admin key
    may end any, and the owner's own end still works after a refusal."""
    mem, base = served
    admin = mem.create_key("acme", role="admin")[1]
    deployer = mem.create_key("acme", role="agent", agent="deployer")[1]
    other = mem.create_key("acme", role="agent", agent="other")[1]
    assert post(base, deployer, "/v1/layer/complete", {"transcript": RUN}).status_code == 200
    asked = {"query": "refund batch gateway", "session": "s-deployer"}
    hits = post(base, deployer, "/v1/recall", asked).json()["hits"]
    ids = {h["id"] for h in hits}
    assert ids
    refused = post(base, other, "/v1/sessions/s-deployer/end", {})
    assert refused.status_code == 403, refused.text
    assert "'s-deployer'" in refused.json()["error"]["message"]
    assert set(reinforcement(mem, ids).values()) == {0}  # nothing was counted
    # Through the layer's complete too: the other agent's run may not end it.
    via_layer = {"transcript": RUN, "session": "s-deployer"}
    assert post(base, other, "/v1/layer/complete", via_layer).status_code == 403
    assert set(reinforcement(mem, ids).values()) == {0}
    # The Python client raises what Episodic.end_session raises.
    with Client(base, other) as client, pytest.raises(Forbidden, match="'s-deployer'"):
        client.end_session("s-deployer")
    mine = post(base, deployer, "/v1/sessions/s-deployer/end", {})
    assert mine.status_code == 200, mine.text
    assert set(mine.json()["reinforced"]) == ids
    # An admin key ends any agent's session.
    post(base, deployer, "/v1/recall", {**asked, "session": "s-2"})
    ended = post(base, admin, "/v1/sessions/s-2/end", {})
    assert ended.status_code == 200 and set(ended.json()["reinforced"]) == ids, ended.text
    assert set(reinforcement(mem, ids).values()) == {2}
