"""What must hold for any input to the four fuzzed targets (the fuzzing suites).

Shared by the hypothesis properties of tests/test_fuzz.py (CI size) and the atheris
harnesses of tests/stress/fuzz/ (a million inputs each), so both check the same thing.
Each ``check_*`` raises AssertionError when a promise is broken; any exception other than
the target's documented one escapes as is, which is the other kind of finding.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime

from episodic.errors import InvalidInput
from episodic.model import Hit, Memory
from episodic.portable import parse_file, render_file
from episodic.recall.render import (
    BLOCK_CLOSE,
    BLOCK_OPEN,
    MEMORY_CLOSE,
    MEMORY_DESCRIPTION,
    MEMORY_OPEN,
    MIN_FIRST_LINE,
    PREAMBLE,
    fit_block,
    render_block,
    render_memory_block,
)
from episodic.scoring.fts import (
    MAX_FTS_TERMS,
    MIN_TOKEN_CHARS,
    fts_or,
    fts_query,
    fts_terms,
    fts_tokens,
    fts_whole_word,
    plan_terms,
)
from episodic.service import Episodic
from episodic.store.migrations import FTS_TOKENIZER
from episodic.write.events import LineError, read_jsonl

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


# -- FTS query escaper -------------------------------------------------------------------
def fts_connection() -> sqlite3.Connection:
    """In-memory FTS5 tables with the store's tokenizer and columns: ``probe`` holds the
    checked text itself, ``chars`` the characters ``_tokenizers_agree`` asks about."""
    conn = sqlite3.connect(":memory:")
    for table in ("probe", "chars"):
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5 (content, keys, payload, "
            f"tokenize = '{FTS_TOKENIZER}')"
        )
    conn.execute("CREATE VIRTUAL TABLE chars_vocab USING fts5vocab(chars, 'instance')")
    return conn


# Per character: whether FTS5 and ``fts_tokens`` read it alike, asked of FTS5 itself.
_AGREES: dict[str, bool] = {}


def _tokenizers_agree(text: str, conn: sqlite3.Connection) -> bool:
    """Whether FTS5 reads every character of ``text`` as ``fts_tokens`` does: inside a
    token or between tokens alike, and the same after Python's lowercasing. SQLite's
    tables date from Unicode 6.1 (unassigned code points stay inside tokens, newer case
    pairs such as Cherokee's are not folded); Python's are newer. Where they differ, a
    query may miss text holding such a character."""
    for ch in set(text):
        if "\ud800" <= ch <= "\udfff":
            continue
        if ch not in _AGREES:
            conn.executemany(
                "INSERT INTO chars (rowid, content, keys, payload) VALUES (?, ?, '', '')",
                [(1, f"ab{ch}cd"), (2, f"ab{ch.lower()}cd")],
            )
            rows = conn.execute("SELECT doc, term FROM chars_vocab ORDER BY doc, offset").fetchall()
            conn.execute("DELETE FROM chars")
            typed = [term for doc, term in rows if doc == 1]
            lowered = [term for doc, term in rows if doc == 2]
            python_one = len(fts_tokens(f"ab{ch}cd")) == 1
            _AGREES[ch] = typed == lowered and (len(typed) == 1) == python_one
        if not _AGREES[ch]:
            return False
    return True


def check_fts(text: str, conn: sqlite3.Connection) -> None:
    """Every MATCH expression the escaper makes from ``text`` is valid FTS5, and (where
    both tokenizers read its characters alike) finds a document holding ``text`` itself:
    the words a user typed find where they were written."""
    tokens = fts_tokens(text)
    agree = _tokenizers_agree(text, conn)
    assert len(tokens) == len(set(tokens)), tokens
    assert all(len(t) >= MIN_TOKEN_CHARS for t in tokens), tokens
    # Lone surrogates cannot be stored; they separate tokens, so a space stands in.
    doc = "".join(" " if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    conn.execute("INSERT INTO probe (rowid, content, keys, payload) VALUES (1, ?, '', '')", (doc,))
    try:
        for drop in (False, True):
            terms = fts_terms(text, drop_stopwords=drop)
            assert len(terms) <= MAX_FTS_TERMS
            query = fts_query(text, drop_stopwords=drop)
            assert (query is None) == (not tokens), (query, tokens)
            if query is None:
                continue
            whole = fts_or([fts_whole_word(t) for t in terms])
            assert whole is not None
            for expr in (query, whole):
                expr.encode("utf-8")  # bindable: no lone surrogate survives
                conn.execute("SELECT rowid FROM probe WHERE probe MATCH ?", (expr,)).fetchall()
            # A term of combining marks alone is nothing to FTS5 once diacritics go.
            sound = agree and any(
                unicodedata.category(ch)[0] != "M" for term in terms for ch in term.strip('"*')
            )
            found = conn.execute("SELECT rowid FROM probe WHERE probe MATCH ?", (query,)).fetchall()
            assert found == [(1,)] or not sound, f"{query!r} does not find the text it came from"
    finally:
        conn.execute("DELETE FROM probe")


def check_plan(counts: Sequence[int], total: int, budget: int, share: float) -> None:
    """``plan_terms`` sorts every term into exactly one of rare/common/dropped, never
    drops the rarest term that matches anything, and keeps everything rare within
    budget."""
    plan = plan_terms(counts, total_rows=total, budget=budget, max_share=share)
    everything = sorted(plan.rare + plan.common + plan.dropped)
    assert everything == list(range(len(counts))), plan
    for part in (plan.rare, plan.common, plan.dropped):
        assert list(part) == sorted(part), plan
    if sum(counts) <= budget:
        assert plan.rare == tuple(range(len(counts))), plan
    matching = [i for i, n in enumerate(counts) if n > 0]
    if matching:
        anchor = min(matching, key=lambda i: (counts[i], i))
        assert anchor not in plan.dropped, plan


# -- JSON-lines ingester -----------------------------------------------------------------
_GENERATED_ID = re.compile("evt_[0-9a-f]{32}")


def check_jsonl(lines: Sequence[bytes], mem: Episodic) -> None:
    """Each non-blank line gives one event or one error naming the field; ingesting
    the lines stores every good one whatever the bad ones around it hold."""
    parsed = list(read_jsonl(lines, settings=mem.settings, now=NOW))
    numbers = [n for n, _ in parsed]
    assert numbers == sorted(set(numbers)), numbers
    blank = {n for n, raw in enumerate(lines, start=1) if not raw.strip()}
    assert not blank & set(numbers), (blank, numbers)
    for number, item in parsed:
        if isinstance(item, LineError):
            assert item.line == number and item.field and item.message, item
    report = mem.ingest_lines(lines)
    assert report.received == len(parsed), (report, parsed)
    bad = {n for n, item in parsed if isinstance(item, LineError)}
    # The store may refuse a good line too: its id is another workspace's.
    refused = {e.line for e in report.errors if e.line not in bad}
    assert all(e.field == "id" for e in report.errors if e.line in refused), report
    assert sorted(e.line for e in report.errors) == sorted(bad | refused), report
    kept = [event for n, event in parsed if not isinstance(event, LineError) and n not in refused]
    assert report.stored + report.duplicates == len(kept), (report, kept)
    by_workspace: dict[str, set[str]] = {}
    for event in kept:
        if _GENERATED_ID.fullmatch(event.id):
            continue  # the line named no id: ingest_lines made up another one
        by_workspace.setdefault(event.workspace, set()).add(event.id)
    for workspace, ids in by_workspace.items():
        stored = {e.id for e in mem.store.get_events(workspace, sorted(ids))}
        assert stored == ids, (workspace, ids - stored)


# -- markdown / frontmatter importer -------------------------------------------------------
def check_markdown(text: str, mem: Episodic | None = None) -> None:
    """A file gives a memory or ``InvalidInput`` naming the field; a memory it gives
    survives export and re-import unchanged, and the store takes it (or refuses it with
    ``InvalidInput``)."""
    try:
        memory = parse_file(text)
    except InvalidInput as exc:
        assert exc.field and exc.message, exc
        return
    again = parse_file(render_file(memory))
    assert again == memory, (memory, again)
    if mem is not None:
        try:
            mem.store.restore(memory)
        except InvalidInput as exc:
            assert exc.field and exc.message, exc


# -- render escaper ----------------------------------------------------------------------
def hit(content: str, kind: str, age: float, score: float, n: int) -> Hit:
    memory = Memory(id=f"m{n}", workspace="ws", ts=NOW, type=kind, content=content)
    return Hit(memory=memory, score=score, age_seconds=age)


def check_render(hits: Sequence[Hit], max_chars: int, standing: Sequence[Hit] = ()) -> None:
    """Whatever recalled text holds, each block keeps its wrapper whole: one opening and
    one closing tag, framing one line per entry, no tag or line break of the text's own,
    and no more characters than asked for, unless the budget cannot hold the frame and
    one cut memory: then the first memory alone, cut to ``MIN_FIRST_LINE``."""
    block = render_block(hits, max_chars)
    _check_frame(block, [BLOCK_OPEN, PREAMBLE], [BLOCK_CLOSE], max_chars)
    # One chatty type capped, standing memories under their own budget on top.
    caps = {h.memory.type: max_chars // 3 for h in hits[:1]}
    block, _ = fit_block(
        hits, max_chars, type_caps=caps, standing=standing, standing_chars=max_chars // 2
    )
    _check_frame(block, [BLOCK_OPEN, PREAMBLE], [BLOCK_CLOSE], max_chars, max_chars // 2)
    block = render_memory_block(hits, max_chars)
    head = [MEMORY_OPEN, MEMORY_DESCRIPTION, "<value>"]
    _check_frame(block, head, ["</value>", MEMORY_CLOSE], max_chars)


# The least room a cut memory needs in the block (below it, not even a cut one fits).
_CUT_ROOM = 42


def _check_frame(
    block: str, head: list[str], tail: list[str], max_chars: int, standing_chars: int = 0
) -> None:
    if not block:
        return
    frame = len("\n".join([*head, *tail]))
    if len(block) > max_chars + standing_chars:
        # Past the budget only when it cannot hold the frame and one cut memory: the
        # frame (and standing memories, within their own budget) and the first alone.
        assert max_chars < frame + _CUT_ROOM, (len(block), max_chars, frame)
        last = block.split("\n")[-1 - len(tail)]
        assert len(last) <= MIN_FIRST_LINE, (len(last), last)
        assert len(block) - len(last) - 1 <= frame + standing_chars, (len(block), frame)
    # Only "\n" breaks lines: no \r, \u2028, \x85 ... from the recalled text.
    lines = block.split("\n")
    assert block.splitlines() == lines, block
    assert lines[: len(head)] == head and lines[len(lines) - len(tail) :] == tail, block
    body = lines[len(head) : len(lines) - len(tail)]
    assert body, block
    for line in body:
        assert line.startswith("- "), line
        assert "<" not in line, line
    assert block.count("<") == sum(part.count("<") for part in [*head, *tail]), block
