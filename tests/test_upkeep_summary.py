"""The offline consolidator's summary: a heading with the shared subject, then the
evidence's own sentences, each adding something, within the room an LLM item gets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from episodic.model import Memory
from episodic.upkeep.summary import SUMMARY_MAX_CHARS, cluster_summary, shared_subject

T0 = datetime(2026, 11, 6, 20, 36, tzinfo=UTC)

# Two reports of one incident from the bundled sample journal (an escalation, then the
# rollback summary), the second restating the first before adding the fix.
REPLAY = (
    "The webhook replay during the payments v3 cutover issued 37 duplicate refunds "
    "(EUR 4,310 total): refund handlers in v3 do not check the idempotency key from the v2 "
    "ledger."
)
ROLLBACK = (
    "Payments v3 cutover rollback: duplicate refunds came from replaying webhooks into "
    "handlers that could not see v2 idempotency keys. Finance reversed all 37; v3 will "
    "import the v2 key table before any replay."
)


def mem(id: str, text: str, hours: float = 0.0) -> Memory:
    return Memory(id, "acme", T0 + timedelta(hours=hours), "peer.escalation", text)


def test_a_subject_then_what_each_memory_adds_oldest_first() -> None:
    # Given newest first, as consolidation scans them.
    summary = cluster_summary([mem("b", ROLLBACK, hours=5), mem("a", REPLAY)])
    assert summary == (
        "Payments v3 cutover (2 memories, 2026-11-06 to 2026-11-07): " + REPLAY + " "
        "Finance reversed all 37; v3 will import the v2 key table before any replay."
    )
    assert "Recurring" not in summary and "|" not in summary


def test_repeats_of_one_report_add_nothing() -> None:
    text = "checkout pod OOM killed after the cache TTL change in production"
    summary = cluster_summary([mem(f"m{i}", f"{text} {tail}") for i, tail in enumerate("xyz")])
    assert summary == f"Checkout pod OOM killed (3 memories, 2026-11-06): {text} x."


def test_without_a_shared_phrase_the_heading_names_no_subject() -> None:
    summary = cluster_summary(
        [mem("a", "Billing export failed at midnight."), mem("b", "Invoices were late again!")]
    )
    assert summary == (
        "2 related memories (2026-11-06): Billing export failed at midnight. "
        "Invoices were late again!"
    )


@pytest.mark.parametrize(
    ("texts", "subject"),
    [
        # Stopwords never start or end it; punctuation between words ends it.
        (["rolled back the cache TTL change, then", "the cache TTL change broke it"],
         "cache TTL change"),
        # What more memories share beats a longer phrase fewer share.
        (["staging deploy of the new billing service failed", "staging deploy of billing",
          "new billing service staging deploy"], "staging deploy"),
        # A lone shared word is no subject.
        (["cache eviction", "cache warmup"], ""),
    ],
)  # fmt: skip
def test_the_shared_subject(texts: list[str], subject: str) -> None:
    assert shared_subject([[t] for t in texts]) == subject


def test_long_evidence_fits_the_room_cut_at_a_word() -> None:
    long = "Replica lag " + " ".join(f"step{i} ok" for i in range(400)) + "."
    summary = cluster_summary([mem("a", long), mem("b", "Replica lag again " * 50)])
    assert len(summary) <= SUMMARY_MAX_CHARS and summary.endswith("…")
    assert summary.startswith("Replica lag (2 memories, 2026-11-06): Replica lag step0 ok")
