"""Two notes about different cases (another number, id or name) are never one restated:
the restatement check and the similarity dedupe both keep the new case."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from episodic.write.cases import identifiers, new_identifiers
from episodic.write.dedupe import drop_similar
from episodic.write.extract import Entry, extract_entries
from episodic.write.messages import Message

NOW = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
KNOWN = "Invoice 4471 failed to sync to the ledger because its tax code field was empty."


def test_identifiers_are_numbers_ids_and_names_not_sentence_openings() -> None:
    text = "Invoice INV-20931 for Acme failed on v2.31. The Redis cache was full."
    assert identifiers(text) == {"inv-20931", "acme", "v2.31", "redis"}
    assert new_identifiers("Invoice 4472 failed to sync.", KNOWN) == {"4472"}
    assert new_identifiers("The invoice 4471 failed to sync.", KNOWN) == set()


def test_a_new_case_is_not_a_restatement_of_a_known_one() -> None:
    other = "Invoice 4472 failed to sync to the ledger because its tax code field was empty."
    same = "Invoice 4471 did not sync to the ledger since its tax code field was empty."
    found = extract_entries(
        [Message("m0", "user", other, NOW), Message("m1", "user", same, NOW)], None, known=[KNOWN]
    )
    assert [e.content for e in found.entries] == [other]
    assert [(d.content, d.reason) for d in found.dropped] == [(same, "restates_known")]


def test_a_new_case_is_not_similar_to_a_stored_one_or_to_one_of_its_batch() -> None:
    def entry(text: str) -> Entry:
        return Entry(text, "user_assertion", text, "m0", "offline")

    batch = [entry(KNOWN.replace("4471", "4472")), entry(KNOWN.replace("4471", "4473"))]
    vectors = np.ones((2, 4), np.float32) / 2.0  # identical: cosine 1.0
    kept, dropped = drop_similar(batch, vectors, vectors[:1], existing_texts=[KNOWN])
    assert (kept, dropped) == ([0, 1], [])
    # The same case, stored: a duplicate, as before.
    kept, dropped = drop_similar(
        batch[:1], vectors[:1], vectors[:1], existing_texts=[batch[0].content]
    )
    assert kept == [] and dropped[0].reason == "similar"


OWN = "I started a new job as a night nurse at the Leeds hospital last week."


def test_whose_fact_it_is_tells_two_notes_apart() -> None:
    wife = "Last week my wife started a new job as a night nurse at the Leeds hospital."
    assert "wife" in identifiers(wife)
    assert new_identifiers(wife, OWN) == {"wife"}
    # A possessive before a word the known note holds names nobody new.
    assert new_identifiers("My new job as a night nurse at the Leeds hospital.", OWN) == set()
    # "its" names a part of a thing, not whose fact it is.
    assert identifiers("The invoice failed: its tax code was empty.") == set()


def test_a_relatives_fact_is_not_a_restatement_of_the_users_own() -> None:
    wife = "Last week my wife started a new job as a night nurse at the Leeds hospital."
    again = "Last week I started a new job as a night nurse at the Leeds hospital."
    found = extract_entries(
        [Message("m0", "user", wife, NOW), Message("m1", "user", again, NOW)], None, known=[OWN]
    )
    assert [e.content for e in found.entries] == [wife]
    assert [(d.content, d.reason) for d in found.dropped] == [(again, "restates_known")]


def test_a_relatives_fact_is_not_similar_to_the_users_own() -> None:
    wife = "Last week my wife started a new job as a night nurse at the Leeds hospital."
    entry = Entry(wife, "user_assertion", wife, "m0", "offline")
    vectors = np.ones((1, 4), np.float32) / 2.0  # identical: cosine 1.0
    kept, dropped = drop_similar([entry], vectors, vectors, existing_texts=[OWN])
    assert (kept, dropped) == ([0], [])
