"""Every error episodic raises on purpose.

    EpisodicError
    ├── InvalidInput(field)          bad caller input; names the offending field
    │   └── IdTaken(refused)         an id another workspace already uses
    ├── StoreError                   the database refused or failed
    │   ├── StoreUnavailable         the database server cannot be reached (HTTP 503)
    │   └── NotFound(id)             no such memory/event in this workspace
    ├── EmbedderError
    │   ├── EmbedderUnavailable      cannot reach or load the embedder
    │   ├── ModelMismatch            stored vectors come from another model/dim
    │   └── BadEmbedding             the embedder answered, but with garbage
    ├── LLMError
    ├── UnknownPolicy(name)
    └── AuthError                    the caller may not do this (HTTP API keys)
        ├── Unauthenticated          no key, an unknown key or a revoked one
        └── Forbidden                a valid key asking beyond its workspace or role

Backend errors are chained with ``raise ... from exc`` so the cause stays visible.
"""

from __future__ import annotations

from typing import Any


class EpisodicError(Exception):
    """Base of every error raised on purpose by episodic. ``request_id``: on an error the
    HTTP client raised, the server's id for the request (``X-Request-ID``)."""

    request_id: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Raised in a recall process and re-raised in the server's: pickle keeps the
        # class, the message and the attributes (``field``, ``id``...) without calling
        # an ``__init__`` whose parameters differ from ``Exception``'s.
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[EpisodicError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class InvalidInput(EpisodicError, ValueError):
    """Caller input that cannot be accepted. ``field`` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class IdTaken(InvalidInput):
    """Event and memory ids are unique across the whole store, not per workspace: a write
    whose id another workspace already uses is refused (nothing of it is written) instead
    of being skipped as a duplicate. The message never names the other workspace."""

    def __init__(self, refused: list[tuple[str, str]]) -> None:
        self.refused = refused  # (workspace, id) of each write refused
        ids = list(dict.fromkeys(i for _, i in refused))
        self.ids = ids
        shown = ", ".join(repr(i) for i in ids[:5]) + (" ..." if len(ids) > 5 else "")
        super().__init__(
            "id",
            f"{shown} already used by another workspace; ids are unique across the "
            "store: choose another id, or leave it out to get a new one",
        )


class StoreError(EpisodicError):
    """The storage backend failed or refused an operation."""


class StoreUnavailable(StoreError):
    """The database server is down or unreachable; the call may succeed later."""


class StoreBusy(StoreError):
    """Every pooled database connection stayed in use past the wait: the server is
    overloaded, not down; the call may succeed in a moment."""


class NotFound(StoreError, KeyError):
    """No such object in the caller's workspace."""

    def __init__(self, id: str) -> None:
        self.id = id
        super().__init__(f"not found: {id}")

    def __str__(self) -> str:
        return f"not found: {self.id}"


class EmbedderError(EpisodicError):
    """Base for embedding failures."""


class EmbedderUnavailable(EmbedderError):
    """The embedder cannot be reached or loaded."""


class ModelMismatch(EmbedderError):
    """Stored vectors were made by another model or dimension; mixing them is refused."""

    def __init__(self, stored: str, stored_dim: int, current: str, current_dim: int) -> None:
        self.stored, self.stored_dim = stored, stored_dim
        self.current, self.current_dim = current, current_dim
        super().__init__(
            f"the memory holds vectors from {stored} ({stored_dim}-d) but the embedder is "
            f"{current} ({current_dim}-d); run `episodic reindex` to re-embed everything "
            "with the current model, or select the original embedder"
        )


class BadEmbedding(EmbedderError):
    """The embedder answered with vectors of the wrong shape or with NaN/inf values."""


class LLMError(EpisodicError):
    """An LLM call failed or returned something unusable."""


class UnknownPolicy(EpisodicError, KeyError):
    """No recall policy of that name."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        self.name = name
        hint = f"; known policies: {', '.join(known)}" if known else ""
        super().__init__(f"unknown recall policy {name!r}{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


class AuthError(EpisodicError):
    """The caller may not do what it asked (HTTP API keys)."""


class Unauthenticated(AuthError):
    """No API key, an unknown one or a revoked one."""


class Forbidden(AuthError):
    """A valid key asking for another workspace, or for more than its role allows. The
    message never says whether the other workspace or object exists."""
