"""The files of a SQLite store beside its database, and what to do when only they remain.

A store is its database plus files named after it (``memory.db`` ->
``memory.audit.jsonl``, ``memory.continuity.md``, ``memory.crystal.json`` ...). When the
database is missing or empty (deleted, truncated to 0 bytes, not restored with the rest)
while those files are still there, the memory was lost: opening the path would silently
start a new, empty store beside an audit trail that no longer matches it. That open is
refused with :class:`~anneal_memory.errors.StoreGoneError`, which names what was found and
the two ways on: restore the database from a backup, or start fresh deliberately
(``anneal-memory init --force`` moves the old files aside first, see :func:`move_aside`).
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError, StoreGoneError

#: files named after the database's stem that only a store writes (locks are left out:
#: an open that failed may leave one, and they hold nothing; so is the baton: an operator
#: claims it before the first session opens the store, and it holds no memory)
_SIDECARS = (".audit.jsonl", ".audit.manifest.json", ".continuity.md",
             ".continuity.meta.json", ".crystal.json", ".spores.json", ".outcomes.jsonl")
#: the same, as patterns (rotated audit weeks, a namespace's continuity)
_PATTERNS = (".audit.*.jsonl.gz", ".ns-*.continuity.md")
#: SQLite's write-ahead log beside the database: with frames in it, it holds data. Beside
#: a deleted database it is a sign; beside an empty one alone it is not (a store being
#: created keeps its first pages in the log until a checkpoint). A rollback journal is no
#: sign: it is there while another process creates the store.
_JOURNALS = ("-wal",)


def store_files(db: Path) -> list[Path]:
    """The files beside ``db`` that belong to its store (not the database itself, and
    not empty locks or an empty log), sorted by name."""
    found: set[Path] = set()
    for suffix in _SIDECARS:
        p = db.with_name(db.stem + suffix)
        if p.is_file():
            found.add(p)
    for pattern in _PATTERNS:
        try:
            found.update(p for p in db.parent.glob(glob.escape(db.stem) + pattern)
                         if p.is_file())
        except OSError:
            pass
    for suffix in _JOURNALS:
        p = db.with_name(db.name + suffix)
        try:
            if p.is_file() and p.stat().st_size > 0:
                found.add(p)
        except OSError:
            pass
    return sorted(found)


def is_empty(db: Path) -> bool:
    """``db`` is missing or holds 0 bytes."""
    try:
        return db.stat().st_size == 0
    except FileNotFoundError:
        return True


def check_not_gone(db: Path) -> None:
    """Refuse (StoreGoneError, nothing created) a missing or empty database whose store's
    files are still beside it; a path with nothing beside it is a new store."""
    if not is_empty(db):
        return
    found = store_files(db)
    if db.exists() and all(p.name.endswith(_JOURNALS) for p in found):
        # an empty database beside its log alone is a store being created: in WAL mode
        # its first pages stay in the log until a checkpoint (measured on SQLite 3.39.4:
        # six processes creating one store saw it); a deleted one's log is a sign
        return
    if not found:
        return
    state = "is empty (0 bytes)" if db.exists() else "is missing"
    names = ", ".join(p.name for p in found[:6]) + (f" and {len(found) - 6} more"
                                                     if len(found) > 6 else "")
    raise StoreGoneError(
        f"the store's database {str(db)!r} {state}, but files of its store are still beside "
        f"it ({names}): its memory was lost, and nothing was created. Restore the database "
        "from a backup (or import an export into a new path), or start fresh deliberately "
        "by moving the old files aside first (move_aside does, into a timestamped folder)",
        found=[str(p) for p in found])


def move_aside(db: Path, stamp: str) -> Path | None:
    """Move the database (if any) and its store's files into a new folder beside them,
    ``<name>.old-<stamp>``, so a fresh store can start there; returns the folder (None
    when there was nothing to move). Every file named after the database goes (locks and
    empty logs too), so nothing of the old store is left to be mistaken for the new one's."""
    moving = set(store_files(db))
    moving.update(p for p in db.parent.glob(glob.escape(db.stem) + ".*") if p.is_file())
    moving.update(p for p in (db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal"))
                  if p.is_file())
    if not moving:
        return None
    folder = db.with_name(f"{db.name}.old-{stamp}")
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        raise StoreError(f"{str(folder)!r} exists already: move it away and retry") from None
    except OSError as exc:
        raise StoreError(f"cannot make {str(folder)!r} to move the old store's files "
                         f"into ({exc.strerror or exc}): nothing was moved") from None
    moved: list[tuple[Path, Path]] = []
    try:
        for p in sorted(moving):
            dest = folder / p.name
            os.replace(p, dest)
            moved.append((p, dest))
    except OSError as exc:
        for src, dest in reversed(moved):  # all or nothing
            os.replace(dest, src)
        folder.rmdir()
        raise StoreError(f"cannot move {p.name} aside ({exc.strerror or exc}): nothing was "
                         "moved") from None
    return folder


def _made_files(db: Path) -> dict[Path, int]:
    """The database and every file named after it, with their sizes."""
    found = {p for p in db.parent.glob(glob.escape(db.name) + "-*") if p.is_file()}
    found.update(p for p in db.parent.glob(glob.escape(db.stem) + ".*") if p.is_file())
    if db.is_file():
        found.add(db)
    out = {}
    for p in found:
        with contextlib.suppress(OSError):
            out[p] = p.stat().st_size
    return out


def _holds_memory(db: Path) -> bool:
    """The database at ``db`` holds an episode, a wrap or an item (so it is not only
    the empty store a failed call made); an unreadable or empty one holds none."""
    from .sqlite_peek import read_only

    if is_empty(db):
        return False
    try:
        with read_only(db) as conn:
            if conn is None:
                return False
            return any(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()  # noqa: S608
                       for t in ("episodes", "wraps", "items"))
    except Exception:  # no such table, a torn file: nothing anyone could read back
        return False


@contextlib.contextmanager
def undone_on_failure(db: Path, *, keep: frozenset[Path] = frozenset(),
                      shared: bool = True) -> Iterator[None]:
    """A new store being made at ``db`` (missing, or an empty file): when the block
    fails (a refusal, a full disk, an interrupt), the files it created are removed and an
    empty database file is emptied again, so the path is as it was. ``keep``: files
    never touched (another store's, beside it). ``shared``: another process may open
    the same new path meanwhile (a first ``record``), so a store that holds memory by then
    is left alone; a copy's private destination (``migrate``) passes False."""
    before = _made_files(db)
    try:
        yield
    except BaseException:
        if shared and _holds_memory(db):  # another process made it meanwhile and wrote
            raise
        for p in _made_files(db):
            if p in keep:
                continue
            with contextlib.suppress(OSError):
                if p not in before:
                    p.unlink()
                elif before[p] == 0 and p == db:
                    os.truncate(p, 0)
        raise
