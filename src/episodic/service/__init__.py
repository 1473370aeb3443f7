"""The service: ``Episodic``, the one object every interface calls, built from one area
object per concern (see ``episodic.service.facade`` for the map).

Interfaces only parse their input, call one method of ``Episodic`` and format the
result; nothing outside this package and the store touches the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.lazy import load as _load

# The names below are imported on first use: a module that needs one constant of an area
# (``MAX_PAGE``, ``memory_json``) does not load the whole service with it.
if TYPE_CHECKING:
    from episodic.service.doctor import Check, DoctorReport
    from episodic.service.editing import Version, version_json
    from episodic.service.facade import Episodic
    from episodic.service.models import UNSET
    from episodic.service.operations import decode_cursor, encode_cursor
    from episodic.service.pages import (
        DEFAULT_PAGE,
        MAX_PAGE,
        MAX_Q_CHARS,
        REMEMBER_TYPE,
        SOURCES,
        MemoryPage,
        memory_json,
    )
    from episodic.service.recalling import INSTITUTIONAL_TYPES, parse_scope
    from episodic.service.writing import (
        MESSAGE_FIELDS,
        IndexOne,
        IngestReport,
        MessagesReport,
        SessionEnd,
    )

# public name -> the module that defines it
_HOMES: dict[str, str] = {
    "Check": "episodic.service.doctor",
    "DoctorReport": "episodic.service.doctor",
    "Version": "episodic.service.editing",
    "version_json": "episodic.service.editing",
    "Episodic": "episodic.service.facade",
    "UNSET": "episodic.service.models",
    "DEFAULT_PAGE": "episodic.service.pages",
    "MAX_PAGE": "episodic.service.pages",
    "MAX_Q_CHARS": "episodic.service.pages",
    "REMEMBER_TYPE": "episodic.service.pages",
    "SOURCES": "episodic.service.pages",
    "MemoryPage": "episodic.service.pages",
    "decode_cursor": "episodic.service.operations",
    "encode_cursor": "episodic.service.operations",
    "memory_json": "episodic.service.pages",
    "INSTITUTIONAL_TYPES": "episodic.service.recalling",
    "parse_scope": "episodic.service.recalling",
    "MESSAGE_FIELDS": "episodic.service.writing",
    "IngestReport": "episodic.service.writing",
    "MessagesReport": "episodic.service.writing",
    "IndexOne": "episodic.service.writing",
    "SessionEnd": "episodic.service.writing",
}


def __getattr__(name: str) -> Any:
    return _load(__name__, _HOMES, globals(), name)


__all__ = [
    "DEFAULT_PAGE",
    "INSTITUTIONAL_TYPES",
    "MAX_PAGE",
    "MAX_Q_CHARS",
    "MESSAGE_FIELDS",
    "REMEMBER_TYPE",
    "SOURCES",
    "UNSET",
    "Check",
    "DoctorReport",
    "Episodic",
    "IndexOne",
    "IngestReport",
    "MemoryPage",
    "MessagesReport",
    "SessionEnd",
    "Version",
    "decode_cursor",
    "encode_cursor",
    "memory_json",
    "parse_scope",
    "version_json",
]
