"""Backups of a SQLite memory: ``backup`` takes a consistent copy of a live database with
SQLite's online backup API (one read transaction: writers go on meanwhile, in WAL mode),
``check_copy`` runs the ``doctor --deep`` checks on a copy, and ``restore`` puts a checked
copy in place. PostgreSQL has its own tools for this (``pg_dump``/``pg_restore``;
docs/production.md)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from episodic.errors import InvalidInput
from episodic.store.sqlite.connection import sqlite_target


def sqlite_file(url: str) -> Path:
    """The file a ``sqlite://`` URL (or plain path) names; an error for anything else."""
    if "://" in url and not url.lower().startswith("sqlite://"):
        raise InvalidInput(
            "db",
            "backup and restore are for SQLite databases; for PostgreSQL use pg_dump and "
            "pg_restore (docs/production.md)",
        )
    target = sqlite_target(url)
    if target == ":memory:":
        raise InvalidInput("db", "an in-memory database has nothing to back up")
    return Path(target)


def backup(url: str, dest: Path) -> Path:
    """Copy the live database ``url`` to ``dest`` (a new file) as of one moment: every
    write committed before the copy began is in it, none after. Written beside ``dest``
    and renamed into place, so ``dest`` is never a half copy."""
    source = sqlite_file(url)
    if not source.is_file():
        raise InvalidInput("db", f"no database at {source}")
    if dest.exists():
        raise InvalidInput("dest", f"{dest} exists; choose a new file")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    os.close(fd)
    try:
        src = sqlite3.connect(f"{source.absolute().as_uri()}?mode=ro", uri=True)
        try:
            out = sqlite3.connect(partial)
            try:
                # All pages in one step: one read transaction, so one moment's data
                # (several steps restart whenever a writer commits in between).
                src.backup(out, pages=-1)
                out.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            finally:
                out.close()
        finally:
            src.close()
        os.replace(partial, dest)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return dest


def check_copy(path: Path) -> list[str]:
    """What is wrong with the copy at ``path`` (empty: nothing): SQLite's integrity check,
    then ``doctor --deep``'s checks of the store, run on a scratch copy so that the
    backup itself is never changed (opening a store may bring its schema up to date)."""
    from episodic.store import open_store

    if not path.is_file():
        return [f"no file at {path}"]
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            found = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return [f"not a SQLite database: {exc}"]
    if found != ["ok"]:
        return [f"integrity check: {line}" for line in found[:10]]
    if "memories" not in tables:
        return ["not an episodic database (no memories table)"]
    with tempfile.TemporaryDirectory(prefix="episodic-restore-") as scratch:
        trial = Path(scratch) / "check.db"
        shutil.copyfile(path, trial)
        store = open_store(f"sqlite:///{trial}")
        try:
            store.stats()
            return [f"{c.name}: {c.detail}" for c in store.deep_check() if c.status == "error"]
        finally:
            store.close()


def restore(source: Path, url: str, *, overwrite: bool) -> Path:
    """Put the backup ``source`` in place as the database ``url``, after ``check_copy``
    found nothing wrong with it. An existing database is replaced only with
    ``overwrite``; nothing may have it open (stop the server first)."""
    target = sqlite_file(url)
    problems = check_copy(source)
    if problems:
        raise InvalidInput("src", f"{source} is not a sound copy: " + "; ".join(problems))
    if target.exists() and not overwrite:
        raise InvalidInput(
            "yes", f"{target} exists; pass --yes to replace it (stop the server first)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, partial)
        for side in ("-wal", "-shm"):  # the old database's, which the copy must not meet
            Path(f"{target}{side}").unlink(missing_ok=True)
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return target
