"""Reviews (seed 003): every recall records a pending review; the agent's following output
rates each recalled memory, and the rating updates the memory's FSRS state.

Where the output comes from:

- ``review_output``: the agent (or its runtime) hands it in, ``Episodic.review(workspace,
  output_text)``, right after its turn; it rates the workspace's pending reviews (narrowed
  to an agent or a conversation when given).
- ``run_reviews`` (the scheduled job): for recalls made inside a conversation, the
  assistant messages that followed the recall in that conversation. Recalls that found
  no output within ``REVIEW_EXPIRY`` are closed as ``expired``, without a rating:
  nothing is known about their use.

Rating: the configured LLM (``llm``) grades each memory again / hard / good / easy; any
other label counts as good. Offline, or when the LLM fails, ``scoring.review``'s token
overlap grades them, and the review records which of the two did (``rated_by``).

Update: ``scoring.review.fsrs_review`` (the ``fsrs`` package's FSRS-6 scheduler). A
memory reviewed less than a day ago is skipped. The store applies the new state only
while the memory's last review is the one the job read (compare-and-set), and claims
reviews row by row, so two jobs never rate the same recall or overwrite each other.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from episodic.errors import InvalidInput, LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import fill
from episodic.model import Memory
from episodic.scoring.review import (
    due_for_review,
    fsrs_review,
    parse_rating,
    rating_for_overlap,
    usage_overlap,
)
from episodic.store.upkeep import FsrsUpdate, PendingReview, ReviewOutcome, UpkeepStore
from episodic.upkeep.lease import new_holder
from episodic.upkeep.prompts import (
    DEFAULT_UPKEEP_PROMPTS,
    REVIEW_SCHEMA,
    UpkeepPrompts,
    upkeep_block,
)

log = logging.getLogger("episodic.upkeep.reviews")

JOB = "reviews"
OFFLINE_RATER = "offline:token-overlap"
SKIPPED = "skipped"  # the rating recorded for a memory reviewed less than a day before
REVIEW_LEASE_S = 120.0
REVIEW_BATCH = 200
# With an LLM each recall costs a call: claim fewer at a time, so the claims do not lapse
# (and another runner rate them again) before they are finished.
REVIEW_BATCH_LLM = 20
REVIEW_EXPIRY = timedelta(days=1)
# The output a review reads: the first messages after the recall, up to this much text.
FOLLOW_UP_MESSAGES = 8
OUTPUT_MAX_CHARS = 8_000
MEMORY_MAX_CHARS = 1_000  # of each memory, in the LLM prompt
REVIEW_MAX_TOKENS = 512


@dataclass(slots=True)
class ReviewReport:
    reviews: int = 0  # recalls rated
    memories: int = 0  # memories whose FSRS state changed
    skipped: int = 0  # reviewed less than a day before
    expired: int = 0
    waiting: int = 0  # recalls in conversations with no output yet
    ratings: Counter[str] = field(default_factory=Counter)
    rated_by: set[str] = field(default_factory=set)

    def add(self, other: ReviewReport) -> None:
        self.reviews += other.reviews
        self.memories += other.memories
        self.skipped += other.skipped
        self.expired += other.expired
        self.waiting += other.waiting
        self.ratings.update(other.ratings)
        self.rated_by |= other.rated_by

    def to_json(self) -> dict[str, Any]:
        return {
            "reviews": self.reviews,
            "memories_updated": self.memories,
            "skipped_recently_reviewed": self.skipped,
            "expired": self.expired,
            "waiting_for_output": self.waiting,
            "ratings": {r: self.ratings.get(r, 0) for r in ("again", "hard", "good", "easy")},
            "rated_by": sorted(self.rated_by),
        }


def rate_offline(memories: Sequence[Memory], output: str) -> dict[str, str]:
    return {m.id: rating_for_overlap(usage_overlap(m.content, output)) for m in memories}


def rate(
    memories: Sequence[Memory],
    output: str,
    llm: LLM | None,
    *,
    prompts: UpkeepPrompts = DEFAULT_UPKEEP_PROMPTS,
) -> tuple[dict[str, str], str]:
    """Ratings (memory id -> again/hard/good/easy) and what produced them."""
    if llm is None or not memories:
        return rate_offline(memories, output), OFFLINE_RATER
    labels = {f"m{i}": m for i, m in enumerate(memories, start=1)}
    listing = "\n".join(
        f"{label}: {' '.join(m.content.split())[:MEMORY_MAX_CHARS]}" for label, m in labels.items()
    )
    user = fill(
        prompts.review_user,
        memories=upkeep_block("memories", listing),
        output=upkeep_block("output", output[:OUTPUT_MAX_CHARS]),
    )
    try:
        reply = llm.complete_json(
            prompts.review_system, user, REVIEW_SCHEMA, max_tokens=REVIEW_MAX_TOKENS
        )
    except LLMError as exc:
        log.warning("review rating by LLM failed, rating by token overlap instead: %s", exc)
        return rate_offline(memories, output), f"{OFFLINE_RATER} (llm failed)"
    given = {
        item["memory"].strip(): parse_rating(item["rating"])
        for item in reply["ratings"]
        if item["memory"].strip() in labels
    }
    # A memory the model left out, like an unknown label, counts as Good.
    ratings = {m.id: given.get(label, parse_rating(None)) for label, m in labels.items()}
    return ratings, f"llm:{llm.model_id}"


def _review_one(
    store: UpkeepStore, review: PendingReview, output: str, now: datetime, llm: LLM | None
) -> tuple[ReviewOutcome, ReviewReport]:
    request = review.request
    report = ReviewReport(reviews=1)
    found = store.get_memories(request.workspace_id, list(request.memory_ids))
    due = [m for m in found if due_for_review(m.last_reviewed_at, now)]
    ratings, rated_by = rate(due, output, llm)
    report.rated_by.add(rated_by)
    updates = []
    for m in due:
        stability, difficulty = fsrs_review(
            m.stability, m.difficulty, m.last_reviewed_at or m.ts, ratings[m.id], now
        )
        updates.append(FsrsUpdate(m.id, stability, difficulty, now, m.last_reviewed_at))
    report.memories = store.apply_reviews(request.workspace_id, updates)
    report.ratings.update(ratings.values())
    skipped = {m.id: SKIPPED for m in found if m.id not in ratings}
    report.skipped = len(skipped)
    outcome = ReviewOutcome(review.id, "rated", {**ratings, **skipped}, rated_by)
    return outcome, report


def review_output(
    store: UpkeepStore,
    workspace: str,
    output_text: str,
    *,
    now: datetime,
    llm: LLM | None,
    agent: str | None = None,
    conversation: str | None = None,
) -> ReviewReport:
    """Rate the workspace's pending reviews by ``output_text`` (what the agent said or did
    after recalling), oldest first."""
    if not workspace or not workspace.strip():
        raise InvalidInput("workspace", "required: reviews run inside one workspace")
    if not output_text or not output_text.strip():
        raise InvalidInput("output_text", "the agent's output to rate the recalls by is empty")
    holder = new_holder()
    report = ReviewReport()
    claimed = store.claim_reviews(
        holder,
        now,
        lease_s=REVIEW_LEASE_S,
        limit=REVIEW_BATCH,
        workspace_id=workspace,
        agent_id=agent,
        conversation_id=conversation,
    )
    outcomes = []
    for review in claimed:
        outcome, part = _review_one(store, review, output_text, now, llm)
        outcomes.append(outcome)
        report.add(part)
    store.finish_reviews(holder, outcomes, now)
    return report


def follow_up_output(store: UpkeepStore, review: PendingReview) -> str:
    """What the agent said after the recall: the assistant messages that followed it in
    its conversation (empty while there are none)."""
    request = review.request
    if request.conversation_id is None:
        return ""
    messages = store.conversation_messages(
        request.workspace_id,
        request.conversation_id,
        after=request.recalled_at,
        limit=FOLLOW_UP_MESSAGES,
    )
    said = [e.summary for e in messages if e.payload.get("role") == "assistant" and e.summary]
    return "\n".join(said)[:OUTPUT_MAX_CHARS]


def run_reviews(
    store: UpkeepStore, now: datetime, *, llm: LLM | None, expiry: timedelta = REVIEW_EXPIRY
) -> ReviewReport:
    """The scheduled job: rate conversation recalls by the messages that followed them,
    then close the recalls that waited longer than ``expiry`` as expired."""
    holder = new_holder()
    report = ReviewReport()
    batch = REVIEW_BATCH if llm is None else REVIEW_BATCH_LLM
    while True:
        claimed = store.claim_reviews(
            holder, now, lease_s=REVIEW_LEASE_S, limit=batch, only_conversations=True
        )
        outcomes, waiting = [], []
        for review in claimed:
            output = follow_up_output(store, review)
            if not output.strip():
                waiting.append(review.id)
                continue
            outcome, part = _review_one(store, review, output, now, llm)
            outcomes.append(outcome)
            report.add(part)
        store.finish_reviews(holder, outcomes, now)
        # Recalls still waiting go back at once, so an explicit review() can take them.
        store.release_reviews(holder, waiting)
        report.waiting += len(waiting)
        if len(claimed) < batch or not outcomes:
            break
    while True:
        stale = store.claim_reviews(
            holder,
            now,
            lease_s=REVIEW_LEASE_S,
            limit=REVIEW_BATCH,
            recalled_before=now - expiry,
        )
        store.finish_reviews(holder, [ReviewOutcome(r.id, "expired") for r in stale], now)
        report.expired += len(stale)
        if len(stale) < REVIEW_BATCH:
            break
    return report
