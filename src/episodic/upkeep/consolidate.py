"""Consolidation (seeds 000 and 003): rules and facts derived from clusters of related
memories.

1. Take the workspace's active memories no consolidation has taken yet, leaving out chat
   messages (episodes and entries stand for them) and earlier consolidations: the newest
   ``CONSOLIDATE_BATCH`` that no run has looked at, and the newest ``CONSOLIDATE_BATCH``
   that an earlier run looked at and left unclustered ("waiting").
2. Cluster them: two memories are linked when their cosine is >= ``CLUSTER_MIN_COSINE``
   (the ``similar`` edge threshold), or, when one has no vector yet, when the Jaccard
   similarity of their ``[a-z0-9_]+`` tokens is > ``CLUSTER_MIN_JACCARD``. Walking the
   memories from the most important, each one not yet taken leads a cluster of the
   untaken memories linked to it (at most ``CLUSTER_MAX``). A memory linked to nothing
   is marked unclustered (``UpkeepStore.mark_unclustered``): it leaves the backlog the
   trigger counts, so a second check with nothing new does nothing, but it is waiting,
   not done: every later run offers it again, so a new memory alike to it (the only
   thing that can give it a cluster) takes it along. Only the new memory counts towards
   the next trigger; the daily run looks at the waiting ones regardless.
3. Each cluster becomes knowledge:
   - with an LLM: up to three rules ("When X, agents should Y.") or facts, each citing
     evidence by the labels the prompt showed (``upkeep.prompts``); the reply is
     schema-checked, labels outside the cluster are dropped, an item left with fewer than
     ``MIN_EVIDENCE`` distinct evidence memories is dropped, and confidence is clamped to
     [0, 1];
   - offline (or when the LLM fails): one ``summary`` written from the evidence itself
     (``episodic.upkeep.summary``: the subject they share, then their own sentences),
     labelled ``consolidated_by: offline:cluster-summary``. It restates; it does not
     infer, so it never weighs more than what it restates: its base importance (and
     importance) is the lowest of its evidence's, at most seed 000's 0.7, and its time
     is its oldest evidence's. Every factor recall multiplies in (importance and its
     decay, recency, prominence, retrievability) then rates it at most as high as each
     memory it copies, and a newest-first listing puts it after the newer ones.
4. Each item is stored as a ``memory.consolidated`` memory (an LLM's: base importance
   0.7, seed 000's bonus, timed now) with ``supports`` edges (weight 1.0) to its
   evidence, and the evidence ids in ``payload["evidence_ids"]`` (so a reader of the row
   alone knows them); every memory of the cluster gets ``consolidated_at``: in one
   transaction that is refused if another run consolidated any of them meanwhile. A
   cluster the model found nothing in is not offered again.

When it runs: daily (the scheduler), when a workspace's backlog (the memories step 1
would take that no run has looked at) reaches ``Settings.consolidate_threshold``, and at
once when a flashbulb episode (surprise >= 0.85) arrives (``due_reason``); or ``episodic
consolidate run``.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from episodic.blas import one_thread
from episodic.errors import LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import fill
from episodic.model import Memory
from episodic.policy import base_importance
from episodic.scoring.mmr import jaccard, tokens
from episodic.scoring.similarity import leader_clusters, near_duplicates
from episodic.store.upkeep import UpkeepStore
from episodic.store.vectors import Relation, VectorStore
from episodic.upkeep.prompts import (
    CONSOLIDATE_SCHEMA,
    DEFAULT_UPKEEP_PROMPTS,
    UpkeepPrompts,
    upkeep_block,
)
from episodic.upkeep.relations import supports_edges
from episodic.upkeep.summary import cluster_summary
from episodic.write.messages import MESSAGE_TYPE

log = logging.getLogger("episodic.upkeep.consolidate")

JOB = "consolidate"
CONSOLIDATED_TYPE = "memory.consolidated"
EXCLUDED_TYPES = (MESSAGE_TYPE, CONSOLIDATED_TYPE)
CONSOLIDATE_BATCH = 2_000
CLUSTER_MIN_COSINE = 0.80
CLUSTER_MIN_JACCARD = 0.5
CLUSTER_MAX = 12
MIN_EVIDENCE = 2
CONSOLIDATE_THRESHOLD = 50
CONSOLIDATED_BASE_IMPORTANCE = base_importance(CONSOLIDATED_TYPE, "info", None)
OFFLINE_CONSOLIDATOR = "offline:cluster-summary"
OFFLINE_KIND = "summary"
EVIDENCE_IDS = "evidence_ids"  # payload key: the ids of the memories an item rests on
CONSOLIDATE_MAX_TOKENS = 1_024
MEMORY_PROMPT_CHARS = 600

TRIGGER_MANUAL = "manual"
TRIGGER_DAILY = "daily"
TRIGGER_THRESHOLD = "threshold"
TRIGGER_FLASHBULB = "flashbulb"


class ConsolidationStore(UpkeepStore, VectorStore, Protocol):
    """What consolidation reads and writes: the upkeep rows, and the stored vectors of
    the memories it clusters."""


@dataclass(frozen=True, slots=True)
class Item:
    """One piece of derived knowledge before it is stored."""

    kind: str  # rule | fact | summary
    content: str
    evidence: tuple[str, ...]
    confidence: float
    by: str


@dataclass(slots=True)
class ConsolidationReport:
    workspace: str
    trigger: str = TRIGGER_MANUAL
    considered: int = 0
    waiting: int = 0
    clusters: int = 0
    unclustered: int = 0
    derived: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    evidence: int = 0
    dropped: list[dict[str, str]] = field(default_factory=list)
    taken_elsewhere: int = 0
    by: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "trigger": self.trigger,
            "considered": self.considered,
            "waiting": self.waiting,
            "clusters": self.clusters,
            "unclustered": self.unclustered,
            "derived": list(self.derived),
            "rules": self.kinds.get("rule", 0),
            "facts": self.kinds.get("fact", 0),
            "summaries": self.kinds.get("summary", 0),
            "evidence": self.evidence,
            "dropped": list(self.dropped),
            "taken_elsewhere": self.taken_elsewhere,
            "consolidated_by": sorted(self.by),
        }


def due_reason(store: UpkeepStore, workspace: str, threshold: int) -> str | None:
    """Why the workspace should be consolidated now (a flashbulb episode waits, or the
    backlog reached ``threshold``), or None."""
    backlog = store.consolidation_backlog(workspace, EXCLUDED_TYPES)
    if backlog.flashbulbs > 0:
        return TRIGGER_FLASHBULB
    if backlog.unconsolidated >= threshold:
        return TRIGGER_THRESHOLD
    return None


def cluster(
    store: ConsolidationStore, workspace: str, memories: Sequence[Memory]
) -> list[list[Memory]]:
    """Clusters of related memories (step 2 of the module docstring)."""
    n = len(memories)
    if n < MIN_EVIDENCE:
        return []
    vectors = store.get_vectors(workspace, [m.id for m in memories])
    linked = np.zeros((n, n), dtype=bool)
    have = [i for i, m in enumerate(memories) if m.id in vectors]
    if len(have) >= 2:
        matrix = np.stack([vectors[memories[i].id] for i in have]).astype(np.float32)
        with one_thread():
            close = (matrix @ matrix.T) >= CLUSTER_MIN_COSINE
        idx = np.asarray(have)
        linked[np.ix_(idx, idx)] = close
    vectored = np.zeros(n, dtype=bool)
    vectored[have] = True
    for i, j, _ in near_duplicates([tokens(m.content) for m in memories], CLUSTER_MIN_JACCARD):
        if not (vectored[i] and vectored[j]):
            linked[i, j] = linked[j, i] = True
    np.fill_diagonal(linked, False)
    order = sorted(range(n), key=lambda i: -memories[i].importance)  # stable: newest first
    return [[memories[i] for i in group] for group in leader_clusters(linked, order, CLUSTER_MAX)]


def offline_item(members: Sequence[Memory]) -> Item:
    """A summary of a cluster written only from its evidence (``cluster_summary``)."""
    return Item(
        kind=OFFLINE_KIND,
        content=cluster_summary(members),
        evidence=tuple(m.id for m in members),
        confidence=_cohesion(members),
        by=OFFLINE_CONSOLIDATOR,
    )


def llm_items(
    members: Sequence[Memory], llm: LLM, prompts: UpkeepPrompts, report: ConsolidationReport
) -> list[Item]:
    """The model's rules and facts for one cluster, checked (raises ``LLMError``)."""
    labels = {f"m{i}": m for i, m in enumerate(members, start=1)}
    listing = "\n".join(
        f"{label} ({m.type}, {m.ts.date().isoformat()}): "
        f"{' '.join(m.content.split())[:MEMORY_PROMPT_CHARS]}"
        for label, m in labels.items()
    )
    user = fill(prompts.consolidate_user, memories=upkeep_block("memories", listing))
    reply = llm.complete_json(
        prompts.consolidate_system, user, CONSOLIDATE_SCHEMA, max_tokens=CONSOLIDATE_MAX_TOKENS
    )
    items: list[Item] = []
    for raw in reply["items"]:
        content = " ".join(str(raw["content"]).split())
        cited = [str(label).strip() for label in raw["evidence"]]
        unknown = [label for label in cited if label not in labels]
        evidence = tuple(dict.fromkeys(labels[label].id for label in cited if label in labels))
        if unknown:
            report.dropped.append(
                {"reason": "evidence outside the cluster", "detail": ", ".join(unknown)[:200]}
            )
        if not content:
            report.dropped.append({"reason": "empty content", "detail": ""})
            continue
        if len(evidence) < MIN_EVIDENCE:
            report.dropped.append(
                {"reason": f"fewer than {MIN_EVIDENCE} evidence memories", "detail": content[:200]}
            )
            continue
        confidence = float(raw["confidence"])
        confidence = 0.0 if confidence != confidence else min(1.0, max(0.0, confidence))
        items.append(Item(raw["kind"], content, evidence, confidence, f"llm:{llm.model_id}"))
    return items


def consolidate(
    store: ConsolidationStore,
    workspace: str,
    *,
    now: datetime,
    llm: LLM | None,
    trigger: str = TRIGGER_MANUAL,
    prompts: UpkeepPrompts = DEFAULT_UPKEEP_PROMPTS,
) -> ConsolidationReport:
    """Consolidate one workspace (see the module docstring)."""
    report = ConsolidationReport(workspace=workspace, trigger=trigger)
    fresh = _unconsolidated(store, workspace, looked_at=False)
    waiting = _unconsolidated(store, workspace, looked_at=True)
    memories = fresh + waiting
    report.considered, report.waiting = len(memories), len(waiting)
    clustered: set[str] = set()
    for members in cluster(store, workspace, memories):
        report.clusters += 1
        clustered.update(m.id for m in members)
        items: list[Item]
        if llm is None:
            items = [offline_item(members)]
        else:
            try:
                items = llm_items(members, llm, prompts, report)
            except LLMError as exc:
                log.warning("consolidation by LLM failed, summarising offline: %s", exc)
                fallback = offline_item(members)
                items = [
                    Item(
                        fallback.kind,
                        fallback.content,
                        fallback.evidence,
                        fallback.confidence,
                        f"{OFFLINE_CONSOLIDATOR} (llm failed)",
                    )
                ]
        derived = [_memory(workspace, item, members, now) for item in items]
        edges: list[Relation] = []
        for memory, item in zip(derived, items, strict=True):
            edges += supports_edges(memory.id, item.evidence)
        if not store.store_consolidation(workspace, derived, edges, [m.id for m in members], now):
            report.taken_elsewhere += 1
            continue
        report.derived += [m.id for m in derived]
        report.kinds.update(item.kind for item in items)
        report.evidence += len({e for item in items for e in item.evidence})
        report.by.update(item.by for item in items)
    alone = [m.id for m in fresh if m.id not in clustered]
    report.unclustered = store.mark_unclustered(workspace, alone, now) if alone else 0
    return report


def _unconsolidated(store: ConsolidationStore, workspace: str, *, looked_at: bool) -> list[Memory]:
    """The newest ``CONSOLIDATE_BATCH`` memories step 1 takes, of those an earlier run
    looked at and left unclustered (``looked_at``) or of the others."""
    memories, _ = store.scan_memories(
        workspace,
        limit=CONSOLIDATE_BATCH,
        unconsolidated=True,
        unclustered=looked_at,
        exclude_types=EXCLUDED_TYPES,
        newest_first=True,
    )
    return memories


def _memory(workspace: str, item: Item, members: Sequence[Memory], now: datetime) -> Memory:
    evidence = [m for m in members if m.id in set(item.evidence)]
    digest = hashlib.sha256(
        "\x1f".join([workspace, item.kind, item.content, *sorted(item.evidence)]).encode()
    ).hexdigest()[:24]
    base, importance, ts = CONSOLIDATED_BASE_IMPORTANCE, CONSOLIDATED_BASE_IMPORTANCE, now
    if item.kind == OFFLINE_KIND:
        # A restatement weighs no more, and is no more recent, than any of what it
        # restates (see step 3 of the module docstring).
        base = min(base, *(m.base_importance for m in evidence))
        importance = min(base, *(m.importance for m in evidence))
        ts = min(m.ts for m in evidence)
    return Memory(
        id=f"con_{digest}",
        workspace=workspace,
        ts=ts,
        type=CONSOLIDATED_TYPE,
        content=item.content,
        payload={
            "kind": item.kind,
            "confidence": round(item.confidence, 4),
            EVIDENCE_IDS: list(item.evidence),
            "consolidated_by": item.by,
            "cluster_size": len(members),
        },
        agent=_common(m.agent for m in evidence),
        crew=_common(m.crew for m in evidence),
        resource=_common(m.resource for m in evidence),
        base_importance=base,
        importance=importance,
        created_at=now,
    )


def _common(values: Any) -> str | None:
    """The value every evidence memory shares (None when they differ or have none)."""
    found = set(values)
    return next(iter(found)) if len(found) == 1 else None


def _cohesion(members: Sequence[Memory]) -> float:
    """Mean Jaccard over pairs of the cluster's token sets, in [0, 1]."""
    sets = [tokens(m.content) for m in members]
    pairs = [(a, b) for i, a in enumerate(sets) for b in sets[i + 1 :]]
    if not pairs:
        return 0.0
    return round(sum(jaccard(a, b) for a, b in pairs) / len(pairs), 4)
