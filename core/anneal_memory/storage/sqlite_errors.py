"""What a failed SQLite call means to the caller, as one of the library's typed errors.

The backend's query methods pass every exception through :func:`translate`: a value
SQLite cannot bind (a lone surrogate, an integer beyond 64 bits, text too big) is the
caller's ValidationError; a damaged file (a malformed page, text that is not UTF-8, a
broken full-text index) or a failing disk is a StoreError that says how to recover.
Anything else (a lock, a constraint, a bug) is left as it is.
"""

from __future__ import annotations

import sqlite3
from typing import NoReturn

from ..errors import AnnealMemoryError, StoreError, ValidationError
from .driver import sqlite_driver


def caught() -> tuple[type[BaseException], ...]:
    """The exception types the query methods hand to :func:`translate` (evaluated only
    when an exception is raised, so the happy path pays nothing)."""
    return (UnicodeEncodeError, OverflowError, sqlite3.DatabaseError,
            sqlite_driver().DatabaseError)


def _is(exc: BaseException, name: str) -> bool:
    """``exc`` is the DB-API class ``name`` of the standard sqlite3 or the driver in use."""
    return any(isinstance(exc, getattr(m, name)) for m in (sqlite3, sqlite_driver()))

_CORRUPT = ("malformed", "not a database", "could not decode", "vtable constructor failed",
            "database corrupt")
_DISK = ("disk i/o error", "database or disk is full", "unable to open database file")


def translate(exc: BaseException, path: str) -> AnnealMemoryError | None:
    """The typed error ``exc`` stands for, or None to let it propagate unchanged."""
    if isinstance(exc, UnicodeEncodeError):
        return ValidationError(
            f"a text value holds a lone surrogate (U+{ord(exc.object[exc.start]):04X}), "
            "which is not valid Unicode and cannot be stored: decode the input as UTF-8")
    if isinstance(exc, OverflowError):
        return ValidationError(f"a number is too large to store or query ({exc}): pass a "
                               "whole number below 2**63")
    if _is(exc, "DataError"):
        return ValidationError(f"a value is too large to store ({exc}): shorten it")
    msg = str(exc).lower()
    if (_is(exc, "ProgrammingError") or _is(exc, "InterfaceError")) and "binding parameter" in msg or (
            _is(exc, "IntegrityError") and "datatype mismatch" in msg):
        return ValidationError(f"a value of the wrong type was passed ({exc}): pass a string "
                               "or a whole number where one is expected")
    if any(_is(exc, n) for n in ("IntegrityError", "ProgrammingError", "InterfaceError",
                                 "NotSupportedError")):
        return None
    if any(m in msg for m in _DISK):
        return StoreError(f"the store {path!r} cannot be read or written ({exc}): check the "
                          "disk (space, permissions, a network mount) and retry")
    if type(exc).__name__ == "DatabaseError" or any(m in msg for m in _CORRUPT):
        return StoreError(
            f"the store {path!r} is damaged ({exc}): keep its files as they are, restore it "
            "from a backup or an export (anneal-memory import --restore into a new store), "
            "and save what SQLite can still read from a copy with sqlite3's .recover "
            "(sqlite3 COPY.db .recover > recovered.sql)")
    return None


def reraise(exc: BaseException, path: str) -> NoReturn:
    """Raise the typed error ``exc`` stands for, else ``exc`` itself (inside ``except``)."""
    mapped = translate(exc, path)
    if mapped is None:
        raise exc
    raise mapped from None
