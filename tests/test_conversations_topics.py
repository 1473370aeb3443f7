"""Segmentation through the service: the topic channel asks the LLM only about the
candidates the embedding pre-filter found (no candidate, no request), and an episode's
surprise is measured against the episode before it even when that one was closed by an
earlier run."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from chat_server import MODEL, ChatServer, Recorded, Reply, running_chat_server
from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.llm.openai_compat import OpenAICompatLLM
from episodic.llm.prompts import DEFAULT_PROMPTS
from episodic.store import open_store
from episodic.write.episodes import episode_json
from segmentation_fixture import other_step_reply

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
DIM = 8


def axis(i: int, wobble: float = 0.0) -> Any:
    v = np.zeros(DIM, np.float32)
    v[i] = 1.0
    v[(i + 1) % DIM] = wobble
    return v / np.linalg.norm(v)


class TopicModel:
    """Answers the topic prompt with ``starts`` and records the candidates it was asked
    about; every other step gets a minimal valid reply."""

    def __init__(self, starts: list[int]) -> None:
        self.starts = starts
        self.asked: list[list[int]] = []

    def __call__(self, request: Recorded) -> Reply:
        system = request.body["messages"][0]["content"]
        if system != DEFAULT_PROMPTS.topics_system:
            return other_step_reply(system)
        user = request.body["messages"][1]["content"]
        listed = re.search(r"Candidate messages: \[([\d, ]*)\]", user)
        self.asked.append([int(x) for x in listed.group(1).split(",")] if listed else [])
        return 200, ChatServer.completion(f'{{"starts": {self.starts}}}'), 0.0


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as srv:
        yield srv


@pytest.fixture
def mem(chat: ChatServer, db_url: str) -> Iterator[Episodic]:
    service = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=DIM),
        settings=Settings(),
        clock=lambda: T0 + timedelta(hours=1),
        llm=OpenAICompatLLM(base_url=chat.base_url, model=MODEL, timeout_s=5.0),
    )
    yield service
    service.close()


def feed_with_vectors(mem: Episodic, conversation: str, vectors: list[Any]) -> list[str]:
    """Messages whose vectors are stored up front (as the indexer would have), so the
    pre-filter sees exactly these."""
    ids = []
    for i, _ in enumerate(vectors):
        ids.append(
            mem.add_message(
                f"message {i} of {conversation}",
                workspace="acme",
                conversation=conversation,
                role="user" if i % 2 == 0 else "assistant",
                ts=T0 + timedelta(minutes=i),
            ).id
        )
    mem.store.put_vectors(f"fake-bow-{DIM}", DIM, list(zip(ids, vectors, strict=True)))
    return ids


def starts_of(mem: Episodic, conversation: str, ids: list[str]) -> list[tuple[int, str]]:
    found = mem.recent(workspace="acme", conversation=conversation, limit=20)
    return sorted((ids.index(e.source_event_ids[0]), e.payload["boundary"]) for e in found)


def test_no_candidate_no_llm_request(mem: Episodic, chat: ChatServer) -> None:
    model = TopicModel(starts=[])
    chat.responder = model
    calm = [axis(0, 0.05 * (i % 3)) for i in range(6)]
    ids = feed_with_vectors(mem, "calm", calm)

    assert mem.segment(flush=True).episodes == 1

    assert model.asked == []  # the topic step was never asked
    assert starts_of(mem, "calm", ids) == [(0, "start")]


def test_the_llm_judges_only_the_candidates(mem: Episodic, chat: ChatServer) -> None:
    # Two subjects, three messages each: the pre-filter offers message 3 alone. The model
    # names 3 and 5; 5 was not a candidate and is ignored.
    model = TopicModel(starts=[3, 5])
    chat.responder = model
    ids = feed_with_vectors(mem, "two", [axis(0)] * 3 + [axis(4)] * 3)

    assert mem.segment(flush=True).episodes == 2

    assert model.asked == [[3]]
    assert starts_of(mem, "two", ids) == [(0, "start"), (3, "topic")]


# -- the event model carries across runs ---------------------------------------------------
REFUNDS = [
    "Partial refunds fail with HTTP 409 since Monday at the payment gateway.",
    "The payment gateway rejects a partial refund whose idempotency key it has seen.",
    "We reuse the capture id as the idempotency key for every partial refund.",
    "Send a fresh idempotency key with every partial refund to the payment gateway.",
]
MORE_REFUNDS = [
    "Partial refunds at the payment gateway still fail with HTTP 409 for one shop.",
    "That shop reuses the idempotency key for every partial refund at the gateway.",
    "A fresh idempotency key per partial refund fixed the HTTP 409 at the gateway.",
]
GARDEN = [
    "My tomatoes in the greenhouse got yellow leaves after the heat wave.",
    "Yellow tomato leaves after heat often mean the plants need more water and shade.",
    "I will water the greenhouse tomatoes every morning and add a shade cloth.",
]


def test_a_later_run_measures_surprise_against_the_episode_before(db_url: str) -> None:
    clock = [T0]
    mem = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(),
        clock=lambda: clock[0],
        llm=None,
    )
    surprises = []
    for n, texts in enumerate([REFUNDS, MORE_REFUNDS, GARDEN]):
        start = T0 + timedelta(minutes=10 * n)
        for i, text in enumerate(texts):
            mem.add_message(
                text,
                workspace="acme",
                conversation="c1",
                role="user" if i % 2 == 0 else "assistant",
                ts=start + timedelta(minutes=i),
            )
        clock[0] = start + timedelta(minutes=5)
        assert mem.segment(flush=True).episodes == 1  # each run closes one episode
        newest = mem.recent(workspace="acme", conversation="c1", limit=1)[0]
        surprises.append(episode_json(newest)["surprise"])
    mem.close()
    first, same_subject, new_subject = surprises
    assert first == 0.0  # nothing came before it
    # The second run's episode continues the first: little surprise. The third turns to
    # something else entirely, measured against the refund episode the run before closed
    # (the fake embedder's word overlap, not a calibrated model: no key-moment threshold).
    assert same_subject < 0.3
    assert new_subject > 0.5
