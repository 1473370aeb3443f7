"""Segmentation against the labelled fixture, with the real MiniLM model: the offline path
stays above the boundary precision/recall it measured, the LLM path asks only about the
pre-filter's candidates, and ordinary turns are not key moments.

Floors sit a little under what ``benchmarks/bench_segmentation.py`` measured with the
constants in ``episodic.write.segment`` and ``episodic.write.topics`` (offline: exact F1
0.52, within one message 0.71; LLM path: within one 0.94, 148 candidates asked about for
420 messages). Before those constants (surprise after 3 messages, floor 0.5), the offline
path scored F1 0.11 exact and 0.36 within one, making 101 episodes where 40 are labelled.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chat_server import MODEL, running_chat_server
from episodic.embed.cache import CachedEmbedder, DictCache
from episodic.embed.local import MiniLMEmbedder
from episodic.llm.openai_compat import OpenAICompatLLM
from episodic.write.segment import KEY_MOMENT_SURPRISE
from segmentation_fixture import (
    FixtureRun,
    Labelled,
    LabelledResponder,
    load_fixture,
    opening_surprises,
    segment_fixture,
)

pytestmark = pytest.mark.model

ORDINARY = ("Got it", "Makes sense", "That split works well")


@pytest.fixture(scope="module")
def conversations() -> list[Labelled]:
    return load_fixture()


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    # Each text once for the whole module: both paths and the ordinary-turn check read
    # the same messages.
    return CachedEmbedder(MiniLMEmbedder(), DictCache())


@pytest.fixture(scope="module")
def offline(conversations: list[Labelled], embedder: CachedEmbedder) -> FixtureRun:
    return segment_fixture(conversations, embedder)


@pytest.fixture(scope="module")
def with_llm(
    conversations: list[Labelled], embedder: CachedEmbedder
) -> Iterator[tuple[FixtureRun, LabelledResponder]]:
    responder = LabelledResponder()
    with running_chat_server() as server:
        server.responder = responder
        with OpenAICompatLLM(base_url=server.base_url, model=MODEL, timeout_s=30.0) as llm:
            yield segment_fixture(conversations, embedder, llm, responder), responder


def test_the_fixture_is_what_the_benchmark_describes(conversations: list[Labelled]) -> None:
    assert len(conversations) >= 12
    assert sum(len(c.messages) for c in conversations) >= 400
    kinds = [k for c in conversations for k in c.boundaries.values()]
    assert {"topic", "soft gap", "hard gap"} == set(kinds)
    assert any(not c.boundaries for c in conversations)  # turns with no shift at all


def test_offline_boundaries_stay_above_the_measured_floor(
    conversations: list[Labelled], offline: FixtureRun
) -> None:
    exact = offline.scores(conversations, 0)
    near = offline.scores(conversations, 1)
    assert exact.f1 >= 0.45, exact
    assert near.f1 >= 0.65, near
    assert near.precision >= 0.65, near
    # About as many episodes as the labels say, not one every three messages.
    labelled = sum(len(c.boundaries) + 1 for c in conversations)
    made = sum(len(episodes) for episodes in offline.episodes.values())
    assert made <= 1.25 * labelled, (made, labelled)
    # Time gaps always split.
    for kind in ("soft gap", "hard gap"):
        found, of = offline.recall_of(conversations, kind)
        assert found == of, kind


def test_the_llm_is_asked_about_candidates_only_and_recovers_the_topics(
    conversations: list[Labelled], with_llm: tuple[FixtureRun, LabelledResponder]
) -> None:
    run, responder = with_llm
    near = run.scores(conversations, 1)
    assert near.f1 >= 0.85, near
    found, of = run.recall_of(conversations, "topic")
    assert found >= of - 1, (found, of)
    # One request a conversation at most, about well under half of the messages.
    assert responder.topic_requests <= len(conversations)
    assert responder.candidates_asked <= 0.5 * sum(len(c.messages) for c in conversations)


def test_ordinary_turns_are_not_key_moments(
    conversations: list[Labelled], embedder: CachedEmbedder
) -> None:
    scored = opening_surprises(conversations, embedder)
    texts = {(c.id, i): m.text for c in conversations for i, m in enumerate(c.messages)}
    named = [(texts[cid, i], s) for cid, i, s in scored if texts[cid, i].startswith(ORDINARY)]
    assert len(named) >= 10  # "Got it", "Makes sense", "That split works well" ...
    assert all(s < KEY_MOMENT_SURPRISE for _, s in named), named
    # Not one turn of the fixture that starts no episode would open a key moment.
    key = [(cid, i, s) for cid, i, s in scored if s >= KEY_MOMENT_SURPRISE]
    assert key == []
    assert len(scored) >= 250


def test_real_pivots_are_key_moments(
    conversations: list[Labelled], with_llm: tuple[FixtureRun, LabelledResponder]
) -> None:
    run, _ = with_llm
    by_id = {c.id: c for c in conversations}
    key_starts = [
        (cid, start) for cid, episodes in run.episodes.items() for start, _, key in episodes if key
    ]
    # Every key moment opens a labelled episode, and the sharpest turns are among them.
    assert all(start in by_id[cid].boundaries for cid, start in key_starts), key_starts
    assert {("dinner-then-cover-letter", 14), ("quick-dev-questions", 3)} <= set(key_starts)
