"""The updates benchmark: does recall hand back the value a fact has now, or an old one?

Each scenario (``bench/updates_data.py``) is written into a workspace of its own in time
order, with the service's clock just after each write and the indexer run after each, as
a runtime's sweeper would between writes days apart; then its conversations are closed
(``segment(flush=True)``), everything pending is indexed, and its question is asked
under each policy (k=5, unmarked) with "now" just after the last write.

A hit carries a value when its content contains the value, ignoring case. Reported per
(mode, policy), over the UPDATE scenarios: how often the current value is carried by the
first hit and by one of the five (``current@1``, ``current@5``), and how often a stale
value ranks above it (``stale_above_current``, lower is better); over the CONTROLS, the
same recall of their true value; and, over both, how many memories that should stay
valid were marked superseded (``false_supersession``). A memory should stay valid unless
it carries a stale value and not the current one.

Modes are the supersession settings compared: ``off`` (no detection), ``offline`` (the
rule without a model) and ``llm`` (the model step, answered by ``ScenarioOracle`` from
the scenario's ground truth: the best the model step can do).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from episodic.bench.cache import SqliteEmbeddingCache
from episodic.bench.harness import CACHE_FILE, BenchClock, Precomputed, precompute_vectors
from episodic.bench.locomo import resolve_policies
from episodic.bench.updates_data import Scenario, Write, load_scenarios
from episodic.config import Settings
from episodic.embed import make_embedder
from episodic.errors import EmbedderError, InvalidInput, LLMError
from episodic.llm.base import DEFAULT_MAX_TOKENS
from episodic.model import ScopeFilter
from episodic.service import Episodic
from episodic.store import open_store

K = 5
MODES = ("off", "offline", "llm")
SUPERSEDED = "superseded"
DECISIONS_SCHEMA = "supersession_decisions"
ENVELOPE_OPEN = "<untrusted_memory_data>\n"
ENVELOPE_CLOSE = "\n</untrusted_memory_data>"
# "Now" for the question: just after the last write, as an agent asks it next.
ASK_AFTER = timedelta(minutes=1)
WRITE_AFTER = timedelta(seconds=1)
UPDATE_KEYS = ("current@1", "current@5", "stale_above_current")
CONTROL_KEYS = ("control@1", "control@5")


# -- the metrics: pure functions of hit contents ----------------------------------------
def carries(content: str, value: str) -> bool:
    """Whether a memory's content states ``value`` (case-insensitive substring)."""
    return value.lower() in content.lower()


def first_carrying(contents: Sequence[str], values: Sequence[str]) -> int | None:
    """The 1-based rank of the first hit carrying any of ``values``; None if none does."""
    for rank, content in enumerate(contents, start=1):
        if any(carries(content, v) for v in values):
            return rank
    return None


def current_at(contents: Sequence[str], current: str, k: int) -> bool:
    """Whether one of the first ``k`` hits carries the current value."""
    return first_carrying(contents[:k], [current]) is not None


def stale_above_current(contents: Sequence[str], current: str, stale: Sequence[str]) -> bool:
    """Whether a hit carrying a stale value and not the current one ranks above the first
    hit carrying the current value (or the current value is missing while a stale one
    is there). A hit carrying both ("moved from A to B") is not stale."""
    top = contents[:K]
    only_stale = [c if not carries(c, current) else "" for c in top]
    stale_rank = first_carrying(only_stale, stale) if stale else None
    if stale_rank is None:
        return False
    current_rank = first_carrying(top, [current])
    return current_rank is None or stale_rank < current_rank


def should_stay_valid(content: str, current: str, stale: Sequence[str]) -> bool:
    """A memory is rightly superseded only when it carries a stale value and not the
    current one; every other memory should stay valid."""
    return carries(content, current) or not any(carries(content, v) for v in stale)


def false_supersessions(
    memories: Sequence[tuple[str, str]], current: str, stale: Sequence[str]
) -> tuple[int, int]:
    """(wrongly superseded, should stay valid) over ``(content, status)`` pairs."""
    valid = [status for content, status in memories if should_stay_valid(content, current, stale)]
    return sum(status == SUPERSEDED for status in valid), len(valid)


def stale_superseded(
    memories: Sequence[tuple[str, str]], current: str, stale: Sequence[str]
) -> tuple[int, int]:
    """(superseded, carrying a stale value only) over ``(content, status)`` pairs: how
    much of what went out of date the detection caught."""
    old = [status for content, status in memories if not should_stay_valid(content, current, stale)]
    return sum(status == SUPERSEDED for status in old), len(old)


def rate(hits: int, total: int) -> float:
    return round(hits / total, 4) if total else 0.0


@dataclass(frozen=True, slots=True)
class Asked:
    """One scenario's question under one policy: the contents of the hits, best first."""

    scenario: Scenario
    policy: str
    contents: tuple[str, ...]


def summarise_policy(asked: Sequence[Asked]) -> dict[str, float]:
    """One (mode, policy)'s recall metrics over its update and control scenarios."""
    updates = [a for a in asked if a.scenario.kind == "update"]
    controls = [a for a in asked if a.scenario.kind == "control"]

    def share(rows: Sequence[Asked], test: Callable[[Asked], bool]) -> float:
        return rate(sum(test(a) for a in rows), len(rows))

    return {
        "current@1": share(updates, lambda a: current_at(a.contents, a.scenario.current, 1)),
        "current@5": share(updates, lambda a: current_at(a.contents, a.scenario.current, K)),
        "stale_above_current": share(
            updates, lambda a: stale_above_current(a.contents, a.scenario.current, a.scenario.stale)
        ),
        "control@1": share(controls, lambda a: current_at(a.contents, a.scenario.current, 1)),
        "control@5": share(controls, lambda a: current_at(a.contents, a.scenario.current, K)),
    }


# -- the oracle: the model step answered from the ground truth ----------------------------
def oracle_decisions(
    new: str, candidates: Sequence[Mapping[str, Any]], values: Sequence[str]
) -> list[dict[str, str]]:
    """Each candidate superseded by ``new`` or not: ``new`` sets the latest of
    ``values`` it carries; a candidate carrying an earlier value and not that one is
    superseded, every other candidate is unrelated."""
    said = [i for i, v in enumerate(values) if carries(new, v)]
    decisions = []
    for candidate in candidates:
        content = str(candidate.get("content", ""))
        older = bool(said) and (
            any(carries(content, v) for v in values[: said[-1]])
            and not carries(content, values[said[-1]])
        )
        decisions.append(
            {
                "ref": str(candidate.get("ref", "")),
                "decision": "supersedes" if older else "unrelated",
                "reason": "an earlier value of the same fact" if older else "not the same fact",
            }
        )
    return decisions


class ScenarioOracle:
    """An ``LLM`` that knows the scenario being written (``use``): it answers the
    supersession step from the ground truth and refuses every other step, so those run
    their offline fallbacks."""

    def __init__(self) -> None:
        self.values: tuple[str, ...] = ()
        self.calls = 0

    @property
    def model_id(self) -> str:
        return "updates-oracle"

    def use(self, scenario: Scenario) -> None:
        self.values = scenario.values

    def complete_json(
        self,
        system: str,
        user: str,
        schema: Mapping[str, Any],
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> dict[str, Any]:
        if schema.get("title") != DECISIONS_SCHEMA:
            raise LLMError(f"the updates oracle answers only {DECISIONS_SCHEMA}")
        if not (user.startswith(ENVELOPE_OPEN) and user.endswith(ENVELOPE_CLOSE)):
            raise LLMError("the supersession request is not in its data envelope")
        try:
            payload = json.loads(user[len(ENVELOPE_OPEN) : -len(ENVELOPE_CLOSE)])
            new = str(payload["new"]["content"])
            candidates = list(payload["candidates"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise LLMError(f"the supersession request is malformed: {exc}") from None
        self.calls += 1
        return {"decisions": oracle_decisions(new, candidates, self.values)}


# -- running the scenarios ----------------------------------------------------------------
def resolve_modes(choice: str | None) -> list[str]:
    """Comma-separated modes (default all), each once, in order."""
    names = list(dict.fromkeys(m.strip() for m in (choice or ",".join(MODES)).split(",")))
    names = [m for m in names if m]
    if not names:
        raise InvalidInput("modes", f"name one or more of {', '.join(MODES)}")
    for name in names:
        if name not in MODES:
            raise InvalidInput("modes", f"unknown mode {name!r}; use {', '.join(MODES)}")
    return names


def mode_settings(base: Settings, mode: str) -> Settings:
    """The settings a mode runs under: detection off, or on ("auto")."""
    return replace(base, supersession="off" if mode == "off" else "auto")


def _messages_and_events(
    write: Write, workspace: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    # Ids are global across workspaces: each is prefixed with its scenario's workspace.
    if write.message is not None:
        message = dict(write.message)
        message["id"] = f"{workspace}/{message['id']}"
        message["conversation"] = f"{workspace}/{message['conversation']}"
        return [message], []
    assert write.event is not None
    event = dict(write.event, workspace=workspace)
    event["id"] = f"{workspace}/{event['id']}"
    return [], [event]


def _index(mem: Episodic, where: str) -> None:
    while True:
        result = mem.index_once()
        if result.failed:
            raise EmbedderError(f"indexing {where} failed: {result.error}")
        if result.embedded == 0:
            return


def write_scenario(mem: Episodic, clock: BenchClock, scenario: Scenario, workspace: str) -> None:
    """Write, index and close one scenario, ready for its question."""
    for write in scenario.writes:
        clock.now = write.ts + WRITE_AFTER
        messages, events = _messages_and_events(write, workspace)
        if messages:
            report = mem.add_messages(messages, workspace=workspace).ingest
        else:
            report = mem.ingest(events)
        if report.errors:
            raise InvalidInput("scenarios", f"{scenario.id}: write refused: {report.errors[0]}")
        _index(mem, scenario.id)
    clock.now = scenario.writes[-1].ts + ASK_AFTER
    mem.segment(flush=True, workspace=workspace)
    _index(mem, scenario.id)


def scenario_memories(mem: Episodic, workspace: str) -> list[tuple[str, str]]:
    """(content, status) of every memory of the workspace, whatever its status."""
    out: list[tuple[str, str]] = []
    cursor: str | None = None
    while True:
        page = mem.list_memories(ScopeFilter(workspace), limit=200, cursor=cursor)
        out += [(m.content, str(m.status)) for m in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return out


@dataclass(slots=True)
class ModeRun:
    asked: list[Asked]
    wrong: dict[str, int]  # by scenario kind: memories wrongly superseded
    valid: dict[str, int]  # by scenario kind: memories that should stay valid
    seconds: float = 0.0
    oracle_calls: int = 0
    caught: int = 0  # memories carrying only a stale value, marked superseded
    stale: int = 0  # memories carrying only a stale value


def run_mode(
    mode: str,
    scenarios: Sequence[Scenario],
    policies: Sequence[str],
    settings: Settings,
    embedder: Precomputed | None,
    *,
    db_url: str | None,
    folder: Path,
    say: Callable[[str], None],
) -> ModeRun:
    """Every scenario written and asked under one mode, in its own database (or, over a
    shared ``db_url``, in workspaces named after the mode)."""
    oracle = ScenarioOracle()
    clock = BenchClock()
    started = time.perf_counter()
    run = ModeRun([], {"update": 0, "control": 0}, {"update": 0, "control": 0})
    store = open_store(db_url or f"sqlite:///{folder / f'updates-{mode}.db'}")
    llm = oracle if mode == "llm" else None
    with Episodic(store=store, embedder=embedder, settings=settings, clock=clock, llm=llm) as mem:
        for n, scenario in enumerate(scenarios, start=1):
            workspace = f"updates-{mode}-{scenario.id}"
            oracle.use(scenario)
            write_scenario(mem, clock, scenario, workspace)
            for name in policies:
                result = mem.recall(
                    scenario.question, workspace=workspace, k=K, policy=name, mark=False
                )
                contents = tuple(hit.memory.content for hit in result.hits)
                run.asked.append(Asked(scenario, name, contents))
            memories = scenario_memories(mem, workspace)
            wrong, valid = false_supersessions(memories, scenario.current, scenario.stale)
            run.wrong[scenario.kind] += wrong
            run.valid[scenario.kind] += valid
            caught, old = stale_superseded(memories, scenario.current, scenario.stale)
            run.caught += caught
            run.stale += old
            if n % 50 == 0:
                say(f"mode {mode}: {n} of {len(scenarios)} scenarios")
    run.seconds = time.perf_counter() - started
    run.oracle_calls = oracle.calls
    return run


def mode_report(run: ModeRun, policies: Sequence[str]) -> dict[str, Any]:
    wrong, valid = run.wrong, run.valid
    return {
        "seconds": round(run.seconds, 1),
        "oracle_calls": run.oracle_calls,
        "false_supersession": {
            "rate": rate(sum(wrong.values()), sum(valid.values())),
            "control": rate(wrong["control"], valid["control"]),
            "update": rate(wrong["update"], valid["update"]),
            "wrong": sum(wrong.values()),
            "valid": sum(valid.values()),
        },
        "stale_superseded": {
            "rate": rate(run.caught, run.stale),
            "superseded": run.caught,
            "stale": run.stale,
        },
        "policies": {
            name: _policy_report([a for a in run.asked if a.policy == name]) for name in policies
        },
    }


def _policy_report(asked: Sequence[Asked]) -> dict[str, Any]:
    """The metrics overall and, apart, over the chat and the journal scenarios (chats
    also hold episodes and entries made from the messages)."""
    forms = sorted({a.scenario.form for a in asked})
    return {
        **summarise_policy(asked),
        "by_form": {f: summarise_policy([a for a in asked if a.scenario.form == f]) for f in forms},
    }


@contextmanager
def _embedder(
    settings: Settings, scenarios: Sequence[Scenario], say: Callable[[str], None]
) -> Iterator[Precomputed | None]:
    """The configured embedder with the questions and writes embedded up front (cached in
    the cache dir across runs); None when sparse-only."""
    inner = make_embedder(settings)
    if inner is None:
        yield None
        return
    texts = [s.question for s in scenarios] + [w.text for s in scenarios for w in s.writes]
    with SqliteEmbeddingCache(settings.cache_dir / CACHE_FILE) as cache:
        yield precompute_vectors(inner, cache, texts, say)


def run_updates(
    path: Path | str,
    settings: Settings,
    *,
    policies: str | None = None,
    modes: str | None = None,
    limit: int | None = None,
    db_url: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark; the result is what ``episodic bench updates --json`` prints."""
    say = progress or (lambda _line: None)
    names = resolve_policies(policies)
    chosen = resolve_modes(modes)
    scenarios = load_scenarios(path, limit)
    report: dict[str, Any] = {
        "scenarios": {
            kind: sum(s.kind == kind for s in scenarios) for kind in ("update", "control")
        },
        "k": K,
        "modes": {},
    }
    with ExitStack() as stack:
        embedder = stack.enter_context(_embedder(settings, scenarios, say))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="episodic-bench-")))
        report["embedder"] = embedder.model_id if embedder is not None else "none"
        for mode in chosen:
            mode_set = mode_settings(settings, mode)
            run = run_mode(
                mode, scenarios, names, mode_set, embedder, db_url=db_url, folder=folder, say=say
            )
            report["modes"][mode] = mode_report(run, names)
    return report
