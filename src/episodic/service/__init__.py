"""The service: ``Episodic``, the one object every interface calls, built from one area
object per concern (see ``episodic.service.facade`` for the map).

Interfaces only parse their input, call one method of ``Episodic`` and format the
result; nothing outside this package and the store touches the database.
"""

from __future__ import annotations

from episodic.service.doctor import Check, DoctorReport
from episodic.service.editing import Version, version_json
from episodic.service.facade import Episodic
from episodic.service.models import UNSET
from episodic.service.operations import (
    DEFAULT_PAGE,
    MAX_PAGE,
    MAX_Q_CHARS,
    REMEMBER_TYPE,
    SOURCES,
    MemoryPage,
    decode_cursor,
    encode_cursor,
    memory_json,
)
from episodic.service.recalling import INSTITUTIONAL_TYPES, parse_scope
from episodic.service.writing import MESSAGE_FIELDS, IndexOne, IngestReport, MessagesReport

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
    "Version",
    "decode_cursor",
    "encode_cursor",
    "memory_json",
    "parse_scope",
    "version_json",
]
