"""``anneal:`` service URIs for ADK's tooling (``adk web``, ``adk api_server``,
``get_fast_api_app``), which picks its memory and session services by URI.

- ``anneal:///abs/path/memory.db``: a SQLite store (an absolute path; three slashes);
- ``anneal+postgresql://user@host/db`` (or ``anneal+postgres://``): a PostgreSQL store
  (needs the ``postgres`` extra); the server's own parameters (``sslmode``...) stay in the
  URL, the service's options are taken out of it.

A service's documented options go in the query: ``?search_limit=5&strict=true``. A URI
that is malformed, names an unknown option or gives a bad value, or a location that is
not a store, raises :class:`ServiceUriError` (a ``ValueError``) when the service is
built, i.e. when the app starts, with the fix in its message.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from anneal_memory import Store
from anneal_memory.errors import AnnealMemoryError, ValidationError
from anneal_memory.storage.pg_location import redact

SCHEMES = ("anneal", "anneal+postgresql", "anneal+postgres")
_EXAMPLE = "anneal:///abs/path/memory.db or anneal+postgresql://user@host/db"


class ServiceUriError(ValidationError):
    """An ``anneal:`` service URI ADK was given cannot be used (the message says why and
    how to write it)."""


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("expected a whole number >= 1")
    return value


#: a query option's parser (str -> value)
Parser = Callable[[str], Any]
INT: Parser = _positive
BOOL: Parser = _bool


@dataclass(frozen=True)
class AnnealUri:
    """A parsed ``anneal:`` URI: where the store is and the service options it gives."""

    uri: str
    location: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The URI without its password (for messages)."""
        return _shown(self.uri)

    def open_store(self, embedder: Any = None) -> Store:
        """Open the store (embedding with ``embedder``, when given); its refusal (not a
        store, no such folder, no postgres extra) becomes a :class:`ServiceUriError`
        naming this URI."""
        try:
            return Store(self.location, embedder=embedder)
        except AnnealMemoryError as exc:
            raise ServiceUriError(f"the store of {self.shown!r} cannot be opened: {exc}") from exc


def _shown(uri: str) -> str:
    try:
        return redact(uri)
    except ValueError:
        return "<unparseable URI>"


def parse_uri(uri: Any, options: Mapping[str, Parser]) -> AnnealUri:
    """Parse an ``anneal:`` URI; ``options`` are the query parameters the service takes."""
    if not isinstance(uri, str) or not uri.strip():
        raise ServiceUriError(f"an anneal service URI must be a non-empty string, like {_EXAMPLE}")
    try:
        parts = urlsplit(uri)
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise ServiceUriError(f"{_shown(uri)!r} is not a valid URI ({exc}): write {_EXAMPLE}") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ServiceUriError(f"{_shown(uri)!r} is not an anneal URI (scheme {parts.scheme!r}): "
                              f"write {_EXAMPLE}")
    if parts.fragment:
        raise ServiceUriError(f"{_shown(uri)!r} has a fragment (#...): remove it")
    ours: dict[str, Any] = {}
    rest: list[tuple[str, str]] = []
    for name, text in query:
        if name in options:
            if name in ours:
                raise ServiceUriError(f"{_shown(uri)!r} gives {name} twice: keep one")
            try:
                ours[name] = options[name](text)
            except ValueError as exc:
                raise ServiceUriError(f"{_shown(uri)!r}: {name}={text!r} is not valid ({exc})") from None
        elif scheme == "anneal":
            known = ", ".join(sorted(options)) or "none"
            raise ServiceUriError(f"{_shown(uri)!r}: unknown option {name!r} (this service takes: "
                                  f"{known})")
        else:
            rest.append((name, text))  # the PostgreSQL server's own parameters
    if scheme == "anneal":
        if parts.netloc not in ("", "localhost"):
            raise ServiceUriError(
                f"{_shown(uri)!r} names a host ({parts.netloc!r}): a SQLite store is a local "
                "absolute path with three slashes, anneal:///abs/path/memory.db")
        path = unquote(parts.path)
        if not path or not os.path.isabs(path):
            raise ServiceUriError(f"{_shown(uri)!r} needs an absolute path to the store: "
                                  "anneal:///abs/path/memory.db")
        return AnnealUri(uri, path, ours)
    if not parts.netloc and not parts.path.strip("/"):
        raise ServiceUriError(f"{_shown(uri)!r} names no server or database: "
                              "anneal+postgresql://user@host/db")
    dsn = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(rest), ""))
    return AnnealUri(uri, dsn, ours)
