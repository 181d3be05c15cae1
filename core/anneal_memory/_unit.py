"""The unit of work: one open write transaction as the layers above storage see it.

``_seam.unit_of(store)`` yields a :class:`UnitOfWork`: the store's typed repositories
(:class:`~.storage.base.Repositories`) and its audit log, whose entries commit in the same
transaction as the rows they describe. :class:`Ground` is what the modules under the Store
facade (facts, trust, items, ...) need of a Store: they are written against it, not
against ``Store``, so they never import the facade they serve.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ._audit_chain import AuditEntry, StagedEntry
from ._namespace import MemoryNamespace
from .continuity.schema import SectionSpec
from .storage.base import Backend, Scope, TransactionLost
from .storage.repos import Repositories
from .storage.roles import AuditChain
from .types import Episode, RecallResult, StoreStatus


class AuditLog(Protocol):
    """The audit trail as a writer sees it: append an entry inside the open transaction."""

    @property
    def enabled(self) -> bool: ...

    def append(self, event: str, data: Mapping[str, object], *,
               actor: str = "agent") -> AuditEntry | None: ...

    def hash_content(self, text: str) -> str: ...

    def stage(self, event: str, data: Mapping[str, object], *,
              actor: str = "agent") -> StagedEntry: ...

    def append_staged(self, staged: Sequence[StagedEntry]) -> list[AuditEntry] | None: ...

    def redact(self, event: str, data: Mapping[str, object]) -> dict[str, object]: ...

    def entries(self, after_seq: int = 0, limit: int | None = None) -> list[AuditEntry]: ...

    def tip(self) -> tuple[int, str]: ...

    def pending_mark(self) -> int: ...

    def drop_pending(self, mark: int) -> None: ...


@dataclass(frozen=True)
class UnitOfWork(Repositories):
    """One open write transaction: the repositories, and the audit entry that commits with
    them. Nothing written through it is acknowledged until the ``with`` block exits; an
    exception rolls all of it back (and drops its pending audit entries)."""

    audit: AuditLog
    _stage: Callable[[Facade | None, str, list[OSError]], None] = field(repr=False, compare=False)
    #: what could not be put in place after the commit (the texts are committed: the next
    #: open of the store puts them in place)
    unpublished: list[OSError] = field(default_factory=list, compare=False)

    def stage_continuity(self, text: str, view: Facade | None = None) -> None:
        """Save ``text`` as the continuity of ``view`` (default: the store that opened
        this unit) in this unit: the text commits with it. Beside a SQLite database its
        file is staged now and put in place after the outermost commit (a crash between
        the two: the next open does it); a rollback removes the staged file."""
        self._stage(view, text, self.unpublished)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A part of the unit that an exception rolls back alone, with its audit entries
        (the exception propagates). When the rollback itself fails the whole unit is lost:
        the block's exception propagates out of the unit instead."""
        mark = self.audit.pending_mark()
        try:
            with self._conn.savepoint():
                yield
        except TransactionLost as lost:
            raise UnitLost() from lost.__cause__
        except Exception:
            self.audit.drop_pending(mark)
            raise


class AuditMirror(AuditLog, Protocol):
    """The audit trail as the transactions see it: its pending entries dropped on a
    rollback, mirrored to its files after the outermost commit."""

    hold_mirror: bool

    def flush(self) -> bool: ...

    def discard_pending(self) -> None: ...

    def after_commit(self) -> None: ...

    def mirror_if_due(self) -> None: ...


class UnitLost(Exception):
    """The unit of work's transaction is gone (its ``__cause__`` says why)."""


#: meta key prefix of a committed text whose file is not written yet (stores saved by
#: earlier builds; still written out when such a store is opened)
PENDING_BLOB = "pending_blob:"
#: meta key prefix of the last save of a sidecar blob: "<sha256> <staged file name>"
STAGED_BLOB = "staged_blob:"
#: meta key prefix of a blob an erasure removed whose file may still be beside the
#: database (a crash after the commit): removed when the store is next opened
ERASED_BLOB = "erased_blob:"


def continuity_blob(db_path: str | Path, continuity_path: Path) -> str:
    """The name the database keeps a store's continuity text under: the suffix of its
    sidecar file (a scoped view has its own)."""
    return continuity_path.name[len(Path(db_path).stem):]


def require_writable(store: object) -> None:
    """Refuse early (ReadOnlyStoreError) on a store opened read_only, before any check or
    read a write would start with."""
    if getattr(store, "read_only", False):
        from .errors import ReadOnlyStoreError

        raise ReadOnlyStoreError("this store was opened read_only: reopen it to write")


class Ground(Protocol):
    """What the modules below the Store facade need of the Store (or scoped view) they
    act for: its repositories, a unit of work, whose memory it is and its trust ceiling."""

    scope: Scope
    trust_ceiling: str

    @property
    def audit_trail(self) -> AuditLog: ...

    @property
    def read_only(self) -> bool: ...

    def effective_trust_map(self, ids: Sequence[str]) -> dict[str, str]: ...


class Facade(Ground, Protocol):
    """The rest of the Store that the modules it owns call back (recall, export, import,
    restore): its continuity, its own recall, its views, and how rows become episodes.
    They are written against this, not against ``Store``, so none imports the facade."""

    store_id: str
    project_name: str
    path: Path
    stale_wrap_after: float | None

    @property
    def section_schema(self) -> list[SectionSpec]: ...

    @property
    def continuity_path(self) -> Path: ...

    def load_continuity(self) -> str | None: ...

    def save_continuity(self, text: str) -> str: ...

    def get(self, episode_id: str) -> Episode | None: ...

    def audit_event(self, event: str, data: Mapping[str, object],
                    actor: str = "operator") -> None: ...

    def status(self) -> StoreStatus: ...

    def scoped(self, namespace: MemoryNamespace | Mapping[str, str | None]) -> Facade: ...

    def recall(self, since: str | datetime | None = None, *, limit: int = 100,
               include_superseded: bool = False) -> RecallResult: ...

    def wrap_history(self, limit: int | None = None) -> list[dict[str, Any]]: ...

    def consolidate_requires_baton(self) -> bool: ...


class Units:
    """The write transactions of one open database, shared by a Store and its scoped
    views: one lock, this thread's nesting depth, and the continuity files its units
    staged (put in place after the outermost commit). The only holder of the database
    above storage: the Store reaches it through this object and its repositories."""

    def __init__(self, db: Backend, audit: AuditMirror) -> None:
        self._db = db
        self._chain = AuditChain(db)
        self._audit = audit
        self._lock = threading.RLock()
        self._local = threading.local()  # this thread's write depth and staged files

    @property
    def closed(self) -> bool:
        return self._db.closed

    @property
    def legacy_upgrade(self) -> dict[str, Any] | None:
        """What the in-place upgrade of a 1.0.2 database did when it was opened."""
        return getattr(self._db, "legacy_upgrade", None)

    def close(self) -> None:
        """Flush the audit files and close the database."""
        if self._audit.enabled and not self._db.closed:
            self._audit.flush()
        self._db.close()

    @property
    def depth(self) -> int:
        """How many write transactions this thread has open (0: none)."""
        return int(getattr(self._local, "depth", 0))

    def audit_count(self) -> int:
        """Entries in the audit chain."""
        return self._chain.audit_count()

    def plain(self) -> AbstractContextManager[None]:
        """A bare transaction: no audit entry, no staged file (index scrubs, finishing
        saves a crash interrupted)."""
        return self._db.transaction()

    @contextmanager
    def write(self, appends_only: bool = False) -> Iterator[None]:
        """A write transaction whose audit entries are mirrored after it commits.

        Held under the lock from the first statement to the mirror, so threads sharing
        one Store (and its scoped views) never see each other's pending entries."""
        local = self._local
        with self._lock:
            outer = not self._db.in_transaction
            if outer:
                local.staged = []
            local.depth = self.depth + 1
            try:
                with self._db.transaction(appends_only=appends_only):
                    yield
            except BaseException:
                if outer:
                    self._audit.discard_pending()
                    for _publish, discard, _sink, _nested in local.staged:
                        discard()  # the save did not commit
                    local.staged = []
                raise
            finally:
                local.depth -= 1
            if outer:
                self._audit.after_commit()
                self._publish_staged()

    @contextmanager
    def round(self) -> Iterator[None]:
        """A group commit's round: the audit files are mirrored (when due) after the
        round's callers are woken, so they go on while the files are written."""
        self._audit.hold_mirror = True
        try:
            yield
        finally:
            self._audit.hold_mirror = False
            with self._lock:
                self._audit.mirror_if_due()

    def stage(self, publish: Callable[[], None], discard: Callable[[], None],
              sink: list[OSError]) -> None:
        """Note a continuity file staged in the open unit: ``publish()`` puts it in place
        after the outermost commit (``sink`` collects what could not be), ``discard()``
        removes it when the transaction rolls back."""
        local = self._local
        if not hasattr(local, "staged"):  # a transaction not opened by write():
            local.staged = []  # its commit is not ours; the next open publishes
        local.staged.append((publish, discard, sink, self.depth > 1))

    def _publish_staged(self) -> None:
        """After the outermost commit: put every continuity the units staged in place."""
        staged, self._local.staged = self._local.staged, []
        for publish, _discard, sink, nested in staged:
            try:
                publish()
            except OSError as exc:  # committed: the next open puts the file in place
                sink.append(exc)
                if nested:  # its unit has ended: nobody else will say so
                    warnings.warn(f"a saved continuity could not be put in place yet ({exc}); "
                                  "it is put in place when the store is next opened",
                                  UserWarning, stacklevel=3)
