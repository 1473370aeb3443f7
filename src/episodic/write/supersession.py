"""The supersession decision: does a new memory replace an older one?

The core finds candidates (older memories of the same scope that look alike) and asks this
module about each: ``supersedes`` (the old one is out of date), ``duplicate`` (the same
fact again) or ``unrelated``. Two deciders, both pure apart from the model call:

- ``decide_offline``: a conservative English rule (``episodic.write.change_rules``), for
  one pair at a time;
- ``decide_with_llm``: one model call for all candidates (Mem0's update decision), the
  memories sent as an untrusted JSON data block. If the model fails (``LLMError``, after
  the client's own retry of a bad reply), every candidate is decided offline instead, with
  one warning logged.

Every ``Decision`` names what decided it (``offline:<rule>`` or ``llm:<model id>``) and
why, in one sentence, so a trace can show it.

Whoever decides, ``blocked`` holds the pair to the guards no text can argue with: only an
older memory is replaced, only by a memory of the same agent, crew and resource, never by
one made from it or from the same source (an entry does not replace the message it was
extracted from), and never a reason or an outcome by a new instruction. The service
applies it to every candidate, so a model's answer is checked against them too.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput, LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import DEFAULT_PROMPTS, SUPERSESSION_SCHEMA, Prompts
from episodic.write.change_rules import Kind, decide, reason_over_instruction
from episodic.write.text import cut_words

__all__ = [
    "CONTENT_MAX_CHARS",
    "DATA_TAG",
    "DECISION_SCHEMA",
    "PARTLY_BY",
    "Claim",
    "Decision",
    "Kind",
    "blocked",
    "decide_offline",
    "decide_with_llm",
    "partial_change",
    "user_message",
]

log = logging.getLogger("episodic.write")

DECISION_SCHEMA: dict[str, Any] = SUPERSESSION_SCHEMA
# Each memory's content is cut to this many characters before it is sent: a long message
# says what it says in its first paragraphs, and a prompt with many candidates must stay
# within a small model's context.
CONTENT_MAX_CHARS = 2000
# What the offline rule reads of each text.
OFFLINE_MAX_CHARS = 600
DATA_TAG = "untrusted_memory_data"
# A reply lists one short decision per candidate.
DECISION_MAX_TOKENS = 1024

# JSON leaves "<" as is, so a memory could hold "</untrusted_memory_data>" and close the
# block early. Written as \u003c it reads back as the same JSON string but is no tag.
_TAG_IN_DATA = re.compile(rf"<(?=\s*/?\s*{DATA_TAG})", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Claim:
    """One memory as the decision sees it."""

    id: str
    content: str
    ts: datetime
    # Whose memory it is: (agent, crew, resource).
    owner: tuple[str | None, str | None, str | None] = (None, None, None)
    # The events it was made from (a message or journal memory: its own id).
    sources: tuple[str, ...] = ()


def blocked(new: Claim, old: Claim) -> str | None:
    """Why ``new`` may never supersede ``old``, whatever a rule or a model says; None when
    nothing forbids it."""
    if old.ts > new.ts:
        return "the candidate is newer than the memory that would replace it"
    if old.owner != new.owner:
        return "the candidate belongs to another agent, crew or resource"
    if old.id in new.sources or new.id in old.sources or set(old.sources) & set(new.sources):
        return "the two were made from the same source"
    if reason_over_instruction(new.content, old.content):
        return "the candidate tells why something happened or how it turned out"
    return None


@dataclass(frozen=True, slots=True)
class Decision:
    kind: Kind
    decided_by: str  # "offline:<rule name>" or "llm:<model id>"
    reason: str  # one short sentence a person can read in a trace
    # The offline rule's change rule ("not-but", "instead", ...) when it read the new
    # memory as changing one sentence of the old that says more (``says-more``); "" else.
    change: str = ""


def decide_offline(new: Claim, old: Claim) -> Decision:
    """The offline rule's decision on whether ``new`` supersedes ``old`` (``old.ts <=
    new.ts``, which the caller guarantees). It reads the first ``OFFLINE_MAX_CHARS`` of
    each: a statement of a changed fact is short, and the rule's patterns cost more than
    linear time on long runs of text a caller may send."""
    verdict = decide(_head(new.content), _head(old.content))
    return Decision(verdict.kind, f"offline:{verdict.rule}", verdict.reason, verdict.change)


# What a partial change is recorded as decided by: the verdict and the change rule.
PARTLY_BY = "offline:says-more"


def partial_change(new: Claim, old: Claim, decision: Decision | None = None) -> Decision | None:
    """The soft link ``old -> new`` when the offline rule reads ``new`` as changing one
    sentence of ``old`` while ``old`` says more that stays true (``says-more``): ``old``
    is not replaced, but ``new`` holds the current state of what it changed. None when
    the guards block the pair (``blocked``) or the rule reads no such change.
    ``decision`` is the offline rule's for this pair when it was made already (the
    offline path); otherwise (a model decided, and declined to replace) the rule decides
    here, so both paths link the same pairs."""
    if blocked(new, old) is not None:
        return None
    if decision is None or not decision.decided_by.startswith("offline:"):
        decision = decide_offline(new, old)
    if decision.kind != "unrelated" or not decision.change:
        return None
    return Decision(
        "unrelated",
        f"{PARTLY_BY}:{decision.change}",
        f"it changes one sentence of the older memory ({decision.change}), which says more "
        "that stays true",
        decision.change,
    )


def _head(text: str) -> str:
    return cut_words(text, OFFLINE_MAX_CHARS, ellipsis="")


def user_message(new: Claim, candidates: Sequence[Claim]) -> str:
    """The data block the model reads: the new memory and the candidates, refs "1", "2" ...
    in the order given."""
    payload = {
        "new": _entry(new),
        "candidates": [{"ref": str(i), **_entry(c)} for i, c in enumerate(candidates, 1)],
    }
    data = _TAG_IN_DATA.sub(r"\\u003c", json.dumps(payload, ensure_ascii=False))
    return f"<{DATA_TAG}>\n{data}\n</{DATA_TAG}>"


def _entry(claim: Claim) -> dict[str, str]:
    return {
        "content": cut_words(claim.content, CONTENT_MAX_CHARS, ellipsis="…"),
        "when": claim.ts.isoformat(),
    }


def decide_with_llm(
    llm: LLM,
    new: Claim,
    candidates: Sequence[Claim],
    prompts: Prompts = DEFAULT_PROMPTS,
) -> dict[str, Decision]:
    """One decision per candidate, keyed by candidate id, from one model call.

    A candidate the reply leaves out is ``unrelated``; a ref the reply invents is ignored;
    if a ref is answered twice the first answer counts. Never raises for model problems:
    on ``LLMError`` every candidate is decided by ``decide_offline``. ``InvalidInput``
    (field ``candidates``) if a candidate id is given twice.
    """
    if not candidates:
        return {}
    ids = [c.id for c in candidates]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidInput("candidates", f"each candidate once; repeated ids: {repeated}")
    try:
        reply = llm.complete_json(
            prompts.supersession_system,
            user_message(new, candidates),
            DECISION_SCHEMA,
            max_tokens=DECISION_MAX_TOKENS,
        )
    except LLMError as exc:
        log.warning("supersession decision failed, deciding offline instead: %s", exc)
        return {c.id: decide_offline(new, c) for c in candidates}
    decided_by = f"llm:{llm.model_id}"
    by_ref = {str(i): c for i, c in enumerate(candidates, 1)}
    out: dict[str, Decision] = {}
    for item in reply["decisions"]:
        candidate = by_ref.get(item["ref"].strip())
        if candidate is None or candidate.id in out:
            continue
        reason = str(item.get("reason") or "").strip() or f"the model answered {item['decision']}"
        out[candidate.id] = Decision(item["decision"], decided_by, reason)
    for candidate in candidates:
        if candidate.id not in out:
            out[candidate.id] = Decision(
                "unrelated", decided_by, "the model gave no decision for this candidate"
            )
    return {c.id: out[c.id] for c in candidates}
