"""Write ``src/episodic/data/sample_journal.jsonl``, the journal ``episodic demo`` ingests.

Two workspaces over the 60 days ending 2026-11-20:

- ``acme-shop``, an e-commerce platform team (crews ``platform`` and ``checkout``);
- ``orbit-labs``, a data/ML team (crews ``ml`` and ``data``).

The journal is a hand-written set of incidents (the entries worth remembering, with the
chatter that surrounded them) mixed into generated background chatter: build output,
container metrics, network traffic, tool calls, routine approvals. Most of it must be
refused by admission, which is the point of the demo.

Deterministic: a fixed seed and no clock, so re-running it reproduces the file byte for
byte. Run from the repository root:

    .venv/bin/python scripts/make_sample_journal.py
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 20261120
FIRST_DAY = datetime(2026, 9, 22, tzinfo=UTC)
DAYS = 60  # day 59 is 2026-11-20, the last day of the journal
OUT = Path(__file__).resolve().parent.parent / "src" / "episodic" / "data" / "sample_journal.jsonl"

Json = dict[str, Any]


@dataclass(frozen=True)
class Beat:
    """One event of an incident, ``minutes`` after the incident starts."""

    minutes: int
    type: str
    severity: str
    agent: str
    summary: str
    payload: Json = field(default_factory=dict)
    refs: Json = field(default_factory=dict)
    resource: str | None = None
    conversation: bool = False


@dataclass(frozen=True)
class Incident:
    workspace: str
    day: int
    at: str  # "HH:MM" UTC
    resource: str | None
    beats: tuple[Beat, ...]


@dataclass(frozen=True)
class Workspace:
    id: str
    short: str
    crews: dict[str, str]  # agent -> crew
    services: tuple[str, ...]
    hosts: tuple[str, ...]
    external_hosts: tuple[str, ...]
    internal_names: tuple[str, ...]
    repos: tuple[str, ...]
    tables: tuple[str, ...]


ACME = Workspace(
    id="acme-shop",
    short="acme",
    crews={
        "deployer": "platform",
        "oncall": "platform",
        "reviewer": "platform",
        "planner": "checkout",
        "qa": "checkout",
    },
    services=(
        "checkout-api",
        "payment-gateway",
        "inventory-api",
        "cart-service",
        "search-api",
        "storefront-web",
        "order-worker",
    ),
    hosts=("k8s-prod-eu1", "k8s-prod-us2", "k8s-staging"),
    external_hosts=(
        "api.payflow.com",
        "hooks.slack.com",
        "registry.npmjs.org",
        "ghcr.io",
        "pypi.org",
        "s3.eu-west-1.amazonaws.com",
        "sentry.io",
    ),
    internal_names=(
        "inventory.internal.acme",
        "orders-db.internal.acme",
        "redis-cart.internal.acme",
        "search.internal.acme",
    ),
    repos=("acme/checkout", "acme/payments", "acme/platform-infra", "acme/storefront"),
    tables=("orders", "carts", "payments", "promo_codes", "stock_levels"),
)

ORBIT = Workspace(
    id="orbit-labs",
    short="orbit",
    crews={
        "trainer": "ml",
        "evaluator": "ml",
        "deployer": "ml",
        "data-eng": "data",
        "planner": "data",
    },
    services=(
        "ranker-serving",
        "encoder-serving",
        "feature-server",
        "model-registry",
        "events-ingest",
        "label-joiner",
        "airflow-scheduler",
    ),
    hosts=("gpu-pool-a", "spark-emr-prod", "k8s-serving"),
    external_hosts=(
        "huggingface.co",
        "s3.us-east-1.amazonaws.com",
        "pypi.org",
        "wandb.ai",
        "storage.googleapis.com",
        "hooks.slack.com",
    ),
    internal_names=(
        "mlflow.orbit.internal",
        "feast.orbit.internal",
        "warehouse.orbit.internal",
        "kafka-1.orbit.internal",
    ),
    repos=("orbit/ranking", "orbit/pipelines", "orbit/infra", "orbit/encoders"),
    tables=("events_daily_v2", "labels", "user_features", "impressions", "feature_logs"),
)

WORKSPACES = {ws.id: ws for ws in (ACME, ORBIT)}


def b(
    minutes: int,
    type_: str,
    severity: str,
    agent: str,
    summary: str,
    *,
    refs: Json | None = None,
    resource: str | None = None,
    conv: bool = False,
    **payload: Any,
) -> Beat:
    return Beat(minutes, type_, severity, agent, summary, dict(payload), refs or {}, resource, conv)


def inc(workspace: str, day: int, at: str, resource: str | None, *beats: Beat) -> Incident:
    return Incident(workspace, day, at, resource, beats)


# --------------------------------------------------------------------------------------
# acme-shop: the memorable stretches, with the noise that surrounded them
# --------------------------------------------------------------------------------------

ACME_INCIDENTS: tuple[Incident, ...] = (
    inc(
        "acme-shop",
        1,
        "12:20",
        "svc:search-api",
        b(
            0,
            "peer.escalation",
            "notice",
            "qa",
            "search-api keeps showing the old price for about 15 minutes after a price change: "
            "the price.updated event is published before the DB commit, so the cache refill "
            "reads the stale row.",
            service="search-api",
            error="stale prices after update",
            lag_minutes=15,
            fix="publish price.updated from an outbox after commit",
            conv=True,
        ),
        b(
            25,
            "peer.conversation",
            "info",
            "reviewer",
            "Outbox pattern sounds right. I'll review when it's up.",
            state="answered",
            conv=True,
        ),
    ),
    inc(
        "acme-shop",
        5,
        "10:00",
        "svc:search-api",
        b(
            0,
            "summary.generated",
            "info",
            "qa",
            "Stale search prices fixed by PR #4866: price events now go through the orders "
            "outbox and are emitted after commit; price lag is under 5 s in staging.",
            service="search-api",
            pr=4866,
            fix="transactional outbox",
        ),
    ),
    inc(
        "acme-shop",
        19,
        "14:50",
        "db:customers",
        b(
            0,
            "tool.call",
            "info",
            "reviewer",
            "sql.query production.customers WHERE email LIKE '%@example.org'",
            tool="sql.query",
            database="customers",
            env="production",
        ),
        b(
            0,
            "approval.denied",
            "warn",
            "reviewer",
            "Keeper denied a production read of the customers table (PII) for debugging: no "
            "support ticket attached and the query was not against the masked view.",
            database="customers",
            env="production",
            reason="PII access without ticket; use customers_masked",
        ),
    ),
    inc(
        "acme-shop",
        45,
        "20:30",
        "svc:payment-gateway",
        b(
            0,
            "exec.output_chunk",
            "warn",
            "deployer",
            "webhook-replay: replayed 1,204 events (37 with existing refund ids)",
            command="payments webhook-replay --since 2026-11-06",
            stream="stdout",
        ),
        b(
            6,
            "peer.escalation",
            "error",
            "qa",
            "The webhook replay during the payments v3 cutover issued 37 duplicate refunds "
            "(EUR 4,310 total): refund handlers in v3 do not check the idempotency key from the "
            "v2 ledger.",
            service="payment-gateway",
            duplicate_refunds=37,
            amount_eur=4310,
            error="idempotency keys not carried over from v2 ledger",
            conv=True,
        ),
        b(
            10,
            "mission.status_change",
            "error",
            "planner",
            "Mission 'payments v3 migration' failed: rolled back to v2 after duplicate refunds",
            mission="payments-v3",
            to_state="failed",
            rollback_to="v2",
        ),
        b(
            300,
            "summary.generated",
            "notice",
            "planner",
            "Payments v3 cutover rollback: duplicate refunds came from replaying webhooks into "
            "handlers that could not see v2 idempotency keys. Finance reversed all 37; v3 will "
            "import the v2 key table before any replay.",
            incident="INC-0463",
            service="payment-gateway",
            reversed=37,
        ),
    ),
    inc(
        "acme-shop",
        55,
        "11:15",
        "model:search-ranker",
        b(
            0,
            "eval.regression_detected",
            "notice",
            "qa",
            "search-ranker v12.1 with in_stock_boost restored: NDCG@10 0.409 vs 0.412 for v11, "
            "still 0.7% below on long-tail queries; within tolerance for a staged rollout.",
            model="search-ranker",
            version="v12.1",
            metric="ndcg@10",
            baseline=0.412,
            candidate=0.409,
            slice="long_tail",
        ),
    ),
    inc(
        "acme-shop",
        2,
        "09:10",
        "svc:checkout-api",
        b(
            0,
            "tool.call",
            "info",
            "reviewer",
            "Approved PR #4821 'cart cache: raise max_entries to 50k for faster repeat views'",
            tool="github.pr_review",
            pr=4821,
            repo="acme/checkout",
            verdict="approve",
        ),
        b(
            95,
            "keeper.decision",
            "info",
            "deployer",
            "Keeper approved rollout of checkout-api v2.30.0 to production "
            "(CHG-1174, approver: reviewer)",
            service="checkout-api",
            version="2.30.0",
            env="production",
            decision="allow",
            ticket="CHG-1174",
        ),
    ),
    inc(
        "acme-shop",
        3,
        "02:47",
        "svc:checkout-api",
        b(
            0,
            "container.metrics",
            "warn",
            "oncall",
            "checkout-api-7f9c memory 1.41Gi / 1.5Gi (94%), rising 40Mi/min",
            pod="checkout-api-7f9c6d-x2k8p",
            mem_bytes=1513975808,
            mem_limit_bytes=1610612736,
            cpu_millicores=820,
        ),
        b(
            4,
            "exec.output_chunk",
            "error",
            "oncall",
            "kubectl describe: Last State: Terminated  Reason: OOMKilled  Exit Code: 137",
            command="kubectl describe pod checkout-api-7f9c6d-x2k8p -n shop",
            stream="stdout",
        ),
        b(
            9,
            "peer.escalation",
            "error",
            "oncall",
            "checkout-api OOMKilled 14 times in 20 minutes right after the cart cache change in "
            "PR #4821 (max_entries 10k -> 50k); each entry holds a full cart snapshot, so the heap "
            "blew past the 1.5Gi limit. Rolling back the cache size.",
            service="checkout-api",
            error="OOMKilled (exit 137)",
            pr=4821,
            change="cart cache max_entries 10000 -> 50000",
            restarts=14,
            customer_impact="~3% of checkouts returned 503 for 20 min",
            fix="revert max_entries to 10000; cache cart ids instead of snapshots",
            conv=True,
        ),
        b(
            14,
            "peer.conversation",
            "info",
            "planner",
            "Was #4821 load-tested before merge? The PR only has unit tests.",
            state="escalated",
            question="load test evidence for PR 4821",
            conv=True,
        ),
        b(
            22,
            "mission.status_change",
            "error",
            "deployer",
            "Mission 'cart cache rollout' failed: checkout-api crash-looping, "
            "rolled back to v2.29.4",
            mission="cart-cache-rollout",
            from_state="rolling_out",
            to_state="failed",
            rollback_to="2.29.4",
        ),
        b(
            31,
            "container.metrics",
            "info",
            "oncall",
            "checkout-api-5b21 memory 612Mi / 1.5Gi after rollback, flat for 10 min",
            pod="checkout-api-5b21c4-q9w2z",
            mem_bytes=641728512,
            mem_limit_bytes=1610612736,
        ),
        b(
            300,
            "summary.generated",
            "notice",
            "oncall",
            "Incident summary (checkout OOM, Sep 25): a cache change stored whole cart snapshots "
            "per entry and multiplied the entry cap by five, so checkout-api ran out of memory "
            "under normal night traffic. Fix: keep ids in the cache, size it by bytes not entries, "
            "and require a heap profile under load for any cache change.",
            incident="INC-0412",
            service="checkout-api",
            root_cause="unbounded cache growth",
            pr=4821,
            follow_ups=["PR #4830 byte-bounded cache", "load test gate for cache PRs"],
        ),
    ),
    inc(
        "acme-shop",
        10,
        "17:38",
        "svc:checkout-api",
        b(
            0,
            "tool.call",
            "info",
            "deployer",
            "deploy checkout-api v2.31.0 --env production",
            tool="deploy.run",
            service="checkout-api",
            version="2.31.0",
            env="production",
        ),
        b(
            1,
            "approval.denied",
            "warn",
            "deployer",
            "Keeper denied the production deployment of checkout-api v2.31.0: change ticket "
            "CHG-1182 has no approval from a release owner, and it is Friday after the 17:00 "
            "cut-off.",
            service="checkout-api",
            version="2.31.0",
            env="production",
            ticket="CHG-1182",
            reason="missing release-owner approval; outside change window",
            policy="prod-deploy-v3",
        ),
        b(
            3,
            "message",
            "info",
            "deployer",
            "Holding the deploy until Monday; pinged @reviewer for approval on CHG-1182.",
            conv=True,
        ),
    ),
    inc(
        "acme-shop",
        9,
        "11:05",
        "svc:payment-gateway",
        b(
            0,
            "exec.output_chunk",
            "info",
            "qa",
            "FAILED tests/integration/test_refunds.py::test_refund_partial_capture - "
            "AssertionError: expected 200, got 409",
            command="pytest tests/integration -x -q",
            stream="stdout",
            exit_code=1,
        ),
        b(
            2,
            "exec.output_chunk",
            "info",
            "qa",
            "rerun: 1 passed in 4.21s",
            command="pytest tests/integration/test_refunds.py -k partial_capture",
            stream="stdout",
        ),
        b(
            20,
            "peer.escalation",
            "notice",
            "qa",
            "payment-gateway test test_refund_partial_capture is flaky: fails about 1 run in 12 "
            "with 409 Conflict from the PayFlow sandbox. Looks like two captures racing on the "
            "same idempotency key. Blocking merges to main twice today.",
            service="payment-gateway",
            test="tests/integration/test_refunds.py::test_refund_partial_capture",
            failure_rate=0.08,
            error="409 Conflict (idempotency key reuse)",
            blocked_prs=[4902, 4907],
            conv=True,
        ),
        b(
            41,
            "peer.conversation",
            "info",
            "reviewer",
            "Can we quarantine it until the fix lands? Red main is costing everyone.",
            state="open",
            conv=True,
        ),
    ),
    inc(
        "acme-shop",
        13,
        "08:30",
        "svc:checkout-api",
        b(
            0,
            "keeper.decision",
            "info",
            "deployer",
            "Keeper approved checkout-api v2.31.0 to production (CHG-1182, approver: reviewer)",
            service="checkout-api",
            version="2.31.0",
            env="production",
            decision="allow",
            ticket="CHG-1182",
        ),
        b(
            25,
            "mission.status_change",
            "info",
            "deployer",
            "Mission 'checkout v2.31 release' completed",
            mission="checkout-v2.31",
            from_state="rolling_out",
            to_state="completed",
        ),
    ),
    inc(
        "acme-shop",
        14,
        "15:20",
        "svc:payment-gateway",
        b(
            0,
            "summary.generated",
            "info",
            "qa",
            "Flaky test triage, payment-gateway: test_refund_partial_capture shared one "
            "idempotency key across its parametrized cases, so the sandbox saw a replay and "
            "answered 409. Fixed in PR #4977 (uuid4 key per case); "
            "200 consecutive green runs since.",
            service="payment-gateway",
            test="test_refund_partial_capture",
            pr=4977,
            root_cause="idempotency key reused across parametrized cases",
            verified_runs=200,
        ),
    ),
    inc(
        "acme-shop",
        17,
        "13:12",
        "svc:checkout-api",
        b(
            0,
            "container.metrics",
            "warn",
            "oncall",
            "checkout-api memory at 97% of limit within 90 s of pod start",
            pod="checkout-api-66d1aa-lm3vt",
            mem_bytes=1562378240,
            mem_limit_bytes=1610612736,
        ),
        b(
            3,
            "peer.escalation",
            "warn",
            "oncall",
            "Checkout OOM again, different cache this time: PR #5034 warms the promo-code cache "
            "at startup by loading all 2.3M codes, and new pods get OOMKilled before they pass "
            "readiness. Old pods still serve, so no outage yet, but the rollout is stuck at 2/12.",
            service="checkout-api",
            error="OOMKilled during startup",
            pr=5034,
            change="eager promo-code cache warm-up",
            codes_loaded=2300000,
            fix="lazy load promo codes with a 50k LRU",
            conv=True,
        ),
        b(
            8,
            "keeper.decision",
            "warn",
            "deployer",
            "Keeper paused the checkout-api v2.33.0 production rollout: 4 of the 4 new pods "
            "failed readiness (OOMKilled); auto-rollback armed",
            service="checkout-api",
            version="2.33.0",
            env="production",
            decision="pause",
            failed_pods=4,
        ),
        b(
            40,
            "summary.generated",
            "notice",
            "planner",
            "Second checkout memory incident in three weeks, again from a cache change. Promo "
            "codes now load lazily; planner adds 'heap profile at 2x peak' to the checkout PR "
            "template.",
            incident="INC-0431",
            service="checkout-api",
            pr=5034,
            related="INC-0412",
        ),
    ),
    inc(
        "acme-shop",
        21,
        "10:02",
        "svc:inventory-api",
        b(
            0,
            "exec.output_chunk",
            "error",
            "deployer",
            "smoke: GET /v1/stock/sku-88213 -> 500 (3/5 checks failed)",
            command="make smoke ENV=production SERVICE=inventory-api",
            stream="stderr",
        ),
        b(
            2,
            "tool.call",
            "info",
            "deployer",
            "deploy inventory-api v1.18.2 --env production --force",
            tool="deploy.run",
            service="inventory-api",
            version="1.18.2",
            flags=["--force"],
        ),
        b(
            2,
            "approval.denied",
            "error",
            "deployer",
            "Production deploy of inventory-api v1.18.2 denied: --force cannot bypass failing "
            "smoke tests in production; fix the 500 on /v1/stock or get an incident commander "
            "override.",
            service="inventory-api",
            version="1.18.2",
            env="production",
            reason="--force used with failing smoke tests",
            failing_checks=3,
        ),
        b(
            15,
            "keeper.decision",
            "warn",
            "deployer",
            "Keeper allowed payment-gateway v3.4.0 to production with the canary stage skipped, "
            "only after reviewer sign-off; flagged as risky",
            service="payment-gateway",
            version="3.4.0",
            env="production",
            decision="allow_with_risk",
            skipped_stage="canary",
        ),
    ),
    inc(
        "acme-shop",
        24,
        "16:45",
        "svc:storefront-web",
        b(
            0,
            "peer.conversation",
            "info",
            "planner",
            "Storefront search feels slower since Tuesday; is that the new ranking model?",
            state="open",
            conv=True,
        ),
        b(
            6,
            "peer.conversation",
            "info",
            "qa",
            "p95 went from 180 ms to 240 ms, it's the CDN purge not the model. Closing.",
            state="resolved",
            conv=True,
        ),
    ),
    inc(
        "acme-shop",
        26,
        "07:55",
        "svc:checkout-api",
        b(
            0,
            "network.dns",
            "error",
            "oncall",
            "NXDOMAIN inventory.internal.acme from checkout-api (x418 in 60 s)",
            qname="inventory.internal.acme",
            rcode="NXDOMAIN",
            count=418,
        ),
        b(
            2,
            "exec.output_chunk",
            "info",
            "oncall",
            "kubectl -n kube-system get cm coredns -o yaml | grep -A3 stub  -> (no output)",
            command="kubectl -n kube-system get cm coredns -o yaml",
            stream="stdout",
        ),
        b(
            6,
            "peer.escalation",
            "error",
            "oncall",
            "Checkout cannot resolve inventory.internal.acme: this morning's CoreDNS ConfigMap "
            "edit (platform-infra PR #771) dropped the stub zone for internal.acme. Add-to-cart "
            "has been failing for 11 minutes. Restoring the stub domain now.",
            service="checkout-api",
            dependency="inventory-api",
            error="NXDOMAIN",
            cause="CoreDNS stub zone removed",
            pr=771,
            repo="acme/platform-infra",
            fix="restore stubDomains internal.acme -> 10.40.0.10",
            conv=True,
        ),
        b(
            19,
            "network.dns",
            "info",
            "oncall",
            "inventory.internal.acme resolves again (A 10.40.3.17)",
            qname="inventory.internal.acme",
            rcode="NOERROR",
        ),
        b(
            180,
            "summary.generated",
            "notice",
            "oncall",
            "DNS misconfiguration postmortem: a tidy-up of the CoreDNS ConfigMap removed the "
            "internal.acme stub zone; pods kept cached answers for ~5 minutes, then cart and "
            "checkout failed lookups to inventory. Added a CI check that resolves every "
            "internal.acme service name against the rendered ConfigMap.",
            incident="INC-0440",
            root_cause="stub zone removed from CoreDNS ConfigMap",
            pr=771,
            duration_minutes=13,
        ),
    ),
    inc(
        "acme-shop",
        29,
        "09:15",
        "svc:storefront-web",
        b(
            0,
            "peer.escalation",
            "warn",
            "oncall",
            "TLS certificate for static.acme-shop.com expires in 6 days and cert-manager keeps "
            "failing the HTTP-01 challenge: the CDN caches /.well-known/acme-challenge with a 404.",
            domain="static.acme-shop.com",
            expires_in_days=6,
            error="HTTP-01 challenge 404 (cached by CDN)",
            fix="bypass CDN cache for /.well-known/*; switch to DNS-01",
        ),
        b(
            120,
            "tool.call",
            "info",
            "oncall",
            "cdn.purge path=/.well-known/* ; cdn.rule add bypass-cache /.well-known/*",
            tool="cdn.admin",
            actions=["purge", "add_rule"],
        ),
    ),
    inc(
        "acme-shop",
        33,
        "14:40",
        "svc:payment-gateway",
        b(
            0,
            "exec.output_chunk",
            "info",
            "qa",
            "FAILED tests/integration/test_webhooks.py::test_webhook_signature_timeout - "
            "TimeoutError after 5.0s",
            command="pytest tests/integration -q",
            stream="stdout",
            exit_code=1,
        ),
        b(
            9,
            "peer.conversation",
            "warn",
            "reviewer",
            "test_webhook_signature_timeout broke three builds on main today; qa, please "
            "quarantine it again and own the fix. This is the second flaky payment-gateway test "
            "this quarter.",
            state="escalated",
            test="test_webhook_signature_timeout",
            broken_builds=3,
            conv=True,
        ),
        b(
            60,
            "mission.status_change",
            "warn",
            "planner",
            "Mission 'stabilise CI' blocked: payment-gateway integration suite still flaky "
            "(2 of 40 runs red this week)",
            mission="stabilise-ci",
            from_state="in_progress",
            to_state="blocked",
            red_runs=2,
            total_runs=40,
        ),
    ),
    inc(
        "acme-shop",
        36,
        "10:20",
        "db:orders",
        b(
            0,
            "tool.call",
            "info",
            "deployer",
            "migrate orders schema v57 -> v58 (ALTER TABLE orders ADD COLUMN gift_wrap boolean "
            "NOT NULL DEFAULT false)",
            tool="db.migrate",
            database="orders",
            from_version=57,
            to_version=58,
        ),
        b(
            2,
            "exec.output_chunk",
            "warn",
            "deployer",
            "waiting for AccessExclusiveLock on relation orders ... 214 s",
            command="alembic upgrade head",
            stream="stderr",
        ),
        b(
            7,
            "peer.escalation",
            "error",
            "oncall",
            "Schema migration v58 locked the orders table for 6 minutes: ADD COLUMN with a "
            "NOT NULL default rewrote 41M rows under an ACCESS EXCLUSIVE lock, and checkout "
            "order writes timed out (1,870 failed orders). Migration cancelled.",
            database="orders",
            table="orders",
            migration="v58",
            lock="ACCESS EXCLUSIVE",
            rows=41000000,
            failed_orders=1870,
            error="lock timeout on INSERT INTO orders",
            conv=True,
        ),
        b(
            9,
            "mission.status_change",
            "error",
            "deployer",
            "Mission 'orders v58 migration' failed and was rolled back",
            mission="orders-v58",
            to_state="failed",
        ),
        b(
            240,
            "summary.generated",
            "notice",
            "reviewer",
            "Postmortem, orders table lock: the orders cluster still runs Postgres 10, where "
            "adding a column with a default rewrites the table. v58 is re-planned as add nullable "
            "column, backfill in 10k batches, then set NOT NULL with a validated check; all "
            "migrations now run with lock_timeout=3s.",
            incident="INC-0447",
            table="orders",
            fix="nullable column + batched backfill",
            lock_timeout="3s",
        ),
    ),
    inc(
        "acme-shop",
        38,
        "19:05",
        "db:orders",
        b(
            0,
            "approval.denied",
            "warn",
            "deployer",
            "Keeper denied running the orders v58 migration in production at 19:05 UTC: "
            "migrations on orders need DBA approval and must run outside 09:00-21:00.",
            database="orders",
            migration="v58-retry",
            env="production",
            reason="no DBA approval; inside business hours",
        ),
    ),
    inc(
        "acme-shop",
        39,
        "06:00",
        "db:orders",
        b(
            0,
            "memory.consolidated",
            "info",
            "reviewer",
            "Rule: never run schema migrations on the orders database between 09:00 and 21:00 "
            "UTC, always with lock_timeout=3s, and split column additions into add / backfill / "
            "constrain. Evidence: INC-0447 and the denied v58 retry.",
            refs={"priority": "permanent"},
            evidence=["INC-0447", "v58-retry denial"],
            scope="crew",
        ),
        b(
            30,
            "memory.consolidated",
            "info",
            "deployer",
            "Pattern: production deploys by deployer get denied when the change ticket lacks a "
            "release-owner approval or when --force is used on red smoke tests. Ask for approval "
            "before starting the deploy, never after.",
            evidence=["CHG-1182", "inventory-api v1.18.2"],
            scope="agent",
        ),
    ),
    inc(
        "acme-shop",
        41,
        "08:00",
        None,
        b(
            0,
            "summary.generated",
            "info",
            "deployer",
            "October deploy report: 23 production deploys, 3 blocked by the keeper (a missing "
            "release-owner approval, --force over failing smoke tests, an orders migration "
            "without DBA approval), 1 rollback (checkout-api v2.33.0, OOM). "
            "Median lead time 2h10m.",
            deploys=23,
            blocked=3,
            rollbacks=1,
            median_lead_time_minutes=130,
        ),
    ),
    inc(
        "acme-shop",
        41,
        "11:30",
        "svc:checkout-api",
        b(
            0,
            "note",
            "info",
            "oncall",
            "Runbook: roll back a checkout-api cache change without a redeploy - set "
            "CART_CACHE_MAX_BYTES and PROMO_CACHE_MODE=lazy via the config service, then restart "
            "pods one at a time.",
            refs={"episodic": True, "priority": "pin"},
            runbook="checkout-cache-rollback",
            config_keys=["CART_CACHE_MAX_BYTES", "PROMO_CACHE_MODE"],
        ),
    ),
    inc(
        "acme-shop",
        44,
        "15:10",
        "svc:checkout-api",
        b(
            0,
            "exec.output_chunk",
            "info",
            "qa",
            "k6: checkout_flow p99=1.21s rss_peak=1.32Gi (limit 1.5Gi) over 20 min at 2x peak",
            command="k6 run loadtests/checkout_flow.js",
            stream="stdout",
        ),
        b(
            5,
            "tool.call",
            "warn",
            "qa",
            "Heap profile for PR #5120 (shipping-quote cache): retained size grows 60Mi per 10k "
            "quotes and never plateaus; would OOM checkout at Black Friday traffic. Requested "
            "changes.",
            refs={"episodic": True},
            tool="pprof.heap",
            pr=5120,
            service="checkout-api",
            finding="unbounded growth",
            verdict="request_changes",
        ),
    ),
    inc(
        "acme-shop",
        48,
        "09:40",
        "model:search-ranker",
        b(
            0,
            "exec.output_chunk",
            "info",
            "qa",
            "offline eval search-ranker v12: ndcg@10=0.377 (baseline v11 0.412)",
            command="python -m ranking.eval --model v12 --set holdout",
            stream="stdout",
        ),
        b(
            3,
            "eval.regression_detected",
            "warn",
            "qa",
            "Eval regression on the search ranking model: search-ranker v12 NDCG@10 fell from "
            "0.412 to 0.377 on the holdout after the in_stock_boost feature was dropped from the "
            "feature set; out-of-stock products now rank in the top 3 for 8% of queries.",
            model="search-ranker",
            version="v12",
            metric="ndcg@10",
            baseline=0.412,
            candidate=0.377,
            dropped_feature="in_stock_boost",
            dataset="holdout-2026-11",
        ),
        b(
            50,
            "approval.denied",
            "warn",
            "deployer",
            "Keeper denied promoting search-ranker v12 to production: the eval gate is red.",
            model="search-ranker",
            version="v12",
            env="production",
            reason="eval gate failed",
        ),
    ),
    inc(
        "acme-shop",
        50,
        "13:25",
        "svc:payment-gateway",
        b(
            0,
            "network.egress",
            "warn",
            "qa",
            "api.payflow.com 429 Too Many Requests x312 during load test",
            host="api.payflow.com",
            status=429,
            count=312,
        ),
        b(
            4,
            "peer.escalation",
            "warn",
            "qa",
            "PayFlow rate-limits us at 100 req/s per merchant key; the Black Friday load test "
            "hit 429s at 1.6x current peak. We need a second merchant key or request batching "
            "before Nov 27.",
            provider="PayFlow",
            limit_rps=100,
            error="429 Too Many Requests",
            fix="request second merchant key; batch capture calls",
            deadline="2026-11-27",
            conv=True,
        ),
    ),
    inc(
        "acme-shop",
        52,
        "18:10",
        None,
        b(
            0,
            "mission.status_change",
            "warn",
            "planner",
            "Mission 'Black Friday readiness' at risk: checkout p99 1.8s at 3x traffic (target "
            "800 ms) and PayFlow rate limit unresolved",
            mission="black-friday-readiness",
            to_state="at_risk",
            p99_seconds=1.8,
            target_ms=800,
        ),
        b(
            60,
            "summary.generated",
            "info",
            "planner",
            "Black Friday readiness review: checkout holds 3x traffic but p99 is 1.8s because "
            "of synchronous shipping-quote calls; PayFlow granted a second merchant key; cache "
            "PRs still need heap profiles. Owners assigned for each gap.",
            mission="black-friday-readiness",
            gaps=3,
        ),
    ),
    inc(
        "acme-shop",
        57,
        "16:50",
        "svc:checkout-api",
        b(
            0,
            "keeper.decision",
            "warn",
            "deployer",
            "Keeper denied a hotfix deploy of checkout-api v2.41.1 to production: the Black "
            "Friday code freeze is active and no incident commander approved an exception.",
            service="checkout-api",
            version="2.41.1",
            env="production",
            decision="deny",
            reason="code freeze; no IC approval",
        ),
        b(
            12,
            "peer.conversation",
            "info",
            "deployer",
            "Is the coupon rounding bug worth a freeze exception? Two tickets so far.",
            state="open",
            conv=True,
        ),
        b(
            31,
            "peer.conversation",
            "notice",
            "planner",
            "Yes: escalating to the incident commander for an exception, it affects totals.",
            state="escalated",
            conv=True,
        ),
    ),
    inc(
        "acme-shop",
        58,
        "09:05",
        "svc:checkout-api",
        b(
            0,
            "keeper.decision",
            "info",
            "deployer",
            "Keeper approved checkout-api v2.41.1 to production under freeze exception FX-07 "
            "(approved by incident commander)",
            service="checkout-api",
            version="2.41.1",
            env="production",
            decision="allow",
            exception="FX-07",
        ),
    ),
    inc(
        "acme-shop",
        59,
        "10:30",
        None,
        b(
            0,
            "summary.generated",
            "info",
            "reviewer",
            "Two-month retro, platform + checkout: 4 incidents (2 checkout OOMs from cache "
            "changes, 1 DNS misconfiguration, 1 orders table lock), 5 keeper denials, 2 flaky "
            "payment-gateway tests (one fixed, one still quarantined). Biggest lesson: cache "
            "changes need load evidence.",
            incidents=4,
            keeper_denials=5,
        ),
    ),
)

# --------------------------------------------------------------------------------------
# orbit-labs
# --------------------------------------------------------------------------------------

ORBIT_INCIDENTS: tuple[Incident, ...] = (
    inc(
        "orbit-labs",
        1,
        "15:30",
        "svc:feature-server",
        b(
            0,
            "mission.status_change",
            "warn",
            "planner",
            "Mission 'feature store v2 migration' blocked: the Feast 0.40 upgrade breaks our "
            "custom Redis online store",
            mission="feature-store-v2",
            to_state="blocked",
            blocker="feast 0.40 upgrade",
        ),
    ),
    inc(
        "orbit-labs",
        9,
        "18:05",
        "job:train_feed_ranker",
        b(
            0,
            "keeper.decision",
            "warn",
            "trainer",
            "Keeper cut a training request from 128 to 64 GPUs: the job asked for capacity "
            "outside the ml crew's reserved window.",
            decision="allow_reduced",
            requested_gpus=128,
            granted_gpus=64,
            reason="outside reserved window",
        ),
    ),
    inc(
        "orbit-labs",
        25,
        "04:40",
        "svc:events-ingest",
        b(
            0,
            "container.metrics",
            "warn",
            "data-eng",
            "events-ingest consumer lag 2.1M messages on topic clicks.v3",
            service="events-ingest",
            topic="clicks.v3",
            lag=2100000,
        ),
        b(
            5,
            "peer.escalation",
            "warn",
            "data-eng",
            "events-ingest is 2.1M messages behind: kafka broker-3 filled its disk after the "
            "retention change to 14 days, so partitions led by broker-3 went offline.",
            service="events-ingest",
            error="broker-3 disk full",
            lag=2100000,
            fix="retention back to 7 days; add 2 TB volume",
            conv=True,
        ),
        b(
            150,
            "summary.generated",
            "info",
            "data-eng",
            "Kafka lag recovered in 2h20m after retention went back to 7 days on clicks.v3; "
            "disk alerts now fire at 75% instead of 90%.",
            service="events-ingest",
            recovery_minutes=140,
        ),
    ),
    inc(
        "orbit-labs",
        29,
        "13:35",
        "dataset:finetune-queries",
        b(
            0,
            "approval.denied",
            "warn",
            "trainer",
            "Keeper denied pushing the finetune-queries dataset to huggingface.co: it still "
            "carries user ids, and external uploads need a privacy approval.",
            dataset="finetune-queries",
            destination="huggingface.co",
            reason="contains user ids; no privacy approval",
        ),
    ),
    inc(
        "orbit-labs",
        38,
        "10:10",
        "model:query-encoder",
        b(
            0,
            "eval.regression_detected",
            "warn",
            "evaluator",
            "query-encoder v3-rc1 MRR@10 down on German queries (0.352 -> 0.339) after the "
            "tokenizer upgrade split compound nouns differently; English unchanged.",
            model="query-encoder",
            version="v3-rc1",
            metric="mrr@10",
            slice="lang=de",
            baseline=0.352,
            candidate=0.339,
            cause="tokenizer upgrade",
        ),
        b(
            20,
            "peer.conversation",
            "info",
            "trainer",
            "Do we block v3 on German? It's 9% of traffic. Escalating to planner to decide.",
            state="escalated",
            conv=True,
        ),
    ),
    inc(
        "orbit-labs",
        47,
        "16:20",
        "table:feature_logs",
        b(
            0,
            "summary.generated",
            "notice",
            "data-eng",
            "PII cleanup done: purged 120,412 rows with raw emails from feature_logs, removed "
            "payload logging from the onboarding topics feature, and added a PII scanner to the "
            "pipelines CI.",
            table="feature_logs",
            purged_rows=120412,
        ),
        b(
            60,
            "memory.consolidated",
            "info",
            "data-eng",
            "Rule: feature code never logs raw request or signup payloads; log ids and hashed "
            "fields only. Evidence: the feature_logs email leak.",
            evidence=["feature_logs PII leak"],
            scope="crew",
        ),
    ),
    inc(
        "orbit-labs",
        53,
        "09:45",
        "svc:feature-server",
        b(
            0,
            "mission.status_change",
            "error",
            "planner",
            "Mission 'feature store v2 cutover' failed: online/offline skew of 3.4% on "
            "user_features, above the 0.5% gate",
            mission="feature-store-v2",
            to_state="failed",
            skew_pct=3.4,
            gate_pct=0.5,
        ),
        b(
            40,
            "peer.escalation",
            "warn",
            "evaluator",
            "Training-serving skew on user_features comes from timezone handling: the offline "
            "job buckets days in UTC, the online store in the user's local time.",
            table="user_features",
            error="training-serving skew 3.4%",
            cause="UTC vs local day bucketing",
            conv=True,
        ),
    ),
    inc(
        "orbit-labs",
        57,
        "10:00",
        "model:feed-ranker",
        b(
            0,
            "approval.denied",
            "warn",
            "deployer",
            "Keeper denied raising feed-ranker v8-rc2 from 5% to 100% of production traffic: "
            "model owner approval still pending.",
            model="feed-ranker",
            version="v8-rc2",
            env="production",
            from_pct=5,
            to_pct=100,
            reason="model-owner approval pending",
        ),
        b(
            200,
            "keeper.decision",
            "info",
            "deployer",
            "Keeper approved full production rollout of feed-ranker v8-rc2 (approved by "
            "evaluator as model owner)",
            model="feed-ranker",
            version="v8-rc2",
            env="production",
            decision="allow",
        ),
    ),
    inc(
        "orbit-labs",
        4,
        "03:15",
        "job:build_user_features",
        b(
            0,
            "exec.output_chunk",
            "error",
            "data-eng",
            "ExecutorLostFailure (executor 17 exited caused by one of the running tasks) Reason: "
            "Container killed by YARN for exceeding memory limits. 22.4 GB of 22 GB physical "
            "memory used.",
            command="spark-submit jobs/build_user_features.py",
            stream="stderr",
        ),
        b(
            6,
            "peer.escalation",
            "error",
            "data-eng",
            "Nightly build_user_features Spark job OOMs since PR #612 switched the "
            "sessions x users join to a broadcast join; the broadcast side is 14 GB, so every "
            "executor runs out of memory. Features for 2026-09-25 are missing.",
            job="build_user_features",
            error="executor OOM (exceeded 22 GB)",
            pr=612,
            repo="orbit/pipelines",
            broadcast_size_gb=14,
            fix="revert to sort-merge join; set autoBroadcastJoinThreshold=100MB",
            conv=True,
        ),
        b(
            10,
            "mission.status_change",
            "error",
            "planner",
            "Mission 'nightly features 2026-09-25' failed: build_user_features exited 3 times",
            mission="nightly-features",
            to_state="failed",
            attempts=3,
        ),
        b(
            190,
            "summary.generated",
            "notice",
            "data-eng",
            "Feature pipeline OOM: a join hint forced Spark to broadcast a 14 GB table. Reverted "
            "to sort-merge, capped autoBroadcastJoinThreshold at 100 MB cluster-wide, backfilled "
            "2026-09-25 by 07:40.",
            incident="ORB-INC-19",
            job="build_user_features",
            pr=612,
        ),
    ),
    inc(
        "orbit-labs",
        7,
        "10:00",
        "model:feed-ranker",
        b(
            0,
            "tool.call",
            "info",
            "trainer",
            "launch training feed-ranker v7.0-rc2 (features: feed_v7, 48 GPUs)",
            tool="train.launch",
            model="feed-ranker",
            version="v7.0-rc2",
            gpus=48,
        ),
        b(
            5,
            "mission.status_change",
            "info",
            "trainer",
            "Mission 'feed-ranker v7' moved to training",
            mission="feed-ranker-v7",
            to_state="training",
        ),
    ),
    inc(
        "orbit-labs",
        12,
        "14:30",
        "model:feed-ranker",
        b(
            0,
            "exec.output_chunk",
            "info",
            "evaluator",
            "eval feed-ranker v7.0-rc2 holdout-2026-10: ndcg@10 0.411 (prod 0.438) recall@50 0.702",
            command="python -m eval.run --model feed-ranker:v7.0-rc2",
            stream="stdout",
        ),
        b(
            2,
            "eval.regression_detected",
            "error",
            "evaluator",
            "Eval regression on the feed ranking model: v7.0-rc2 NDCG@10 is 6.1% below "
            "production (0.411 vs 0.438) on holdout-2026-10. The feature user_recency_7d is "
            "missing from the training set; it was dropped by the null-ratio filter.",
            model="feed-ranker",
            version="v7.0-rc2",
            metric="ndcg@10",
            baseline=0.438,
            candidate=0.411,
            delta_pct=-6.1,
            dropped_feature="user_recency_7d",
            dataset="holdout-2026-10",
        ),
        b(
            9,
            "peer.escalation",
            "warn",
            "evaluator",
            "trainer: do not promote v7.0-rc2. user_recency_7d was 100% null in the feature "
            "view, so the pipeline dropped it silently. Can you check the upstream table?",
            model="feed-ranker",
            feature="user_recency_7d",
            null_ratio=1.0,
            conv=True,
        ),
        b(
            40,
            "peer.conversation",
            "info",
            "data-eng",
            "Found it: events_daily was renamed to events_daily_v2 last week and the feature "
            "view still points at the old name.",
            state="answered",
            conv=True,
        ),
        b(
            180,
            "summary.generated",
            "notice",
            "evaluator",
            "Ranking regression root cause: the upstream rename of events_daily left the "
            "user_recency_7d feature all-null; the null-ratio filter dropped it without a "
            "warning and NDCG@10 fell 6.1%. Fixed the feature view, and the filter now fails "
            "the build instead of dropping a feature.",
            model="feed-ranker",
            version="v7.0-rc2",
            root_cause="upstream table rename",
            fix="feature view points at events_daily_v2; null-ratio filter fails loudly",
        ),
    ),
    inc(
        "orbit-labs",
        15,
        "09:20",
        "model:feed-ranker",
        b(
            0,
            "tool.call",
            "info",
            "deployer",
            "registry.promote feed-ranker v7.0-rc2 stage=production",
            tool="registry.promote",
            model="feed-ranker",
            version="v7.0-rc2",
        ),
        b(
            0,
            "approval.denied",
            "warn",
            "deployer",
            "Keeper denied promoting feed-ranker v7.0-rc2 to production: the eval gate is red "
            "(NDCG@10 -6.1%) and no model owner approved an override.",
            model="feed-ranker",
            version="v7.0-rc2",
            env="production",
            reason="eval gate failed; no owner override",
        ),
    ),
    inc(
        "orbit-labs",
        18,
        "08:10",
        "table:events_daily_v2",
        b(
            0,
            "peer.escalation",
            "warn",
            "data-eng",
            "events_daily_v2 partition dt=2026-10-09 landed 7 hours late; label-joiner ran on "
            "an empty partition and produced zero positive labels for that day.",
            table="events_daily_v2",
            partition="dt=2026-10-09",
            delay_hours=7,
            impact="0 positive labels for 2026-10-09",
            fix="label-joiner waits on a partition sensor",
        ),
        b(
            90,
            "summary.generated",
            "info",
            "data-eng",
            "Late partition follow-up: added a sensor so label-joiner waits for the "
            "_SUCCESS marker (timeout 10h) and re-ran labels for 2026-10-09.",
            job="label-joiner",
            fix="partition sensor",
        ),
    ),
    inc(
        "orbit-labs",
        20,
        "11:45",
        "model:feed-ranker",
        b(
            0,
            "eval.regression_detected",
            "notice",
            "evaluator",
            "Nightly eval of feed-ranker v7.1: NDCG@10 0.441 vs production 0.438 - no "
            "regression on aggregate, but the 'new users' slice is down 2.4%.",
            refs={"episodic": True},
            model="feed-ranker",
            version="v7.1",
            metric="ndcg@10",
            baseline=0.438,
            candidate=0.441,
            slice="new_users",
            slice_delta_pct=-2.4,
        ),
    ),
    inc(
        "orbit-labs",
        22,
        "13:05",
        "table:feature_store.user_features",
        b(
            0,
            "tool.call",
            "info",
            "data-eng",
            "apply migration 0043: ALTER TABLE user_features ADD COLUMN locale text NOT NULL "
            "DEFAULT 'en'",
            tool="db.migrate",
            database="feature_store",
            migration="0043",
        ),
        b(
            4,
            "peer.escalation",
            "error",
            "data-eng",
            "Migration 0043 locked feature_store.user_features for 9 minutes while it rewrote "
            "60M rows; online feature reads for feed-ranker serving timed out and the ranker "
            "fell back to popularity ranking.",
            table="feature_store.user_features",
            migration="0043",
            lock_minutes=9,
            rows=60000000,
            error="statement timeout on feature reads",
            impact="serving fell back to popularity ranking",
            conv=True,
        ),
        b(
            120,
            "summary.generated",
            "notice",
            "planner",
            "Schema migration lesson for the feature store: no table-rewriting ALTERs on "
            "serving tables; use nullable columns plus batched backfill, and run migrations "
            "against the replica first to time the lock.",
            table="feature_store.user_features",
            migration="0043",
        ),
    ),
    inc(
        "orbit-labs",
        27,
        "16:00",
        "table:raw_clickstream_2025",
        b(
            0,
            "tool.call",
            "info",
            "data-eng",
            "warehouse.sql DROP TABLE raw_clickstream_2025",
            tool="warehouse.sql",
            statement="DROP TABLE raw_clickstream_2025",
            env="production",
        ),
        b(
            0,
            "keeper.decision",
            "error",
            "data-eng",
            "Keeper denied DROP TABLE raw_clickstream_2025 in the production warehouse: the "
            "retention policy keeps clickstream for 400 days and the table is under legal hold "
            "LH-2026-04.",
            table="raw_clickstream_2025",
            env="production",
            decision="deny",
            reason="retention 400 days; legal hold LH-2026-04",
        ),
        b(
            8,
            "message",
            "info",
            "data-eng",
            "Ok, archiving to cold storage instead of dropping.",
            conv=True,
        ),
    ),
    inc(
        "orbit-labs",
        31,
        "10:25",
        "model:feed-ranker",
        b(
            0,
            "eval.regression_detected",
            "warn",
            "evaluator",
            "Eval regression on feed-ranker v7.2: recall@50 for cold-start users dropped from "
            "0.61 to 0.55 after signup_channel was removed as a feature; warm users unchanged.",
            model="feed-ranker",
            version="v7.2",
            metric="recall@50",
            slice="cold_start",
            baseline=0.61,
            candidate=0.55,
            dropped_feature="signup_channel",
        ),
        b(
            30,
            "peer.conversation",
            "info",
            "trainer",
            "signup_channel was dropped on purpose (privacy review) - can we get the signal "
            "back from onboarding topics instead?",
            state="open",
            conv=True,
        ),
        b(
            200,
            "summary.generated",
            "info",
            "trainer",
            "Cold-start recall recovered to 0.60 in v7.3 by replacing signup_channel with "
            "onboarding topic embeddings; privacy review approved the new feature.",
            model="feed-ranker",
            version="v7.3",
            metric="recall@50",
            value=0.60,
        ),
    ),
    inc(
        "orbit-labs",
        33,
        "09:00",
        None,
        b(
            0,
            "memory.consolidated",
            "info",
            "evaluator",
            "Rule: any feature removal from the ranking models needs an ablation eval on the "
            "holdout and on the cold-start slice before merge. Two regressions (v7.0-rc2 "
            "user_recency_7d, v7.2 signup_channel) followed feature drops.",
            refs={"priority": "high"},
            evidence=["feed-ranker v7.0-rc2", "feed-ranker v7.2"],
            scope="crew",
        ),
    ),
    inc(
        "orbit-labs",
        36,
        "12:40",
        "svc:model-registry",
        b(
            0,
            "network.dns",
            "error",
            "trainer",
            "SERVFAIL mlflow.orbit.internal from gpu-pool-a",
            qname="mlflow.orbit.internal",
            rcode="SERVFAIL",
            count=57,
        ),
        b(
            5,
            "peer.escalation",
            "warn",
            "trainer",
            "Training jobs on gpu-pool-a cannot reach the model registry (mlflow.orbit.internal "
            "SERVFAIL): the new GPU VPC was never associated with the private DNS zone "
            "orbit.internal. Checkpoints are piling up on local disk.",
            service="model-registry",
            error="SERVFAIL",
            cause="private zone not associated with VPC",
            vpc="vpc-gpu-b",
            fix="associate orbit.internal with vpc-gpu-b",
            conv=True,
        ),
        b(
            70,
            "summary.generated",
            "info",
            "trainer",
            "DNS fix: associated the orbit.internal private zone with vpc-gpu-b and added it "
            "to the Terraform module so new VPCs get it by default; 14 checkpoints uploaded.",
            service="model-registry",
            fix="terraform zone association",
        ),
    ),
    inc(
        "orbit-labs",
        40,
        "22:15",
        "model:query-encoder",
        b(
            0,
            "exec.output_chunk",
            "error",
            "trainer",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB (GPU 3; "
            "79.15 GiB total capacity; 74.02 GiB already allocated)",
            command="torchrun train_encoder.py --seq-len 512 --batch 512",
            stream="stderr",
        ),
        b(
            4,
            "peer.escalation",
            "warn",
            "trainer",
            "query-encoder training OOMs on the GPUs since max sequence length went from 256 to "
            "512 with the batch size unchanged (512); attention memory quadrupled.",
            model="query-encoder",
            error="CUDA out of memory",
            seq_len=[256, 512],
            batch=512,
            fix="gradient accumulation x4 with batch 128; activation checkpointing",
        ),
        b(
            30,
            "mission.status_change",
            "warn",
            "planner",
            "Mission 'query-encoder v3' delayed two days: training restarted with gradient "
            "accumulation",
            mission="query-encoder-v3",
            to_state="delayed",
            delay_days=2,
        ),
    ),
    inc(
        "orbit-labs",
        42,
        "15:00",
        "job:train_feed_ranker",
        b(
            0,
            "network.egress",
            "warn",
            "trainer",
            "egress 3.2 TB/day to s3.us-east-1.amazonaws.com from gpu-pool-a (eu-central-1)",
            host="s3.us-east-1.amazonaws.com",
            bytes_per_day=3200000000000,
        ),
        b(
            20,
            "peer.escalation",
            "notice",
            "planner",
            "Cross-region egress bill up $4.1k this month: training in eu-central-1 streams the "
            "dataset from a us-east-1 bucket every epoch. Proposing an in-region replica.",
            cost_usd=4100,
            cause="cross-region dataset reads",
            fix="replicate dataset to eu-central-1",
        ),
    ),
    inc(
        "orbit-labs",
        44,
        "11:10",
        "model:query-encoder",
        b(
            0,
            "approval.denied",
            "warn",
            "deployer",
            "Production deploy of query-encoder v3 denied by the keeper: no approval from the "
            "model owner, and the deploy request skipped the shadow stage.",
            model="query-encoder",
            version="v3",
            env="production",
            reason="no model-owner approval; shadow stage skipped",
        ),
        b(
            3,
            "peer.conversation",
            "info",
            "deployer",
            "evaluator, can you approve query-encoder v3 for shadow first?",
            state="open",
            conv=True,
        ),
    ),
    inc(
        "orbit-labs",
        46,
        "09:30",
        "table:feature_logs",
        b(
            0,
            "peer.escalation",
            "error",
            "data-eng",
            "Raw email addresses found in feature_logs (column context_json, ~120k rows since "
            "Nov 2): the new onboarding topics feature logs the whole signup payload. Access to "
            "the table is frozen.",
            refs={"priority": "permanent"},
            table="feature_logs",
            column="context_json",
            rows=120000,
            pii="email",
            fix="drop payload logging; purge rows; add PII scanner to CI",
        ),
    ),
    inc(
        "orbit-labs",
        49,
        "14:00",
        "model:feed-ranker",
        b(
            0,
            "eval.regression_detected",
            "warn",
            "evaluator",
            "feed-ranker v8 candidate is miscalibrated: expected calibration error 0.047 vs "
            "0.021 in production, after the position-bias feature was dropped; NDCG is flat.",
            model="feed-ranker",
            version="v8-rc1",
            metric="ece",
            baseline=0.021,
            candidate=0.047,
            dropped_feature="position_bias",
        ),
        b(
            45,
            "tool.call",
            "info",
            "evaluator",
            "eval.compare feed-ranker v8-rc1 vs prod --slices all",
            tool="eval.compare",
            model="feed-ranker",
            version="v8-rc1",
        ),
    ),
    inc(
        "orbit-labs",
        51,
        "10:45",
        "job:build_user_features",
        b(
            0,
            "container.metrics",
            "warn",
            "data-eng",
            "spark executor memory 20.9 GB / 22 GB on build_user_features stage 14",
            job="build_user_features",
            stage=14,
            mem_gb=20.9,
            limit_gb=22,
        ),
        b(
            3,
            "peer.escalation",
            "warn",
            "data-eng",
            "build_user_features close to OOM again: the onboarding topics array explodes to "
            "180 rows per user before aggregation. Moving the aggregation before the explode.",
            job="build_user_features",
            error="executor memory at 95%",
            fix="aggregate before explode",
        ),
    ),
    inc(
        "orbit-labs",
        56,
        "16:30",
        "model:feed-ranker",
        b(
            0,
            "keeper.decision",
            "warn",
            "deployer",
            "Keeper allowed a production shadow deploy of feed-ranker v8-rc2 but capped "
            "traffic at 5% until the model owner approves full rollout.",
            model="feed-ranker",
            version="v8-rc2",
            env="production",
            decision="allow_capped",
            traffic_pct=5,
        ),
        b(
            240,
            "summary.generated",
            "info",
            "evaluator",
            "Shadow results for feed-ranker v8-rc2 after 4h: ECE back to 0.022 with position "
            "bias restored, NDCG@10 +1.2% vs production. Recommending full rollout.",
            model="feed-ranker",
            version="v8-rc2",
            ece=0.022,
            ndcg_delta_pct=1.2,
        ),
    ),
    inc(
        "orbit-labs",
        59,
        "11:00",
        None,
        b(
            0,
            "summary.generated",
            "info",
            "planner",
            "Two-month retro, ml + data: three ranking eval regressions, all after a feature "
            "was dropped; two memory incidents (Spark broadcast join, CUDA OOM); one PII leak in "
            "feature logs; keeper blocked two unapproved promotions and a table drop.",
            regressions=3,
            oom_incidents=2,
            keeper_denials=3,
        ),
    ),
)


# --------------------------------------------------------------------------------------
# Background chatter: templates with varied wording, filled from each workspace's vocab
# --------------------------------------------------------------------------------------

Chatter = tuple[str, str, Json]  # severity, summary, payload
Template = Callable[[random.Random, Workspace], Chatter]


def _output_chunk(rng: random.Random, ws: Workspace) -> Chatter:
    svc = rng.choice(ws.services)
    lines = [
        (
            "info",
            f"Step 4/9 : RUN pip install -r requirements.lock ({rng.randint(38, 160)} packages)",
            "docker build .",
        ),
        (
            "info",
            f"{rng.randint(120, 900)} passed, {rng.randint(0, 6)} skipped in "
            f"{rng.uniform(20, 300):.1f}s",
            "pytest -q",
        ),
        (
            "debug",
            f"Compiling {svc} ({rng.randint(40, 400)} files) ... done",
            f"make build SERVICE={svc}",
        ),
        (
            "info",
            f"deployment.apps/{svc} image updated; waiting for rollout "
            f"({rng.randint(1, 12)}/12 replicas ready)",
            f"kubectl rollout status deploy/{svc}",
        ),
        (
            "debug",
            f"Terraform plan: {rng.randint(0, 4)} to add, {rng.randint(0, 9)} to change, "
            "0 to destroy.",
            "terraform plan",
        ),
        ("info", f"ruff: All checks passed! ({rng.randint(80, 600)} files)", "ruff check ."),
        (
            "warn",
            f"WARNING: {svc} readiness probe slow ({rng.randint(900, 3000)} ms)",
            f"kubectl logs deploy/{svc} --tail=50",
        ),
        (
            "info",
            f"git push origin HEAD:refs/heads/feature/{rng.randint(100, 999)} -> new branch",
            "git push",
        ),
        (
            "debug",
            f"cache hit ratio {rng.uniform(0.7, 0.99):.2f} for key prefix '{svc}:'",
            "redis-cli info stats",
        ),
        (
            "info",
            f"Successfully tagged {ws.short}/{svc}:{rng.randint(1, 3)}.{rng.randint(0, 40)}."
            f"{rng.randint(0, 9)}",
            "docker build .",
        ),
    ]
    severity, text, command = rng.choice(lines)
    stream = "stderr" if severity == "warn" else "stdout"
    return severity, text, {"command": command, "stream": stream, "service": svc}


def _metrics(rng: random.Random, ws: Workspace) -> Chatter:
    svc = rng.choice(ws.services)
    cpu = rng.randint(40, 1900)
    mem = rng.randint(180, 1400)
    pod = f"{svc}-{rng.randrange(16**4):04x}"
    severity = "info" if mem < 1200 else "notice"
    phrasing = rng.choice(
        [
            f"{pod} cpu {cpu}m mem {mem}Mi",
            f"{svc}: {rng.randint(2, 12)} pods, avg cpu {cpu}m, avg rss {mem}Mi",
            f"node {rng.choice(ws.hosts)} load {rng.uniform(0.3, 7.5):.2f}, {svc} mem {mem}Mi",
            f"{pod} restarts=0 mem_working_set={mem}Mi throttled={rng.randint(0, 12)}%",
        ]
    )
    return (
        severity,
        phrasing,
        {
            "service": svc,
            "pod": pod,
            "cpu_millicores": cpu,
            "mem_mib": mem,
            "host": rng.choice(ws.hosts),
        },
    )


def _egress(rng: random.Random, ws: Workspace) -> Chatter:
    host = rng.choice(ws.external_hosts)
    status = rng.choice([200, 200, 200, 200, 204, 304, 404, 502])
    kb = rng.randint(1, 90000)
    severity = "info" if status < 500 else "warn"
    text = rng.choice(
        [
            f"GET https://{host}/ -> {status} ({kb} KB)",
            f"egress to {host}: {kb} KB in {rng.randint(1, 60)} requests",
            f"POST {host} status={status} bytes_out={kb * 1024}",
        ]
    )
    return severity, text, {"host": host, "status": status, "kb": kb}


def _dns(rng: random.Random, ws: Workspace) -> Chatter:
    name = rng.choice(ws.internal_names + ws.external_hosts)
    ms = rng.randint(1, 40)
    return (
        "debug",
        f"resolved {name} in {ms} ms ({rng.choice(['A', 'AAAA', 'CNAME'])})",
        {"qname": name, "rcode": "NOERROR", "latency_ms": ms},
    )


def _tool_call(rng: random.Random, ws: Workspace) -> Chatter:
    svc = rng.choice(ws.services)
    repo = rng.choice(ws.repos)
    pr = rng.randint(4700, 5200) if ws is ACME else rng.randint(560, 720)
    options: list[tuple[str, Json]] = [
        (
            f"Opened PR #{pr} in {repo}: bump base image to debian 12.{rng.randint(5, 8)}",
            {"tool": "github.pr_create", "repo": repo, "pr": pr},
        ),
        (
            f"Searched logs for {svc} errors in the last hour: {rng.randint(0, 40)} matches",
            {"tool": "logs.search", "service": svc},
        ),
        (
            f"Read runbook '{svc} restart' (v{rng.randint(2, 9)})",
            {"tool": "docs.read", "doc": f"runbooks/{svc}.md"},
        ),
        (
            f"Listed {rng.randint(3, 30)} open issues labelled '{svc}'",
            {"tool": "github.issues", "repo": repo},
        ),
        (
            f"Commented on PR #{pr}: nit, please add a test for the empty case",
            {"tool": "github.pr_review", "pr": pr, "verdict": "comment"},
        ),
        (
            f"Queried dashboard '{svc} golden signals' for the last 24h",
            {"tool": "grafana.query", "service": svc},
        ),
        (
            f"Ran SELECT count(*) on {rng.choice(ws.tables)}: "
            f"{rng.randint(10_000, 9_000_000)} rows",
            {"tool": "sql.query", "read_only": True},
        ),
        (
            f"Created ticket {ws.short.upper()}-{rng.randint(1000, 1999)}: tidy {svc} alerts",
            {"tool": "tracker.create"},
        ),
    ]
    text, payload = rng.choice(options)
    return "info", text, payload


def _conversation(rng: random.Random, ws: Workspace) -> Chatter:
    svc = rng.choice(ws.services)
    text, state = rng.choice(
        [
            (f"Anyone know why {svc} has a new env var in staging?", "open"),
            (f"It's the feature flag for the {svc} canary; safe to ignore.", "answered"),
            (f"Can you review my change to the {svc} alert thresholds?", "open"),
            ("Looks good to me, merged.", "resolved"),
            (f"Where do the {svc} dashboards live now?", "open"),
            ("Moved under 'Services / Golden signals' last sprint.", "answered"),
            (f"Pairing on {svc} flakiness after lunch?", "open"),
            ("Sure, 14:00 works.", "answered"),
            (f"Is {svc} still on the old base image?", "open"),
            ("No, upgraded yesterday.", "resolved"),
        ]
    )
    return "info", text, {"state": state, "topic": svc}


def _message(rng: random.Random, ws: Workspace) -> Chatter:
    svc = rng.choice(ws.services)
    text = rng.choice(
        [
            f"Starting work on the {svc} ticket now.",
            "Stand-up notes posted in the crew channel.",
            f"Heads up: {svc} staging will be down for 10 minutes.",
            "Back from lunch, picking up reviews.",
            f"Done with the {svc} dependency bumps for today.",
            "Reminder: retro on Thursday at 15:00 UTC.",
        ]
    )
    return "info", text, {"channel": "crew"}


def _keeper_routine(rng: random.Random, ws: Workspace) -> Chatter:
    svc = rng.choice(ws.services)
    env = rng.choice(["staging", "staging", "production"])
    version = f"{rng.randint(1, 4)}.{rng.randint(0, 45)}.{rng.randint(0, 9)}"
    decision = rng.choice(["allow", "allow", "allow", "allow_logged"])
    text = rng.choice(
        [
            f"Keeper approved {svc} {version} to {env}",
            f"Keeper: {decision} deploy of {svc} v{version} ({env}), checks green",
            f"Keeper allowed a read-only query against {env} for {svc}",
        ]
    )
    severity = "info" if decision == "allow" else "notice"
    return severity, text, {"service": svc, "version": version, "env": env, "decision": decision}


def _mission_routine(rng: random.Random, ws: Workspace) -> Chatter:
    svc = rng.choice(ws.services)
    to_state = rng.choice(["started", "in_progress", "in_review", "completed"])
    text = rng.choice(
        [
            f"Mission '{svc} upkeep' {to_state.replace('_', ' ')}",
            f"Mission status: {svc} dependency refresh -> {to_state}",
            f"Mission '{svc} alert tuning' is now {to_state.replace('_', ' ')}",
        ]
    )
    return (
        ("notice" if to_state == "completed" else "info"),
        text,
        {"mission": f"{svc}-upkeep", "to_state": to_state},
    )


def _ci_run(rng: random.Random, ws: Workspace) -> Chatter:
    repo = rng.choice(ws.repos)
    ok = rng.random() < 0.85
    minutes = rng.randint(3, 28)
    text = (
        f"CI passed on {repo}@{rng.randrange(16**7):07x} in {minutes} min"
        if ok
        else f"CI failed on {repo}: lint job, {rng.randint(1, 5)} errors"
    )
    return ("info" if ok else "notice"), text, {"repo": repo, "ok": ok, "minutes": minutes}


# Relative frequencies of chatter types: most of a journal is output and telemetry.
CHATTER_MIX: tuple[tuple[str, Template, int], ...] = (
    ("exec.output_chunk", _output_chunk, 28),
    ("container.metrics", _metrics, 17),
    ("network.egress", _egress, 8),
    ("network.dns", _dns, 4),
    ("tool.call", _tool_call, 15),
    ("peer.conversation", _conversation, 10),
    ("message", _message, 5),
    ("keeper.decision", _keeper_routine, 5),
    ("mission.status_change", _mission_routine, 4),
    ("ci.run", _ci_run, 4),
)

CHATTER_PER_WORKSPACE = 150


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def _chatter(rng: random.Random, ws: Workspace) -> list[Json]:
    events: list[Json] = []
    agents = sorted(ws.crews)
    types = [t for t, _, _ in CHATTER_MIX]
    weights = [w for _, _, w in CHATTER_MIX]
    templates = {t: fn for t, fn, _ in CHATTER_MIX}
    for n in range(CHATTER_PER_WORKSPACE):
        # The last chatter lands on the final day so the journal ends on 2026-11-20.
        day = DAYS - 1 if n == 0 else rng.randrange(DAYS)
        hour = rng.choice([*range(7, 20), *range(7, 20), *range(0, 24)])
        ts = FIRST_DAY + timedelta(
            days=day, hours=hour, minutes=rng.randrange(60), seconds=rng.randrange(60)
        )
        type_ = rng.choices(types, weights)[0]
        severity, summary, payload = templates[type_](rng, ws)
        agent = rng.choice(agents)
        refs: Json = {}
        # An operator tagging build output stays refused: the never-list beats the override.
        if type_ == "exec.output_chunk" and rng.random() < 0.04:
            refs = {"episodic": True}
        event: Json = {
            "agent_id": agent,
            "ts": ts,
            "type": type_,
            "severity": severity,
            "summary": summary,
            "payload": payload,
            "refs": refs,
        }
        service = payload.get("service")
        if isinstance(service, str):
            event["resource_id"] = f"svc:{service}"
        if type_ in ("peer.conversation", "message"):
            event["conversation_id"] = f"conv-{ws.short}-{rng.randint(1, 24):03d}"
        if type_ == "message":
            # Agents talking in a channel: each speaks as an assistant, by name.
            event["payload"] = {**payload, "role": "assistant", "name": agent}
        events.append(event)
    return events


def _incident_events(ws: Workspace, incidents: tuple[Incident, ...]) -> list[Json]:
    events: list[Json] = []
    for number, incident in enumerate(incidents, start=1):
        hh, mm = (int(part) for part in incident.at.split(":"))
        start = FIRST_DAY + timedelta(days=incident.day, hours=hh, minutes=mm)
        for beat in incident.beats:
            event: Json = {
                "agent_id": beat.agent,
                "ts": start + timedelta(minutes=beat.minutes),
                "type": beat.type,
                "severity": beat.severity,
                "summary": beat.summary,
                "payload": beat.payload,
                "refs": beat.refs,
            }
            resource = beat.resource or incident.resource
            if resource is not None:
                event["resource_id"] = resource
            if beat.conversation or beat.type in ("peer.conversation", "message"):
                event["conversation_id"] = f"conv-{ws.short}-inc{number:02d}"
            if beat.type == "message":
                event["payload"] = {**beat.payload, "role": "assistant", "name": beat.agent}
            events.append(event)
    return events


def build() -> list[Json]:
    rng = random.Random(SEED)
    out: list[Json] = []
    for ws, incidents in ((ACME, ACME_INCIDENTS), (ORBIT, ORBIT_INCIDENTS)):
        events = _incident_events(ws, incidents) + _chatter(rng, ws)
        events.sort(key=lambda e: e["ts"])
        for number, event in enumerate(events, start=1):
            if event["ts"] >= FIRST_DAY + timedelta(days=DAYS):
                raise ValueError(f"{ws.id} event after the journal's last day: {event}")
            record: Json = {
                "id": f"evt-{ws.short}-{number:04d}",
                "workspace": ws.id,
                "crew": ws.crews[event["agent_id"]],
                "agent": event["agent_id"],
            }
            for key in ("resource_id", "conversation_id"):
                if key in event:
                    record[key.removesuffix("_id")] = event[key]
            record.update(
                ts=_iso(event["ts"]),
                type=event["type"],
                severity=event["severity"],
                summary=event["summary"],
                payload=event["payload"],
            )
            if event["refs"]:
                record["refs"] = event["refs"]
            out.append(record)
    # Interleave the workspaces as one journal would record them.
    out.sort(key=lambda r: (r["ts"], r["id"]))
    return out


def main() -> None:
    records = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8", newline="\n") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {len(records)} events to {OUT}")


if __name__ == "__main__":
    main()
