"""Seed 004 (n8n agent memory): source-backed entries from earlier threads, injected into
the next one.

Dana talks to a shop's concierge agent over several threads on simulated days (Omar to
the same agent, and Dana to another agent, beside her). Everything runs on the default
path: offline extraction (no LLM), the real MiniLM model. The stories check what Dana and
the agent's builder would notice: only Dana's lasting statements of fact become entries,
each quoting her exact words; greetings, thanks, passing wishes, preferences and rules
for the agent do not; saying a known fact again adds nothing; a new thread is primed with
entries only, newest first with their ages, and never with someone else's; the agent's
``recall_memory`` tool, HTTP and the CLI show the same entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from story import SimClock, cli, http_client, mcp_call

from chat_server import MODEL, ChatServer, Recorded, running_chat_server
from episodic import Episodic
from episodic.layer import MemoryLayer
from episodic.model import Memory, Scope, ScopeFilter
from episodic.write.dedupe import DEDUPE_COSINE
from outage_support import step_of

SHOP = "shop"
AGENT = "concierge"
DANA = "user:dana"
OMAR = "user:omar"

CRACKED = "My order 4471 arrived with a cracked screen protector and no charging cable."
OFFICE = (
    "The replacement should go to my office at Torstrasse 12 in Berlin, the home address is "
    "no longer valid."
)
NEIGHBOUR = "The courier left the replacement cable with the neighbour at Torstrasse 14."
# Not entries (seed 004's exclusions). The wish, preference, rule and speculation have 6+
# words and content enough: only the exclusions keep them out.
GREETING = "Hi there!"
WISH = "I'd like to stay in Kyoto for a few nights next spring."
PREFERENCE = "I prefer email over phone calls for every delivery update."
RULE = "Always answer me in German from now on, please."
SPECULATION = "Maybe the warehouse packed the wrong box for my order."
THANKS = "Great, thanks!"
ASSISTANT = "Sorry about that. I can send a replacement cable; which address should it go to?"

FIRST_THREAD = [
    ("user", GREETING),
    ("user", CRACKED),
    ("assistant", ASSISTANT),
    ("user", f"{OFFICE} {WISH}"),
    ("assistant", "Noted: the replacement cable ships to Torstrasse 12."),
    ("user", PREFERENCE),
    ("user", RULE),
    ("user", SPECULATION),
    ("user", THANKS),
]
NOT_ENTRIES = (GREETING, WISH, PREFERENCE, RULE, SPECULATION, THANKS)


def thread(clock: SimClock, lines: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """A thread's messages, a minute apart from the clock's now."""
    start = clock.now
    return [
        {"role": role, "content": text, "ts": (start + timedelta(minutes=i)).isoformat()}
        for i, (role, text) in enumerate(lines)
    ]


def concierge(memory: Episodic, resource: str = DANA, agent: str = AGENT) -> MemoryLayer:
    return MemoryLayer(memory, workspace=SHOP, agent=agent, resource=resource)


def notes(memory: Episodic, resource: str = DANA, agent: str = AGENT) -> list[Memory]:
    """The entries and learnings stored for ``agent`` and ``resource``, newest first."""
    flt = ScopeFilter(
        workspace_id=SHOP,
        agent_id=agent,
        resource_id=resource,
        scope=Scope.OWN,
        types=("entry", "learning"),
    )
    return memory.list_memories(flt, limit=200).items


def entries(memory: Episodic, resource: str = DANA, agent: str = AGENT) -> dict[str, Memory]:
    return {m.content: m for m in notes(memory, resource, agent) if m.type == "entry"}


def injected(block: str) -> list[tuple[str, str]]:
    """The (text, age) of each line of a ``<memory>`` block, in the block's order."""
    lines = [line for line in block.splitlines() if line.startswith("- ")]
    return [(line[2 : line.rindex(" (")], line[line.rindex(" (") + 2 : -1]) for line in lines]


def days(age: str) -> float:
    """ "3 days ago" -> 3, "1 day ago" -> 1, "5 hours ago" -> 5/24."""
    number, unit = re.match(r"(\d+) (\w+?)s? ago", age).groups()  # type: ignore[union-attr]
    per_day = {"second": 86_400, "minute": 1_440, "hour": 24, "day": 1, "week": 1 / 7}
    return int(number) / per_day[unit]


def test_only_lasting_facts_become_entries_with_the_users_exact_words(
    memory: Episodic, clock: SimClock, db_url: str
) -> None:
    dana = concierge(memory)
    # Day 1: the first thread.
    dana.on_complete(thread(clock, FIRST_THREAD), conversation="thread-1")
    kept = entries(memory)
    assert set(kept) == {CRACKED, OFFICE}, sorted(kept)
    said = [text for role, text in FIRST_THREAD if role == "user"]
    for content, entry in kept.items():
        assert entry.payload["source"] == "user_assertion"
        assert entry.payload["evidence"] == content
        assert any(content in message for message in said)  # quoted, not paraphrased
    stored = " ".join(kept)
    for excluded in NOT_ENTRIES:
        assert excluded not in stored, excluded
    # The assistant's words are never the user's entries, nor anything else stored.
    assert ASSISTANT not in " ".join(m.content for m in notes(memory))

    # Day 3: the second thread arrives over HTTP, message by message, as an n8n workflow
    # would post it; the service turns the idle thread into an episode and entries.
    clock.advance(days=2)
    with http_client(memory, SHOP) as client:
        for message in thread(clock, [("user", NEIGHBOUR), ("user", THANKS)]):
            posted = client.post(
                "/v1/messages",
                json={
                    "conversation": "thread-2",
                    "text": message["content"],
                    "role": message["role"],
                    "agent": AGENT,
                    "resource": DANA,
                    "ts": message["ts"],
                },
            )
            assert posted.status_code == 201, posted.text
        clock.advance(hours=4)  # the thread went quiet: its segment is closed
        memory.segment()
        listed = client.get(
            "/v1/memories",
            params={"type": "entry", "agent": AGENT, "resource": DANA, "scope": "own"},
        )
    assert listed.status_code == 200, listed.text
    items = listed.json()["items"]
    assert [i["content"] for i in items] == [NEIGHBOUR, OFFICE, CRACKED]  # newest first
    assert all(i["source"] == "user_assertion" and i["evidence"] for i in items)
    assert "embedding" not in json.dumps(items)  # vectors are never shown

    # The CLI (real clock, after the story) lists the same entries for Dana.
    out = cli(
        db_url, "recall", "replacement cable", "--workspace", SHOP, "--agent", AGENT,
        "--resource", DANA, "--scope", "own", "--type", "entry", "--json",
    )  # fmt: skip
    recalled = {h["content"] for h in json.loads(out.stdout)}
    assert recalled and recalled <= {NEIGHBOUR, OFFICE, CRACKED}
    assert NEIGHBOUR in recalled


def test_saying_a_known_fact_again_adds_nothing(memory: Episodic, clock: SimClock) -> None:
    dana = concierge(memory)
    dana.on_complete(thread(clock, FIRST_THREAD), conversation="thread-1")
    before = set(entries(memory))

    # Day 4: Dana opens a new thread and restates what the agent already knows, once word
    # for word and once in other words, then adds something new.
    clock.advance(days=3)
    restated = "Order 4471 came with a cracked screen protector and without its charging cable."
    (episode,) = dana.on_complete(
        thread(clock, [("user", CRACKED), ("user", restated), ("user", NEIGHBOUR)]),
        conversation="thread-2",
    )
    after = set(entries(memory))
    assert after == before | {NEIGHBOUR}
    assert restated not in " ".join(m.content for m in notes(memory))
    # The episode says why each restatement was not stored: the paraphrase was found by
    # the real model at cosine >= 0.86 with the stored entry.
    drops = {d["reason"]: d["detail"] for d in episode.payload["extraction_dropped"]}
    assert set(drops) <= {"known_hash", "restates_known", "similar", "duplicate"}, drops
    assert len(episode.payload["extraction_dropped"]) == 2, drops
    cosine = float(re.search(r"cosine (\d\.\d+)", drops["similar"]).group(1))  # type: ignore[union-attr]
    assert cosine >= DEDUPE_COSINE

    # A week later the same restatement through another thread still adds nothing.
    clock.advance(days=7)
    dana.on_complete(thread(clock, [("user", restated)]), conversation="thread-3")
    assert set(entries(memory)) == after


def other_threads(memory: Episodic, clock: SimClock) -> None:
    """Omar, to the same agent, and Dana, to another agent, say much the same thing."""
    omar = concierge(memory, resource=OMAR)
    omar.on_complete(
        thread(
            clock,
            [("user", "My order 5123 arrived with a cracked screen protector and no cable.")],
        ),
        conversation="omar-1",
    )
    returns = concierge(memory, agent="returns-bot")
    returns.on_complete(
        thread(
            clock,
            [("user", "The returns label for order 4471 printed with the wrong charging cable.")],
        ),
        conversation="returns-1",
    )


def test_a_new_thread_is_primed_with_entries_only_newest_first(
    memory: Episodic, clock: SimClock
) -> None:
    dana = concierge(memory)
    # Day 1 and day 4: two threads for Dana; Omar's and another agent's beside them.
    dana.on_complete(thread(clock, FIRST_THREAD), conversation="thread-1")
    other_threads(memory, clock)
    clock.advance(days=3)
    dana.on_complete(
        thread(
            clock,
            [
                ("user", NEIGHBOUR),
                ("assistant", "I will ask the courier to confirm the drop-off."),
                ("user", "No, the neighbour already handed the cable over, the case is closed."),
                ("user", THANKS),
            ],
        ),
        conversation="thread-2",
    )
    clock.advance(days=2)

    # Day 6: a new thread opens with Dana's question; the agent's prompt gets <memory>.
    block = dana.auto_inject("Where did the replacement charging cable for order 4471 end up?")
    assert block.startswith("<memory>") and block.endswith("</memory>")
    lines = injected(block)
    shown = [text for text, _ in lines]
    assert CRACKED in shown and NEIGHBOUR in shown
    # Only Dana's entries and learnings with this agent: no raw message, no episode
    # summary, no filler, nothing of Omar's or of another agent.
    assert set(shown) <= {m.content for m in notes(memory)}
    for absent in (THANKS, ASSISTANT, "5123", "returns label", "user:", "assistant:"):
        assert absent not in block, absent
    # Newest first, each with its age in days.
    ages = [days(age) for _, age in lines]
    assert ages == sorted(ages), lines
    assert shown.index(NEIGHBOUR) < shown.index(CRACKED)
    assert (NEIGHBOUR, "2 days ago") in lines and (CRACKED, "4 days ago") in lines

    # Small talk finds nothing worth injecting.
    assert dana.auto_inject("thanks") == ""

    # Omar's own new thread sees only his entry.
    omar_block = concierge(memory, resource=OMAR).auto_inject("my cable order is broken")
    assert [t for t, _ in injected(omar_block)] == [
        "My order 5123 arrived with a cracked screen protector and no cable."
    ]


def lookup_for_dana(memory: Episodic, query: str, k: int) -> dict[str, Any]:
    """The agent's ``recall_memory`` tool, through its MCP server bound to Dana."""
    return mcp_call(
        memory,
        "recall_memory",
        {"query": query, "k": k},
        workspace=SHOP,
        agent=AGENT,
        resource=DANA,
    )


def test_the_recall_memory_tool_returns_the_entries(memory: Episodic, clock: SimClock) -> None:
    dana = concierge(memory)
    dana.on_complete(thread(clock, FIRST_THREAD), conversation="thread-1")
    other_threads(memory, clock)
    clock.advance(days=2, hours=1)

    # The agent looks something up on purpose, through its MCP server for Dana's thread.
    tool = lookup_for_dana(memory, "office address for the replacement", k=5)
    found = [(m["type"], m["content"]) for m in tool["memories"]]
    assert ("entry", OFFICE) in found, found
    entry = next(m for m in tool["memories"] if m["type"] == "entry" and m["content"] == OFFICE)
    assert entry["source"] == "user_assertion" and entry["evidence"] == OFFICE
    assert entry["age"] == "2 days ago"
    # A wider lookup still finds only what this agent holds for Dana: not Omar's
    # entry, not another agent's.
    text = json.dumps(lookup_for_dana(memory, "cracked screen protector order cable", k=20))
    assert CRACKED in text and "5123" not in text and "returns label" not in text

    # The same lookup as a function the agent exposes (the layer's tool).
    hits = dana.recall_memory("office address for the replacement")
    assert any(h["content"] == OFFICE and h["evidence"] == OFFICE for h in hits)
    wide_hits = dana.recall_memory("cracked screen protector order cable", k=20)
    assert not any("5123" in h["content"] for h in wide_hits)  # Omar's


# -- the exclusions, enforced in code on both paths ------------------------------------------
REDIS = "The checkout outage last night was caused by the Redis cache eviction policy."
DNS = "Actually I checked again: it was the expired DNS record for the payment host, not Redis."


def dropped_reasons(episodes: Sequence[Memory]) -> dict[str, str]:
    """What each episode's extraction dropped: reason -> detail."""
    return {
        d["reason"]: d["detail"] for e in episodes for d in e.payload.get("extraction_dropped", [])
    }


def test_a_diagnosis_the_same_chat_corrects_later_is_no_entry_offline(
    memory: Episodic, clock: SimClock
) -> None:
    """Seed 004: an earlier diagnostic branch the transcript later corrects is skipped.
    Offline, the corrected guess is dropped (``corrected_later``, recorded on the episode)
    and the next thread is primed with the correction only; a preference is dropped with
    its reason too, not silently."""
    dana = concierge(memory)
    made = dana.on_complete(
        thread(
            clock,
            [
                ("user", REDIS),
                ("assistant", "That would explain the dropped carts."),
                ("user", DNS),
                ("user", PREFERENCE),
            ],
        ),
        conversation="thread-outage",
    )
    kept = entries(memory)
    assert DNS in kept and REDIS not in kept, sorted(kept)
    reasons = dropped_reasons(made)
    assert "corrected_later" in reasons and "redis" in reasons["corrected_later"]
    assert "preference" in reasons
    clock.advance(days=1)
    block = dana.auto_inject("checkout outage cause")
    assert "DNS record" in block and "eviction policy" not in block


def test_the_llm_extractor_cannot_store_what_seed_004_excludes(
    db_url: str, clock: SimClock, default_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an LLM configured, a model that returns a wish, a preference, generic advice,
    a speculation, a rule for the agent and a guess the chat later corrects (each with
    evidence quoted exactly) gets none of them stored: each is dropped with its reason on
    the episode, and the next ``<memory>`` block shows only the case."""
    said = {
        "wish": "I'd like the replacement to arrive before my trip to Lisbon.",
        "preference": "I prefer email over phone calls for every delivery update.",
        "advice": "It's always a good idea to photograph a parcel before opening it.",
        "speculation": "Maybe the warehouse packed the wrong box for my order.",
        "rule": "Always answer me in German from now on, please.",
        "guess": "The cable went missing because the courier scanned the wrong parcel.",
        "fix": "Turns out the courier was fine, not the wrong parcel: the cable was never "
        "packed at the warehouse.",
    }
    notes_by_model = [
        ("The user wants the replacement before a trip to Lisbon.", said["wish"]),
        ("The user prefers email over phone calls for delivery updates.", said["preference"]),
        ("It's always a good idea to photograph a parcel before opening it.", said["advice"]),
        ("The warehouse probably packed the wrong box.", said["speculation"]),
        ("The assistant should always answer Dana in German.", said["rule"]),
        ("The courier scanned the wrong parcel, so the cable went missing.", said["guess"]),
        ("The replacement cable for order 4471 was never packed at the warehouse.", said["fix"]),
    ]
    extract = {
        "entries": [
            {"content": c, "source": "user_assertion", "evidence": e} for c, e in notes_by_model
        ]
    }

    def answer(request: Recorded) -> tuple[int, bytes, float]:
        step = step_of(request)
        reply: dict[str, Any] = {
            "describe": {
                "title": "A missing charging cable for a replacement order",
                "summary": "Dana's replacement cable went missing.",
                "keyphrases": ["charging cable"],
            },
            "topics": {"starts": []},
            "learnings": {"learnings": []},
            "key_terms": {"terms": ["cable"]},
            "review": {"ratings": []},
            "supersession": {"decisions": []},
            "extract": extract,
        }.get(step, {})
        return 200, ChatServer.completion(json.dumps(reply)), 0.0

    with running_chat_server() as chat:
        chat.responder = answer
        monkeypatch.setenv("EPISODIC_LLM_URL", chat.base_url)
        monkeypatch.setenv("EPISODIC_LLM_MODEL", MODEL)
        with Episodic.open(db_url, clock=clock) as memory:
            dana = concierge(memory)
            made = dana.on_complete(
                thread(clock, [("user", text) for text in said.values()]),
                conversation="thread-llm",
            )
            kept = entries(memory)
            assert set(kept) == {notes_by_model[-1][0]}, sorted(kept)
            assert kept[notes_by_model[-1][0]].payload["extracted_by"].endswith(MODEL)
            reasons = dropped_reasons(made)
            assert {
                "wish",
                "preference",
                "generic_advice",
                "speculation",
                "agent_rule",
                "corrected_later",
            } <= set(reasons), reasons
            clock.advance(days=1)
            block = dana.auto_inject("what happened to the replacement charging cable")
            assert "never packed" in block
            for excluded in ("Lisbon", "email", "photograph", "wrong box", "German", "scanned"):
                assert excluded not in block, excluded
            # The preference is the user's profile, which the next extraction is shown
            # as known context (never as a source).
            assert notes_by_model[1][0] in dana.user_profile()
            dana.on_complete(thread(clock, [("user", NEIGHBOUR)]), conversation="thread-next")
        prompts = [r for r in chat.requests if step_of(r) == "extract"]
    last = prompts[-1].body["messages"][1]["content"]
    known = last[last.index("<memory>") : last.index("</memory>")]
    assert notes_by_model[1][0] in known


def test_the_tool_and_the_injection_serve_entries_each_fact_once(
    memory: Episodic, clock: SimClock
) -> None:
    """Seed 004's tool and ``<memory>`` block serve entries: the layer's
    ``recall_memory`` returns no raw message or episode beside the entry drawn from it,
    and ``/v1/render`` with the n8n policy shows each fact once, even where an episode of
    a one-message thread is that message's own words."""
    dana = concierge(memory)
    dana.on_complete(thread(clock, FIRST_THREAD), conversation="thread-1")
    clock.advance(days=1)
    dana.on_complete(thread(clock, [("user", NEIGHBOUR)]), conversation="thread-2")
    clock.advance(days=1)
    hits = dana.recall_memory("where did the replacement cable go", k=10)
    assert hits and {h["type"] for h in hits} <= {"entry", "learning"}, hits
    assert any(h["content"] == NEIGHBOUR for h in hits)
    with http_client(memory, SHOP) as client:
        rendered = client.post(
            "/v1/render",
            json={
                "query": "where did the replacement cable go",
                "policy": "n8n",
                "agent": AGENT,
                "resource": DANA,
                "scope": "own",
                "k": 10,
            },
        )
    assert rendered.status_code == 200, rendered.text
    lines = [text.casefold() for text, _ in injected(rendered.json()["block"])]
    assert any(NEIGHBOUR.casefold() in line for line in lines)
    for i, line in enumerate(lines):
        for j, other in enumerate(lines):
            assert i == j or line not in other, (line, other)


def test_cases_that_differ_in_their_numbers_are_each_an_entry(
    memory: Episodic, clock: SimClock
) -> None:
    """Fifteen invoices that failed the same way are fifteen cases: the invoice number
    makes each new, so none is dropped as restating a known entry or as similar to one;
    the same invoice said again in other words is still dropped."""
    dana = concierge(memory)
    said = "Invoice {} failed to sync to the ledger because its tax code field was empty."
    for n in range(15):
        dana.on_complete(
            thread(clock, [("user", said.format(20931 + n))]), conversation=f"invoice-{n}"
        )
        clock.advance(hours=1)
    kept = entries(memory)
    assert {said.format(20931 + n) for n in range(15)} <= set(kept), sorted(kept)
    again = "Invoice 20931 did not sync to the ledger since its tax code field was empty."
    (episode,) = dana.on_complete(thread(clock, [("user", again)]), conversation="again")
    assert again not in entries(memory)
    assert {d["reason"] for d in episode.payload["extraction_dropped"]} <= {
        "restates_known",
        "similar",
    }


def test_the_end_of_session_pass_reads_the_whole_session(
    db_url: str, clock: SimClock, default_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long session is segmented by the background indexer before it ends (a pause
    closed its first 27 messages into an episode). The post-session pass at its end still
    reads all 40 messages: a learning whose evidence is in the first part is kept."""
    early = "The staging deploy keeps failing because the VAULT_TOKEN secret expired last week."
    lesson = {
        "content": "Renew the VAULT_TOKEN secret before staging deploys: an expired one fails.",
        "type": "procedural",
        "domain": "team",
        "importance": 0.8,
        "evidence": early,
    }

    def answer(request: Recorded) -> tuple[int, bytes, float]:
        reply: dict[str, Any] = {
            "describe": {
                "title": "A long session about staging deploys and their secrets",
                "summary": "The team went through failing staging deploys.",
                "keyphrases": ["staging deploy"],
            },
            "topics": {"starts": []},
            "learnings": {"learnings": [lesson]},
            "extract": {"entries": []},
            "key_terms": {"terms": ["deploy"]},
            "review": {"ratings": []},
            "supersession": {"decisions": []},
        }.get(step_of(request), {})
        return 200, ChatServer.completion(json.dumps(reply)), 0.0

    with running_chat_server() as chat:
        chat.responder = answer
        monkeypatch.setenv("EPISODIC_LLM_URL", chat.base_url)
        monkeypatch.setenv("EPISODIC_LLM_MODEL", MODEL)
        with Episodic.open(db_url, clock=clock) as memory:
            start = clock.now
            for i in range(40):
                # A 40-minute pause after the 27th message.
                at = start + timedelta(minutes=i + (40 if i >= 27 else 0))
                text = early if i == 3 else f"Step {i} of the staging deploy checklist is done."
                memory.add_message(
                    text,
                    workspace=SHOP,
                    conversation="long-session",
                    role="user" if i % 2 else "assistant",
                    agent=AGENT,
                    resource=DANA,
                    ts=at.isoformat(),
                )
            clock.now = start + timedelta(minutes=90)
            first = memory.segment()  # the indexer's pass, before the session ends
            assert first.episodes == 1 and first.waiting == 13
            last = memory.segment(flush=True, workspace=SHOP, conversation="long-session")
            assert last.episodes == 1
            learned = [m for m in notes(memory) if m.type == "learning"]
            assert [m.content for m in learned] == [lesson["content"]], last.to_json()
            assert learned[0].payload["evidence"] == early


def test_preferences_are_kept_as_the_users_profile_not_as_entries(
    memory: Episodic, clock: SimClock
) -> None:
    """Seed 004's ``<user-profile>``: a preference Dana states is no entry, but it is not
    lost either. It is a profile memory of Dana with this agent, shown in its own block
    (never in ``<memory>``), stored once however often she says it, and not seen by
    another user's or another agent's layer."""
    dana = concierge(memory)
    dana.on_complete(thread(clock, FIRST_THREAD), conversation="thread-1")
    assert PREFERENCE not in entries(memory)
    clock.advance(days=2)
    profile = dana.user_profile()
    assert profile.startswith("<user-profile>") and profile.endswith("</user-profile>")
    assert f"- {PREFERENCE} (1 day ago)" in profile  # said a minute after the thread began
    assert PREFERENCE not in dana.auto_inject("how should delivery updates reach me")
    # Said again in a later thread: still one profile memory.
    dana.on_complete(thread(clock, [("user", PREFERENCE)]), conversation="thread-2")
    flt = ScopeFilter(workspace_id=SHOP, agent_id=AGENT, resource_id=DANA, types=("profile",))
    assert [m.content for m in memory.list_memories(flt).items] == [PREFERENCE]
    assert concierge(memory, resource=OMAR).user_profile() == ""
    assert concierge(memory, agent="returns-bot").user_profile() == ""
