"""Write the updates benchmark's scenarios (``scenarios.jsonl``) from a fixed seed.

    .venv/bin/python benchmarks/updates/make_scenarios.py            # rewrite the file
    .venv/bin/python benchmarks/updates/make_scenarios.py --check    # is it up to date?

Every scenario is one workspace's story: a fact about a subject, distractors around it
(other slots, other subjects, look-alike facts, small talk) and, for an UPDATE scenario,
one or more later changes of the fact spread over simulated weeks; a CONTROL scenario has
only look-alikes of a change (the fact restated, the same attribute of someone else
changing, another attribute of the same subject changing from a value never stored).
Half are chat conversations, half journal events. The question's evidence is the value
that holds at the end (``current``); ``stale`` lists the values that held before.

Each write carries a ``fact`` label (initial, change, ack, restate, lookalike,
distractor, reply) and each change its ``phrasing``: the runner ignores both, they are
there for the oracle, the tests and whoever reads a failure.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 20261126
UPDATES = 220
CONTROLS = 110
OUT = Path(__file__).parent / "scenarios.jsonl"
START = datetime(2025, 3, 3, tzinfo=UTC)


@dataclass(frozen=True)
class Slot:
    """One kind of fact: whose it is, its values, and how people say it, change it and
    ask about it. ``{s}`` is the subject, ``{v}`` a value, ``{old}``/``{new}`` a change."""

    name: str
    subject: str  # person | service | team
    attr: str  # the attribute as a noun, for "{s}'s {attr}" phrasings
    values: tuple[str, ...]
    facts: tuple[str, ...]
    changes: tuple[tuple[str, str], ...]  # (phrasing, template)
    questions: tuple[str, ...]


PEOPLE = (
    "Dana", "Elif", "Marco", "Ingrid", "Tobias", "Amara", "Kenji", "Lucia", "Rafael",
    "Sanne", "Oskar", "Priya", "Mateo", "Yara", "Felix", "Noor", "Henrik", "Chiara",
    "Bram", "Leila", "Jonas", "Ayla", "Viktor", "Mirela", "Quentin", "Saoirse", "Emil",
    "Thandi", "Hugo", "Ines",
)  # fmt: skip
SERVICES = (
    "the billing-api service", "the search-indexer", "the auth-gateway", "the invoice-worker",
    "the notifications service", "the ledger-sync job", "the image-resizer",
    "the reports-exporter", "the checkout-api", "the geo-lookup service",
    "the audit-trail service", "the pricing-engine", "the mailer-daemon",
    "the feature-flags service", "the session-store",
)  # fmt: skip
TEAMS = (
    "the platform team", "the data team", "the mobile team", "the payments squad",
    "the growth team", "the infra crew", "the support engineering team", "the design team",
    "the security team", "the search team", "the web team", "the analytics guild",
)  # fmt: skip
SUBJECTS = {"person": PEOPLE, "service": SERVICES, "team": TEAMS}

SLOTS: tuple[Slot, ...] = (
    Slot(
        "city", "person", "home city",
        ("Porto", "Lisbon", "Valencia", "Utrecht", "Ghent", "Tallinn", "Krakow", "Bologna",
         "Graz", "Bergen", "Tampere", "Leipzig", "Aarhus", "Brno", "Galway", "Seville"),
        ("{s} lives in {v}.", "{s} is based in {v}.", "{s}'s home is in {v}.",
         "{s} rents a flat in {v}."),
        (("moved", "{s} moved from {old} to {new} last month."),
         ("relocated", "{s} has relocated to {new}."),
         ("moved", "{s} packed up and moved to {new}; the {old} flat is gone."),
         ("left", "{s} left {old} for good and lives in {new} now.")),
        ("Which city does {s} live in?", "Where is {s} based these days?",
         "In what city is {s}'s home?"),
    ),
    Slot(
        "employer", "person", "employer",
        ("Northwind Labs", "Fabrikam", "Contoso Health", "Globex", "Initech",
         "Umbrella Analytics", "Vandelay Imports", "Stark Freight", "Wayne Biotech",
         "Acme Robotics", "Tyrell Systems", "Hooli", "Soylent Foods", "Cyberdyne Audio"),
        ("{s} works at {v}.", "{s} is employed by {v}.", "{s} has a job at {v}.",
         "{s}'s employer is {v}."),
        (("joined", "{s} quit {old} and joined {new}."),
         ("new-job", "{s} started a new job at {new} this week."),
         ("left", "{s} left {old}; {s} is with {new} now."),
         ("hired", "{new} hired {s} away from {old}.")),
        ("Where does {s} work?", "Who is {s}'s employer?", "Which company employs {s}?"),
    ),
    Slot(
        "phone_plan", "person", "phone plan",
        ("Unlimited Max", "Basic 5GB", "Flex 20", "Family Share 40", "Prepaid Go",
         "Data Lite 2GB", "Roam Plus", "Student 15GB", "Nomad 60", "Senior Talk"),
        ("{s} is on the {v} phone plan.", "{s}'s mobile plan is {v}.",
         "{s} pays for the {v} plan on their phone."),
        (("switched", "{s} switched from {old} to the {new} phone plan."),
         ("downgraded", "{s} downgraded the phone plan to {new}."),
         ("upgraded", "{s} upgraded from {old} to {new} on the phone."),
         ("cancelled", "{s} cancelled {old} and signed up for {new}.")),
        ("Which phone plan is {s} on?", "What mobile plan does {s} have?"),
    ),
    Slot(
        "diet", "person", "diet",
        ("vegetarian", "vegan", "pescatarian", "gluten-free", "keto", "low-FODMAP",
         "halal", "kosher", "dairy-free", "paleo"),
        ("{s} eats {v}.", "{s} keeps a {v} diet.", "When ordering food for {s}, make it {v}.",
         "{s} follows a {v} diet."),
        (("went", "{s} went {new} after the doctor's visit."),
         ("stopped", "{s} stopped eating {old}; {s} is {new} now."),
         ("gave-up", "{s} gave up on {old} and eats {new} these days."),
         ("order", "Order {new} meals for {s} from now on.")),
        ("What diet does {s} follow?", "How should food be ordered for {s}?",
         "What does {s} eat?"),
    ),
    Slot(
        "editor", "person", "preferred editor",
        ("Neovim", "VS Code", "Emacs", "Sublime Text", "Helix", "IntelliJ IDEA", "Zed",
         "Kate", "BBEdit", "Nova"),
        ("{s} codes in {v}.", "{s}'s editor of choice is {v}.", "{s} prefers {v} for editing.",
         "Set up {v} on {s}'s laptop; that is what {s} uses."),
        (("switched", "{s} switched from {old} to {new}."),
         ("moved-to", "{s} moved to {new} for all editing."),
         ("dropped", "{s} dropped {old} and uses {new}."),
         ("prefers", "{s} prefers {new} over {old} now.")),
        ("Which editor does {s} use?", "What is {s}'s preferred editor?"),
    ),
    Slot(
        "card", "person", "card for subscriptions",
        ("Visa ending 4417", "Mastercard ending 0932", "Amex ending 1108",
         "Visa ending 7250", "Mastercard ending 3396", "Amex ending 5821",
         "Visa ending 6043", "Mastercard ending 8714", "Discover ending 2689",
         "Maestro ending 9157"),
        ("Always pay {s}'s subscriptions with the {v}.",
         "{s}'s subscriptions go on the {v}.",
         "Charge {s}'s streaming and software subscriptions to the {v}."),
        (("expired", "The {old} expired; from now on pay {s}'s subscriptions with the {new}."),
         ("replaced-card", "{s} replaced the {old} with the {new} for subscriptions."),
         ("use-instead", "Use the {new} for {s}'s subscriptions instead of the {old}."),
         ("blocked", "The bank blocked the {old}, so {s}'s subscriptions move to the {new}.")),
        ("Which card should pay {s}'s subscriptions?",
         "What card do {s}'s subscriptions get charged to?"),
    ),
    Slot(
        "endpoint", "service", "endpoint",
        ("pay-eu1.internal.example.net", "api-west.corp.example.org",
         "gw-blue.svc.example.io", "edge-07.example.cloud", "core-amber.example.net",
         "svc-north.internal.example.com", "rpc-green.example.io",
         "lb-delta.corp.example.net", "ingress-5.example.cloud", "node-kappa.example.org"),
        ("{s} listens on {v}.", "The endpoint of {s} is {v}.", "Point clients of {s} at {v}."),
        (("migrated", "{s} was migrated from {old} to {new}."),
         ("repointed", "Repoint all clients of {s} to {new}."),
         ("moved-to", "{s} moved to {new} during the maintenance window."),
         ("cutover", "Cutover done: {s} now answers on {new}, {old} is decommissioned.")),
        ("What is the endpoint of {s}?", "Which host should clients of {s} call?"),
    ),
    Slot(
        "owner", "service", "owner",
        ("Priya Raman", "Tomasz Nowak", "Grace Mbeki", "Luis Ortega", "Hannah Fischer",
         "Oluwaseun Adeyemi", "Mei Tanaka", "Stefan Kovac", "Ana Ribeiro", "Jamal Haddad"),
        ("{s} is owned by {v}.", "{s} belongs to {v}.",
         "Questions about {s} go to its owner, {v}."),
        (("handed-over", "{old} handed {s} over to {new}."),
         ("took-over", "{new} took over {s} from {old}."),
         ("reassigned", "Ownership of {s} was reassigned to {new}."),
         ("new-owner", "{new} is the new owner of {s}; {old} moved to another project.")),
        ("Who owns {s}?", "Who should I ask about {s}?"),
    ),
    Slot(
        "version", "service", "deployed version",
        ("v2.4.1", "v2.7.3", "v3.0.2", "v3.1.5", "v3.3.8", "v4.0.6", "v4.2.9", "v5.1.4",
         "v5.3.7", "v6.0.3"),
        ("{s} runs {v} in production.", "Production has {s} at {v}.",
         "The deployed version of {s} is {v}."),
        (("upgraded", "{s} was upgraded from {old} to {new} in production."),
         ("bumped", "We bumped {s} to {new} today."),
         ("rolled-back", "{s} was rolled back from {old} to {new} after the incident."),
         ("released", "{new} of {s} is released and live; {old} is retired.")),
        ("Which version of {s} runs in production?", "What version is {s} on?"),
    ),
    Slot(
        "region", "service", "region",
        ("eu-west-1", "us-east-2", "ap-south-1", "eu-central-1", "ca-central-1",
         "ap-northeast-3", "sa-east-1", "us-west-2", "af-south-1", "me-south-1"),
        ("{s} is hosted in {v}.", "{s} runs in the {v} region.", "{s}'s servers sit in {v}."),
        (("migrated", "{s} was migrated from {old} to {new}."),
         ("failover", "After the failover {s} stays in {new} permanently."),
         ("moved-to", "{s} moved to {new} to be closer to its users."),
         ("relocated", "We relocated {s} out of {old}; it lives in {new}.")),
        ("Which region is {s} hosted in?", "Where does {s} run?"),
    ),
    Slot(
        "standup", "team", "standup time",
        ("9:15", "9:45", "10:00", "10:30", "11:15", "8:40", "9:20", "11:50"),
        ("{s} holds standup at {v} every morning.", "Standup for {s} is at {v}.",
         "{s} meets for the daily standup at {v}."),
        (("rescheduled", "{s} rescheduled standup from {old} to {new}."),
         ("moved-to", "Standup of {s} moved to {new}."),
         ("pushed", "{s} pushed the daily standup back to {new}."),
         ("starting-monday", "Starting Monday, {s} has standup at {new} instead of {old}.")),
        ("When is {s}'s standup?", "What time does {s} meet for standup?"),
    ),
    Slot(
        "deploy_day", "team", "deploy day",
        ("Tuesdays", "Thursdays", "Wednesdays", "Mondays", "Fridays"),
        ("{s} only deploys on {v}.", "Deploys for {s} go out on {v}.",
         "The rule for {s}: production deploys happen on {v}."),
        (("rule-reversed", "{s} reversed the deploy rule: {new} only, never {old}."),
         ("policy", "New policy for {s}: deploys happen on {new}."),
         ("moved-to", "{s} moved its deploy day to {new}."),
         ("rule-changed", "The {old} deploy rule for {s} is dropped; deploys are on {new}.")),
        ("Which day does {s} deploy?", "When are {s}'s production deploys allowed?"),
    ),
    Slot(
        "ci", "team", "CI system",
        ("Jenkins", "GitHub Actions", "Buildkite", "CircleCI", "GitLab CI", "TeamCity",
         "Drone", "Bamboo", "Woodpecker", "Concourse"),
        ("{s} builds everything on {v}.", "{s}'s CI runs on {v}.", "{s} uses {v} for CI."),
        (("migrated", "{s} migrated its CI from {old} to {new}."),
         ("replaced", "{s} replaced {old} with {new}."),
         ("switched", "{s} switched CI to {new}."),
         ("shut-down", "{s} shut down {old}; every pipeline runs on {new}.")),
        ("Which CI system does {s} use?", "Where does {s} run its builds?"),
    ),
    Slot(
        "channel", "team", "on-call channel",
        ("#ops-alerts", "#oncall-pager", "#sre-war-room", "#incident-bridge", "#pager-duty",
         "#alerts-critical", "#on-call-rota", "#prod-fires"),
        ("Page {s} in {v}.", "{s}'s on-call channel is {v}.", "{s} watches {v} for incidents."),
        (("renamed", "{s} renamed {old} to {new}."),
         ("archived", "{old} is archived; page {s} in {new}."),
         ("moved-to", "{s} moved its on-call to {new}."),
         ("redirect", "Send {s}'s pages to {new}, not {old}.")),
        ("Where should I page {s}?", "Which channel is {s}'s on-call channel?"),
    ),
)  # fmt: skip
BY_NAME = {slot.name: slot for slot in SLOTS}

# Changes any slot can be said with; ``{fact}`` is the new fact as a clause.
GENERIC_CHANGES: tuple[tuple[str, str], ...] = (
    ("correction", "Correction: {fact}, not {old}."),
    ("quick-update", "Quick update: {fact}."),
    ("no-longer", "{S_attr} is no longer {old}. {Fact}."),
    ("is-now", "{S_attr} is now {new}."),
    ("changed", "{S_attr} has changed from {old} to {new}."),
    ("as-of", "As of {when}, {fact}."),
    ("scratch-that", "Scratch what I said about {old}: {fact}."),
    ("turns-out", "Turns out I had it wrong earlier: {fact}."),
    ("going-forward", "Going forward, {fact}."),
    ("from-now-on", "From now on, {fact}."),
    ("instead-of", "Instead of {old}, {s_attr} is {new} now."),
    ("replaced", "{New} has replaced {old} as {s_attr}."),
    ("outdated", "The note about {old} is outdated; {fact}."),
    ("heads-up", "Heads up: {s_attr} changed to {new}."),
    ("not-anymore", "{Fact}. It's not {old} anymore."),
    ("new-value", "New {attr} for {s}: {new}."),
)
RESTATES = (
    "Just confirming, {fact}.", "Still the case: {fact}.", "Reminder: {fact}.",
    "No change there: {fact}.", "As before, {fact}.", "To be clear, nothing moved: {fact}.",
)  # fmt: skip
ACKS = (
    "Got it. I will keep {v} on file as {s_attr}.", "Noted: {fact}.",
    "Understood, I'll use {v} from here.", "Okay, {v} it is.", "Thanks, I've saved that: {fact}.",
)  # fmt: skip
REPLIES = (
    "Thanks, noted.", "Sure, anything else?", "Okay.", "Sounds good.", "I'll keep that in mind.",
    "Understood.",
)  # fmt: skip
SMALL_TALK = (
    "The weather has been grim all week.", "Remind me to water the plants tonight.",
    "I finally finished that mystery novel.", "The coffee machine on the third floor is fixed.",
    "Can you draft a short thank-you note for the volunteers?", "Traffic was terrible today.",
    "I need a birthday idea for my nephew.", "What's a good name for a sourdough starter?",
    "The quarterly review slides are due soon.", "My laptop fan keeps spinning up.",
    "Lunch was excellent, that ramen place is worth it.", "Add oat milk to the shopping list.",
    "The printer jammed again.", "Summarise the last retro in three bullet points, please.",
)  # fmt: skip
ROUTINE = (
    "Nightly backup finished in 14 minutes.", "Weekly dependency scan found no new issues.",
    "Disk usage on the shared volume is at 61 percent.", "Certificate renewal check passed.",
    "The staging database was refreshed from the snapshot.", "Cache hit rate held steady.",
    "Quarterly access review reminder sent to managers.", "Log rotation completed.",
    "A flaky integration test was quarantined.", "Cost report for last month is ready.",
)  # fmt: skip
# Journal event kinds the admission policy keeps: (type, severity, refs).
EVENT_KINDS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("summary.generated", "info", {}),
    ("note", "info", {"episodic": True}),
    ("keeper.decision", "warn", {}),
    ("peer.escalation", "info", {}),
)
EVENT_SOURCES = ("assistant", "ops-bot", "planner", "scribe")


def possessive(subject: str) -> str:
    return f"{subject}'s"


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def clause(sentence: str, subject: str) -> str:
    """A sentence as a clause inside another: no final period, and no capital unless it
    starts with a name."""
    text = sentence.rstrip(".")
    return text if text.startswith(subject) else text[:1].lower() + text[1:]


def fill(template: str, slot: Slot, subject: str, **values: str) -> str:
    v = values.get("v") or values.get("new", "")
    fact = clause(values["fact"], subject) if "fact" in values else ""
    s_attr = f"{possessive(subject)} {slot.attr}"
    text = template.format(
        s=subject,
        attr=slot.attr,
        s_attr=s_attr,
        S_attr=capital(s_attr),
        fact=fact,
        Fact=capital(fact),
        New=capital(values.get("new", "")),
        v=v,
        old=values.get("old", ""),
        new=values.get("new", ""),
        when=values.get("when", ""),
    )
    return capital(text)


@dataclass
class Write:
    ts: datetime
    fact: str
    text: str
    speaker: str = "user"
    phrasing: str | None = None


class Builder:
    """Draws one scenario's subject, values, distractors and times."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, items: Sequence[str], avoid: set[str]) -> str:
        return self.rng.choice([item for item in items if item not in avoid])

    def fact(self, slot: Slot, subject: str, value: str) -> str:
        return fill(self.rng.choice(slot.facts), slot, subject, v=value)

    def change(self, slot: Slot, subject: str, old: str, new: str, when: datetime) -> Write:
        # Half in the slot's own words (moved, renamed, took over ...), half in words any
        # fact can change with (correction, from now on, no longer ...).
        pool = slot.changes if self.rng.random() < 0.5 else GENERIC_CHANGES
        phrasing, template = self.rng.choice(pool)
        new_fact = fill(self.rng.choice(slot.facts), slot, subject, v=new)
        text = fill(template, slot, subject, old=old, new=new, fact=new_fact, when=f"{when:%-d %B}")
        return Write(when, "change", text, phrasing=phrasing)

    def distractors(
        self,
        slot: Slot,
        subject: str,
        avoid: set[str],
        used: set[tuple[str, str]],
        start: datetime,
        end: datetime,
    ) -> list[Write]:
        """3 to 8 statements around the fact: other slots of the subject, the same slot of
        others (look-alikes), anything else, chatter. Each (subject, slot) is told once,
        so no distractor changes an earlier one."""
        out: list[Write] = []
        kin = [s for s in SLOTS if s.subject == slot.subject and s is not slot]
        wanted = self.rng.randint(3, 8)
        while len(out) < wanted:
            kind = self.rng.choice(("other-slot", "lookalike", "other", "chatter"))
            day = self.rng.randint(0, (end - start).days)
            when = (start + timedelta(days=day)).replace(
                hour=self.rng.randint(8, 20), minute=self.rng.randint(0, 59)
            )
            if kind == "chatter":
                out.append(Write(when, "distractor", self.rng.choice(SMALL_TALK + ROUTINE)))
                continue
            other_slot = {"lookalike": slot, "other-slot": self.rng.choice(kin)}.get(
                kind, self.rng.choice(SLOTS)
            )
            who = subject
            if kind != "other-slot":
                who = self.pick(SUBJECTS[other_slot.subject], {subject})
            if (who, other_slot.name) in used:
                continue
            used.add((who, other_slot.name))
            value = self.pick(other_slot.values, avoid)
            out.append(Write(when, "distractor", self.fact(other_slot, who, value)))
        return out


def scenario(number: int, kind: str, form: str, rng: random.Random) -> dict[str, Any]:
    b = Builder(rng)
    slot = rng.choice(SLOTS)
    subject = rng.choice(SUBJECTS[slot.subject])
    start = START + timedelta(days=rng.randint(0, 20), hours=rng.randint(8, 11))
    changes = rng.choice((1, 1, 1, 2, 2, 3)) if kind == "update" else 0
    values = rng.sample(slot.values, changes + 1)
    writes = [Write(start, "initial", b.fact(slot, subject, values[0]))]
    when = start
    for old, new in itertools.pairwise(values):
        when += timedelta(days=rng.randint(7, 21), hours=rng.randint(-2, 6))
        writes.append(b.change(slot, subject, old, new, when))
    control = None
    used = {(subject, slot.name)}
    if kind == "control":
        control = rng.choice(("restated", "other-subject", "other-slot"))
        when += timedelta(days=rng.randint(7, 21), hours=rng.randint(-2, 6))
        writes.append(control_write(b, control, slot, subject, values[0], used, when))
    end = when + timedelta(days=rng.randint(1, 6))
    writes += b.distractors(slot, subject, set(values), used, start, end)
    if form == "conversation":
        writes += acknowledgements(b, writes, slot, subject, values)
    writes.sort(key=lambda w: w.ts)
    sid = f"{kind[0]}{number:03d}"
    record: dict[str, Any] = {
        "id": sid,
        "kind": kind,
        "form": form,
        "slot": slot.name,
        "subject": subject,
        "question": capital(rng.choice(slot.questions).format(s=subject)),
        "current": values[-1],
        "stale": values[:-1],
    }
    if control is not None:
        record["control"] = control
    record["writes"] = [shape(w, n, form, sid, rng) for n, w in enumerate(writes, start=1)]
    return record


def control_write(
    b: Builder,
    control: str,
    slot: Slot,
    subject: str,
    value: str,
    used: set[tuple[str, str]],
    when: datetime,
) -> Write:
    """A write that looks like a change of the fact and is not one."""
    if control == "restated":
        text = fill(b.rng.choice(RESTATES), slot, subject, fact=b.fact(slot, subject, value))
        return Write(when, "restate", text)
    other_slot, who = slot, subject
    if control == "other-subject":
        who = b.pick(SUBJECTS[slot.subject], {subject})
    else:
        other_slot = b.rng.choice([s for s in SLOTS if s.subject == slot.subject and s is not slot])
    used.add((who, other_slot.name))
    old, new = b.rng.sample([v for v in other_slot.values if v != value], 2)
    write = b.change(other_slot, who, old, new, when)
    return Write(when, "lookalike", write.text, phrasing=write.phrasing)


def acknowledgements(
    b: Builder, writes: list[Write], slot: Slot, subject: str, values: list[str]
) -> list[Write]:
    """The assistant's answers in a chat: sometimes it repeats the value it was told
    (so an old value is said twice), else a plain reply."""
    out: list[Write] = []
    for w in writes:
        later = w.ts + timedelta(seconds=b.rng.randint(5, 90))
        if w.fact in ("initial", "change") and b.rng.random() < 0.5:
            # the value this write sets: the latest of the values it names
            value = max((v for v in values if v.lower() in w.text.lower()), key=values.index)
            fact = b.fact(slot, subject, value)
            text = fill(b.rng.choice(ACKS), slot, subject, v=value, fact=fact)
            out.append(Write(later, "ack", text, speaker="assistant"))
        elif b.rng.random() < 0.4:
            out.append(Write(later, "reply", b.rng.choice(REPLIES), speaker="assistant"))
    return out


def shape(w: Write, n: int, form: str, sid: str, rng: random.Random) -> dict[str, Any]:
    ts = w.ts.isoformat()
    out: dict[str, Any] = {"fact": w.fact}
    if w.phrasing is not None:
        out["phrasing"] = w.phrasing
    if form == "conversation":
        session = f"{sid}-{w.ts:%Y%m%d}"
        out["message"] = {
            "id": f"m{n}",
            "ts": ts,
            "role": w.speaker,
            "content": w.text,
            "conversation": session,
        }
        return out
    type_, severity, refs = rng.choice(EVENT_KINDS)
    event: dict[str, Any] = {
        "id": f"e{n}",
        "ts": ts,
        "type": type_,
        "summary": w.text,
        "payload": {"source": rng.choice(EVENT_SOURCES)},
    }
    if severity != "info":
        event["severity"] = severity
    if refs:
        event["refs"] = refs
    out["event"] = event
    return out


def check(record: dict[str, Any]) -> None:
    """The invariants the metrics rely on: values are told apart by substring, so no value
    sits inside another or inside a write that is not about it, and the question does not
    give the answer away."""
    values = [*record["stale"], record["current"]]
    for a in values:
        for b in values:
            if a != b and a.lower() in b.lower():
                raise ValueError(f"{record['id']}: value {a!r} inside {b!r}")
    if any(v.lower() in record["question"].lower() for v in values):
        raise ValueError(f"{record['id']}: the question names a value")
    texts = [w.get("message", {}).get("content") or w["event"]["summary"] for w in record["writes"]]
    for write, text in zip(record["writes"], texts, strict=True):
        carried = [v for v in values if v.lower() in text.lower()]
        if write["fact"] in ("distractor", "reply", "lookalike") and carried:
            raise ValueError(f"{record['id']}: distractor {text!r} carries {carried}")
    if not any(record["current"].lower() in t.lower() for t in texts):
        raise ValueError(f"{record['id']}: no write carries the current value")


def generate(seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records = []
    for kind, count in (("update", UPDATES), ("control", CONTROLS)):
        for i in range(count):
            form = "conversation" if i % 2 == 0 else "journal"
            record = scenario(i + 1, kind, form, rng)
            check(record)
            records.append(record)
    return records


def render(records: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv: Sequence[str]) -> int:
    text = render(generate())
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT} differs from the generator's output")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} scenarios to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
