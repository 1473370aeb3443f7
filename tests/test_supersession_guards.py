"""The guards every supersession passes, offline and with a model: only an older memory,
only of the same agent, crew and resource, never a memory by one made from it, never a
reason or outcome by a new instruction; and the sentences that never signal a change
(temporary stays, hypotheticals, questions, being used to something).

Each guard's test pairs a blocked case with the same pair minus what the guard reads, so
taking the guard out makes the test fail.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic import Episodic
from episodic.config import Settings
from episodic.errors import LLMError
from episodic.llm.base import DEFAULT_MAX_TOKENS
from episodic.model import MemoryStatus, ScopeFilter
from episodic.write.change_rules import decide
from supersession_support import T0, WS, Clock

FALCON = "Ship my parcels with Falcon Express."
HERON = "Ship my parcels with Heron Logistics instead of Falcon Express."


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(db_url: str, clock: Clock) -> Iterator[Episodic]:
    m = Episodic.open(db_url, embedder=None, settings=Settings(), clock=clock)
    yield m
    m.close()


def status(mem: Episodic, memory_id: str) -> MemoryStatus:
    return mem.store.get_memory(WS, memory_id).status


# -- sentences that never signal a change ---------------------------------------------------
def test_the_plain_change_supersedes() -> None:
    # The pair every guard below starts from: without the guarded words, it is a change.
    assert decide(HERON, FALCON).kind == "supersedes"


@pytest.mark.parametrize(
    ("new", "why"),
    [
        ("For this week ship my parcels with Heron Logistics instead of Falcon Express.", "temp"),
        ("Until Friday, ship my parcels with Heron Logistics instead of Falcon Express.", "temp"),
        (
            "While I'm away, ship my parcels with Heron Logistics instead of Falcon Express.",
            "temp",
        ),
        ("If we switch, ship my parcels with Heron Logistics instead of Falcon Express.", "hyp"),
        ("Can you ship my parcels with Heron Logistics instead of Falcon Express?", "question"),
        ("Do you ship my parcels with Heron Logistics instead of Falcon Express", "question"),
        (
            "I'm getting used to shipping my parcels with Heron Logistics instead of "
            "Falcon Express.",
            "used",
        ),
    ],
)
def test_a_temporary_stay_hypothetical_question_or_habit_is_no_change(new: str, why: str) -> None:
    verdict = decide(new, FALCON)

    assert verdict.kind == "unrelated", verdict
    words = {"temp": "temporary", "hyp": "hypothetical", "question": "question", "used": "used"}
    assert words[why] in verdict.reason


def test_a_reason_is_not_superseded_by_the_next_instruction() -> None:
    # The refund example: why it failed stays true once a new card is named.
    old = "The refund for INV-20931 failed because the card ending 4242 had expired."
    new = "Refund it to the new card ending 1881 instead."
    verdict = decide(new, old)

    assert verdict.kind == "unrelated" and verdict.rule == "reason-or-outcome", verdict
    # The same instruction over a plain statement of the card is a change.
    assert decide(new, "Refund it to the card ending 4242.").kind == "supersedes"


# -- the guards on the pair, through the service --------------------------------------------
def test_only_an_older_memory_is_superseded(mem: Episodic, clock: Clock) -> None:
    # A newer note, then an older change backfilled after it: the older one replaces
    # nothing newer than itself, so recall still has the newer note.
    clock.now = T0 + timedelta(days=30)
    mem.remember("Ship my parcels with Heron Logistics.", workspace=WS, id="newer")
    backfilled = {
        "id": "older",
        "workspace": WS,
        "type": "note",
        "ts": (T0 + timedelta(days=10)).isoformat(),
        "summary": "Ship my parcels with Falcon Express instead of Heron Logistics.",
        "refs": {"episodic": True},
    }
    assert mem.ingest([backfilled]).admitted == 1
    mem.check_supersessions()

    assert status(mem, "newer") is MemoryStatus.ACTIVE
    assert status(mem, "older") is MemoryStatus.ACTIVE
    hits = mem.recall("which courier ships my parcels", workspace=WS, mark=False).hits
    assert "newer" in {h.id for h in hits}


def test_only_a_memory_of_the_same_owner_is_superseded(mem: Episodic, clock: Clock) -> None:
    mem.remember(FALCON, workspace=WS, agent="shop", id="agents")
    mem.remember(FALCON, workspace=WS, crew="ops", id="crews")
    clock.now = T0 + timedelta(days=21)
    mem.remember(HERON, workspace=WS, id="nobodys")  # no agent, crew or resource

    assert status(mem, "agents") is MemoryStatus.ACTIVE
    assert status(mem, "crews") is MemoryStatus.ACTIVE
    mem.remember(HERON, workspace=WS, agent="shop", id="shops")
    assert status(mem, "agents") is MemoryStatus.SUPERSEDED


# -- a model's answer is checked in code -----------------------------------------------------
class YesMan:
    """A model that says every candidate is superseded, and refuses every other step."""

    model_id = "yes-man"

    def complete_json(
        self,
        system: str,
        user: str,
        schema: Mapping[str, Any],
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> dict[str, Any]:
        if schema.get("title") != "supersession_decisions":
            raise LLMError("only the supersession step")
        body = user.split("\n", 1)[1].rsplit("\n", 1)[0]
        refs = [c["ref"] for c in json.loads(body)["candidates"]]
        return {
            "decisions": [
                {"ref": r, "decision": "supersedes", "reason": "the model says so"} for r in refs
            ]
        }


@pytest.fixture
def yes(db_url: str, clock: Clock) -> Iterator[Episodic]:
    from episodic.store import open_store

    m = Episodic(
        store=open_store(db_url), embedder=None, settings=Settings(), clock=clock, llm=YesMan()
    )
    yield m
    m.close()


def test_the_models_answer_is_held_to_the_guards(yes: Episodic, clock: Clock) -> None:
    yes.remember(FALCON, workspace=WS, agent="shop", id="other-owner")
    yes.remember(
        "The refund for INV-20931 failed because the card ending 4242 had expired.",
        workspace=WS,
        id="reason",
    )
    clock.now = T0 + timedelta(days=2)
    yes.remember(
        "Refund INV-20931 to the new card ending 1881 instead, and ship with Falcon Express.",
        workspace=WS,
        id="new",
    )

    assert status(yes, "other-owner") is MemoryStatus.ACTIVE
    assert status(yes, "reason") is MemoryStatus.ACTIVE
    # What no guard protects, the model may replace.
    yes.remember("Refund INV-20931 to card ending 4242.", workspace=WS, id="plain")
    clock.now = T0 + timedelta(days=3)
    yes.remember("Refund INV-20931 to card ending 1881.", workspace=WS, id="newest")
    assert status(yes, "plain") is MemoryStatus.SUPERSEDED
    [link] = [s for s in yes.store.supersessions(WS, ["plain"]) if s.old_id == "plain"]
    assert link.decided_by == "llm:yes-man"


def test_an_entry_never_supersedes_the_message_it_was_made_from(
    yes: Episodic, clock: Clock
) -> None:
    yes.add_messages(
        [
            {"id": "m1", "role": "user", "content": HERON},
            {"id": "m2", "role": "assistant", "content": "Sure."},
        ],
        conversation="chat",
        workspace=WS,
    )
    clock.now = T0 + timedelta(hours=4)
    yes.segment(flush=True, workspace=WS)
    made = [
        m
        for m in yes.list_memories(ScopeFilter(workspace_id=WS)).items
        if "m1" in m.source_event_ids and m.id != "m1" and m.type != "episode"
    ]
    assert made, "the message gave an entry or a learning"

    assert status(yes, "m1") is MemoryStatus.ACTIVE
    for m in made:
        assert status(yes, m.id) is MemoryStatus.ACTIVE, m


# -- stories and look-alikes written for these tests -------------------------------------
STORIES = json.loads(
    (Path(__file__).parent / "fixtures" / "update_stories.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize(("old", "new"), [(c[0], c[1]) for c in STORIES["controls"]])
def test_a_look_alike_control_never_supersedes(old: str, new: str) -> None:
    assert decide(new, old).kind != "supersedes", decide(new, old)


def test_the_stories_changes_are_caught_without_a_false_one() -> None:
    caught = sum(
        decide(story["texts"][n], story["texts"][o]).kind == "supersedes"
        for story in STORIES["stories"]
        for o, n in story["changes"]
    )
    changes = sum(len(story["changes"]) for story in STORIES["stories"])
    # Precision first: fewer than all, and never a story text over a later one.
    assert caught * 3 >= changes, (caught, changes)
    for story in STORIES["stories"]:
        for o, n in story["changes"]:
            assert decide(story["texts"][o], story["texts"][n]).kind != "supersedes"


def test_the_rule_names_no_value_or_opening_of_the_updates_generator() -> None:
    # The offline rule must hold on wording nobody tuned for: none of the values the
    # updates benchmark's generator writes, nor its change templates' openings, may be
    # vocabulary of the rule.
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "make_scenarios", root / "benchmarks" / "updates" / "make_scenarios.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    sys.modules["make_scenarios"] = generator
    spec.loader.exec_module(generator)
    values = {v.casefold() for slot in generator.SLOTS for v in slot.values}
    # The two words a template opens with ("quick update", "heads up", "scratch what"),
    # but the change language any speaker uses.
    openings = {
        " ".join(re.findall(r"[a-z]+", template.casefold().split("{")[0])[:2])
        for _, template in generator.GENERIC_CHANGES
    } - {"", "from now", "going forward", "instead of", "correction"}
    # The rule's modules, and those it once had.
    names = ("change_rules", "supersession", "value_rules", "statement_words")
    rule = "\n".join(
        path.read_text(encoding="utf-8").casefold()
        for name in names
        if (path := root / "src" / "episodic" / "write" / f"{name}.py").exists()
    )
    words = set(re.findall(r"[\w#@.-]+", rule))
    assert not {v for v in values if v in words or (" " in v and v in rule)}
    assert not {o for o in openings if " " in o and o in rule}
