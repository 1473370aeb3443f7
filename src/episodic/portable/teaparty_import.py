"""Reading seed 001's tree (``episodic.portable.teaparty``) into a workspace.

As seed 001's ``file_meta``, a file is read only when its mtime and size (or its content)
moved since the last import of the same folder into the same workspace (the
``import_files`` records, under the root ``teaparty:<folder>``); the entries of a file not
read stand as stored. The markdown is the source of truth for deletions too: each entry
remembers the file it was read from (``payload.markdown_file``), so an entry an earlier
import read from this tree and that no file holds any more can be told from a memory the
tree never held (a session's new learning, not exported yet). Such an entry is retired
with the reason "removed from markdown" (kept, out of every recall, not exported again;
back in a file, it is read as the file says), forgotten with ``prune="forget"`` (as
``reindex --from`` does), or kept with ``prune="keep"``. Nothing is removed while a file
or entry of the tree could not be read: it may hold the entry.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath

from episodic.errors import InvalidInput
from episodic.model import Memory, MemoryStatus
from episodic.portable import (
    FileError,
    ImportReport,
    PortableStore,
    all_memories,
    restore_links,
)
from episodic.portable.fields import load_frontmatter
from episodic.portable.teaparty import (
    FROM_FILE,
    INSTITUTIONAL,
    LEARNING,
    PROJECT_CREW,
    REMOVED_REASON,
    RETIRED_AT,
    RETIRED_REASON,
    Entry,
    Place,
    check_workspace,
    memory_files,
    path_of_place,
    read_entry,
    removed_from_files,
    split_entries,
)
from episodic.portable.validity import read_links
from episodic.store.service import ImportedFile
from episodic.store.supersession import Supersession
from episodic.write.events import opt_id

PRUNE_MODES = ("retire", "forget", "keep")


def import_teaparty(
    store: PortableStore,
    directory: Path,
    *,
    workspace: str,
    now: datetime,
    prune: str = "retire",
) -> ImportReport:
    """Read a TeaParty tree into ``workspace``: every entry inserted, or its memory
    updated; bad entries reported (file, line, field) and the rest imported.

    As seed 001's ``file_meta``, a file whose mtime and size (or content) are those of
    the last import into this workspace is not read again. The files are the source of
    truth for deletions too: an entry an earlier import read from this tree and that no
    file holds any more is retired with the reason "removed from markdown" (``prune``
    "retire", the default), forgotten ("forget") or left as it is ("keep"); nothing is
    removed while any file or entry could not be read (it may hold the entry)."""
    if not directory.is_dir():
        raise InvalidInput("DIR", f"no such directory: {directory}")
    if prune not in PRUNE_MODES:
        raise InvalidInput("prune", f"unknown mode {prune!r}; use {', '.join(PRUNE_MODES)}")
    ws = check_workspace(workspace)
    base = directory.resolve()
    root = f"teaparty:{base}"  # apart from the plain layout's records of the same folder
    state = store.import_state(root)
    errors: list[FileError] = []
    files = inserted = updated = unchanged = skipped = 0
    owner: dict[str, str] = {}
    arrived = 0
    fresh: list[ImportedFile] = []
    walked: set[str] = set()
    kept_files: set[str] = set()  # files not read again: their entries stand as stored
    # Written once every entry is in: the memory a link replaced may come later.
    read: list[tuple[str, Memory, list[Supersession]]] = []
    for rel, place, path in memory_files(directory):
        files += 1
        name = str(rel)
        walked.add(name)
        try:
            _check_folders(place, rel)
            stat = path.stat()
            prev = state.get(name)
            mine = prev is not None and prev.workspace_id == ws
            if mine and prev and (prev.mtime_ns, prev.size) == (stat.st_mtime_ns, stat.st_size):
                skipped += 1
                kept_files.add(str(base / name))
                continue
            data = path.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            if mine and prev and prev.sha256 == digest:
                skipped += 1
                kept_files.add(str(base / name))
                fresh.append(replace(prev, mtime_ns=stat.st_mtime_ns, size=stat.st_size))
                continue
            text = data.decode("utf-8")
        except InvalidInput as exc:
            errors.append(FileError(name, exc.field, exc.message))
            kept_files.add(str(base / name))  # unread: its entries stand as stored
            continue
        except UnicodeDecodeError:
            errors.append(FileError(name, "file", "not UTF-8 text"))
            kept_files.add(str(base / name))
            continue
        entries, problems = split_entries(text)
        errors += [FileError(f"{rel}:{line}", n, msg) for line, n, msg in problems]
        ids = [i for e in entries if (i := _id_of(e)) is not None]
        existing = {m.id: m for m in store.get_memories(ws, ids)}
        clean = not problems
        for entry in entries:
            where = f"{rel}:{entry.line}"
            try:
                memory = read_entry(
                    entry,
                    place,
                    ws,
                    existing,
                    now + timedelta(microseconds=arrived),
                    str(base / name),
                )
                links = read_links(load_frontmatter(entry.head), memory)
                if memory.id in owner:
                    raise InvalidInput("id", f"{memory.id} is also the id of {owner[memory.id]}")
                # Stored as it reads: no write transaction (a re-run of an unchanged tree).
                result = None if existing.get(memory.id) == memory else store.restore(memory, ())
                read.append((where, memory, links))
            except InvalidInput as exc:
                errors.append(FileError(where, exc.field, exc.message))
                clean = False
                continue
            arrived += 1
            owner[memory.id] = where
            if result is None:
                unchanged += 1
                continue
            inserted += result.inserted
            updated += result.updated
            unchanged += result.unchanged
        if clean:  # a file with a bad entry is read again until it is fixed
            first = ids[0] if ids else None
            fresh.append(ImportedFile(name, stat.st_mtime_ns, stat.st_size, digest, ws, first))
        else:
            kept_files.add(str(base / name))  # an entry that did not read is not deleted
    restore_links(store, read, errors)
    removed, warnings, unsettled = _prune(
        store, ws, base, {m.id for _, m, _ in read}, kept_files, prune, errors, now
    )
    # A file that lost an entry left in place is read again next time, so the deletion
    # is still seen then (its entries would otherwise stand as stored).
    fresh = [f for f in fresh if f.path not in unsettled]
    store.save_import_state(root, fresh, [p for p in state if p not in walked or p in unsettled])
    return ImportReport(
        str(directory),
        files,
        skipped_unchanged=skipped,
        read=files - skipped,
        inserted=inserted,
        updated=updated,
        unchanged=unchanged,
        removed=removed,
        errors=errors,
        warnings=warnings,
    )


def _prune(
    store: PortableStore,
    ws: str,
    base: Path,
    seen: set[str],
    kept_files: set[str],
    prune: str,
    errors: list[FileError],
    now: datetime,
) -> tuple[int, list[str], set[str]]:
    """Retire (or forget) the entries this tree held at an earlier import and holds no
    more; returns how many, what was left as it is and why, and the files (relative
    paths) whose deleted entries were left in place."""
    inside = f"{base}{os.sep}"
    gone = [
        m
        for m in all_memories(store, ws, (LEARNING, INSTITUTIONAL))
        if isinstance(source := m.payload.get(FROM_FILE), str)
        and source.startswith(inside)
        and source not in kept_files
        and m.id not in seen
        and not removed_from_files(m)
    ]
    if not gone:
        return 0, [], set()
    if errors or prune == "keep":
        files = {Path(str(m.payload[FROM_FILE])).relative_to(base).as_posix() for m in gone}
        why = (
            "a file or entry could not be read and may hold them; fix the errors and import again"
            if errors
            else "prune: keep"
        )
        return 0, [f"{len(gone)} entries are in no file any more but were kept: {why}"], files
    if prune == "forget":
        return store.delete_memories(ws, [m.id for m in gone]), [], set()
    for m in gone:
        payload = {**m.payload, RETIRED_REASON: REMOVED_REASON}
        payload.setdefault(RETIRED_AT, now.astimezone(UTC).isoformat())
        if "status" in payload:  # learnings from sessions mirror their status there
            payload["status"] = MemoryStatus.RETIRED.value
        store.restore(replace(m, status=MemoryStatus.RETIRED, payload=payload), ())
    return len(gone), [], set()


def _check_folders(place: Place, rel: PurePosixPath) -> None:
    """The folder names a file's ids come from must make valid ids, and name this file
    again on export (a task folder named like the project crew would not)."""
    for name in (place.project, place.crew, place.job):
        try:
            opt_id({"path": name}, "path")
        except InvalidInput as exc:
            raise InvalidInput("path", f"folder {name!r}: {exc.message}") from None
    if path_of_place(place) != rel:
        raise InvalidInput("path", f"a task folder may not be named {PROJECT_CREW!r}")


def _id_of(entry: Entry) -> str | None:
    """The entry's id when its frontmatter reads, for looking up what is stored."""
    try:
        value = load_frontmatter(entry.head).get("id")
    except InvalidInput:
        return None
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None
