"""``episodic backup`` copies a live SQLite memory while writers go on, and every write
acknowledged before the copy began is in it; ``episodic restore`` checks a copy as
``doctor --deep`` does before putting it in place, and replaces a database only when
told to."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.store import open_store
from episodic.store.backup import backup, check_copy

WRITERS = 8
runner = CliRunner()


def contents(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT content FROM memories")}
    finally:
        conn.close()


def test_backups_under_eight_writers_hold_every_acknowledged_write(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/live.db"
    mem = Episodic(store=open_store(url), embedder=FakeEmbedder(dim=16), settings=Settings())
    acknowledged: list[tuple[float, str]] = []  # (when the write returned, its content)
    lock = threading.Lock()
    stop = threading.Event()
    failures: list[BaseException] = []

    def write(n: int) -> None:
        i = 0
        try:
            while not stop.is_set():
                text = f"writer {n} note {i}"
                mem.remember(text, workspace="acme")
                with lock:
                    acknowledged.append((time.monotonic(), text))
                i += 1
        except BaseException as exc:  # reported below: a writer must not die unseen
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    copies: list[tuple[float, Path]] = []
    try:
        deadline = time.monotonic() + 6
        n = 0
        while time.monotonic() < deadline:
            time.sleep(0.3)
            began = time.monotonic()
            dest = tmp_path / f"copy-{n}.db"
            backup(url, dest)
            copies.append((began, dest))
            n += 1
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        mem.close()
    assert not failures
    assert len(copies) >= 3 and len(acknowledged) > 50
    grew = []
    for began, dest in copies:
        held = contents(dest)
        before = {text for when, text in acknowledged if when < began}
        assert before <= held, f"{dest.name} misses {sorted(before - held)[:5]}"
        assert check_copy(dest) == []
        grew.append(len(held))
    assert grew == sorted(grew) and grew[0] < grew[-1]  # the writers were writing


def test_restore_checks_the_copy_and_asks_before_replacing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/memory.db"
    with Episodic(store=open_store(url), embedder=FakeEmbedder(dim=16), settings=Settings()) as m:
        m.remember("the VPN token rotates monthly", workspace="acme")
    copy = tmp_path / "copy.db"
    assert runner.invoke(app, ["--db", url, "backup", str(copy)]).exit_code == 0
    again = runner.invoke(app, ["--db", url, "backup", str(copy)])
    assert again.exit_code == 2 and "exists" in again.output

    # An existing database is replaced only with --yes.
    refused = runner.invoke(app, ["--db", url, "restore", str(copy)])
    assert refused.exit_code == 2 and "--yes" in refused.output
    fresh = f"sqlite:///{tmp_path}/elsewhere/new.db"
    assert runner.invoke(app, ["--db", fresh, "restore", str(copy)]).exit_code == 0
    assert contents(tmp_path / "elsewhere" / "new.db") == {"the VPN token rotates monthly"}
    assert runner.invoke(app, ["--db", url, "restore", str(copy), "--yes"]).exit_code == 0

    # A damaged copy is refused, and the database is left as it was.
    broken = tmp_path / "broken.db"
    data = bytearray(copy.read_bytes())
    data[4096 : 4096 * 3] = b"\xff" * (4096 * 2)
    broken.write_bytes(bytes(data))
    bad = runner.invoke(app, ["--db", url, "restore", str(broken), "--yes"])
    assert bad.exit_code == 2 and "not a sound copy" in bad.output
    assert contents(tmp_path / "memory.db") == {"the VPN token rotates monthly"}


def test_a_copy_whose_index_disagrees_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/memory.db"
    with Episodic(store=open_store(url), embedder=FakeEmbedder(dim=16), settings=Settings()) as m:
        m.remember("the VPN token rotates monthly", workspace="acme")
    copy = tmp_path / "copy.db"
    backup(url, copy)
    conn = sqlite3.connect(copy)
    conn.execute("DELETE FROM memories_fts")  # the keyword index loses its rows
    conn.commit()
    conn.close()
    assert check_copy(copy) != []


def test_postgres_is_pointed_to_its_own_tools(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["--db", "postgresql://localhost/episodic", "backup", str(tmp_path / "x.db")]
    )
    assert result.exit_code == 2 and "pg_dump" in result.output


@pytest.mark.parametrize("what", ["not a database at all", ""])
def test_check_copy_names_what_is_wrong(tmp_path: Path, what: str) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text(what * 100)
    assert check_copy(junk)
