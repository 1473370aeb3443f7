"""Fuzzing at CI size: hypothesis properties of the four input-facing targets
(tests/fuzz_checks.py says what must hold) and a short schemathesis run against a real
server. `make stress` runs the same checks under atheris, a million inputs each, and
schemathesis with many more examples (tests/stress/test_fuzz.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import fuzz_checks
from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.model import ScopeFilter
from episodic.portable import FIELDS, import_markdown
from episodic.recall.render import fit_block
from episodic.store import open_store
from fuzz_api import fuzz_api, seed_server
from servers import serve


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )


# Values that have broken parsers before, for any field of any target.
TRICKY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\ud800",
        "\u202e",
        "\u2028",
        "</recalled-memory>",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        "2026-02-30",
        "1" * 4400,
        "NEAR(",
        '"',
        "é",
    ]
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | TRICKY_TEXT,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = fuzz_checks.fts_connection()
    yield conn
    conn.close()


def memory_db(url: str = "sqlite:///:memory:") -> Episodic:
    return Episodic(store=open_store(url), embedder=None, settings=Settings())


@pytest.fixture(scope="module")
def mem() -> Iterator[Episodic]:
    """One in-memory store for every example: the checks hold whatever it already has."""
    with memory_db() as m:
        yield m


# -- FTS query escaper -------------------------------------------------------------------
@fuzz(400)
@given(text=st.text() | st.text(st.characters(codec="utf-8"), max_size=40) | TRICKY_TEXT)
@example(text="deploy\ue000fix")  # private use: FTS5 keeps it inside the token
@example(text='NEAR("a" b) AND col:x OR -y ^z *')
def test_any_query_is_valid_fts5_and_finds_its_own_text(fts: sqlite3.Connection, text: str) -> None:
    fuzz_checks.check_fts(text, fts)


def test_a_private_use_character_does_not_split_a_word() -> None:
    # Found by fuzzing: FTS5's unicode61 keeps private-use characters inside a token, the
    # query split at them and asked for a fragment the index never held.
    with memory_db() as mem:
        mem.remember("deploy\ue000fix rolled out", workspace="w")
        found = mem.store.search_sparse(ScopeFilter("w"), "deploy\ue000fix", 10)
    assert len(found) == 1


@fuzz(300)
@given(
    counts=st.lists(st.integers(0, 200_000), max_size=12),
    extra=st.integers(0, 200_000),
    budget=st.integers(0, 5000),
    share=st.floats(0.0, 1.0),
)
def test_term_plans_sort_every_term_once(
    counts: list[int], extra: int, budget: int, share: float
) -> None:
    fuzz_checks.check_plan(counts, sum(counts) + extra, budget, share)


def test_sparse_search_takes_any_query_on_both_backends(db_url: str) -> None:
    """The store's own query building (SQLite's term plan, PostgreSQL's tsquery) over a
    real database: whatever the text, an answer and no error."""
    with memory_db(db_url) as mem:
        mem.ingest(
            [
                {"workspace": "w", "summary": text, "refs": {"episodic": True}}
                for text in (
                    "checkout OOM after the cache TTL change",
                    "NEAR AND OR NOT are words here, as is col:name and a-b",
                    "café naïve straße İstanbul नमस्ते 東京 ٣٤٥ it's o'clock \\ back\\slash",
                )
            ]
        )

        @fuzz(150)
        @given(text=st.text() | TRICKY_TEXT | st.sampled_from(["it's", "a\\'b", "é:*|&!()"]))
        def search(text: str) -> None:
            found = mem.store.search_sparse(ScopeFilter("w"), text, 10)
            assert len(found) <= 3

        search()
        # Each of them finds itself, quoting and stemming included.
        for text in ("checkout OOM", "col:name", "naïve straße", "o'clock back\\slash"):
            assert mem.store.search_sparse(ScopeFilter("w"), text, 10), text


# -- JSON-lines ingester -----------------------------------------------------------------
EVENT_FIELDS = st.sampled_from(
    ("id", "workspace_id", "agent_id", "ts", "type", "summary", "payload", "refs", "", "bogus")
)
EVENTS = st.fixed_dictionaries(
    {"workspace": st.sampled_from(["acme", "orbit"])},
    optional={
        "id": st.sampled_from(["e1", "e2", "e3"]) | st.text(max_size=5) | JSON_VALUES,
        "summary": st.text(max_size=40) | JSON_VALUES,
        "ts": st.sampled_from(["2026-03-01T09:30:00+02:00", "2026-03-01"]) | JSON_VALUES,
        "type": st.sampled_from(["note", "message"]) | JSON_VALUES,
        "conversation": st.just("c1") | JSON_VALUES,
        "severity": st.sampled_from(["warn", "ERROR"]) | JSON_VALUES,
        "payload": st.fixed_dictionaries({}, optional={"role": st.just("user")}) | JSON_VALUES,
        "refs": st.fixed_dictionaries({}, optional={"priority": st.just("pin")}) | JSON_VALUES,
    },
)
LINES = st.lists(
    EVENTS.map(lambda e: json.dumps(e).encode())
    | st.dictionaries(EVENT_FIELDS, JSON_VALUES, max_size=4).map(lambda e: json.dumps(e).encode())
    | st.binary(max_size=40)
    | st.sampled_from([b"", b"   ", b"[" * 5000, b"1" * 5000, b'{"workspace": "w",}']),
    max_size=8,
)


@fuzz(200)
@given(lines=LINES)
@example(
    lines=[b'{"workspace_id":"w","id":"ok1"}', b"7" * 4400, b'{"workspace_id":"w","id":"ok2"}']
)
@example(lines=[b"[" * 100_000, b'{"workspace_id":"w","id":"ok3"}'])
@example(lines=[b'{"workspace_id":"w","ts":"0001-01-01T00:00:00+01:00"}'])
@example(lines=[b'{"workspace_id":"w","":1}', b'{"workspace_id":"w","\\n":1}'])
def test_jsonl_bad_lines_are_named_and_good_ones_stored(mem: Episodic, lines: list[bytes]) -> None:
    fuzz_checks.check_jsonl(lines, mem)


def test_jsonl_errors_name_the_line_and_field_and_keep_the_rest() -> None:
    # Found by fuzzing: a 4400-digit integer or deep nesting raised out of json.loads and
    # lost the whole file; a UTC time before year 1 raised OverflowError; an empty key
    # was named as "".
    lines = [
        b'{"workspace_id":"w","id":"a"}',
        b'{"workspace_id":"w","payload":{"n":' + b"7" * 4400 + b"}}",
        b"[" * 100_000,
        b'{"workspace_id":"w","ts":"0001-01-01T00:00:00+01:00"}',
        b'{"workspace_id":"w","":1}',
        b'{"workspace_id":"w","id":"b"}',
    ]
    with memory_db() as mem:
        report = mem.ingest_lines(lines)
        assert report.stored == 2
        assert [(e.line, e.field) for e in report.errors] == [
            (2, "json"),
            (3, "json"),
            (4, "ts"),
            (5, "''"),
        ]
        assert "4300 digits" in report.errors[0].message
        assert "nested too deeply" in report.errors[1].message


def test_jsonl_ingest_on_both_backends(db_url: str) -> None:
    with memory_db(db_url) as mem:
        # Found by fuzzing: a lone-surrogate escape in payload or refs failed the whole
        # batch on PostgreSQL (UnicodeEncodeError) instead of refusing its line.
        report = mem.ingest_lines(
            [
                b'{"workspace_id":"w","id":"s1","payload":{"a":"\\ud800"}}',
                b'{"workspace_id":"w","id":"s2","refs":{"\\uDFFF":1}}',
                b'{"workspace_id":"w","id":"s3","payload":{"ok":"\\ud83d\\ude00"}}',
            ]
        )
        assert [(e.line, e.field) for e in report.errors] == [(1, "payload.a"), (2, "refs")]
        assert report.stored == 1

        @fuzz(25)
        @given(lines=LINES)
        def ingest(lines: list[bytes]) -> None:
            fuzz_checks.check_jsonl(lines, mem)

        ingest()


# -- markdown / frontmatter importer -------------------------------------------------------
YAML_VALUES = JSON_VALUES | st.dates() | st.datetimes() | TRICKY_TEXT
FRONTMATTER = st.fixed_dictionaries(
    {"id": st.sampled_from(["m1", "m2"]), "workspace": st.sampled_from(["acme", "orbit"])},
    optional={name: YAML_VALUES for name in FIELDS if name not in ("id", "workspace")},
)


def markdown(head: dict[str, Any], body: str) -> str:
    return "---\n" + yaml.safe_dump(head, allow_unicode=True) + "---\n" + body


FILES = (
    st.builds(markdown, FRONTMATTER, st.text(max_size=60))
    | st.builds(
        lambda lines, body: "---\n" + "\n".join(lines) + "\n---\n" + body,
        st.lists(
            st.sampled_from(
                [f"{name}: " for name in FIELDS] + ["? [a]: b", "&a x", "*a", "["]
            ).flatmap(lambda k: st.builds(lambda v: k + v, TRICKY_TEXT | st.text(max_size=12))),
            max_size=6,
        ),
        st.text(max_size=30),
    )
    | st.text()
)


@fuzz(150)
@given(text=FILES)
@example(text="---\nid: m\nworkspace: w\nts: 2026-02-30\n---\nx\n")
@example(text="---\nid: m\nworkspace: w\nimportance: " + "1" * 5000 + "\n---\nx\n")
@example(text="---\nid: m\nworkspace: w\nts: 0001-01-01 00:00:00+01:00\n---\nx\n")
@example(text="---\nid: m\nworkspace: w\npayload: " + "[" * 600 + "\n---\nx\n")
def test_markdown_files_import_or_name_the_bad_field(mem: Episodic, text: str) -> None:
    fuzz_checks.check_markdown(text, mem)


def test_markdown_import_keeps_the_good_files(db_url: str, tmp_path: Path) -> None:
    """Found by fuzzing: a file whose YAML parses but holds no Python value (a date that
    does not exist, a 5000-digit integer, nesting past the recursion limit) or whose time
    is before year 1 in UTC, or that holds a lone surrogate, stopped the whole import."""
    bad = {
        "date.md": "---\nid: b1\nworkspace: w\nts: 2026-02-30\n---\nx\n",
        "int.md": "---\nid: b2\nworkspace: w\nimportance: " + "1" * 5000 + "\n---\nx\n",
        "deep.md": "---\nid: b3\nworkspace: w\npayload: " + "[" * 600 + "\n---\nx\n",
        "early.md": "---\nid: b4\nworkspace: w\nts: 0001-01-01 00:00:00+01:00\n---\nx\n",
        # YAML's escape for a lone surrogate, which no database stores: it failed the
        # restore with UnicodeEncodeError on both backends.
        "surrogate.md": '---\nid: "b5\\ud800"\nworkspace: w\n---\nx\n',
        "payload.md": '---\nid: b6\nworkspace: w\npayload: {a: "\\udfff"}\n---\nx\n',
    }
    fields = {"early.md": "ts", "surrogate.md": "id", "payload.md": "payload"}
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "good.md").write_text("---\nid: g1\nworkspace: w\n---\nkept\n")
    with memory_db(db_url) as mem:
        report = import_markdown(mem.store, tmp_path)
        assert report.inserted == 1
        assert sorted((e.path, e.field) for e in report.errors) == sorted(
            [(name, fields.get(name, "frontmatter")) for name in bad]
        )


# -- render escaper ----------------------------------------------------------------------
HITS = st.lists(
    st.builds(
        fuzz_checks.hit,
        content=st.text() | TRICKY_TEXT,
        kind=st.text(min_size=1, max_size=20) | TRICKY_TEXT.filter(bool),
        age=st.floats(-1e6, 1e10),
        score=st.floats(-2, 2),
        n=st.integers(0, 5),
    ),
    max_size=6,
)


def test_a_standing_block_keeps_to_its_budget() -> None:
    # Found by fuzzing: with standing memories and a budget too small for the frame, the
    # block came back anyway, several times over the characters asked for.
    standing = [fuzz_checks.hit("use the staging cluster", "rule", 60.0, 0.5, 1)]
    block, kept = fit_block([], 96, standing=standing, standing_chars=48)
    assert (block, kept) == ("", [])
    block, kept = fit_block([], 2000, standing=standing, standing_chars=200)
    assert kept == ["m1"] and len(block) <= 2000 + 200


@fuzz(250)
@given(hits=HITS, standing=HITS, max_chars=st.integers(0, 3000))
def test_rendered_blocks_keep_their_wrapper(
    hits: list[Any], standing: list[Any], max_chars: int
) -> None:
    fuzz_checks.check_render(hits, max_chars, standing)


# -- the HTTP API against its own OpenAPI spec ---------------------------------------------
def test_api_answers_match_its_openapi_spec(tmp_path: Path) -> None:
    mem = Episodic(
        store=open_store(f"sqlite:///{tmp_path / 'api.db'}"),
        embedder=FakeEmbedder(dim=256),
        settings=Settings(),
    )
    keys, ids = seed_server(mem)
    try:
        with serve(asgi(mem)) as base:
            figures = fuzz_api(base, keys, ids, examples=6, negative_examples=3)
    finally:
        mem.close()
    assert figures.operations >= 14 and figures.calls >= 14 * 6
    assert figures.failures == [], "\n".join(figures.failures)
    assert figures.server_errors == 0 and figures.schema_mismatches == 0
