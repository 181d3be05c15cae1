"""The storage interface the rest of the library is written against.

A backend owns transactions, the episode table and the keyword index over it, the
database copy of the audit chain, the metadata and the named text blobs. Every method the
core calls on a backend is declared here; ``common.SQLBackend`` implements those whose SQL
is the same everywhere, ``SQLiteBackend`` and ``PostgresBackend`` the rest. The link,
wrap, pattern and probe tables are the ``Links`` and ``Wraps`` roles' own (roles.py):
their SQL is written there, over the backend's connection and dialect hooks.
"""

from __future__ import annotations

import abc
import contextlib
import enum
import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from .rows import (
    DayActivity,
    NamespaceCount,
    WordCounts,
)

_T = TypeVar("_T")


@dataclass(frozen=True)
class Scope:
    """Whose memory a backend call acts on.

    ``owner`` None is the root: the store without a namespace. Reads at the root see
    every episode (the operator's view); its wraps, continuity, patterns and probes are
    those of the episodes written without a namespace. A scoped call reads what the
    namespace may see (same owner; user-level rows or its own project) and acts only on
    rows written in exactly that namespace.
    """

    owner: str | None = None
    project: str | None = None
    #: at the root: read only the episodes written without a namespace (what a model
    #: served from the root store sees), not the operator's view of every namespace
    unscoped_only: bool = False

    @property
    def root(self) -> bool:
        return self.owner is None

    @property
    def key(self) -> str:
        """Exact identity ("" for the root), the column value of per-namespace rows."""
        if self.owner is None:
            return ""
        return self.owner if self.project is None else f"{self.owner}\x1f{self.project}"


ROOT = Scope()


@dataclass
class EpisodeRow:
    id: str
    timestamp: str
    type: str
    content: str
    source: str
    session_id: str | None
    metadata: str | None  # JSON text
    trust: str
    state_key: str | None
    wrap_id: int | None
    rowid: int = 0
    ns_owner: str | None = None
    ns_project: str | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.ns_owner, self.ns_project)


@dataclass
class SearchFilters:
    since: str | None = None
    until: str | None = None
    episode_type: str | None = None
    source: str | None = None
    include_superseded: bool = False
    only_unwrapped: bool = False
    trust: str | None = None  # the episode's own class
    ids: Sequence[str] | None = None
    scope: Scope = ROOT


class Keep(enum.Enum):
    """A field of an update left as it is (see ``update_episode``): a marker of its own,
    as None is a value a field can be set to."""

    KEEP = "keep"


KEEP = Keep.KEEP


class EstimatedCount(int):
    """A match count past the exact bound: estimated from the index, not counted."""

    estimated = True


class RankedHit(NamedTuple):
    """One ranked word match: its row id, time (epoch seconds), score (NaN when the
    backend left the index's score out: see ``Backend.index_scores``), and the times of
    the rows recorded just before and after it when the same filters let them through
    (None otherwise: missing, hidden, or no readable time)."""

    rowid: int
    t: float | None
    score: float
    prev_t: float | None
    next_t: float | None
    #: the episode's text: ranking reads which query words it holds (see ranking.py)
    content: str = ""


class SearchPage(NamedTuple):
    """One page of a keyword search: the rows with their scores, and the number of
    matches in all (an :class:`EstimatedCount` past the exact bound)."""

    hits: list[tuple[EpisodeRow, float]]
    total: int


class RankedPage(NamedTuple):
    """The best word matches (:class:`RankedHit`), best first, and the number of
    matches in all."""

    hits: list[RankedHit]
    total: int


_SAVEPOINTS = itertools.count()


class TransactionLost(Exception):
    """A savepoint could not be rolled back to: the whole transaction is lost."""


class Connection(abc.ABC):
    """Transactions, and raw SQL for the helpers inside ``storage/`` only: no module
    above storage is handed this role (see :class:`Repositories`)."""

    path: str
    read_only: bool

    # -- lifecycle and transactions
    @abc.abstractmethod
    def close(self) -> None: ...
    @property
    @abc.abstractmethod
    def closed(self) -> bool: ...
    @property
    @abc.abstractmethod
    def in_transaction(self) -> bool: ...

    @abc.abstractmethod
    def transaction(self, *, appends_only: bool = False
                    ) -> contextlib.AbstractContextManager[None]:
        """An immediate write transaction; nested calls join the outer one.
        ``appends_only``: the transaction only adds new episodes and appends their audit
        entries (it checks nothing another writer could change), so a backend shared by
        hosts may take its write lock at the first audit append instead of at the start."""
    @abc.abstractmethod
    def read(self) -> contextlib.AbstractContextManager[None]:
        """A consistent read snapshot."""
    @abc.abstractmethod
    def integrity_check(self) -> str: ...  # "ok", or what the database found wrong

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """A point inside the open transaction: an exception in the block rolls back to it
        and propagates; when even that rollback fails the transaction is gone and
        :class:`TransactionLost` (caused by the block's exception) is raised instead."""
        name = f"am_sp_{next(_SAVEPOINTS)}"
        self.q(f"SAVEPOINT {name}")
        try:
            yield
        except Exception as exc:
            try:
                self.q(f"ROLLBACK TO SAVEPOINT {name}")
            except Exception:
                raise TransactionLost("the transaction is gone: nothing of it was written") from exc
            self.q(f"RELEASE SAVEPOINT {name}")
            raise
        self.q(f"RELEASE SAVEPOINT {name}")

    # -- raw SQL, for helpers inside this package (``?`` placeholders on every backend)
    @abc.abstractmethod
    def q(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    @abc.abstractmethod
    def q1(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None: ...
    @abc.abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    @abc.abstractmethod
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...


class EpisodeRepo(abc.ABC):
    """The episode rows and the keyword index over them."""

    def memo(self, key: Hashable, compute: Callable[[], _T], *, scope: Scope = ROOT,
             size: Callable[[_T], int] | None = None) -> _T:
        """``compute()``, or what it returned for ``key`` in ``scope`` while nothing has
        been written to the database since (by any connection); ``size(value)`` weighs
        what is kept against the backend's bound. A backend that cannot tell computes
        every time. The value is shared: callers must not change it."""
        return compute()

    # -- episodes
    @abc.abstractmethod
    def insert_episode(self, row: EpisodeRow) -> None: ...
    @abc.abstractmethod
    def id_taken(self, episode_id: str) -> bool: ...

    def insert_episodes(self, rows: Sequence[EpisodeRow]) -> None:
        """Insert ``rows`` in order (a group commit's batch: one statement for them all
        where the database allows)."""
        for row in rows:
            self.insert_episode(row)

    def ids_taken(self, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` an episode or a tombstone holds."""
        return {i for i in ids if self.id_taken(i)}
    @abc.abstractmethod
    def get_episodes(self, ids: Sequence[str], *, scope: Scope = ROOT,
                     exact: bool = False) -> dict[str, EpisodeRow]: ...
    @abc.abstractmethod
    def trusts_of(self, ids: Sequence[str], *, scope: Scope = ROOT) -> dict[str, str]:
        """Each visible id's own trust class (what ``get_episodes`` would say, one column)."""
    @abc.abstractmethod
    def all_episodes(self, *, order: str = "timestamp ASC, rowid ASC",
                     scope: Scope = ROOT) -> Iterator[EpisodeRow]: ...
    @abc.abstractmethod
    def unwrapped_episodes(self, *, scope: Scope = ROOT) -> list[EpisodeRow]: ...
    @abc.abstractmethod
    def unwrapped_trusts(self, *, scope: Scope = ROOT) -> dict[str, str]:
        """Own trust class of each not-yet-wrapped episode written in ``scope`` (one scan of
        the unwrapped index: cheaper for a wrap than looking each of its ids up)."""
    @abc.abstractmethod
    def state_key_holders(self, key: str | None = None, *,
                          scope: Scope = ROOT) -> list[EpisodeRow]: ...
    @abc.abstractmethod
    def ids_older_than(self, cutoff: str, *, scope: Scope = ROOT) -> list[str]: ...
    @abc.abstractmethod
    def update_episode(self, episode_id: str, *, trust: str | Keep = KEEP,
                       state_key: str | None | Keep = KEEP) -> None:
        """Set the episode's own trust class and/or its state key (None: clears it);
        a field left at ``KEEP`` is not changed."""
    @abc.abstractmethod
    def mark_wrapped(self, ids: Sequence[str], wrap_id: int) -> None: ...
    @abc.abstractmethod
    def delete_episode_rows(self, ids: Sequence[str]) -> int: ...
    @abc.abstractmethod
    def scrub_indexes(self) -> None: ...  # in the delete's transaction: no trace in indexes
    @abc.abstractmethod
    def checkpoint(self) -> None: ...  # after a delete committed: compact what it touched
    @abc.abstractmethod
    def count_episodes(self, *, scope: Scope = ROOT) -> int: ...
    @abc.abstractmethod
    def count_unwrapped(self, *, scope: Scope = ROOT) -> int: ...
    @abc.abstractmethod
    def counts_by_type(self, *, scope: Scope = ROOT) -> dict[str, int]: ...
    @abc.abstractmethod
    def counts_by_trust(self, *, scope: Scope = ROOT) -> dict[str, int]: ...
    @abc.abstractmethod
    def namespace_counts(self) -> list[NamespaceCount]:
        """(owner, project, episodes, saved wraps) of every namespace holding either."""

    @abc.abstractmethod
    def activity_by_day(self, since_day: str, *, scope: Scope = ROOT
                        ) -> list[DayActivity]: ...

    # -- keyword search
    @abc.abstractmethod
    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> SearchPage: ...
    @abc.abstractmethod
    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]: ...
    @abc.abstractmethod
    def ranked_ids(self, filters: SearchFilters, words: Sequence[str], pool: int
                   ) -> RankedPage:
        """The ``pool`` best word matches (best first) and the number of matches."""

    @abc.abstractmethod
    def times_by_rowid(self, rowids: Sequence[int], filters: SearchFilters
                       ) -> dict[int, float | None]:
        """Epoch seconds of the episodes at these row ids that pass ``filters`` (None
        for one without a readable time): the time of a match's wider context."""

    def index_scores(self, filters: SearchFilters, words: Sequence[str],
                     rowids: Sequence[int]) -> dict[int, float]:
        """The index's own score of the matches at these row ids, for the hits
        ``ranked_ids`` returned without one (NaN); a backend that always scores its hits
        has none to give."""
        return {}

    def word_counts(self, filters: SearchFilters, words: Sequence[str], cap: int
                    ) -> WordCounts:
        """(episodes, how many of them hold each word, counted up to ``cap``) in the
        filters' namespace (the whole store at the root): the document frequencies ranked
        word recall weighs words by. (0, {}) when a backend keeps none: plain ranking."""
        return WordCounts(0, {})


class Backend(Connection, EpisodeRepo):
    """One database: every role at once. The Store owns it; the layers above see it
    through the typed roles of a :class:`Repositories` or a unit of work."""

    #: False when the audit chain lives only in the database (no per-host JSONL mirror);
    #: the chain's SQL is its role's (``roles.AuditChain``, ``audit_sql``)
    mirrors_audit_to_files: bool = True
