"""FTS5 query escaping (seed 000): what the user types never becomes FTS5 syntax. Also the
pure parts of the budgeted sparse search: stopwords, term planning, FTS5's bm25 idf."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from episodic.scoring.fts import (
    BM25_K1,
    MAX_FTS_TERMS,
    TermPlan,
    bm25_idf,
    bm25_term_ceiling,
    fts_query,
    fts_terms,
    fts_tokens,
    fts_whole_word,
    plan_terms,
)
from episodic.scoring.stopwords import ENGLISH_STOPWORDS, without_stopwords
from episodic.store.migrations import migrate

DOCS = [
    "checkout service OOM after cache TTL change",
    "keeper denied production deploy without approval",
    'payload said "NEAR(foo bar)" AND -x col:val',
    "café au lait in Zürich",
    "数据库错误 in the 结算 service",
    "emoji 🚀 launch went fine",
    "ok go",
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """The real memories_fts table (same tokenizer as production) with a few rows."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    for i, text in enumerate(DOCS):
        conn.execute(
            "INSERT INTO memories (id, workspace_id, ts, type, severity, content, payload, "
            "base_importance, importance, created_at, updated_at) "
            "VALUES (?, 'w', '2026-01-01T00:00:00.000000Z', 't', 'info', ?, '{}', 0.5, 0.5, "
            "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')",
            (f"m{i}", text),
        )
    yield conn
    conn.close()


def matches(conn: sqlite3.Connection, text: str) -> list[str]:
    query = fts_query(text)
    if query is None:
        return []
    rows = conn.execute(
        "SELECT m.id FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid "
        "WHERE memories_fts MATCH ? ORDER BY m.seq",
        (query,),
    ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("OOM in checkout", '"oom"* OR "in" OR "checkout"*'),
        ("a b c", None),  # 1-char tokens are dropped
        ("ab", '"ab"'),  # 2 chars: exact
        ("abc", '"abc"*'),  # 3+ chars: prefix
        ("", None),
        ("   \t\n", None),
        ("!!! ??? ... ---", None),
        ('"', None),
        ('""""', None),
        ("*", None),
        ('say "hello" world', '"say"* OR "hello"* OR "world"*'),
        ("deploy*", '"deploy"*'),
        ("NEAR(deploy keeper)", '"near"* OR "deploy"* OR "keeper"*'),
        ("deploy AND keeper", '"deploy"* OR "and"* OR "keeper"*'),
        ("deploy NOT keeper OR x", '"deploy"* OR "not"* OR "keeper"* OR "or"'),
        ("-keeper", '"keeper"*'),
        ("content:keeper", '"content"* OR "keeper"*'),
        ("{content payload}: oom", '"content"* OR "payload"* OR "oom"*'),
        ("^keeper", '"keeper"*'),
        ("snake_case_name", '"snake"* OR "case"* OR "name"*'),  # underscore separates
        ("v1.2.3 build-42", '"v1" OR "build"* OR "42"'),
        ("Deploy DEPLOY deploy", '"deploy"*'),  # lowercased, each term once
        ("Zürich CAFÉ", '"zürich"* OR "café"*'),
        ("数据库错误", '"数据库错误"*'),
        ("🚀🚀 launch", '"launch"*'),
        ("нет данных", '"нет"* OR "данных"*'),
        ("नमस्ते", '"नमस्ते"*'),  # vowel signs stay inside the token
    ],
)
def test_fts_query_table(text: str, expected: str | None) -> None:
    assert fts_query(text) == expected


def test_inner_quotes_would_be_doubled() -> None:
    # Tokens never hold quotes today; the doubling guards any future change to the split.
    from episodic.scoring.fts import fts_term

    assert fts_term('a"b') == '"a""b"*'
    assert fts_term('"') == '""""'


def test_many_terms_are_capped() -> None:
    text = " ".join(f"word{i}" for i in range(MAX_FTS_TERMS + 50))
    query = fts_query(text)
    assert query is not None
    assert query.count(" OR ") == MAX_FTS_TERMS - 1
    assert fts_tokens(text)[MAX_FTS_TERMS - 1] == f"word{MAX_FTS_TERMS - 1}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("checkout OOM", ["m0"]),
        ("checkouts", ["m0"]),  # stemming: plural query finds the singular
        ("deny", ["m1"]),  # stemming: "denied" is stored
        ("check", ["m0"]),  # prefix
        ('NEAR("foo"', ["m2"]),
        ("col:val", ["m2"]),
        ("AND", ["m2"]),
        ("cafe zurich", ["m3"]),  # diacritics removed on both sides
        ("数据库", ["m4"]),
        ("🚀 launch", ["m5"]),
        ("ok", ["m6"]),
        ("o", []),
        ('"; DROP TABLE memories; --', []),
    ],
)
def test_queries_find_what_a_user_expects(
    fts: sqlite3.Connection, text: str, expected: list[str]
) -> None:
    assert matches(fts, text) == expected


INJECTIONS = [
    '"',
    '""',
    '"unterminated',
    "*",
    "**",
    "deploy*",
    "*deploy",
    "NEAR(",
    "NEAR(a b, 3)",
    "NEAR(deploy keeper, -1)",
    "AND",
    "OR OR OR",
    "NOT",
    "deploy AND",
    "AND deploy",
    "-",
    "-deploy",
    ":",
    "content:",
    "payload:deploy",
    "{content}: deploy",
    "- {content payload} : deploy",
    "^",
    "^deploy",
    "(",
    ")",
    "(deploy",
    "deploy)",
    "+",
    "a + b",
    "\\",
    "'",
    "'; DROP TABLE memories; --",
    "\x00",
    "deploy\x00keeper",
    "\ud800 lone surrogate",
    "🚀",
    "👩‍👩‍👧‍👦 family",
    "e\u0301\u0301\u0301",
    "\u200b\u200bzero width",
    "ǃ",
    "𝔡𝔢𝔭𝔩𝔬𝔶",
    "１２３ ｆｕｌｌ",
]


@pytest.mark.parametrize("text", INJECTIONS)
def test_injection_attempts_are_valid_match_expressions(fts: sqlite3.Connection, text: str) -> None:
    query = fts_query(text)
    if query is None:
        return
    assert "\x00" not in query
    # Would raise sqlite3.OperationalError ("fts5: syntax error ...") if not valid.
    fts.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (query,))


def test_syntax_in_user_text_does_not_act_as_syntax(fts: sqlite3.Connection) -> None:
    # Unescaped, "keeper NOT deploy" would exclude m1; escaped, its words are just words.
    assert matches(fts, "keeper NOT deploy") == ["m1"]
    # Unescaped, "payload:" would restrict the search to the (empty) payload column;
    # escaped, "payload" is a word (m2 says it) and "denied" another (m1).
    assert matches(fts, "payload:denied") == ["m1", "m2"]


# Text dense in FTS5 syntax, mixed with arbitrary characters from every plane.
_SYNTAX = st.sampled_from(
    [
        '"',
        "*",
        "(",
        ")",
        ":",
        "^",
        "-",
        "+",
        "{",
        "}",
        " NEAR",
        " AND ",
        " OR ",
        " NOT ",
        "content",
        "payload",
        "'",
        ",",
    ]
)
_ANY_TEXT = st.lists(st.one_of(_SYNTAX, st.text(max_size=8)), max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(_ANY_TEXT)
def test_any_text_gives_none_or_an_accepted_query(text: str) -> None:
    query = fts_query(text)
    if query is None:
        # Only text without two letters/digits in a row may come back empty.
        assert re.search(r"[^\W_]{2,}", text.lower()) is None
        return
    _shared_fts().execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (query,))


_CONN: list[sqlite3.Connection] = []


def _shared_fts() -> sqlite3.Connection:
    # Hypothesis calls the test body many times; build the schema once per session.
    if not _CONN:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        migrate(conn)
        conn.execute(
            "INSERT INTO memories (id, workspace_id, ts, type, severity, content, payload, "
            "base_importance, importance, created_at, updated_at) "
            "VALUES ('m', 'w', 't', 't', 'info', 'some text', '{}', 0.5, 0.5, 't', 't')"
        )
        _CONN.append(conn)
    return _CONN[0]


# -- stopwords -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "why did the checkout deploy fail in production",
            '"checkout"* OR "deploy"* OR "fail"* OR "production"*',
        ),
        ("OOM in checkout", '"oom"* OR "checkout"*'),
        ("THE Deploy", '"deploy"*'),  # matched after lowercasing
        ("don't deploy", '"deploy"*'),  # "don" is listed; "t" is too short anyway
        ("isn't it the cache?", '"cache"*'),
        ("checkout down", '"checkout"*'),
        ("数据库 in the service", '"数据库"* OR "service"*'),
        ("notification service", '"notification"* OR "service"*'),  # "not" is a prefix only
        ("theirs", '"theirs"*'),  # all stopwords: kept, so the query still says something
        ("who was it", '"who"* OR "was"* OR "it"'),
        ("in in IN", '"in"'),
        ("a", None),
        ("", None),
        ("!!!", None),
        ('the "NEAR(" of', '"near"*'),  # what remains is escaped as before
    ],
)
def test_stopwords_are_dropped_unless_nothing_else_is_left(text: str, expected: str | None) -> None:
    assert fts_query(text, drop_stopwords=True) == expected


def test_stopwords_stay_unless_asked() -> None:
    assert fts_query("why did the checkout fail") == (
        '"why"* OR "did"* OR "the"* OR "checkout"* OR "fail"*'
    )


def test_the_stopword_list_is_nltks() -> None:
    assert len(ENGLISH_STOPWORDS) == 179
    assert {"the", "in", "was", "don't", "mightn", "y", "ourselves"} <= ENGLISH_STOPWORDS
    assert not {"deploy", "checkout", "service", "fail"} & ENGLISH_STOPWORDS
    assert without_stopwords(["the", "cache", "of", "oom"]) == ["cache", "oom"]
    assert without_stopwords(["the", "of"]) == ["the", "of"]
    assert without_stopwords([]) == []


def test_whole_word_form_of_a_term() -> None:
    assert [fts_whole_word(t) for t in fts_terms("deploy ok café")] == [
        '"deploy"',
        '"ok"',
        '"café"',
    ]


# -- term planning ---------------------------------------------------------------------
N = 100_000


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # Everything fits the budget: nothing to save, all terms scored everywhere.
        ([300, 500, 0], TermPlan(rare=(0, 1, 2))),
        ([1000], TermPlan(rare=(0,))),
        # The rarest terms while they fit; then common; over 20% of the rows: dropped.
        ([40_000, 12, 900, 0, 9_000], TermPlan(rare=(1, 2, 3), common=(4,), dropped=(0,))),
        ([600, 600], TermPlan(rare=(0,), common=(1,))),  # the user's order breaks ties
        ([5_000, 3_000, 4_000], TermPlan(rare=(), common=(0, 1, 2))),
        # Once a term is common, rarer-than-it terms do not come back as rare.
        ([100, 950, 80], TermPlan(rare=(0, 2), common=(1,))),
        # Every term common: the rarest one that matches anything is kept.
        ([60_000, 90_000], TermPlan(rare=(), common=(0,), dropped=(1,))),
        ([90_000, 0, 60_000], TermPlan(rare=(1,), common=(2,), dropped=(0,))),
        # Nothing matches anything: all rare, all free.
        ([0, 0], TermPlan(rare=(0, 1))),
    ],
)
def test_plan_terms(counts: list[int], expected: TermPlan) -> None:
    assert plan_terms(counts, total_rows=N, budget=1000, max_share=0.2) == expected


def test_plan_terms_share_is_of_the_whole_table() -> None:
    # The same 3000 matches are common in 100k rows and dropped in 10k.
    assert plan_terms([3000, 10], total_rows=N, budget=1000, max_share=0.2).dropped == ()
    assert plan_terms([3000, 10], total_rows=10_000, budget=1000, max_share=0.2).dropped == (0,)


# -- bm25 as FTS5 computes it ------------------------------------------------------------
@pytest.mark.parametrize("matching", [1, 3, 10, 25])
def test_bm25_idf_is_fts5s(matching: int) -> None:
    """With every document two tokens long and the term once in each match, FTS5's bm25
    reduces to the idf (the term-frequency factor is (k1 + 1) / (k1 + 1))."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    total = 40
    for i in range(total):
        conn.execute(
            "INSERT INTO memories (id, workspace_id, ts, type, severity, content, payload, "
            "base_importance, importance, created_at, updated_at) "
            "VALUES (?, 'w', 't', 't', 'info', ?, '{}', 0.5, 0.5, 't', 't')",
            (f"m{i}", "zq filler" if i < matching else "other filler"),
        )
    (score,) = conn.execute(
        "SELECT bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH '\"zq\"' LIMIT 1"
    ).fetchone()
    conn.close()
    assert -score == pytest.approx(bm25_idf(matching, total), rel=1e-9)
    assert bm25_term_ceiling(matching, total) == pytest.approx(-score * (BM25_K1 + 1))


def test_bm25_idf_has_fts5s_floor() -> None:
    assert bm25_idf(60, 100) == 1e-6
    # Counts above the rows (estimates, or taken seconds apart): found everywhere.
    assert bm25_idf(1, 0) == 1e-6
    assert bm25_idf(150, 100) == 1e-6
    assert bm25_idf(0, 100) == pytest.approx(5.3033, abs=1e-4)  # ln(100.5 / 0.5)
