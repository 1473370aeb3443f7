"""Workspace isolation as a property: a hypothesis state machine over the real service.

Random sequences of writes (journal events, chat messages, notes), indexing, segmentation
with entry dedupe, recall under every policy (walk on and off, whole workspace, ``own``,
``crew_shared``, resource filters), rendering, consolidation, compaction, upkeep, markdown
export and forgetting run against one ``Episodic`` on SQLite or PostgreSQL, with the fake
embedder (the model does not matter here, the number of steps does).

The workspaces are built to leak if a filter were missing: they share agent, crew,
resource and conversation names, write the same sentences (so hash dedupe, similar
edges, consolidation clusters and compaction merges would all cross over) and draw event
ids from one small shared pool. Most texts also carry a tag such as ``zt3x2alice17``
(example 3, workspace 2, agent alice, text 17), so any text found anywhere names its
owner.

After every step the ground truth is read with plain SQL, bypassing the store's read
paths, and checked: every edge, source, vector, compaction, review, episode link and
consolidated rule stays inside one workspace; no stored text carries another
workspace's tag or a tag that was forgotten. Each operation checks its own result too:
hits and rendered blocks belong to the caller (and its agent under ``own``), dedupe drops
match the caller's own entries, exports hold exactly the workspace's memories, forgetting
touches no other workspace, and an id another workspace holds is refused, never skipped
as a duplicate.

tests/test_isolation.py runs it CI-sized (derandomized); tests/stress/test_isolation.py
runs thousands of steps.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import yaml
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from episodic import Episodic
from episodic.config import Settings
from episodic.embed.fake import FakeEmbedder
from episodic.errors import IdTaken, NotFound
from episodic.model import ScopeFilter
from episodic.portable import export_markdown
from episodic.recall.policies import POLICIES
from episodic.store import open_store
from episodic.upkeep.consolidate import CONSOLIDATED_TYPE
from episodic.write.dedupe import DEDUPE_COSINE
from episodic.write.episodes import SegmentReport
from episodic.write.extract import KNOWN_HASH, SIMILAR, content_hash

WORKSPACES = ("ws1", "ws2", "ws3")
AGENTS = ("alice", "bob")
CREW = "ops"
RESOURCES = ("repo", "db")
CONVERSATIONS = ("c1", "c2")
SHARED_IDS = ("evt-1", "evt-2", "evt-3", "evt-4")  # every workspace draws from these
POLICY_NAMES = tuple(sorted(POLICIES))
# Declarative, content-rich sentences: offline extraction turns a user's into entries,
# and two topics give the similar-edge linker and consolidation clusters to work on.
BODIES = (
    "The billing service deploy uses a blue green rollout behind the gateway",
    "The billing service deploy uses a blue green rollout behind the load balancer",
    "Billing deploy rollout failed because the gateway health check timed out",
    "The postgres replica lag alarm fired during the nightly billing backup window",
    "The postgres replica lag alarm fired during the nightly reporting backup window",
    "Replica lag on postgres recovered after the backup finished and vacuum completed",
)
QUERIES = (
    "billing deploy rollout gateway",
    "postgres replica lag backup",
    "what failed yesterday",
    "blue green rollout",
)
TAG = re.compile(r"\bzt(\d+)x(\d)([a-z]+)(\d+)\b")
START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
STEP = timedelta(minutes=7)

# Per-run totals across examples (the stress suite reports them).
OPS: Counter[str] = Counter()
STEPS: Counter[str] = Counter()
_examples = itertools.count(1)


class Violation(AssertionError):
    """Something crossed a workspace (or agent) boundary, or came back after a forget."""


@dataclass
class Row:
    id: str
    ws: str
    agent: str | None
    crew: str | None
    resource: str | None
    conversation: str | None
    status: str
    type: str
    content: str
    keys: str
    base_importance: float
    content_hash: str | None
    payload: dict[str, Any]


@dataclass
class Backend:
    """How the machine gets a fresh database for each example, and reads it raw."""

    name: str
    new_url: Callable[[], str]
    drop_url: Callable[[str], None]


@dataclass
class Truth:
    """Plain SQL on the database under test, bypassing the store."""

    url: str
    _pg: psycopg.Connection[Any] | None = None
    _sq: sqlite3.Connection | None = None

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        if self.url.startswith("sqlite:///"):
            if self._sq is None:
                self._sq = sqlite3.connect(self.url.removeprefix("sqlite:///"))
            return [tuple(r) for r in self._sq.execute(sql).fetchall()]
        if self._pg is None:
            self._pg = psycopg.connect(self.url, autocommit=True)
        return [tuple(r) for r in self._pg.execute(sql).fetchall()]

    def close(self) -> None:
        if self._sq is not None:
            self._sq.close()
        if self._pg is not None:
            self._pg.close()

    def memories(self) -> dict[str, Row]:
        out: dict[str, Row] = {}
        for r in self.rows(
            "SELECT id, workspace_id, agent_id, crew_id, resource_id, conversation_id, status, "
            "type, content, keys, base_importance, content_hash, payload FROM memories"
        ):
            try:
                payload = json.loads(r[12])
            except ValueError:
                payload = {}
            out[r[0]] = Row(*r[:12], payload=payload if isinstance(payload, dict) else {})
        return out

    def owners(self) -> dict[str, str]:
        """Which workspace holds each id (journal, archive or memories)."""
        return {
            i: w
            for i, w in self.rows(
                "SELECT id, workspace_id FROM events UNION ALL "
                "SELECT id, workspace_id FROM events_archive UNION ALL "
                "SELECT id, workspace_id FROM memories"
            )
        }


@dataclass
class Model:
    example: int
    next_tag: int = 0
    # Tags of workspace / (workspace, agent) numbered below this were forgotten.
    dead_ws: dict[str, int] = field(default_factory=dict)
    dead_agent: dict[tuple[str, str], int] = field(default_factory=dict)

    def tag(self, ws: str, agent: str | None) -> str:
        self.next_tag += 1
        return f"zt{self.example}x{ws[-1]}{agent or 'none'}{self.next_tag}"


def tags_in(text: str) -> list[tuple[int, str, str, int]]:
    return [(int(e), f"ws{w}", a, int(n)) for e, w, a, n in TAG.findall(text)]


def _fail(what: str) -> None:
    raise Violation(what)


class IsolationMachine(RuleBasedStateMachine):
    backend: Backend  # set by ``machine_for``

    def __init__(self) -> None:
        super().__init__()
        self.url = self.backend.new_url()
        self.now = START
        self.model = Model(next(_examples))
        self.truth = Truth(self.url)
        self.export_dir = Path(tempfile.mkdtemp(prefix="iso-export-"))
        self.ep = Episodic(
            store=open_store(self.url),
            embedder=FakeEmbedder(64),
            settings=Settings(
                archive_after_days=0.05,  # 72 minutes: the archive fills within a run
                institutional_chars=600,
                consolidate_threshold=4,
                review_recalls=True,
            ),
            clock=lambda: self.now,
            llm=None,
        )

        # The indexer's follow-up segments idle conversations: the same work, per
        # workspace, so the dedupe drops it makes are checked too.
        self.ep._segment_quietly = self._segment_after_sweep  # type: ignore[method-assign]

    def _segment_after_sweep(self) -> None:
        episodes = 0
        for ws in WORKSPACES:
            report = self.ep.segment(workspace=ws)
            self._check_segment(ws, report)
            episodes += report.episodes
        if episodes:
            self.ep.consolidate_if_due()

    def teardown(self) -> None:
        self.ep.close()
        self.truth.close()
        shutil.rmtree(self.export_dir, ignore_errors=True)
        self.backend.drop_url(self.url)

    def _op(self, kind: str) -> None:
        OPS[kind] += 1
        STEPS[self.backend.name] += 1
        self.now += STEP

    def _text(self, ws: str, agent: str | None, body: int, tagged: bool) -> str:
        text = BODIES[body]
        return f"{text} {self.model.tag(ws, agent)}." if tagged else f"{text}."

    # -- writes ------------------------------------------------------------------------
    @initialize()
    def seed(self) -> None:
        # Every workspace starts with the same untagged sentences under the same names.
        for ws in WORKSPACES:
            for body in range(len(BODIES)):
                self.ep.ingest(
                    [
                        {
                            "workspace": ws,
                            "agent": AGENTS[body % 2],
                            "crew": CREW,
                            "resource": RESOURCES[body % 2],
                            "type": "decision",
                            "summary": self._text(ws, AGENTS[body % 2], body, False),
                            "refs": {"episodic": True},
                        }
                    ]
                )
        # Twin entries: each workspace's alice says the same two things in c1, so the
        # second workspace's extraction would drop them as known if dedupe crossed over.
        for ws in WORKSPACES:
            for body in (0, 3):
                self.now += STEP
                self.ep.add_message(
                    self._text(ws, "alice", body, False),
                    workspace=ws,
                    conversation="c1",
                    agent="alice",
                    resource="repo",
                    name="alice",
                )
            self._check_segment(ws, self.ep.segment(flush=True, workspace=ws))
        self.ep.index_once()  # similar edges from the start, so the walk has somewhere to go
        OPS["seed"] += 1

    @rule(
        ws=st.sampled_from(WORKSPACES),
        agent=st.sampled_from((*AGENTS, None)),
        crew=st.sampled_from((CREW, None)),
        resource=st.sampled_from((*RESOURCES, None)),
        body=st.integers(0, len(BODIES) - 1),
        tagged=st.booleans(),
        event_id=st.sampled_from((*SHARED_IDS, None)),
        kind=st.sampled_from(("decision", "error", "exec.output_chunk")),
        single=st.booleans(),
    )
    def write_event(
        self,
        ws: str,
        agent: str | None,
        crew: str | None,
        resource: str | None,
        body: int,
        tagged: bool,
        event_id: str | None,
        kind: str,
        single: bool,
    ) -> None:
        self._op("ingest")
        holder = self.truth.owners().get(event_id) if event_id else None
        obj = {
            "id": event_id,
            "workspace": ws,
            "agent": agent,
            "crew": crew,
            "resource": resource,
            "type": kind,
            "severity": "error" if kind == "error" else "info",
            "summary": self._text(ws, agent, body, tagged),
            "refs": {"episodic": True} if kind == "decision" else {},
        }
        refused = False
        if single:
            try:
                self.ep.add_event(obj)
            except IdTaken:
                refused = True
        else:
            report = self.ep.ingest([obj])
            refused = any(e.field == "id" for e in report.errors)
            if not refused and holder is not None and holder != ws and report.duplicates:
                _fail(f"{ws}'s event {event_id} skipped as a duplicate of {holder}'s")
        self._check_write(ws, event_id, holder, refused)

    @rule(
        items=st.lists(
            st.tuples(
                st.sampled_from(WORKSPACES),
                st.sampled_from((*AGENTS, None)),
                st.integers(0, len(BODIES) - 1),
                st.sampled_from((*SHARED_IDS, None)),
            ),
            min_size=2,
            max_size=6,
        )
    )
    def write_batch(self, items: list[tuple[str, str | None, int, str | None]]) -> None:
        """One ingest call holding several workspaces, maybe one id for two of them."""
        self._op("ingest_batch")
        owners = self.truth.owners()
        report = self.ep.ingest(
            {
                "id": event_id,
                "workspace": ws,
                "agent": agent,
                "type": "decision",
                "summary": self._text(ws, agent, body, True),
                "refs": {"episodic": True},
            }
            for ws, agent, body, event_id in items
        )
        refused = {e.line for e in report.errors if e.field == "id"}
        for line, (ws, _, _, event_id) in enumerate(items, start=1):
            if event_id is None:
                continue
            # The first writer of an id in this batch holds it, unless someone did before.
            holder = owners.setdefault(event_id, ws)
            self._check_write(ws, event_id, holder, line in refused)

    def _check_write(
        self, ws: str, event_id: str | None, holder: str | None, refused: bool
    ) -> None:
        if event_id is None:
            return
        if holder is not None and holder != ws:
            if not refused:
                _fail(f"{ws} wrote id {event_id} held by {holder}: neither stored nor refused")
            if self.truth.owners().get(event_id) != holder:
                _fail(f"a refused write of {event_id} by {ws} changed {holder}'s row")
            OPS["refused_foreign_id"] += 1
        elif refused:
            _fail(f"{ws}'s id {event_id} refused though no other workspace holds it")
        elif self.truth.owners().get(event_id) != ws:
            _fail(f"{ws}'s write of {event_id} is not stored under {ws}")

    @rule(
        ws=st.sampled_from(WORKSPACES),
        agent=st.sampled_from(AGENTS),
        # Entry dedupe works per (workspace, agent, resource): mostly the agent's own
        # resource and untagged texts, so repeats (and cross-workspace twins) are common.
        resource=st.sampled_from(("own", "own", "own", *RESOURCES, None)),
        conversation=st.sampled_from(CONVERSATIONS),
        body=st.integers(0, len(BODIES) - 1),
        tagged=st.sampled_from((False, False, True)),
        role=st.sampled_from(("user", "user", "assistant")),
        message_id=st.sampled_from((*SHARED_IDS, None, None, None)),
    )
    def write_message(
        self,
        ws: str,
        agent: str,
        resource: str | None,
        conversation: str,
        body: int,
        tagged: bool,
        role: str,
        message_id: str | None,
    ) -> None:
        self._op("message")
        if resource == "own":
            resource = RESOURCES[AGENTS.index(agent)]
        holder = self.truth.owners().get(message_id) if message_id else None
        refused = False
        try:
            self.ep.add_message(
                self._text(ws, agent, body, tagged),
                workspace=ws,
                conversation=conversation,
                role=role,
                agent=agent,
                resource=resource,
                crew=CREW,
                name=agent,
                id=message_id,
            )
        except IdTaken:
            refused = True
        self._check_write(ws, message_id, holder, refused)

    @rule(
        ws=st.sampled_from(WORKSPACES),
        agent=st.sampled_from((*AGENTS, None)),
        body=st.integers(0, len(BODIES) - 1),
        note_id=st.sampled_from((*SHARED_IDS, None)),
    )
    def remember(self, ws: str, agent: str | None, body: int, note_id: str | None) -> None:
        self._op("remember")
        holder = self.truth.owners().get(note_id) if note_id else None
        refused = False
        try:
            memory = self.ep.remember(
                self._text(ws, agent, body, True), workspace=ws, agent=agent, id=note_id
            )
            if memory.workspace != ws:
                _fail(f"remember in {ws} returned {memory.workspace}'s memory {memory.id}")
        except IdTaken:
            refused = True
        except NotFound:
            # The id is an event of this workspace that was never admitted.
            if holder != ws:
                raise
            return
        self._check_write(ws, note_id, holder, refused)

    # -- indexing, segmentation, dedupe ------------------------------------------------
    @rule()
    def index(self) -> None:
        self._op("index")
        count = "SELECT count(*) FROM memory_relations WHERE relation = 'similar'"
        edges = int(self.truth.rows(count)[0][0])
        self.ep.index_once()  # embeds, links similar edges, segments idle conversations
        OPS["similar_edges"] += max(0, int(self.truth.rows(count)[0][0]) - edges)

    @rule(ws=st.sampled_from(WORKSPACES))
    def segment(self, ws: str) -> None:
        self._op("segment")
        self._check_segment(ws, self.ep.segment(flush=True, workspace=ws))

    def _check_segment(self, ws: str, report: SegmentReport) -> None:
        OPS["episodes"] += report.episodes
        OPS["entries"] += report.entries
        if not report.dropped:
            return
        rows = [r for r in self.truth.memories().values() if r.type == "entry"]
        mine = [r for r in rows if r.ws == ws and r.status == "active"]
        embed = FakeEmbedder(64)
        for drop in report.dropped:
            if drop.reason == KNOWN_HASH:
                OPS["dedupe_hash"] += 1
                digest = content_hash(drop.content)
                if not any(r.content_hash == digest for r in mine):
                    others = sorted({r.ws for r in rows if r.content_hash == digest})
                    _fail(f"{ws} dropped an entry as known; only {others} hold it: {drop}")
            elif drop.reason == SIMILAR and "with memory " in drop.detail:
                OPS["dedupe_similar"] += 1
                if not mine:
                    _fail(f"{ws} dropped an entry as similar with no entry of its own: {drop}")
                # The drop names the stored memory it matched: it must be this workspace's.
                named = drop.detail.rsplit("with memory ", 1)[1]
                if named not in {r.id for r in mine}:
                    _fail(f"{ws} dropped an entry as similar to {named}, not its own: {drop}")
                vectors = embed.embed_batch([drop.content, *(r.content for r in mine)])
                best = float(np.max(vectors[1:] @ vectors[0]))
                if best < DEDUPE_COSINE - 1e-4:
                    _fail(f"{ws} dropped an entry similar to nothing of its own ({best:.3f})")

    # -- reading -----------------------------------------------------------------------
    def _query(self, data: st.DataObject, ws: str) -> str:
        rows = [r for r in self.truth.memories().values() if r.ws != ws and r.status == "active"]
        choice = data.draw(st.integers(0, 3 if rows else 1), label="query kind")
        if choice == 0:
            return data.draw(st.sampled_from(QUERIES), label="query")
        if choice == 1:
            return data.draw(st.sampled_from(BODIES), label="query")
        # Probes: another workspace's exact text, or its tag alone.
        row = data.draw(st.sampled_from(sorted(rows, key=lambda r: r.id)), label="probe")
        tags = TAG.findall(row.content)
        if choice == 3 and tags:
            return "zt{}x{}{}{}".format(*tags[0])
        return row.content

    RECALL_ARGS: dict[str, Any] = dict(  # noqa: RUF012 - hypothesis strategies, read once
        data=st.data(),
        ws=st.sampled_from(WORKSPACES),
        agent=st.sampled_from((*AGENTS, None, None)),
        resource=st.sampled_from((*RESOURCES, None, None, None)),
        policy=st.sampled_from(POLICY_NAMES),
        walk=st.sampled_from((0, 1)),
        k=st.sampled_from((1, 2, None, 10)),  # small k leaves room for the walk
    )

    # Three rules share the recall, so reads get a fair share of the steps.
    @rule(**RECALL_ARGS)
    def recall_whole(self, **kw: Any) -> None:
        self._recall(scope=None, render=False, **kw)

    @rule(scope=st.sampled_from(("own", "crew_shared")), **RECALL_ARGS)
    def recall_scoped(self, **kw: Any) -> None:
        self._recall(render=False, **kw)

    @rule(scope=st.sampled_from((None, "own", "crew_shared")), **RECALL_ARGS)
    def render_block(self, **kw: Any) -> None:
        self._recall(render=True, **kw)

    def _recall(
        self,
        data: st.DataObject,
        ws: str,
        agent: str | None,
        scope: str | None,
        resource: str | None,
        policy: str,
        walk: int,
        render: bool,
        k: int | None,
    ) -> None:
        if scope == "own" and agent is None:
            agent = "alice"
        self._op(f"recall:{policy}")
        query = self._query(data, ws)
        filters: dict[str, Any] = {
            "workspace": ws,
            "agent": agent,
            "crew": CREW if scope == "crew_shared" else None,
            "resource": resource,
            "scope": scope,
            "policy": policy,
            "walk": walk,
            "k": k,
        }
        if render:
            block, result = self.ep.render_explained(query, **filters)
            self._check_tags(block, ws, f"render {policy} in {ws}")
        else:
            result = self.ep.recall(query, **filters)
        truth = self.truth.memories()
        for hit in result.hits:
            OPS["hits_checked"] += 1
            if hit.via is not None:
                OPS["walked_hits"] += 1
            row = truth.get(hit.id)
            where = f"{policy} walk={walk} scope={scope} in {ws}: hit {hit.id}"
            if row is None:
                _fail(f"{where} is not stored (forgotten?)")
                return
            if row.ws != ws or hit.memory.workspace != ws:
                _fail(f"{where} belongs to {row.ws}")
            if hit.via is not None and truth.get(hit.via, row).ws != ws:
                _fail(f"{where} was walked to from another workspace's {hit.via}")
            # Naming an agent without a scope only says who asks (it weighs, not filters).
            if scope == "own" and row.agent != agent:
                _fail(f"{where} is agent {row.agent}'s, not {agent}'s")
            if scope == "crew_shared" and not (
                row.agent == agent or (row.crew == CREW and row.base_importance >= 0.55)
            ):
                _fail(f"{where} is neither {agent}'s nor a shared entry of crew {CREW}")
            if resource is not None and row.resource != resource:
                _fail(f"{where} is resource {row.resource}'s, not {resource}'s")
            self._check_tags(hit.memory.content, ws, where)

    def _check_tags(self, text: str, ws: str, where: str) -> None:
        for example, owner, agent, n in tags_in(text):
            if example != self.model.example:
                _fail(f"{where}: text from an earlier database came back ({text[:120]!r})")
            if owner != ws:
                _fail(f"{where}: shows {owner}'s text ({text[:120]!r})")
            if n < self.model.dead_ws.get(owner, 0) or n < self.model.dead_agent.get(
                (owner, agent), 0
            ):
                _fail(f"{where}: shows forgotten text of {owner}/{agent} ({text[:120]!r})")

    @rule(data=st.data(), ws=st.sampled_from(WORKSPACES))
    def peek_foreign(self, data: st.DataObject, ws: str) -> None:
        """Reading another workspace's memory by id finds nothing."""
        self._op("peek")
        truth = self.truth.memories()
        foreign = sorted(i for i, r in truth.items() if r.ws != ws)
        listed = self.ep.list_memories(ScopeFilter(ws), limit=200).items
        if any(m.workspace != ws or truth[m.id].ws != ws for m in listed):
            _fail(f"list_memories({ws}) shows another workspace's memory")
        if not foreign:
            return
        target = data.draw(st.sampled_from(foreign), label="foreign id")
        try:
            self.ep.memory(ScopeFilter(ws), target)
        except NotFound:
            pass
        else:
            _fail(f"{ws} read {truth[target].ws}'s memory {target} by id")
        if self.ep.memories(ScopeFilter(ws), [target]):
            _fail(f"{ws} read {truth[target].ws}'s memory {target} in a batch")

    # -- upkeep ------------------------------------------------------------------------
    @rule(ws=st.sampled_from((*WORKSPACES, None)))
    def consolidate(self, ws: str | None) -> None:
        self._op("consolidate")
        for result in self.ep.consolidate(workspace=ws):
            OPS["consolidated"] += len(result.detail.get("derived", []))

    @rule(ws=st.sampled_from((*WORKSPACES, None)))
    def compact(self, ws: str | None) -> None:
        self._op("compact")
        for result in self.ep.compact(workspace=ws):
            OPS["merged"] += int(result.detail.get("compacted", 0))
            OPS["archived"] += int(result.detail.get("archived_events", 0))

    @rule(ws=st.sampled_from(WORKSPACES), agent=st.sampled_from(AGENTS))
    def upkeep(self, ws: str, agent: str) -> None:
        self._op("upkeep")
        self.ep.decay(workspace=ws)
        self.ep.review(ws, "billing rollout gateway postgres replica", agent=agent)
        self.ep.run_reviews()
        self.ep.health_snapshot(workspace=ws)

    # -- export ------------------------------------------------------------------------
    @rule(ws=st.sampled_from((*WORKSPACES, None)), through_service=st.booleans())
    def export(self, ws: str | None, through_service: bool) -> None:
        self._op("export")
        shutil.rmtree(self.export_dir, ignore_errors=True)
        if through_service:
            self.ep.export_markdown(self.export_dir, workspace=ws)
        else:
            export_markdown(self.ep.store, self.export_dir, workspace=ws)
        truth = self.truth.memories()
        names = [ws] if ws is not None else sorted({r.ws for r in truth.values()})
        found = {p.name for p in self.export_dir.iterdir()} if self.export_dir.exists() else set()
        if found - set(names):
            _fail(f"export of {ws} wrote folders {sorted(found - set(names))}")
        for name in names:
            expected = {i for i, r in truth.items() if r.ws == name}
            seen: set[str] = set()
            root = self.export_dir / name
            for path in root.rglob("*.md") if root.exists() else []:
                OPS["exported_files"] += 1
                text = path.read_text()
                head = yaml.safe_load(text.split("---\n", 2)[1])
                if head.get("workspace") != name or head.get("id") not in expected:
                    _fail(f"export of {name} holds {head.get('workspace')}'s {head.get('id')}")
                self._check_tags(text, name, f"export file {path.name} of {name}")
                seen.add(str(head["id"]))
            if seen != expected:
                _fail(f"export of {name} misses {sorted(expected - seen)[:5]}")
            journal = root / "journal.jsonl"
            for line in journal.read_text().splitlines() if journal.exists() else []:
                event = json.loads(line)
                if event["workspace"] != name:
                    _fail(f"export journal of {name} holds {event['workspace_id']}'s {event['id']}")
                self._check_tags(event["summary"], name, f"export journal of {name}")

    # -- forgetting --------------------------------------------------------------------
    @rule(
        data=st.data(),
        ws=st.sampled_from(WORKSPACES),
        how=st.sampled_from(
            ("memory", "foreign_memory", "agent", "resource", "conversation", "all")
        ),
    )
    def forget(self, data: st.DataObject, ws: str, how: str) -> None:
        self._op(f"forget:{how}")
        before = self.truth.memories()
        kwargs: dict[str, Any] = {"workspace": ws}
        if how in ("memory", "foreign_memory"):
            pool = sorted(i for i, r in before.items() if (r.ws == ws) == (how == "memory"))
            if not pool:
                return
            kwargs["memory"] = data.draw(st.sampled_from(pool), label="memory")
        elif how == "agent":
            kwargs["agent"] = data.draw(st.sampled_from(AGENTS), label="agent")
        elif how == "resource":
            kwargs["resource"] = data.draw(st.sampled_from(RESOURCES), label="resource")
        elif how == "conversation":
            kwargs["conversation"] = data.draw(st.sampled_from(CONVERSATIONS), label="conv")
        if len(kwargs) == 1:
            kwargs["all"] = True  # the whole workspace, asked for by name
        self.ep.forget(**kwargs)
        after = self.truth.memories()
        for i, r in before.items():
            if r.ws != ws and i not in after:
                _fail(f"forget {kwargs} removed {r.ws}'s memory {i}")
            if r.ws != ws and after[i].content != r.content:
                _fail(f"forget {kwargs} changed {r.ws}'s memory {i}")
        mine = [r for r in after.values() if r.ws == ws]
        if how == "memory" and kwargs["memory"] in after:
            _fail(f"forgotten memory {kwargs['memory']} of {ws} is still stored")
        if how == "agent":
            left = [r.id for r in mine if r.agent == kwargs["agent"]]
            if left:
                _fail(f"forget agent {kwargs['agent']} in {ws} left {left[:5]}")
            self.model.dead_agent[(ws, kwargs["agent"])] = self.model.next_tag + 1
        if how == "all":
            if mine or self.truth.rows(f"SELECT id FROM events WHERE workspace_id = '{ws}'"):
                _fail(f"forgetting all of {ws} left rows")
            self.model.dead_ws[ws] = self.model.next_tag + 1

    # -- what must hold after every step ---------------------------------------------
    @invariant()
    def nothing_crosses(self) -> None:
        t = self.truth
        checks = {
            "edge between workspaces": "SELECT r.src, r.dst FROM memory_relations r "
            "JOIN memories a ON a.id = r.src JOIN memories b ON b.id = r.dst "
            "WHERE a.workspace_id <> b.workspace_id",
            "memory citing another workspace's event": "SELECT s.memory_id, s.event_id "
            "FROM memory_sources s JOIN memories m ON m.id = s.memory_id "
            "LEFT JOIN events e ON e.id = s.event_id "
            "LEFT JOIN events_archive a ON a.id = s.event_id "
            "WHERE COALESCE(e.workspace_id, a.workspace_id, m.workspace_id) <> m.workspace_id",
            "vector filed under another workspace": "SELECT v.memory_id FROM memory_vectors v "
            "JOIN memories m ON m.id = v.memory_id WHERE v.workspace_id <> m.workspace_id",
            "compaction across workspaces": "SELECT c.memory_id FROM memory_compactions c "
            "JOIN memories a ON a.id = c.memory_id JOIN memories b ON b.id = c.survivor_id "
            "WHERE a.workspace_id <> b.workspace_id OR c.workspace_id <> a.workspace_id",
            "message taken by another workspace's episode": "SELECT e.id FROM events e "
            "JOIN memories m ON m.id = e.episode_id WHERE e.workspace_id <> m.workspace_id",
        }
        for what, sql in checks.items():
            bad = t.rows(sql)
            if bad:
                _fail(f"{what}: {bad[:5]}")
        rows = t.memories()
        for r in rows.values():
            self._check_tags(r.content + " " + r.keys, r.ws, f"stored memory {r.id} of {r.ws}")
            if r.type == CONSOLIDATED_TYPE:
                for e in r.payload.get("evidence", []):
                    if e in rows and rows[e].ws != r.ws:
                        _fail(f"{r.ws}'s rule {r.id} cites {rows[e].ws}'s {e}")
        for ws, ids in t.rows("SELECT workspace_id, memory_ids FROM memory_reviews"):
            for i in json.loads(ids):
                if i in rows and rows[i].ws != ws:
                    _fail(f"a review of {ws} names {rows[i].ws}'s memory {i}")
        for i, ws, summary in t.rows(
            "SELECT id, workspace_id, summary FROM events UNION ALL "
            "SELECT id, workspace_id, summary FROM events_archive"
        ):
            self._check_tags(summary, ws, f"journal row {i} of {ws}")


def machine_for(backend: Backend) -> type[IsolationMachine]:
    return type(f"IsolationMachine_{backend.name}", (IsolationMachine,), {"backend": backend})


def run(backend: Backend, *, examples: int, steps: int, derandomize: bool) -> None:
    run_state_machine_as_test(
        machine_for(backend),
        settings=hsettings(
            max_examples=examples,
            stateful_step_count=steps,
            derandomize=derandomize,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        ),
    )


# -- backends ------------------------------------------------------------------------
def sqlite_backend(root: Path) -> Backend:
    counter = itertools.count()

    def new_url() -> str:
        return f"sqlite:///{root}/iso-{next(counter)}.db"

    def drop(url: str) -> None:
        path = Path(url.removeprefix("sqlite:///"))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    return Backend("sqlite", new_url, drop)


PG_TEMPLATE = "episodic_template"  # tests/conftest.py's migrated template


def postgres_backend(admin_uri: str) -> Backend:
    counter = itertools.count()

    def url_of(name: str) -> str:
        head, _, query = admin_uri.partition("?")
        base = head.rsplit("/", 1)[0]
        return f"{base}/{name}?{query}" if query else f"{base}/{name}"

    def new_url() -> str:
        name = f"iso_{next(counter)}"
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {PG_TEMPLATE}")
        return url_of(name)

    def drop(url: str) -> None:
        name = url.partition("?")[0].rsplit("/", 1)[1]
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return Backend("postgres", new_url, drop)
