"""The Store contract for keyword search of the journal (``JournalStore``): every event,
admitted as a memory or not, live or archived, inside one workspace and scope.

``StoreContract`` inherits it, so every backend bound to the store contract runs it too.
"""

from __future__ import annotations

from datetime import timedelta

from episodic.model import Scope, ScopeFilter
from episodic.store.base import ForgetSpec, Store
from episodic.store.journal import JournalHit
from store_contract.helpers import T0, event


def found(
    store: Store, flt: ScopeFilter, text: str, *, since: object = None, limit: int = 20
) -> list[JournalHit]:
    return store.search_journal(flt, text, since=since, limit=limit)  # type: ignore[arg-type]


def ids(hits: list[JournalHit]) -> list[str]:
    return [h.id for h in hits]


def chunk(id: str, ws: str = "acme", **fields: object) -> object:
    """A high-volume event admission refuses: stored in the journal, never a memory."""
    return event(id, ws, type="exec.output_chunk", **fields)


class JournalContract:
    def test_an_event_that_is_no_memory_is_found_by_summary_and_by_payload(
        self, store: Store
    ) -> None:
        store.append(
            [
                chunk(
                    "c1",
                    summary="pytest run output, part 3",
                    payload={"text": "segfault in libquux while linking the wheel"},
                ),
                chunk("c2", summary="pytest run output, part 4", payload={"text": "all green"}),
            ],
            [],
        )
        assert store.get_memories("acme", ["c1", "c2"]) == []
        [hit] = found(store, ScopeFilter("acme"), "segfault libquux")
        assert (hit.id, hit.type, hit.archived) == ("c1", "exec.output_chunk", False)
        assert hit.summary == "pytest run output, part 3" and hit.score > 0
        assert hit.ts == T0 and hit.workspace_id == "acme"
        assert set(ids(found(store, ScopeFilter("acme"), "pytest output"))) == {"c1", "c2"}
        assert found(store, ScopeFilter("acme"), "nothing-like-this") == []

    def test_a_word_in_the_summary_outranks_the_same_word_in_the_payload(
        self, store: Store
    ) -> None:
        # Other rows, so that the word is rare enough for BM25's idf to count.
        filler = [event(f"f{i}", summary=f"routine heartbeat {i}") for i in range(8)]
        store.append(
            [
                *filler,
                event("in-payload", summary="routine status line", payload={"note": "rollback"}),
                event("in-summary", summary="rollback of the checkout service"),
            ],
            [],
        )
        hits = found(store, ScopeFilter("acme"), "rollback")
        assert ids(hits) == ["in-summary", "in-payload"]
        assert hits[0].score > hits[1].score > 0

    def test_filters_by_type_and_since(self, store: Store) -> None:
        store.append(
            [
                chunk("old-chunk", summary="disk quota warning", minutes=0),
                chunk("new-chunk", summary="disk quota warning again", minutes=60),
                event("decision", type="keeper.decision", summary="disk quota raised", minutes=90),
                event("note", summary="disk quota noted", minutes=120),
            ],
            [],
        )
        flt = ScopeFilter("acme")
        assert len(found(store, flt, "disk quota")) == 4
        typed = ScopeFilter("acme", types=("exec.output_chunk",))
        assert set(ids(found(store, typed, "disk quota"))) == {"old-chunk", "new-chunk"}
        several = ScopeFilter("acme", types=("exec.output_chunk", "keeper.decision"))
        assert set(ids(found(store, several, "disk"))) == {"old-chunk", "new-chunk", "decision"}
        since = T0 + timedelta(minutes=60)
        assert set(ids(found(store, flt, "disk", since=since))) == {
            "new-chunk",
            "decision",
            "note",
        }
        assert ids(found(store, typed, "disk", since=since)) == ["new-chunk"]
        assert len(found(store, flt, "disk quota", limit=2)) == 2

    def test_archived_rows_are_found_and_marked(self, store: Store) -> None:
        store.append(
            [
                chunk(
                    "aged",
                    summary="kernel panic on node seven",
                    payload={"trace": "stacktrace " + "frame " * 80 + "tailword"},
                ),
                chunk("fresh", summary="kernel panic on node eight", minutes=60 * 24 * 30),
            ],
            [],
        )
        assert ids(found(store, ScopeFilter("acme"), "tailword")) == ["aged"]
        assert store.archive_events(T0 + timedelta(days=1), workspace_id="acme") == 1
        hits = {h.id: h for h in found(store, ScopeFilter("acme"), "kernel panic")}
        assert set(hits) == {"aged", "fresh"}
        assert hits["aged"].archived and not hits["fresh"].archived
        assert hits["aged"].summary == "kernel panic on node seven"
        assert ids(found(store, ScopeFilter("acme"), "seven")) == ["aged"]
        # Its payload was cut to 400 characters: what is kept is still searched, the rest
        # is gone.
        assert ids(found(store, ScopeFilter("acme"), "stacktrace")) == ["aged"]
        assert found(store, ScopeFilter("acme"), "tailword") == []

    def test_scopes_and_workspaces(self, store: Store) -> None:
        store.append(
            [
                event("mine", summary="cache warmup", agent="a1", crew="c1"),
                event("crewmate", summary="cache warmup", agent="a2", crew="c1"),
                event("stranger", summary="cache warmup", agent="a3", crew="c2"),
                event("theirs", "orbit", summary="cache warmup", agent="a1", crew="c1"),
            ],
            [],
        )

        def seen(flt: ScopeFilter) -> set[str]:
            return set(ids(found(store, flt, "cache warmup")))

        assert seen(ScopeFilter("acme")) == {"mine", "crewmate", "stranger"}
        assert seen(ScopeFilter("acme", Scope.OWN, agent_id="a1")) == {"mine"}
        lead = ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1", crew_id="c1")
        assert seen(lead) == {"mine", "crewmate"}
        assert seen(ScopeFilter("acme", Scope.CREW_SHARED, crew_id="c1")) == {"mine", "crewmate"}
        assert seen(ScopeFilter("acme", agent_id="a2")) == {"crewmate"}
        assert seen(ScopeFilter("acme", crew_id="c2")) == {"stranger"}
        assert seen(ScopeFilter("orbit")) == {"theirs"}
        assert seen(ScopeFilter("nowhere")) == set()

    def test_a_rare_word_is_found_however_old_beside_common_ones(self, store: Store) -> None:
        # Small budgets, so that "deploy" is a common term here and only its newest rows
        # are ranked, while "zorp" (rare) is found in the oldest row.
        store.journal_rare_budget = 3  # type: ignore[attr-defined]
        store.journal_window = 2  # type: ignore[attr-defined]
        store.append(
            [
                event("oldest", summary="deploy zorp failed", minutes=0),
                *[event(f"d{i}", summary=f"deploy log {i}", minutes=10 + i) for i in range(9)],
            ],
            [],
        )
        hits = found(store, ScopeFilter("acme"), "deploy zorp")
        assert ids(hits)[0] == "oldest" and hits[0].score > hits[1].score
        assert set(ids(hits)) == {"oldest", "d8", "d7"}
        assert ids(found(store, ScopeFilter("acme"), "deploy")) == ["d8", "d7"]
        assert ids(found(store, ScopeFilter("acme"), "zorp")) == ["oldest"]
        agent_scope = ScopeFilter("acme", agent_id="nobody")
        assert found(store, agent_scope, "deploy zorp") == []

    def test_user_text_is_never_query_syntax(self, store: Store) -> None:
        store.append([event("e1", summary='the "OOM" killer AND a NEAR miss')], [])
        for text in ('"OOM', "OOM*", "NEAR(oom killer", "summary:oom", "-oom", "oom & !killer"):
            assert ids(found(store, ScopeFilter("acme"), text)) == ["e1"], text
        assert found(store, ScopeFilter("acme"), "*** ( ) :") == []

    def test_forget_takes_the_rows_out_of_the_search(self, store: Store) -> None:
        store.append(
            [
                chunk("ghost-1", summary="zorblax token leaked", agent="ghost"),
                chunk("ghost-2", summary="zorblax rotated", agent="ghost", minutes=1),
                chunk("keeper-1", summary="zorblax audit done", agent="keeper"),
            ],
            [],
        )
        store.archive_events(T0 + timedelta(seconds=30), workspace_id="acme")
        hits = found(store, ScopeFilter("acme"), "zorblax")
        assert {(h.id, h.archived) for h in hits} == {
            ("ghost-1", True),
            ("ghost-2", False),
            ("keeper-1", True),
        }
        store.forget(ForgetSpec("acme", agent_id="ghost"), rekey=lambda e: "")
        assert ids(found(store, ScopeFilter("acme"), "zorblax")) == ["keeper-1"]
