"""Database URLs as users write them and as drivers and messages need them (no driver
imported here: SQLite users never load psycopg)."""

from __future__ import annotations

from urllib.parse import urlsplit


def display_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def libpq_url(url: str) -> str:
    """A ``postgresql+psycopg://`` or ``postgres://`` URL as libpq takes it."""
    scheme, sep, rest = url.partition("://")
    if scheme.lower() in ("postgresql+psycopg", "postgres"):
        return f"postgresql{sep}{rest}"
    return url
