"""A standing rule the question touches keeps a place near the top (policy.rule_keep_margin,
recall/rule_keep.py), and what counts as laying a rule down (write/directives.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from episodic import Episodic
from episodic.bench.folds import parse_tune, variant
from episodic.cli import app
from episodic.embed.local import MiniLMEmbedder
from episodic.model import Candidate
from episodic.recall.policies import DEFAULT, POLICIES
from episodic.recall.rule_keep import STAGE, keep_rule, rule_to_keep
from episodic.store import open_store
from episodic.write.directives import states_own_rule, states_standing_rule

T = datetime(2026, 3, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "Always mention the HTTP status code in examples of API error handling.",
        "Never push to main on a Friday afternoon.",
        "Always bring a spare charger to the client site.",
        "Always be explicit about the time zone in dates.",
        "user: Don't use tabs in the Python files.",
        "- Make sure every migration has a down step.",
        "Please always answer in British English.",
        "From now on, ship my parcels with Heron Logistics.",
        "The deploys go through the staging cluster going forward.",
        "I want you to always show the units next to a number.",
        "Thanks for the help. Never log full card numbers, mask all but the last four.",
        # a preference, also stated inside a request
        "I prefer plain SQL over an ORM for the reporting queries.",
        "user: I'd rather keep the bundle small, can you suggest a date library?",
        "I really prefer answers with a short example first.",
    ],
)
def test_a_sentence_that_lays_a_rule_down(text: str) -> None:
    assert states_standing_rule(text)


@pytest.mark.parametrize(
    "text",
    [
        "Should I always pin the versions of my dependencies?",  # a question
        "I never liked the taste of coffee.",  # "never" inside a plain statement
        "You should totally go for it, the view is worth it.",
        "Never again!",  # too short to be a rule
        "The build failed because the cache was never warmed up.",
        "Here is the script:\n```\n# always run as root\nmake all\n```",  # code
        "I need you to check the invoice from March.",  # a one-off request
        "Sam: Never heard of that band before, are they any good",  # the "I" dropped
        "Always loved the smell of rain on the porch.",
        "Always a pleasure to catch up with you two.",
        "Always happy to lend a hand with the garden.",
        "Always cheering for the home team, rain or shine.",
        "Don't think the printer likes the new toner much.",
        "Do you prefer the window seat or the aisle?",  # asks for the listener's
        "I prefer.",  # too short
        "Don't worry, it happens to everyone.",  # comfort, not a rule
        "Don't hesitate to reach out if the build breaks again.",
    ],
)
def test_a_sentence_that_lays_no_rule_down(text: str) -> None:
    assert not states_standing_rule(text)


@pytest.mark.parametrize(
    "text",
    [
        "Always include the status codes when I ask about API error handling.",
        "user: Never book me on a flight that leaves before 7am.",
        "From now on, remind me to attach the invoice number.",
        "Please always answer in British English when I'm writing to clients.",
        "Thanks! Make sure my name is spelled Zoë in every letter.",
    ],
)
def test_a_rule_that_names_its_speaker(text: str) -> None:
    assert states_own_rule(text) and states_standing_rule(text)


@pytest.mark.parametrize(
    "text",
    [
        "Always mention the HTTP status code in examples of API error handling.",
        "Never give up on your dreams!",  # advice about the listener
        "Make sure to take some time for yourself this weekend.",
        "Don't worry, I won't let anything get me down.",
        "I prefer plain SQL over an ORM for the reporting queries.",  # a preference
        "Should I always answer when my manager calls?",  # a question
        "I always take the train to work.",  # no rule laid down
    ],
)
def test_a_rule_that_names_no_speaker_or_no_rule(text: str) -> None:
    assert not states_own_rule(text)


def dense(*pairs: tuple[str, float]) -> list[Candidate]:
    return [Candidate(i, s, n) for n, (i, s) in enumerate(pairs, start=1)]


TEXTS = {
    "answer": "When a call to the API fails, retry with backoff and show the user a message.",
    "rule": "Always mention the HTTP status code in examples of API error handling.",
    "far_rule": "Never schedule a deploy during the Friday demo.",
    "question": "Should I always retry a failed API call?",
    "long_rule": "Always log the request id. " + "The handler then writes the body. " * 40,
    "own_rule": "Always mention the HTTP status code when I ask about API errors.",
}


def pick(
    candidates: list[Candidate], margin: float = 0.1, depth: int = 10, own: float = 0.0
) -> tuple[str | None, list[list[str]]]:
    """What rule_to_keep picks, and the ids it asked to read (one list per read)."""
    reads: list[list[str]] = []

    def read(ids: Sequence[str]) -> Mapping[str, str]:
        reads.append(list(ids))
        return {i: TEXTS[i] for i in ids if i in TEXTS}

    policy = dataclasses.replace(
        DEFAULT, rule_keep_margin=margin, rule_keep_depth=depth, rule_keep_own_margin=own
    )
    return rule_to_keep(candidates, policy, lambda i: None, read), reads


def test_the_best_rule_within_the_margin_of_the_legs_best_is_picked() -> None:
    chosen, reads = pick(dense(("answer", 0.70), ("question", 0.66), ("rule", 0.62)))
    assert chosen == "rule"
    assert reads == [["answer", "question", "rule"]]  # one read, the candidates near the top


def test_a_rule_further_below_the_legs_best_than_the_margin_is_not_picked() -> None:
    chosen, reads = pick(dense(("answer", 0.70), ("far_rule", 0.55)))
    assert chosen is None and reads == [["answer"]]
    assert pick(dense(("answer", 0.70), ("far_rule", 0.55)), margin=0.2)[0] == "far_rule"


def test_a_question_a_long_memory_or_one_past_the_depth_is_not_a_rule_to_keep() -> None:
    assert pick(dense(("answer", 0.70), ("question", 0.69)))[0] is None
    assert pick(dense(("answer", 0.70), ("long_rule", 0.69)))[0] is None
    assert pick(dense(("answer", 0.70), ("rule", 0.69)), depth=1)[0] is None


def test_off_reads_nothing() -> None:
    chosen, reads = pick(dense(("rule", 0.70)), margin=0.0)
    assert chosen is None and reads == []


def test_a_rule_naming_its_speaker_is_kept_from_deeper_and_further_below_the_best() -> None:
    filler = [(f"x{n}", 0.69 - n * 0.001) for n in range(12)]
    candidates = dense(("answer", 0.70), *filler, ("rule", 0.60), ("own_rule", 0.59))
    # Past the margin's depth and further than its margin: only the speaker's own rule.
    assert pick(candidates, own=0.15)[0] == "own_rule"
    assert pick(candidates, own=0.0)[0] is None
    assert pick(candidates, own=0.1)[0] is None  # 0.11 below the best
    # Within the margin's head any rule still counts, and the better one wins.
    near = dense(("answer", 0.70), ("rule", 0.66), ("own_rule", 0.65))
    assert pick(near, own=0.15)[0] == "rule"


def test_off_the_speakers_own_rule_reads_no_further_than_the_margin() -> None:
    candidates = dense(("answer", 0.70), ("own_rule", 0.50))
    assert pick(candidates, margin=0.0, own=0.0) == (None, [])
    assert pick(candidates, margin=0.0, own=0.25) == ("own_rule", [["answer", "own_rule"]])


def test_the_rule_moves_up_to_its_place_passing_anything_and_the_trace_says_from_where() -> None:
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6), ("rule", 0.5)]
    kept = keep_rule(ranked, "rule", DEFAULT)
    assert [i for i, _ in kept] == ["a", "b", "rule", "c", "d"]
    assert [s for _, s in kept] == sorted((s for _, s in kept), reverse=True)
    assert keep_rule(ranked, None, DEFAULT) == ranked


def test_the_keep_is_a_policy_field_the_bench_can_sweep_and_on_in_default_only() -> None:
    assert DEFAULT.rule_keep_margin > 0 and DEFAULT.rule_keep_rank == 3
    assert DEFAULT.rule_keep_own_margin > DEFAULT.rule_keep_margin
    others = [p for p in POLICIES.values() if p is not DEFAULT]
    assert all(p.rule_keep_margin == 0 and p.rule_keep_own_margin == 0 for p in others)
    sweep = parse_tune(["rule_keep_margin=0,0.1", "rule_keep_rank=3,5"])
    assert sweep["rule_keep_margin"] == (0.0, 0.1)
    tuned = variant(DEFAULT, {"rule_keep_margin": 0.2, "rule_keep_rank": 5})
    assert (tuned.rule_keep_margin, tuned.rule_keep_rank) == (0.2, 5)
    assert variant(DEFAULT, {"rule_keep_own_margin": 0.0}).rule_keep_own_margin == 0.0


# A user's chat about an app calling an API: many messages and answers share the
# question's words, and the rule laid down once shares few of them.
RULE = "Always mention the HTTP status code in examples of API error handling."
TURNS = [
    (
        "user",
        "Something goes wrong when my weather app calls the forecast API with a city "
        "name that has an accent.",
    ),
    (
        "assistant",
        "When an app calls an API with a city name that has an accent, the usual "
        "culprit is encoding: percent-encode the query string, send UTF-8, and check what the "
        "API answers for names it does not know. " * 3,
    ),
    (
        "user",
        "My app's API calls go wrong after about fifty requests a minute, what could be happening?",
    ),
    (
        "user",
        "The forecast API sometimes answers slowly and my app shows a blank screen, what "
        "goes wrong there?",
    ),
    (
        "assistant",
        "A blank screen after a slow API call usually means the app renders before "
        "the promise settles; show a loading state, add a timeout, and render a friendly message "
        "when the call goes wrong. " * 3,
    ),
    ("user", RULE),
    (
        "user",
        "When the API key expires, my app's calls go wrong silently and the user sees old data.",
    ),
    ("user", "What goes wrong if two tabs of my app call the API at the same time?"),
    (
        "user",
        "I added retries to my app's API calls, but some calls still go wrong after three tries.",
    ),
    (
        "user",
        "My app calls the geocoding API before the forecast API, and when the first call "
        "goes wrong the second never runs.",
    ),
    ("user", "I'm planning a hiking trip to the Alps in June with my sister."),
]
QUESTION = "How do I make my app cope when the API fails?"


def written(db_url: str, turns: Sequence[tuple[str, str]]) -> Iterator[Episodic]:
    """``turns`` as a chat (three to a session) on the backend, with the real model, read
    forty days later."""
    mem = Episodic(
        store=open_store(db_url), embedder=MiniLMEmbedder(), clock=lambda: T + timedelta(days=40)
    )
    for n, (who, text) in enumerate(turns):
        mem.remember(text, workspace="w", id=f"t{n}", conversation=f"s{n // 3}", agent=who)
    mem.index_once()
    yield mem
    mem.close()


@pytest.fixture
def chat(db_url: str) -> Iterator[Episodic]:
    """The chat above on each backend."""
    yield from written(db_url, TURNS)


@pytest.mark.model
def test_default_keeps_the_rule_a_user_laid_down_near_the_top(chat: Episodic) -> None:
    mem = chat
    off = dataclasses.replace(DEFAULT, rule_keep_margin=0)
    plain = [h.id for h in mem.recall(QUESTION, workspace="w", k=8, policy=off, mark=False).hits]
    assert "t5" not in plain[:3]  # answers and questions on the topic crowd it out

    result = mem.recall(QUESTION, workspace="w", k=8, mark=False, explain=True)
    ids = [h.id for h in result.hits]
    assert ids.index("t5") < 3
    assert result.trace is not None and STAGE in result.trace.stages
    moved = [row for row in result.trace.stages[STAGE] if row.detail]
    assert [row.memory_id for row in moved] == ["t5"]
    # the rest keep their order around it
    assert [i for i in ids if i != "t5"] == [i for i in plain if i != "t5"][: len(ids) - 1]
    block = mem.render(QUESTION, workspace="w", k=5)
    assert "HTTP status code" in block


@pytest.mark.model
def test_a_rule_the_question_does_not_touch_stays_where_it_was(chat: Episodic) -> None:
    mem = chat
    question = "Where am I going hiking in June?"
    off = dataclasses.replace(DEFAULT, rule_keep_margin=0)
    plain = [h.id for h in mem.recall(question, workspace="w", k=8, policy=off, mark=False).hits]
    result = [h.id for h in mem.recall(question, workspace="w", k=8, mark=False).hits]
    assert result == plain and result[0] == "t10"


@pytest.mark.model
def test_the_command_line_shows_the_kept_rule_and_the_step(chat: Episodic, db_url: str) -> None:
    args = ["--db", db_url, "recall", QUESTION, "-w", "w", "-k", "5", "--no-mark", "--explain"]
    result = CliRunner().invoke(app, args, env={"EPISODIC_EMBEDDER": "local"})
    assert result.exit_code == 0, result.output
    stage = next(line for line in result.stdout.splitlines() if "keep:rule:" in line)
    assert any(f"{n}. t5 " in stage for n in (1, 2, 3))
    assert "HTTP status code" in result.stdout


# The same chat with the rule in the user's own words, asked about in others: it matches
# the question 0.1 below the best message, beyond the margin any rule is kept within; an
# impersonal rule about as close stays where fusion put it.
OWN_RULE = "Always mention the HTTP status code when I ask about API errors."
IMPERSONAL = "Always mention the HTTP status code in examples of API errors."
OWN_TURNS = [
    *TURNS[:5],
    ("user", OWN_RULE),
    *TURNS[6:],
    ("user", "My app freezes when the weather API fails, how do I make it recover?"),
    ("user", IMPERSONAL),
]


@pytest.fixture
def own_chat(db_url: str) -> Iterator[Episodic]:
    yield from written(db_url, OWN_TURNS)


@pytest.mark.model
def test_default_keeps_a_rule_in_the_users_own_words_from_further_down(
    own_chat: Episodic,
) -> None:
    mem = own_chat
    own, impersonal = "t5", f"t{len(OWN_TURNS) - 1}"
    off = dataclasses.replace(DEFAULT, rule_keep_own_margin=0)
    plain = [h.id for h in mem.recall(QUESTION, workspace="w", k=8, policy=off, mark=False).hits]
    assert own not in plain[:3] and impersonal not in plain[:3]

    result = mem.recall(QUESTION, workspace="w", k=8, mark=False, explain=True)
    ids = [h.id for h in result.hits]
    assert ids.index(own) < 3
    assert impersonal not in ids[:3]
    assert result.trace is not None
    assert [row.memory_id for row in result.trace.stages[STAGE] if row.detail] == [own]
    assert "when I ask about API errors" in mem.render(QUESTION, workspace="w", k=5)


def test_the_texts_of_short_candidates_are_read_alone_on_each_backend(db_url: str) -> None:
    """What the step reads far down the dense leg: each memory's text and nothing else
    (``tests/test_rank_rows.py`` counts that no whole row is read for it)."""
    mem = Episodic(store=open_store(db_url), clock=lambda: T)
    try:
        mem.remember(OWN_RULE, workspace="w", id="rule")
        mem.remember("My app freezes when the API fails.", workspace="w", id="note")
        mem.remember(IMPERSONAL, workspace="x", id="elsewhere")
        found = mem.store.texts_of("w", ["rule", "note", "elsewhere", "unknown", "rule"])
        assert found == {"rule": OWN_RULE, "note": "My app freezes when the API fails."}
        assert mem.store.texts_of("w", []) == {}
    finally:
        mem.close()
