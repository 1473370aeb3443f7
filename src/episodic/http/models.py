"""Pieces of the request and response models that several routers share: the checked
string types, the ``Strict`` base of every request body, the recall scope names and the
forget report (``ForgetOut``, also what deleting one memory answers)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from episodic.config import MAX_CONTENT_CHARS

MAX_TEXT_CHARS = 16_384  # a query, a reason: what is asked or said about memories
MAX_ID_CHARS = 256


def _utf8(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("contains text that is not valid UTF-8 (a lone surrogate)") from None
    return value


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_utf8)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(_utf8)]
NonEmptyText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS), AfterValidator(_utf8)]
# What is remembered: a message's or a note's text, stored whole.
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS), AfterValidator(_utf8)]
ScopeName = Literal["own", "crew_shared"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ForgetOut(BaseModel):
    memories: int
    events: int
    vectors: int
    relations: int
    archived: int
    embedding_cache: int
    import_files: int
    health_snapshots: int
    extensions: int
    rekeyed: int
    history: int
