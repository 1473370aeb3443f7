"""Seed 004's exclusions in code: a statement the same transcript corrects later
(``corrected_later``), and a model's note that is a preference, a profile fact, a rule,
advice or a guess, each dropped with its reason; and what keeps a statement."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.write.corrections import corrected_by
from episodic.write.exclusions import note_exclusion
from episodic.write.extract import extract_entries
from episodic.write.messages import Message

NOW = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
REDIS = "The checkout outage last night was caused by the Redis cache eviction policy."


def chat(*lines: tuple[str, str]) -> list[Message]:
    return [Message(f"m{i}", role, text, NOW) for i, (role, text) in enumerate(lines)]


def test_a_later_correction_drops_the_earlier_diagnosis_with_its_reason() -> None:
    fix = "Actually it was the expired DNS record for the payment host, not Redis."
    found = extract_entries(chat(("user", REDIS), ("assistant", "Noted."), ("user", fix)), None)
    assert [e.content for e in found.entries] == [fix]
    (dropped,) = found.dropped
    assert (dropped.content, dropped.reason) == (REDIS, "corrected_later")
    assert "m2" in dropped.detail and "redis" in dropped.detail


@pytest.mark.parametrize(
    "later",
    [
        # Rules Redis out, but says nothing is being corrected: a second problem.
        "The queue worker on the payment host is not Redis based at all today.",
        # Says it corrects something, but rules out nothing the statement said.
        "Actually the outage lasted forty minutes and hit the mobile checkout too.",
    ],
)
def test_a_later_message_must_both_correct_and_rule_out_a_word_of_the_statement(
    later: str,
) -> None:
    found = extract_entries(chat(("user", REDIS), ("user", later)), None)
    assert REDIS in [e.content for e in found.entries]
    assert all(d.reason != "corrected_later" for d in found.dropped)


def test_only_a_later_message_corrects() -> None:
    earlier = "Actually it was never Redis, the DNS record for the payment host expired."
    found = extract_entries(chat(("user", earlier), ("user", REDIS)), None)
    assert REDIS in [e.content for e in found.entries]
    assert corrected_by(REDIS, []) is None


def test_offline_exclusions_are_recorded_not_silent() -> None:
    found = extract_entries(
        chat(("user", "I prefer email over phone calls for every delivery update.")), None
    )
    assert found.entries == ()
    assert [d.reason for d in found.dropped] == ["preference"]


@pytest.mark.parametrize(
    ("content", "evidence", "kind"),
    [
        ("The user prefers short answers with bullet points.", "Short answers work.", "preference"),
        ("The user's daughter is called Mia and is six.", "We went to the zoo.", "profile"),
        ("The assistant should always reply in German.", "Reply in German.", "agent rule"),
        ("The user wants a refund before the holidays.", "Refund me soon.", "wish"),
        ("It's always a good idea to back up before a migration.", "Backups matter.", "advice"),
        ("Maybe the warehouse packed the wrong box.", "Wrong box, I think.", "speculation"),
        # Judged by its evidence when its wording gives nothing away.
        ("Dana and email updates.", "I prefer email over phone calls for updates.", "preference"),
    ],
)
def test_a_models_note_is_judged_by_its_wording_and_its_evidence(
    content: str, evidence: str, kind: str
) -> None:
    assert note_exclusion(content, [evidence]) == kind


def test_a_models_case_is_kept_when_one_quoted_sentence_may_be_an_entry() -> None:
    evidence = ["I prefer email.", "The cable was never packed at the warehouse."]
    assert note_exclusion("The cable was never packed at the warehouse.", evidence) is None
    case = "The gateway rejects a reused capture id, so partial refunds fail with 409."
    assert note_exclusion(case, [case]) is None
