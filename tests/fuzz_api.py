"""schemathesis against a running ``episodic serve``-style server (the fuzzing suites).

``seed_server`` fills a database with two workspaces, keys of every role and a few
memories; ``fuzz_api`` loads the server's own ``/openapi.json`` and sends each operation
generated requests, valid ones and invalid ones, under the keys in turn. Every response
must be no 5xx, have a status code the spec declares for the operation and a body that
matches the spec's schema for that code. Failures are collected, not raised at the first,
so one run reports all it found. Shared by tests/test_fuzz.py and tests/stress.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup

from episodic import Episodic

CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
# Operations that remove data run last, so the others see a populated database.
DESTRUCTIVE = ("DELETE", "/forget", "/retire")


@dataclass
class ApiFigures:
    operations: int = 0
    calls: int = 0
    seconds_in_calls: float = 0.0
    server_errors: int = 0
    schema_mismatches: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def seed_server(mem: Episodic) -> tuple[list[str], list[str]]:
    """Keys (every role, two workspaces) and the ids of memories the keys can reach."""
    keys = [
        mem.create_key("acme", role="admin")[1],
        mem.create_key("acme", role="agent", agent="deployer")[1],
        mem.create_key("acme", role="lead", crew="ops")[1],
        mem.create_key("orbit", role="admin")[1],
    ]
    now = datetime.now(UTC)
    report = mem.ingest(
        [
            {
                "id": f"seed{n}",
                "workspace": ws,
                "agent": "deployer",
                "crew": "ops",
                "type": kind,
                "summary": text,
                "ts": (now - timedelta(days=n)).isoformat(),
                "refs": {"episodic": True},
            }
            for n, (ws, kind, text) in enumerate(
                [
                    ("acme", "peer.escalation", "checkout OOM after cache TTL change"),
                    ("acme", "approval.denied", "deploy denied by keeper: <b>no</b> tests"),
                    ("acme", "tool.call", "flaky test retried \u202e twice"),
                    ("orbit", "note", "orbit sandbox ran out of disk"),
                ]
            )
        ]
    )
    assert not report.errors, report
    mem.index_once()
    return keys, ["seed0", "seed1", "seed2", "seed3"]


def fuzz_api(
    base: str,
    keys: list[str],
    memory_ids: list[str],
    *,
    examples: int,
    negative_examples: int,
) -> ApiFigures:
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    operations.sort(key=lambda op: any(mark in op.label for mark in DESTRUCTIVE))
    figures = ApiFigures(operations=len(operations))
    session = requests.Session()
    # A forged key beside the real ones: 401 must be declared and shaped like the rest.
    callers = [*keys, "ep_k_000000000000_forged"]
    for op in operations:
        for mode, count in (
            (GenerationMode.POSITIVE, examples),
            (GenerationMode.NEGATIVE, negative_examples),
        ):
            strategies = [op.as_strategy(generation_mode=mode)]
            if "{memory_id}" in op.path:
                strategies += [
                    op.as_strategy(generation_mode=mode, path_parameters={"memory_id": i})
                    for i in memory_ids
                ]
            _run(op.label, st.one_of(strategies), count, base, session, callers, figures)
    session.close()
    return figures


def _run(
    label: str,
    cases: st.SearchStrategy[schemathesis.Case],
    count: int,
    base: str,
    session: requests.Session,
    callers: list[str],
    figures: ApiFigures,
) -> None:
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        derandomize=False,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases, caller=st.sampled_from(callers))
    def one(case: schemathesis.Case, caller: str) -> None:
        # A key the case itself set (the negative mode forges headers) is kept.
        headers = {"Authorization": f"Bearer {caller}"}
        started = time.perf_counter()
        response = case.call(base_url=base, session=session, headers=headers)
        figures.seconds_in_calls += time.perf_counter() - started
        figures.calls += 1
        figures.statuses[response.status_code] = figures.statuses.get(response.status_code, 0) + 1
        if response.status_code >= 500:
            figures.server_errors += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as group:
            for failure in group.exceptions:
                if response.status_code < 500:
                    figures.schema_mismatches += 1
                figures.failures.append(f"{label}: {failure.title}: {failure.message[:400]}")
                figures.failures.append(f"    reproduce: {case.as_curl_command()[:1500]}")
        except AssertionError as exc:
            figures.failures.append(f"{label}: {exc}")

    # Unsatisfiable: nothing to make invalid (/healthz takes no input at all).
    with contextlib.suppress(Unsatisfiable):
        one()
