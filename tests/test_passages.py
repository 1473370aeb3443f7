"""A long memory is found by the passage that says what was asked, and shown by it: through
``Episodic.recall`` and ``render``, the MCP answer, HTTP and the ``Client``, on both
backends; a reindex and an edit keep its passages in step."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import pytest

from episodic import Episodic
from episodic.client import Client
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.model import Scope, ScopeFilter
from episodic.recall.answer import recall_answer
from episodic.recall.policies import DEFAULT
from episodic.scoring.passages import (
    PASSAGE_CHARS,
    PASSAGE_OVERLAP,
    extra_spans,
    passage_spans,
    span_for_words,
    words,
)
from episodic.store.dense import DenseRows
from episodic.store.passages import PassageIndex, merge_dense, passage_key
from long_memories import long_workspace, note
from servers import serve

TS = datetime(2025, 3, 1, tzinfo=UTC).isoformat()
FILLER = "We compared the deployment checklist against the runbook line by line. "
NEEDLE = "The flamingo migration needs the zeppelin quota raised before Friday."
# An assistant's long answer: the one sentence about the migration is deep inside it,
# far past what a memory's own vector reads.
LONG = FILLER * 60 + NEEDLE + " " + FILLER * 30
QUESTION = "flamingo migration zeppelin quota"


def test_spans_cover_the_text_with_overlap_and_end_on_words() -> None:
    assert passage_spans("short") == [passage_spans("short")[0]]
    spans = passage_spans(LONG)
    assert spans[0].start == 0 and spans[-1].stop == len(LONG)
    for before, after in itertools.pairwise(spans):
        assert after.start < before.stop  # overlapping: nothing falls between two
        assert before.stop - after.start <= PASSAGE_OVERLAP + 120
        assert LONG[before.stop - 1] == " "  # cut after a space, not inside a word
    assert all(s.stop - s.start <= PASSAGE_CHARS for s in spans)
    assert extra_spans(LONG) == spans[1:] and extra_spans("x" * PASSAGE_CHARS) == []


def test_span_for_words_picks_the_passage_with_the_words() -> None:
    span = span_for_words(LONG, words(QUESTION))
    assert NEEDLE in LONG[span.start : span.stop]
    assert span_for_words(LONG, frozenset()).start == 0


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    other = note("other", "The checklist review is done for the sprint.", TS)
    m = long_workspace(db_url, [note("long", LONG, TS), other], embedder=FakeEmbedder(dim=256))
    yield m
    m.close()


def _needle_span(start: int, stop: int) -> bool:
    return NEEDLE in LONG[start:stop]


def test_the_dense_leg_finds_a_long_memory_by_its_passage(mem: Episodic) -> None:
    (hit, *_) = mem.recall(QUESTION, workspace="w", policy="dense", mark=False).hits
    assert hit.id == "long" and hit.passage is not None
    assert _needle_span(*hit.passage)
    assert hit.shown.startswith("…") and NEEDLE in hit.shown and len(hit.shown) < 1100
    assert hit.to_json()["passage"]["text"] == LONG[hit.passage[0] : hit.passage[1]]


def test_default_recall_render_and_mcp_show_the_passage(mem: Episodic) -> None:
    result = mem.recall(QUESTION, workspace="w", mark=False)
    assert result.hits[0].id == "long" and _needle_span(*(result.hits[0].passage or (0, 0)))
    block = mem.render(QUESTION, workspace="w")
    assert NEEDLE in block and "passage of long" in block
    assert FILLER * 20 not in block  # not the whole memory
    answer = recall_answer(result)["memories"][0]
    assert NEEDLE in answer["content"] and len(answer["content"]) < 1100
    assert _needle_span(*answer["passage"])


def test_a_sparse_only_hit_shows_the_passage_with_the_words(db_url: str) -> None:
    m = long_workspace(db_url, [note("long", LONG, TS)])
    (hit,) = m.recall(QUESTION, workspace="w", mark=False).hits
    assert hit.passage is not None and _needle_span(*hit.passage)
    m.close()


def test_reindex_and_an_edit_keep_the_passages_in_step(mem: Episodic) -> None:
    mem.reindex()
    (hit, *_) = mem.recall(QUESTION, workspace="w", policy="dense", mark=False).hits
    assert hit.id == "long" and _needle_span(*(hit.passage or (0, 0)))
    mem.update("long", workspace="w", content=FILLER * 40)
    mem.index_once()
    found = mem.recall(QUESTION, workspace="w", policy="dense", mark=False).hits
    assert all(h.passage is None or h.passage[1] <= len(FILLER * 40) for h in found)
    (stored,) = mem.memories(ScopeFilter("w"), ["long"])
    assert stored.content == FILLER * 40


def test_http_and_the_client_carry_the_passage(mem: Episodic) -> None:
    key = mem.create_key("w", role="admin")[1]
    with serve(asgi(mem)) as url, Client(url, key) as client:
        (hit, *_) = client.recall(QUESTION, policy="dense").hits
        assert hit.id == "long" and hit.passage is not None and _needle_span(*hit.passage)
        assert NEEDLE in hit.shown


def test_passage_weight_discounts_a_match_found_by_a_later_passage(mem: Episodic) -> None:
    fused = {}
    for weight in (1.0, 0.5):
        policy = dataclasses.replace(DEFAULT, passage_weight=weight)
        result = mem.recall(
            f"{QUESTION} checklist", workspace="w", policy=policy, explain=True, mark=False
        )
        assert result.trace is not None
        dense = {r.memory_id: r.score for r in result.trace.stages["leg:dense"]}
        fused[weight] = {r.memory_id: r.score for r in result.trace.stages["fusion:blend"]}
        sparse = fused[weight]["long"] - DEFAULT.blend_dense * dense["long"] * weight
        # the long memory's cosine came from a later passage: it counts at the weight;
        # the short memory, read whole by its own vector, counts in full either way
        assert sparse == pytest.approx(
            fused[1.0]["long"] - DEFAULT.blend_dense * dense["long"], abs=1e-9
        )
    assert fused[0.5]["other"] == pytest.approx(fused[1.0]["other"])
    assert fused[0.5]["long"] < fused[1.0]["long"]


def test_a_passage_search_hands_over_each_memorys_best_passage_once() -> None:
    # A search reads hundreds of passages of a few dozen long memories; only each
    # memory's best can raise its score, so only that one is handed on to be folded.
    index = PassageIndex()
    index.spans = {
        passage_key("m1", 1): ("m1", 900, 1900),
        passage_key("m1", 2): ("m1", 1800, 2800),
        passage_key("m2", 1): ("m2", 900, 1900),
    }
    found = index.found(
        [(passage_key("m1", 2), 0.9), (passage_key("m2", 1), 0.8), (passage_key("m1", 1), 0.7)]
    )
    assert found == [("m1", 0.9, 1800, 2800), ("m2", 0.8, 900, 1900)]
    # Folded with the memories' own cosines, the answer is what every passage gave.
    assert merge_dense([("m1", 0.95), ("m2", 0.5)], found, 10) == merge_dense(
        [("m1", 0.95), ("m2", 0.5)],
        [("m1", 0.9, 1800, 2800), ("m2", 0.8, 900, 1900), ("m1", 0.7, 900, 1900)],
        10,
    )


def test_a_passage_search_picks_each_memorys_best_as_naming_every_passage_would() -> None:
    # ``best`` picks each memory's first passage among its arrays; naming every passage
    # found and folding them (``found``) gives the same rows, scores and spans, under a
    # scope, at any depth, with passages loaded in two batches and one re-embedded.
    rng = np.random.default_rng(7)

    def batch(keys: list[tuple[str, int]]) -> DenseRows:
        vecs = rng.normal(size=(len(keys), 8)).astype("<f4")
        return DenseRows(
            memory_ids=tuple(passage_key(m, n) for m, n in keys),
            vectors=tuple(v.tobytes() for v in vecs),
            models=("test/model",) * len(keys),
            agent_ids=tuple(f"agent{n % 2}" for _, n in keys),
            crew_ids=(None,) * len(keys),
            resource_ids=(None,) * len(keys),
            conversation_ids=(None,) * len(keys),
            base_importances=(0.5,) * len(keys),
            statuses=("active",) * len(keys),
        )

    index = PassageIndex()
    first = [(f"m{i}", n) for i in range(12) for n in range(1, 6)]
    later = [(f"m{i}", n) for i in range(8, 16) for n in range(6, 9)] + [("m3", 2)]
    for keys in (first, later):
        index.spans.update((passage_key(m, n), (m, 900 * n, 900 * n + 1000)) for m, n in keys)
        index.upsert(batch(keys))
    for _ in range(5):
        q = index.query_vector(rng.normal(size=8).astype("<f4"))
        for flt in (ScopeFilter("ws"), ScopeFilter("ws", agent_id="agent1")):
            for limit in (1, 7, 30, 500):
                want = index.found(index.search_pairs(flt, None, q, limit, unit=True))
                got = index.best(flt, None, q, limit)
                assert got == want
                assert len({m for m, *_ in got}) == len(got)
    own = ScopeFilter("ws", Scope.OWN, agent_id="agent0")
    q = index.query_vector(rng.normal(size=8).astype("<f4"))
    assert index.best(own, Scope.OWN, q, 9) == index.found(
        index.search_pairs(own, Scope.OWN, q, 9, unit=True)
    )
