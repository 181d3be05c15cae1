"""Named text blobs kept as sidecar files beside a SQLite store.

The continuity text and the baton are blobs: a backend reads and writes them by name
(the sidecar suffix, e.g. ``.continuity.md``). For SQLite they are the files
``<stem><name>`` beside the database, replaced atomically under a cross-process lock;
the PostgreSQL backend keeps them in a table instead, so every host sees the same text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .._fileio import atomic_write_text, file_lock, sidecar_path
from ..errors import StoreError
from .meta_sql import MetaSQL


class SidecarBlobs:
    """Blobs as files beside ``db_path``."""

    def __init__(self, db_path: str | Path) -> None:
        self.db_path = Path(db_path)

    def blob_path(self, name: str) -> Path:
        return sidecar_path(self.db_path, name)

    def _lock(self, name: str, lock: str | None) -> Path:
        return sidecar_path(self.db_path, lock or name + ".lock")

    def read_blob(self, name: str) -> str | None:
        p = self.blob_path(name)
        if not p.exists():
            return None
        try:
            return p.read_text("utf-8")
        except UnicodeDecodeError:
            raise StoreError(f"the file {str(p)!r} is not UTF-8 text: restore it or remove it "
                             "to start over") from None

    def write_blob(self, name: str, text: str, *, lock: str | None = None) -> None:
        with file_lock(self._lock(name, lock)):
            atomic_write_text(self.blob_path(name), text)

    def update_blob(self, name: str, fn: Callable[[str | None], str | None], *,
                    lock: str | None = None) -> str | None:
        """Read-modify-write under the lock; ``fn`` returning None leaves the file as is."""
        with file_lock(self._lock(name, lock)):
            new = fn(self.read_blob(name))
            if new is not None:
                atomic_write_text(self.blob_path(name), new)
            return new

    def delete_blob(self, name: str, *, lock: str | None = None) -> bool:
        """Remove the blob's file and any staged save of it left beside it (the erasure
        of a namespace's continuity). True if a file went."""
        import contextlib

        from .._fileio import fsync_dir

        path = self.blob_path(name)
        gone = False
        with file_lock(self._lock(name, lock)):
            for p in [path, *path.parent.glob("." + path.name + ".*.tmp")]:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                    gone = True
            if gone:
                fsync_dir(path.parent)
        return gone


class SQLiteMetaSQL(MetaSQL):
    """A SQLite store's metadata statements; its blobs are the files beside it."""

    __slots__ = ()

    def read_blob(self, name: str) -> str | None:
        """The sidecar file ``<stem><name>`` beside the database, or None."""
        return SidecarBlobs(self.db.path).read_blob(name)

    def write_blob(self, name: str, text: str, *, lock: str | None = None) -> None:
        SidecarBlobs(self.db.path).write_blob(name, text, lock=lock)

    def update_blob(self, name: str, fn: Callable[[str | None], str | None], *,
                    lock: str | None = None) -> str | None:
        return SidecarBlobs(self.db.path).update_blob(name, fn, lock=lock)

    def delete_blob(self, name: str, *, lock: str | None = None) -> bool:
        return SidecarBlobs(self.db.path).delete_blob(name, lock=lock)
