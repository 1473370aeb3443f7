"""Two notes about different cases (another number, id or name) are never one restated:
the restatement check and the similarity dedupe both keep the new case."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest

from episodic.write import dedupe, extract
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


def test_a_long_message_is_read_once_not_once_per_capitalised_word() -> None:
    # A long assistant answer (a log, a listing) has thousands of capitalised words: each
    # used to scan the whole text before it again, minutes for one message.
    text = "Started Worker on Node. " * 6_000 + "Then Falcon 7731 failed."
    started = time.process_time()
    found = identifiers(text)
    assert time.process_time() - started < 2.0
    assert found == {"worker", "node", "falcon", "7731"}


def test_sentence_openings_are_read_back_over_spaces_only() -> None:
    # An opening after a sentence's end and line breaks, or at the very start, is no name;
    # one after a comma or a word is.
    assert identifiers("Falcon failed.\n\n  Redis was full: Kafka too; Vault, Consul") == {"consul"}
    assert identifiers("  Falcon") == set()


def test_only_pairs_close_enough_to_be_duplicates_have_their_cases_compared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every pair's identifiers were compared, though a pair below the threshold can drop
    # nothing: with long entries and a scope of many, that was most of a session's work.
    compared: list[tuple[str, str]] = []

    def counting(note: str, known: str) -> set[str]:
        compared.append((note, known))
        return new_identifiers(note, known)

    monkeypatch.setattr(dedupe, "new_identifiers", counting)
    entries = [
        Entry(f"note {i}", "user_assertion", f"note {i}", "m0", "offline") for i in range(40)
    ]
    vectors = np.eye(48, dtype=np.float32)
    kept, dropped = drop_similar(
        entries,
        vectors[:40],
        vectors[40:],
        existing_ids=[f"mem{j}" for j in range(8)],
        existing_texts=[f"stored {j}" for j in range(8)],
    )
    assert kept == list(range(40)) and dropped == []
    assert compared == []
    # A close pair is still compared, and a new case still kept.
    close = np.vstack([vectors[40], vectors[40]])
    kept, _ = drop_similar(
        [
            Entry(f"Invoice {n} failed", "user_assertion", "x", "m0", "offline")
            for n in (4472, 4473)
        ],
        close,
        vectors[40:41],
        existing_texts=["Invoice 4471 failed"],
    )
    assert kept == [0, 1] and compared


def test_the_restatement_check_compares_cases_only_where_the_words_are_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compared: list[str] = []

    def counting(note: str, known: str) -> set[str]:
        compared.append(known)
        return new_identifiers(note, known)

    monkeypatch.setattr(extract, "new_identifiers", counting)
    unrelated = [f"The garden shed {n} needs a new roof before winter." for n in range(30)]
    note = "Invoice 4472 failed to sync to the ledger because its tax code field was empty."
    found = extract_entries([Message("m0", "user", note, NOW)], None, known=[*unrelated, KNOWN])
    assert [e.content for e in found.entries] == [note]
    assert compared == [KNOWN]
