"""Supersession survives markdown, on both backends: an export keeps superseded memories
with their validity and the newer memory's ``supersedes`` links (who decided, why, when);
importing it into an empty database rebuilds the same store, recall answers the same
(default, ``as_of``), and a second export is byte for byte the first. An import does not
decide again what the export already decided. Exports from before supersession still
import, and a bad validity value is refused naming its field."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from episodic import Episodic, Settings
from episodic.errors import InvalidInput
from episodic.model import Memory, MemoryStatus
from episodic.portable import parse_document, parse_file, render_file
from supersession_support import T0, WS, Clock

OLD = "Always pay my subscriptions with card A."
NEW = "Card A expired. From now on pay my subscriptions with card B."
QUESTION = "which card pays my subscriptions"


def open_mem(url: str, clock: Clock, supersession: str = "auto") -> Episodic:
    return Episodic.open(
        url, embedder=None, settings=Settings(supersession=supersession), clock=clock
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def source(db_url: str, clock: Clock) -> Iterator[Episodic]:
    """Card A replaced by card B on write (the offline rule); the office address replaced
    by name, with a reason; a note that became true before it was written."""
    mem = open_mem(db_url, clock)
    mem.remember(OLD, workspace=WS, agent="billing", id="card-a")
    mem.remember("The office is at 5 Elm Street.", workspace=WS, id="office-old")
    clock.now = T0 + timedelta(days=21)
    mem.remember(NEW, workspace=WS, agent="billing", id="card-b")
    clock.now = T0 + timedelta(days=30)
    mem.remember("We moved: the office is at 9 Oak Road.", workspace=WS, id="office-new")
    mem.supersede("office-old", "office-new", workspace=WS, reason="the team moved")
    late = Memory(
        id="late-note",
        workspace=WS,
        ts=T0 + timedelta(days=30),
        type="note",
        content="The quarterly review moved to Fridays.",
        valid_from=T0 + timedelta(days=25),
    )
    mem.store.append([], [late])
    yield mem
    mem.close()


def recalled(mem: Episodic, **options: object) -> list[str]:
    return [h.id for h in mem.recall(QUESTION, workspace=WS, mark=False, **options).hits]


def files(directory: Path) -> dict[Path, bytes]:
    return {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def test_export_import_export_keeps_supersession_and_recall(
    source: Episodic, tmp_path: Path, clock: Clock, new_db_url: Callable[[], str]
) -> None:
    out = tmp_path / "export"
    report = source.export_markdown(out)
    assert report.written == 5  # the superseded memories are exported too

    old = parse_file((out / WS / "agents" / "billing" / "card-a.md").read_text("utf-8"))
    assert old.status is MemoryStatus.SUPERSEDED and old.superseded_by == "card-b"
    assert old.valid_to == T0 + timedelta(days=21)
    _, [link] = parse_document((out / WS / "office-new.md").read_text("utf-8"))
    assert (link.old_id, link.decided_by) == ("office-old", "explicit")
    assert link.reason == "the team moved"
    plain = (out / WS / "agents" / "billing" / "card-b.md").read_text("utf-8")
    assert "supersedes:\n- id: card-a\n  decided_by: offline:" in plain
    assert "valid_from" not in plain and "valid_to" not in plain and "superseded_by" not in plain
    assert "valid_from: '2026-03-27T09:00:00+00:00'" in (out / WS / "late-note.md").read_text()

    target = open_mem(new_db_url(), clock)
    result = target.import_markdown(out)
    assert result.errors == [] and result.inserted == 5
    ids = ["card-a", "card-b", "office-old", "office-new", "late-note"]
    for memory_id in ids:
        assert target.store.get_memory(WS, memory_id) == source.store.get_memory(WS, memory_id)
    assert target.store.supersessions(WS, ids) == source.store.supersessions(WS, ids)
    # Recall answers as it did: card B now, card A as memory stood two weeks in.
    assert recalled(target) == recalled(source) == ["card-b"]
    assert recalled(target, as_of=T0 + timedelta(days=14)) == ["card-a"]
    assert set(recalled(target, include_superseded=True)) == {"card-a", "card-b"}

    again = tmp_path / "again"
    target.export_markdown(again)
    assert files(again) == files(out)
    # Forgetting the newer memory in the rebuilt store gives the old one back, as the
    # restored link says it replaced it.
    target.forget(workspace=WS, memory="office-new")
    assert target.store.get_memory(WS, "office-old").status is MemoryStatus.ACTIVE
    target.close()


def test_an_import_does_not_decide_again_what_the_export_decided(
    db_url: str, tmp_path: Path, clock: Clock, new_db_url: Callable[[], str]
) -> None:
    # Written with detection off: both cards stood side by side, and the files say so.
    with open_mem(db_url, clock, supersession="off") as mem:
        mem.remember(OLD, workspace=WS, agent="billing", id="card-a")
        clock.now = T0 + timedelta(days=21)
        mem.remember(NEW, workspace=WS, agent="billing", id="card-b")
        mem.export_markdown(tmp_path / "export")
    with open_mem(new_db_url(), clock) as target:
        assert target.import_markdown(tmp_path / "export").inserted == 2
        assert target.check_supersessions().checked == 0
        assert set(recalled(target)) == {"card-a", "card-b"}
        assert target.store.get_memory(WS, "card-a").status is MemoryStatus.ACTIVE


def test_a_link_to_a_memory_not_in_the_folder_is_reported_and_the_rest_import(
    db_url: str, tmp_path: Path, clock: Clock
) -> None:
    folder = tmp_path / "hand"
    (folder / WS).mkdir(parents=True)
    (folder / WS / "b.md").write_text(
        "---\nid: b\nworkspace: acme\nts: '2026-03-05T00:00:00Z'\n"
        "supersedes:\n- id: gone\n  decided_by: explicit\n---\nCard B now.\n",
        encoding="utf-8",
    )
    (folder / WS / "c.md").write_text(
        "---\nid: c\nworkspace: acme\n---\nAn old export's file.\n", encoding="utf-8"
    )
    with open_mem(db_url, clock) as mem:
        report = mem.import_markdown(folder)
        assert [(e.path, e.field) for e in report.errors] == [("acme/b.md", "supersedes")]
        assert "gone" in report.errors[0].message
        assert mem.store.get_memory(WS, "c").valid_to is None


def test_an_export_from_before_supersession_reads_with_open_validity() -> None:
    memory, links = parse_document(
        "---\nid: n1\nworkspace: acme\nstatus: active\nts: '2026-03-01T09:00:00Z'\n---\nA note.\n"
    )
    assert links == [] and memory.valid_to is None and memory.superseded_by is None
    assert memory.valid_since == memory.ts
    # And a memory nothing replaced writes no validity field.
    assert "valid" not in render_file(memory) and "supersed" not in render_file(memory)


HEAD = "---\nid: n1\nworkspace: acme\nts: '2026-03-01T09:00:00Z'\n"


@pytest.mark.parametrize(
    ("lines", "field", "words"),
    [
        ("valid_to: next week\n", "valid_to", "ISO 8601"),
        ("valid_from: [1]\n", "valid_from", "ISO 8601"),
        ("status: superseded\n", "superseded_by", "required"),
        ("superseded_by: n2\n", "superseded_by", "only a superseded"),
        ("status: superseded\nsuperseded_by: n1\n", "superseded_by", "itself"),
        ("status: obsolete\n", "status", "superseded"),
        ("supersedes: n0\n", "supersedes", "list"),
        ("supersedes:\n- n0\n", "supersedes[0]", "decided_by"),
        ("supersedes:\n- id: n0\n", "supersedes[0].decided_by", "required"),
        ("supersedes:\n- decided_by: explicit\n", "supersedes[0].id", "required"),
        ("supersedes:\n- id: n1\n  decided_by: explicit\n", "supersedes[0].id", "itself"),
        (
            "supersedes:\n- id: n0\n  decided_by: explicit\n  decided_at: soon\n",
            "supersedes[0].decided_at",
            "ISO 8601",
        ),
        ("supersedes:\n- id: n0\n  decided_by: x\n  why: y\n", "supersedes[0].why", "unknown"),
    ],
)
def test_bad_validity_values_are_refused_naming_the_field(
    lines: str, field: str, words: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_document(HEAD + lines + "---\nA note.\n")
    assert caught.value.field == field and words in caught.value.message


TEAPARTY = Path(__file__).parent / "fixtures" / "teaparty"
RULE = "0b6f3c2e-8d1a-4c5e-9f7a-2e4d6b8a1c01"  # global, created 2026-01-05
LATER_RULE = "0b6f3c2e-8d1a-4c5e-9f7a-2e4d6b8a1c02"  # global, created 2026-02-20


def test_the_teaparty_tree_keeps_supersession_too(
    db_url: str, tmp_path: Path, clock: Clock, new_db_url: Callable[[], str]
) -> None:
    with open_mem(db_url, clock) as mem:
        assert mem.import_teaparty(TEAPARTY, workspace=WS).errors == []
        mem.supersede(RULE, LATER_RULE, workspace=WS, reason="the team changed its rule")
        mem.export_teaparty(tmp_path / "out", workspace=WS)
        text = (tmp_path / "out" / "MEMORY.md").read_text("utf-8")
        assert "status: superseded\n" in text
        assert "valid_to: '2026-02-20T00:00:00+00:00'\n" in text
        assert f"superseded_by: {LATER_RULE}\n" in text
        assert f"supersedes:\n- id: {RULE}\n  decided_by: explicit\n" in text
        with open_mem(new_db_url(), clock) as fresh:
            assert fresh.import_teaparty(tmp_path / "out", workspace=WS).errors == []
            for memory_id in (RULE, LATER_RULE):
                back, before = (m.store.get_memory(WS, memory_id) for m in (fresh, mem))
                assert (back.status, back.valid_to, back.superseded_by) == (
                    before.status,
                    before.valid_to,
                    before.superseded_by,
                )
            assert fresh.store.supersessions(WS, [RULE]) == mem.store.supersessions(WS, [RULE])
            assert fresh.doctor(deep=True).ok
            fresh.export_teaparty(tmp_path / "again", workspace=WS)
    again = {p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*.md")}
    for rel in again:
        assert (tmp_path / "again" / rel).read_bytes() == (tmp_path / "out" / rel).read_bytes()


def test_a_memory_replaced_before_it_was_true_still_round_trips(
    db_url: str, tmp_path: Path, clock: Clock, new_db_url: Callable[[], str]
) -> None:
    # The service refuses it, but the store can hold valid_to < ts (a link written by
    # an older version, or by hand): its export must import all the same.
    with open_mem(db_url, clock, supersession="off") as mem:
        clock.now = T0 + timedelta(days=10)
        mem.remember(OLD, workspace=WS, id="card-a")
        clock.now = T0
        mem.remember(NEW, workspace=WS, id="card-b")
        mem.store.supersede(
            WS, "card-a", "card-b", decided_by="explicit", reason="by hand", at=clock.now
        )
        mem.export_markdown(tmp_path / "out")
        before = mem.store.get_memory(WS, "card-a")
    with open_mem(new_db_url(), clock) as target:
        assert target.import_markdown(tmp_path / "out").errors == []
        assert target.store.get_memory(WS, "card-a") == before


def test_remember_refuses_to_replace_a_newer_memory(db_url: str, clock: Clock) -> None:
    with open_mem(db_url, clock, supersession="off") as mem:
        clock.now = T0 + timedelta(days=10)
        mem.remember(OLD, workspace=WS, id="card-a")
        clock.now = T0
        with pytest.raises(InvalidInput) as caught:
            mem.remember(NEW, workspace=WS, id="card-b", replaces="card-a")
        assert caught.value.field == "replaces"


def test_a_hand_edited_reason_updates_the_link(source: Episodic, tmp_path: Path) -> None:
    out = tmp_path / "export"
    source.export_markdown(out)
    path = out / WS / "office-new.md"
    path.write_text(
        path.read_text("utf-8").replace("the team moved", "we moved to a bigger office"), "utf-8"
    )
    report = source.import_markdown(out)
    assert report.errors == [] and report.updated == 0  # the memory itself is as it was
    [link] = source.store.supersessions(WS, ["office-old"])
    assert (link.new_id, link.reason) == ("office-new", "we moved to a bigger office")


def test_a_mirror_import_without_the_replacing_file_gives_the_old_memory_back(
    source: Episodic, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    source.export_markdown(out)
    (out / WS / "office-new.md").unlink()
    report = source.import_markdown(out, mirror=True)
    assert report.errors == [] and report.removed == 1
    old = source.store.get_memory(WS, "office-old")
    assert (old.status, old.valid_to, old.superseded_by) == (MemoryStatus.ACTIVE, None, None)
    assert source.store.supersessions(WS, ["office-old"]) == []
