"""`default` weighs its two legs per query: towards the leg whose best match stands out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic
from episodic.embed.fake import FakeEmbedder
from episodic.recall.policies import DEFAULT
from episodic.scoring.blend import blend, confident_weight
from episodic.store import open_store

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
TEXTS = [
    "kafka consumer lag on the orders topic",
    "orders topic lag after the deploy",
    "kafka broker disk full on node three",
    "lunch at noon on friday",
    "the orders service restarted twice",
]


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    for i, text in enumerate(TEXTS):
        report = m.ingest(
            [
                {
                    "id": f"e{i}",
                    "workspace": "w",
                    "type": "note",
                    "summary": text,
                    "refs": {"episodic": True},
                    "ts": (NOW - timedelta(days=i + 1)).isoformat(),
                }
            ]
        )
        assert report.admitted == 1
    m.index_once()
    yield m
    m.close()


def test_default_moves_its_blend_weight_towards_the_leg_that_stands_out(mem: Episodic) -> None:
    assert DEFAULT.confidence_fusion == 0.25
    result = mem.recall("kafka orders lag", workspace="w", k=3, explain=True)
    assert result.trace is not None
    legs = {
        name: {r.memory_id: r.score for r in result.trace.stages[f"leg:{name}"]}
        for name in ("dense", "sparse")
    }
    share = confident_weight(0.4, legs["dense"], legs["sparse"], 0.25)
    # the two legs' best matches do not stand out alike: the share moved off 0.4
    assert share != pytest.approx(0.4, abs=1e-3)
    expected = dict(
        blend(
            legs["dense"],
            legs["sparse"],
            dense_weight=share,
            sparse_weight=1.0 - share,
            every_match=True,
        )
    )
    fused = {r.memory_id: r.score for r in result.trace.stages["fusion:blend"]}
    assert fused == pytest.approx(expected)
    fixed = dict(
        blend(legs["dense"], legs["sparse"], dense_weight=0.4, sparse_weight=0.6, every_match=True)
    )
    assert fused != pytest.approx(fixed)
