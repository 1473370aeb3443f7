"""Labelled sentences for measuring what the offline extractor turns into entries.

Written for the tests, by the rules of seed 004: an entry is a concrete situation with a
symptom, environment detail, mechanism, attempted step, outcome or open state; wishes and
intentions, stable preferences and profile details, rules for the agent's behaviour,
generic advice, pleasantries and filler, unsupported speculation, questions and requests
are not. Each item is (role, sentence, is_entry, kind).

``DEV`` was used while writing the offline rules. ``HELD_OUT`` was written at the same
time, before the rules, and not looked at while writing them: it is the fairer measure.
The offline extractor reads user messages only (only the user speaks for themselves), so
the assistant's findings are entries it misses by design; ``precision_recall`` counts them.
"""

from __future__ import annotations

Labelled = tuple[str, str, bool, str]

DEV: list[Labelled] = [
    # -- entries: concrete situations ------------------------------------------------------
    ("user", "Our nightly export job fails with a timeout since Tuesday.", True, "symptom"),
    ("user", "The payment gateway returns 409 on partial refunds again.", True, "symptom"),
    ("user", "We fixed it by sending a fresh idempotency key per refund.", True, "fix"),
    ("user", "Pointing the export at replica A fixed the timeout.", True, "fix"),
    ("user", "I restarted the queue worker but the backlog is still growing.", True, "attempt"),
    (
        "user",
        "The billing service reads the plan tier from record B while checkout writes record A.",
        True,
        "mechanism",
    ),
    ("user", "The staging cluster runs out of disk every Sunday night.", True, "symptom"),
    (
        "user",
        "After the upgrade to Postgres 16 the nightly vacuum takes three hours.",
        True,
        "symptom",
    ),
    (
        "user",
        "The webhook sends tier=enterprise_plus but the matcher expects enterprise-plus.",
        True,
        "mechanism",
    ),
    ("user", "Rolling back the cache TTL change stopped the checkout OOM errors.", True, "fix"),
    (
        "user",
        "The login page still shows a blank screen on Safari 17 after clearing the cache.",
        True,
        "open state",
    ),
    (
        "user",
        "Our CI runners in eu-west-1 lost network access to the package mirror yesterday.",
        True,
        "symptom",
    ),
    (
        "user",
        "I tried increasing the pool size to 50 and the timeouts went away.",
        True,
        "attempt",
    ),
    (
        "user",
        "The invoice PDF renders with the wrong currency for customers in Switzerland.",
        True,
        "symptom",
    ),
    (
        "user",
        "We ruled out the load balancer because the errors also happen on direct requests.",
        True,
        "ruled out",
    ),
    (
        "user",
        "The flight to Kyoto was cancelled because of the typhoon, so we rebooked through Osaka.",
        True,
        "outcome",
    ),
    ("user", "My hotel booking in Kyoto shows two nights but I paid for three.", True, "mismatch"),
    ("user", "The refund for order 4411 has been pending for twelve days now.", True, "open state"),
    # -- not entries -----------------------------------------------------------------------
    ("user", "I'd like to stay in Kyoto for a few more days.", False, "wish"),
    ("user", "Maybe we could try a different approach next week.", False, "wish"),
    ("user", "I want to learn more about Kubernetes networking someday.", False, "wish"),
    ("user", "I'm thinking about moving the whole team to a four day week.", False, "intention"),
    ("user", "It would be nice to have dark mode in the dashboard.", False, "wish"),
    ("user", "I hope the new release goes out before the holidays.", False, "wish"),
    (
        "user",
        "I prefer short answers with bullet points over long paragraphs.",
        False,
        "preference",
    ),
    ("user", "I really love hiking in the mountains on weekends.", False, "preference"),
    ("user", "My favourite programming language is Rust by a long way.", False, "preference"),
    ("user", "I'm a backend engineer at a small fintech startup in Berlin.", False, "profile"),
    ("user", "I live in Lisbon with my wife and two kids.", False, "profile"),
    ("user", "I'm vegetarian and allergic to peanuts, just so you know.", False, "profile"),
    ("user", "Always answer in French from now on, please keep it formal.", False, "agent rule"),
    ("user", "Never push directly to the main branch without a review.", False, "agent rule"),
    ("user", "From now on, call me Dana instead of Daniela.", False, "agent rule"),
    ("user", "You should always cite the ticket number in your replies.", False, "agent rule"),
    ("user", "Don't use emojis in any of the summaries you write.", False, "agent rule"),
    (
        "user",
        "It's always a good idea to back up the database before a migration.",
        False,
        "advice",
    ),
    ("user", "In general, smaller pull requests get reviewed much faster.", False, "advice"),
    ("user", "Best practice is to rotate credentials every ninety days.", False, "advice"),
    ("user", "Great, thanks!", False, "filler"),
    ("user", "That sounds really great to me, thank you so much for this.", False, "filler"),
    ("user", "I really appreciate all your help with this today.", False, "filler"),
    ("user", "Have a lovely weekend and talk to you on Monday.", False, "filler"),
    ("user", "You're amazing, this is exactly what I needed today.", False, "filler"),
    ("user", "That makes a lot of sense now, thanks for explaining it.", False, "filler"),
    ("user", "Maybe the cache is the problem, but I honestly have no idea.", False, "speculation"),
    ("user", "I guess the network could be flaky in the afternoons somehow.", False, "speculation"),
    ("user", "Perhaps the vendor changed something on their side last week.", False, "speculation"),
    ("user", "Can you check why the export job keeps failing at night?", False, "question"),
    ("user", "Please summarise the incident report for the leadership team.", False, "request"),
    ("user", "I need you to draft an email to the vendor about the refund.", False, "request"),
    ("user", "Today I need to get the release notes finished before noon.", False, "objective"),
    ("user", "Let me know when the migration script is ready to review.", False, "request"),
    # -- the assistant ---------------------------------------------------------------------
    (
        "assistant",
        "The export reads from replica B, which lags by 40 minutes behind the primary.",
        True,
        "finding",
    ),
    (
        "assistant",
        "The 409 comes from the gateway rejecting a capture id it has already seen.",
        True,
        "finding",
    ),
    (
        "assistant",
        "I ruled out DNS: the resolver answers in under 5 ms from the runner.",
        True,
        "ruled out",
    ),
    ("assistant", "Happy to help with that any time you need anything else!", False, "filler"),
    (
        "assistant",
        "Here is a summary of what we discussed in this conversation today.",
        False,
        "summary",
    ),
    (
        "assistant",
        "In general it is best to keep dependencies up to date regularly.",
        False,
        "advice",
    ),
    (
        "assistant",
        "You might want to consider trying a few different approaches here.",
        False,
        "advice",
    ),
]

HELD_OUT: list[Labelled] = [
    (
        "user",
        "The mobile app crashes on launch for users on Android 14 since version 3.2.",
        True,
        "symptom",
    ),
    (
        "user",
        "Switching the DNS resolver to 1.1.1.1 made the intermittent timeouts disappear.",
        True,
        "fix",
    ),
    (
        "user",
        "Our nightly backup to S3 has been failing with AccessDenied since the key rotation.",
        True,
        "symptom",
    ),
    (
        "user",
        "The train from Tokyo to Kyoto was delayed two hours, so I missed the ryokan check-in.",
        True,
        "outcome",
    ),
    (
        "user",
        "The dashboard shows revenue in dollars even though the account is set to euros.",
        True,
        "mismatch",
    ),
    (
        "user",
        "Clearing the Redis cache fixed the stale prices, but only for about an hour.",
        True,
        "attempt",
    ),
    ("user", "We tried pinning numpy to 1.26 and the import error went away.", True, "fix"),
    (
        "user",
        "The Jenkins job reads credentials from the old vault path that was deleted in March.",
        True,
        "mechanism",
    ),
    (
        "user",
        "Two customers reported duplicate charges after the retry logic was enabled.",
        True,
        "symptom",
    ),
    (
        "user",
        "The VPN drops every 30 minutes when I am connected through the office Wi-Fi.",
        True,
        "symptom",
    ),
    (
        "user",
        "I still get a 502 from the API gateway even after redeploying the service.",
        True,
        "open state",
    ),
    (
        "user",
        "The room I booked in Osaka has no air conditioning, and the front desk can't move me.",
        True,
        "open state",
    ),
    ("user", "I'd love to visit Hokkaido in the winter one day.", False, "wish"),
    ("user", "Maybe we could grab dinner somewhere near the station tonight.", False, "wish"),
    (
        "user",
        "I'm planning to refactor the billing module over the next sprint.",
        False,
        "intention",
    ),
    ("user", "It would be great if the reports were generated automatically.", False, "wish"),
    ("user", "I enjoy reading science fiction novels before going to bed.", False, "preference"),
    ("user", "My daughter just started kindergarten and she loves it.", False, "profile"),
    ("user", "I'm a data scientist working mostly with Python and SQL.", False, "profile"),
    (
        "user",
        "I prefer receiving updates by email rather than Slack messages.",
        False,
        "preference",
    ),
    ("user", "Please always include a short summary at the top of your answers.", False, "rule"),
    ("user", "Never suggest deleting production data, even as a joke.", False, "agent rule"),
    (
        "user",
        "Keep your answers under three paragraphs unless I ask for more.",
        False,
        "agent rule",
    ),
    ("user", "It's important to write tests before refactoring legacy code.", False, "advice"),
    (
        "user",
        "Generally, caching is the first thing you should look at for slow pages.",
        False,
        "advice",
    ),
    ("user", "Thank you so much, that was incredibly helpful as always.", False, "filler"),
    ("user", "Awesome, that's exactly what I was looking for, cheers!", False, "filler"),
    ("user", "Hope you have a wonderful day and a relaxing evening.", False, "filler"),
    ("user", "Perhaps the issue is related to daylight saving time somehow.", False, "speculation"),
    ("user", "I wonder if the new intern changed the firewall rules.", False, "speculation"),
    ("user", "Could you look into why the invoices are late this month?", False, "question"),
    ("user", "I want to understand how the retry logic works in detail.", False, "intention"),
    (
        "assistant",
        "The AccessDenied errors started because the new key lacks the s3:PutObject permission.",
        True,
        "finding",
    ),
    (
        "assistant",
        "I confirmed the duplicate charges come from retries that reuse a new idempotency key.",
        True,
        "finding",
    ),
    ("assistant", "Glad I could help, let me know if anything else comes up!", False, "filler"),
    (
        "assistant",
        "It's usually a good idea to monitor disk usage on database hosts.",
        False,
        "advice",
    ),
]


def offline_picks(items: list[Labelled]) -> list[bool]:
    """Whether the offline extractor makes an entry of each sentence, said alone."""
    from datetime import UTC, datetime

    from episodic.write.extract import extract_entries
    from episodic.write.messages import Message

    at = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    return [
        bool(extract_entries([Message(id="m", role=role, text=text, ts=at)], None).entries)
        for role, text, _, _ in items
    ]


def precision_recall(items: list[Labelled], picked: list[bool]) -> tuple[float, float]:
    """Precision and recall of ``picked`` against the labels (1.0 when undefined)."""
    tp = sum(1 for (_, _, label, _), p in zip(items, picked, strict=True) if label and p)
    chosen = sum(picked)
    relevant = sum(1 for _, _, label, _ in items if label)
    return (tp / chosen if chosen else 1.0, tp / relevant if relevant else 1.0)
