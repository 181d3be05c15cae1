"""The Store: the public facade over one episodic memory database and its sidecars."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from . import _seam, episodes_write, erasure, facts, storage, tracing, trust
from ._audit_deep import ContentCheck
from ._fileio import atomic_write_text, sidecar_path
from ._inputs import (
    DEFAULT_MAX_EPISODE_CHARS,
    episode_bound,
    storable_text,
    whole_number,
)
from ._lazy import token_hex
from ._namespace import MemoryNamespace, coerce_namespace, digest
from ._seam import roles_of, unit_of
from ._unit import Facade, UnitOfWork, Units, require_writable
from ._wrap_age import stale_wrap
from .audit import AuditTrail, NamespaceAudit
from .clock import ago, iso, now_iso, utcnow
from .continuity.relayed import check_policy as check_relayed_policy
from .episode_rows import to_episodes
from .erasure import ErasureReport
from .errors import (
    GovernanceError,
    StoreError,
    StoreLocationError,
    TrustError,
    ValidationError,
)
from .group_commit import GroupCommit
from .storage.base import ROOT, EpisodeRow, Scope
from .storage.common import audit_counter_key
from .storage.pg_location import pg_dsn, redact, sidecar_base
from .store_continuity import ContinuityMixin
from .types import Episode, EpisodeType, NamespaceTotals, RecallResult, StoreStatus, coerce_trust

if TYPE_CHECKING:
    from .continuity.schema import SectionSpec
    from .embedding import Embedder
    from .items import ItemCollection
    from .portability import ExportDocument, ImportResult
    from .semantic import EmbedReport

ENV_DB = "ANNEAL_MEMORY_DB"
#: what names a namespace: a MemoryNamespace, or a mapping of its fields (tenant, user,
#: project, agent) to their values
NamespaceLike = MemoryNamespace | Mapping[str, str | None]


class NamespaceEntry(TypedDict):
    """A namespace holding memory in a store, with its counts (see
    :meth:`Store.namespaces`)."""

    namespace: MemoryNamespace
    episodes: int
    wraps: int
    records: int
    pending_reviews: int


def default_db_path() -> Path:
    """``$ANNEAL_MEMORY_DB``, else ``~/.anneal-memory/memory.db``."""
    env = os.environ.get(ENV_DB)
    if env:
        return Path(env).expanduser()
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):
        home = None
    if home is None or str(home) in ("", "~") or not home.is_absolute():
        raise StoreLocationError(
            "no store path: the home directory cannot be determined; give the store "
            f"a path (Store(path)) or set {ENV_DB}"
        )
    return home / ".anneal-memory" / "memory.db"


def _pg_sidecar_base(dsn: str) -> Path:
    try:
        return sidecar_base(dsn)
    except (RuntimeError, KeyError, OSError):
        raise StoreLocationError(
            "no folder for this PostgreSQL store's per-host files (crystal, spores): the home "
            "directory cannot be determined; set ANNEAL_MEMORY_SIDECAR_DIR"
        ) from None


class Store(ContinuityMixin):
    """One agent's episodic memory: a SQLite database plus its sidecar files.

    Thread-safe: threads (and the async twins of ``MemorySession``) may share one Store
    and its scoped views; its calls are serialised on one connection. Several processes
    may each open their own Store on the same database.
    """

    #: metadata key reserved for the namespace (kept in columns since schema 2)
    RESERVED_METADATA_KEY = episodes_write.RESERVED_METADATA_KEY
    #: whose memory this object acts on: the root (no namespace) for a Store
    scope: Scope = ROOT
    #: what the last ``erase`` or ``prune`` through this object removed, and where
    last_erasure: ErasureReport | None = None
    #: the namespace's tag in sidecar names ("" for the root)
    ns_tag = ""
    namespace: MemoryNamespace | None = None
    embedder: Embedder | None = None

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        project_name: str | None = None,
        section_schema: Sequence[Mapping[str, Any]] | None = None,
        audit: bool = True,
        on_audit_event: Callable[[dict[str, Any]], Any] | None = None,
        read_only: bool = False,
        trust_ceiling: str = "agent",
        retention_days: int | None = None,
        session_id: str | None = None,
        consolidate_requires_baton_on_create: bool = False,
        stale_wrap_after: float | None = None,
        relayed_text: str = "flag",
        embedder: Any = None,
        max_episode_chars: int | None = DEFAULT_MAX_EPISODE_CHARS,
    ) -> None:
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise ValidationError(f"the store path must be a str or a path, not "
                                  f"{type(path).__name__}")
        if path is not None and "\x00" in os.fspath(path):
            raise ValidationError("the store path contains a NUL character: remove it")
        if on_audit_event is not None and not callable(on_audit_event):
            raise ValidationError("on_audit_event must be a callable taking one audit entry "
                                  f"(a dict), not {type(on_audit_event).__name__}")
        #: the longest content record() takes (None: no bound); imports keep longer ones whole
        self.max_episode_chars = episode_bound(max_episode_chars)
        dsn = pg_dsn(path if path is not None else os.environ.get(ENV_DB, ""))
        db = (_pg_sidecar_base(dsn) if dsn else
              Path(path).expanduser() if path is not None else default_db_path())
        if path is None and not dsn and not db.parent.exists() and not read_only:
            db.parent.mkdir(parents=True, exist_ok=True)
        if db.exists() and db.is_dir():
            raise StoreError(f"{str(db)!r} is a folder: pass the path of a database file")
        if db.exists() and not db.is_file():  # a FIFO or device would block the open
            raise StoreError(f"{str(db)!r} is not a regular file (a pipe, socket or device): "
                             "pass the path of a database file")
        if retention_days is not None and (not isinstance(retention_days, int) or retention_days < 1):
            raise ValidationError("retention_days must be a whole number of days >= 1, or None")
        if stale_wrap_after is not None and (isinstance(stale_wrap_after, bool) or not isinstance(
                stale_wrap_after, (int, float)) or not 60 <= stale_wrap_after <= 10**9):
            raise ValidationError("stale_wrap_after must be seconds from 60 up (e.g. 3600 for "
                                  "an hour), or None to keep a stale wrap until it is cancelled")
        #: operator policy: a wrap open longer than this many seconds is taken over by the
        #: next prepare_wrap of its namespace (None: off, as the specification's rule)
        self.stale_wrap_after = float(stale_wrap_after) if stale_wrap_after is not None else None
        self.trust_ceiling = coerce_trust(trust_ceiling)
        if embedder is not None:
            from .embedding import as_embedder

            #: what embeds episodes and queries for hybrid / semantic recall (None:
            #: keyword recall only; see docs/semantic.md)
            self.embedder = as_embedder(embedder)
            from .vector_cache import VectorCache

            self._vector_cache = VectorCache()  # shared with this store's scoped views
        #: what a continuity save does with relayed (tool/external) text reproduced outside
        #: a quotation: "flag" it on the result and in the audit, or refuse ("strict")
        self.relayed_text = check_relayed_policy(relayed_text)
        self.path = db
        self.project_name = project_name or "Agent"
        self.read_only = read_only
        self.retention_days = retention_days
        self.session_id = session_id
        self.dsn = dsn
        if dsn:
            database = storage.open(dsn, read_only=read_only)
            existed = database.roles().meta.get_meta("store_id") is not None
            if not read_only:
                db.parent.mkdir(parents=True, exist_ok=True)
        else:
            from .storage.sqlite_files import check_not_gone

            check_not_gone(db)  # a lost database is not a new store
            existed = db.exists() and db.stat().st_size > 0
            from .audit import chain_entries
            from .legacy import upgrade as legacy_upgrade

            database = storage.open(db, read_only=read_only, legacy=legacy_upgrade,
                                    compacted_entries=chain_entries)
        self._closed = False
        #: the roles this store reads and writes through (a scoped view's: its namespace's)
        self._repos = database.roles()
        meta = self._repos.meta
        if not read_only:
            with database.unit():
                if meta.get_meta("store_id") is None:
                    meta.set_meta("store_id", token_hex(8))
                    meta.set_meta("audit_salt", token_hex(16))
                    meta.set_meta("created_at", now_iso())
                    if consolidate_requires_baton_on_create:
                        meta.set_meta("consolidate_requires_baton", "1")
        self.store_id = meta.get_meta("store_id") or ""
        self._audit = AuditTrail(database.connection, db, salt=meta.get_meta("audit_salt") or "",
                                 on_event=on_audit_event, enabled=audit and not read_only)
        self._audit_requested = bool(audit)
        #: the write transactions (shared with the scoped views): the database's one holder
        self._units = Units(database.connection, self._audit)
        _seam.register(self, self._repos, self._open_unit)  # the services' way down
        self._group: GroupCommit[episodes_write.Writer, episodes_write.EpisodeDraft,
                                 Episode | EpisodeRow] = GroupCommit(self._units.round)
        if section_schema is not None:
            from .continuity.schema import validate_schema

            validate_schema(section_schema)
            if not read_only and (not existed or meta.get_meta("section_schema") is None):
                self.set_section_schema(section_schema)
            # validate_schema checked each entry: only heading / role / optional, each of
            # its type (a SectionSpec), which the type system cannot follow
            self._schema_override = [cast("SectionSpec", dict(s)) for s in section_schema
                                     ] if read_only else None
        else:
            self._schema_override = None
        if self._audit.enabled:
            self._audit.flush()
        if not read_only:
            self._reconcile_files()

    def _reconcile_files(self) -> None:
        """After a crash: write continuity texts that committed but whose file was not
        written, and remove temporary copies a killed writer left beside the store."""
        from .store_continuity import staged_files

        try:
            self._flush_pending_files()
        except OSError as exc:
            warnings.warn(f"a saved continuity could not be written to its file yet: {exc}",
                          UserWarning, stacklevel=3)
        if self.dsn:
            return
        cutoff = utcnow().timestamp() - 60  # a writer still at work renames its copy within moments
        keep = staged_files(self._repos.meta)  # committed saves still waiting for their file
        with contextlib.suppress(OSError):
            for p in self.path.parent.glob(f".{self.path.stem}.*.tmp"):
                with contextlib.suppress(OSError):
                    if p.is_file() and p.name not in keep and p.stat().st_mtime < cutoff:
                        p.unlink()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database. Safe to call twice."""
        if not self._closed:
            self._closed = True
            self._units.close()

    def __repr__(self) -> str:
        return f"Store({redact(self.dsn) if self.dsn else str(self.path)!r})"

    def items(self, collection: str) -> ItemCollection:
        """One named collection of keyed items in this store's namespace (framework
        state such as a chat history or a key-value store; see :mod:`.items`)."""
        from .items import ItemCollection

        return ItemCollection(self, collection)

    def _check_writable(self) -> None:
        require_writable(self)

    def scoped(self, namespace: NamespaceLike) -> Store:
        """A view of this store limited to one namespace (a mapping with any of
        ``tenant``, ``user``, ``project``, ``agent``, or a ``MemoryNamespace``): its
        recall, continuity, wraps, baton and probes are that namespace's alone."""
        return ScopedStore(self, namespace)

    @property
    def audit_trail(self) -> AuditTrail:
        return self._audit

    def _stage_in_unit(self, view: Facade | None, text: str, sink: list[OSError]) -> None:
        target = self if view is None else cast(Store, view)
        path = target._stage_continuity(text)
        self._units.stage(lambda: target._flush_continuity(path),
                          lambda: target._discard_staged(path), sink)

    @property
    def legacy_upgrade(self) -> dict[str, Any] | None:
        """What the in-place upgrade of a 1.0.2 database did when this Store opened it
        (None: no upgrade ran on this open)."""
        return self._units.legacy_upgrade

    @contextlib.contextmanager
    def _open_unit(self, appends_only: bool = False) -> Iterator[UnitOfWork]:
        """One write transaction as a typed :class:`UnitOfWork` (registered in
        :mod:`._seam`, reached as ``_seam.unit_of(store)``): its repositories and the audit
        entries that commit with them. Nested calls join the outer transaction; a
        read_only store refuses with ReadOnlyStoreError before anything is written.
        ``appends_only``: it only adds new episodes and their audit entries (see
        ``Connection.transaction``)."""
        self._check_writable()
        with self._units.write(appends_only):
            r = self._repos
            yield UnitOfWork(r.episodes, r.links, r.wraps, r.items, r.meta, r.tables, r.vectors,
                             r.governance, r._conn, self._audit, self._stage_in_unit)

    @contextlib.contextmanager
    def batch(self) -> Iterator[Store]:
        """Group many writes into one durable transaction (bulk loads).

        Nothing inside is acknowledged until the block exits; an exception rolls all of
        it back.
        """
        with self._units.write():
            yield self

    def audit_event(self, event: str, data: Mapping[str, object], actor: str = "operator") -> None:
        """Append one standalone entry to the audit chain (ids and hashes, never content)."""
        with self._units.write():
            self._audit.append(event, data, actor=actor)

    # ------------------------------------------------------------------ record
    @tracing.traced(tracing.UPDATE, "record", result=tracing.recorded)
    def record(
        self,
        content: str,
        episode_type: EpisodeType | str,
        source: str = "agent",
        metadata: dict[str, Any] | None = None,
        timestamp: str | datetime | date | None = None,
        supersedes: Sequence[str] | str | None = None,
        state_key: str | None = None,
        trust: str = "agent",
        *,
        derived_from: Sequence[str] | None = None,
    ) -> Episode:
        """Record one episode durably and return it.

        Refusals (a typed error, nothing written): empty content, unknown type, a bad
        timestamp, a trust class above the store's ceiling, a supersession link or state
        key that fails validation, derived_from ids that do not exist.
        """
        d = episodes_write.draft(self, content, episode_type, source, metadata, timestamp,
                                 supersedes, state_key, trust, derived_from)
        if self._in_own_write():  # inside this thread's batch(): join it
            with unit_of(self) as tx:
                return episodes_write.insert(self, tx, d)
        return episodes_write.record_grouped(self, d, self._group)

    def _in_own_write(self) -> bool:
        return self._units.depth > 0

    @tracing.traced(tracing.UPDATE, "record_many", result=tracing.recorded)
    def record_many(self, items: Iterable[Mapping[str, object]]) -> list[Episode]:
        """Record many episodes in one transaction: all of them, or none on a refusal.

        Each item holds ``record()``'s keyword names (``content``, ``episode_type``, ...).
        """
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
            raise ValidationError("record_many takes a list of dicts of record() arguments")
        out: list[Episode] = []
        with unit_of(self) as tx:
            for i, item in enumerate(items):
                if not isinstance(item, Mapping):
                    raise ValidationError(f"record_many item {i} must be a dict of record() arguments")
                args = dict(item)
                if "episode_type" not in args and "type" in args:
                    args["episode_type"] = args.pop("type")
                unknown = set(args) - {"content", "episode_type", "source", "metadata", "timestamp",
                                       "supersedes", "state_key", "trust", "derived_from"}
                if unknown:
                    raise ValidationError(f"record_many item {i}: unknown field(s) {sorted(unknown)}")
                if "content" not in args or "episode_type" not in args:
                    raise ValidationError(f"record_many item {i} needs 'content' and 'episode_type'")
                d = episodes_write.draft(
                    self, args["content"], args["episode_type"], args.get("source", "agent"),
                    args.get("metadata"), args.get("timestamp"), args.get("supersedes"),
                    args.get("state_key"), args.get("trust", "agent"), args.get("derived_from"))
                out.append(episodes_write.insert(self, tx, d))
        return out

    # ------------------------------------------------------------------ read
    def get(self, episode_id: str) -> Episode | None:
        """The episode with this id, or None."""
        storable_text(episode_id, "episode id")
        rows = self._repos.episodes.get_episodes([episode_id])
        if episode_id not in rows:
            return None
        return to_episodes(self, [rows[episode_id]])[0]

    def get_many(self, ids: Sequence[str]) -> dict[str, Episode]:
        rows = self._repos.episodes.get_episodes(facts.normalize_ids(ids, "ids"))
        eps = to_episodes(self, list(rows.values()))
        return {e.id: e for e in eps}

    @tracing.traced(tracing.SEARCH, "recall", query="keyword", result=tracing.found)
    def recall(
        self,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        episode_type: EpisodeType | str | None = None,
        source: str | None = None,
        keyword: str | None = None,
        limit: int = 100,
        offset: int = 0,
        include_superseded: bool = False,
        *,
        context: bool = True,
        trust: str | None = None,
        mode: str | None = None,
    ) -> RecallResult:
        """Filtered episodes. A keyword matches first as an exact phrase (substring, any
        case); if the phrase matches nothing, by its words, ranked by relevance, with the
        episodes recorded right next to a match as context where they outrank a match
        (never padding a short result; ``context=False`` for stores of unrelated items,
        where neighbours in time mean nothing). ``total_matching`` counts matches only;
        ``result.why`` says why each episode is there. ``trust``: only episodes whose own
        trust class is this one.

        ``mode``: ``"keyword"`` (the default without an embedder), ``"hybrid"`` (the
        default with one: keyword ranking first, vectors adding what it misses) or
        ``"semantic"`` (by meaning alone); ``result.semantic`` says how vectors took
        part (see docs/semantic.md)."""
        from .recall import build_filters, keyword_recall

        if mode is not None or self.embedder is not None:
            from . import semantic

            chosen = semantic.resolve_mode(self, mode)
            if chosen != "keyword":
                filters = build_filters(since, until, episode_type, source,
                                        include_superseded, trust)
                return semantic.recall(self, chosen, keyword_recall, filters, keyword=keyword,
                                       limit=limit, offset=offset, since=since, until=until,
                                       episode_type=episode_type, source=source,
                                       include_superseded=include_superseded,
                                       context=context, trust=trust)
        return keyword_recall(self, keyword=keyword, limit=limit, offset=offset, since=since,
                              until=until, episode_type=episode_type, source=source,
                              include_superseded=include_superseded, context=context,
                              trust=trust)

    def embed_pending(self, *, rebuild: bool = False, limit: int | None = None,
                      progress: Callable[[int, int], None] | None = None) -> EmbedReport:
        """Embed the episodes that have no vector of this store's embedder yet (all
        of them with ``rebuild``, after removing every stored vector of the episodes
        this store may change). Recording never waits for the embedder; this (or the
        CLI's ``embed``) catches up. ``progress(done, total)`` after each batch."""
        from .semantic import embed_pending

        return embed_pending(self, rebuild=rebuild, limit=limit, progress=progress)

    def episodes_since_wrap(self) -> list[Episode]:
        """Episodes no saved wrap has compressed yet, oldest first."""
        return to_episodes(self, self._repos.episodes.unwrapped_episodes())

    # ------------------------------------------------------------------ delete / prune
    @tracing.traced(tracing.DELETE, "delete", record_id="episode_id", result=tracing.erased)
    def delete(self, episode_id: str) -> bool:
        """Remove an episode for good: its text goes from the database and from every
        place the library wrote it (see ``erase``), leaving a tombstone that holds only a
        salted hash. Returns False when there is no such episode."""
        storable_text(episode_id, "episode id")
        return bool(self.erase([episode_id]).episodes)

    @tracing.traced(tracing.DELETE, "erase", result=tracing.erased)
    def erase(self, episode_ids: Sequence[str]) -> ErasureReport:
        """Delete episodes and take their text out of every place the library wrote it:
        the episodes table and keyword indexes, each continuity that quotes a line of
        theirs or cites their id (the line goes; the report says which), item
        collections (crystals, spores, chat histories: a quoting string becomes
        ``[erased]``), pattern history, probes, wrap metrics, meta documents and the JSON
        sidecar files beside a SQLite database; then the freed pages are zeroed and the
        write-ahead log truncated. Unknown ids are skipped; an id above the store's trust
        ceiling is refused (TrustError) and nothing is erased."""
        ids = facts.normalize_ids(episode_ids, "episode_ids")
        refused: EpisodeRow | None = None
        report = ErasureReport()
        with unit_of(self) as tx:
            rows = self._repos.episodes.get_episodes(ids, exact=True)
            refused = next((r for r in rows.values()
                            if not trust.within_ceiling(r.trust, self.trust_ceiling)), None)
            if refused is None and rows:
                report = erasure.scrub_episodes(self, rows, tx)
                # what went besides the rows rides on each delete entry (1.0.2's events)
                self._remove(list(rows), reason="deleted",
                             audit_extra={"erased": report.audit_data()}
                             if report.beyond_rows else None)
        if refused is not None:
            # the refusal is on the record too (its own transaction: nothing else changed)
            self.audit_event("delete_refused", {"id": refused.id, "trust": refused.trust,
                                                "ceiling": self.trust_ceiling}, actor="agent")
            raise TrustError(
                f"episode {refused.id} is labelled {refused.trust!r}, above this store's trust "
                f"ceiling {self.trust_ceiling!r}: only a host opened at that ceiling may delete "
                "it; nothing was deleted")
        self.last_erasure = report
        if report.episodes:
            self._scrub()
        return report

    def verify_content(self) -> ContentCheck:
        """The deep check (``verify --deep``): every stored episode's content, type, trust
        and namespace against the audit entry that recorded it (or imported it), so a row
        edited under the hash chain is found. Linear in episodes and entries."""
        from ._audit_deep import deep_check

        return deep_check(self)

    @tracing.traced(tracing.DELETE, "erase_namespace", result=tracing.erased)
    def erase_namespace(self, namespace: NamespaceLike | None = None) -> ErasureReport:
        """Forget one user (or any namespace) whole: every episode, continuity, wrap,
        pattern history, probe, item collection (crystals, spores, chat histories) and
        governed record of it, so ``namespaces()`` no longer lists it and no file or
        table names it in clear; tombstones keep ids and salted hashes only. A namespace
        without ``project`` takes its projects with it. On a view, its own namespace."""
        root = self.parent if isinstance(self, (ScopedStore, UnscopedView)) else self
        report = erasure.erase_namespace(
            self, namespace, remove=lambda ids: root._remove(ids, reason="erased"))
        root._flush_pending_files()  # after the commit: the texts in place, the pages zeroed
        root._scrub()
        return report

    @tracing.traced(tracing.DELETE, "prune", result=tracing.erased)
    def prune(self, older_than_days: int | None = None) -> int:
        """Remove episodes older than ``older_than_days`` (default: the store's
        retention_days), their text from every place it was written (as ``erase``;
        ``last_erasure`` holds the report). Returns how many were removed."""
        days = self._prune_days(older_than_days)
        report = ErasureReport()
        with unit_of(self) as tx:
            ids = self._prunable_ids(days)
            rows = self._repos.episodes.get_episodes(ids, exact=True) if ids else {}
            if rows:
                report = erasure.scrub_episodes(self, rows, tx)
            n = self._remove(list(rows), reason="pruned") if rows else 0
            if n:
                self._audit.append("prune", {"count": n, "older_than_days": days, **(
                    {"erased": report.audit_data()} if report.beyond_rows else {})},
                    actor="system")
        self.last_erasure = report
        if n:
            self._scrub()
        return n

    def prunable(self, older_than_days: int | None = None) -> list[str]:
        """The ids ``prune(older_than_days)`` would remove now, changing nothing: for a
        caller that says how many will go before it asks."""
        days = self._prune_days(older_than_days)
        with self._repos.read():
            return self._prunable_ids(days)

    def _prune_days(self, older_than_days: int | None) -> int:
        days = older_than_days if older_than_days is not None else self.retention_days
        if days is None:
            raise ValidationError("prune needs older_than_days (or a store retention_days)")
        whole_number(days, "older_than_days")
        return days

    def _prunable_ids(self, days: int) -> list[str]:
        """Old ids this store may remove: never one labelled above its trust ceiling (a
        caller may not prune what it could not have written)."""
        ids = list(self._repos.episodes.ids_older_than(iso(ago(days * 86400, field="older_than_days"))))
        if ids and self.trust_ceiling != "operator":
            rows = self._repos.episodes.get_episodes(ids, exact=True)
            ids = [i for i in ids if i in rows
                   and trust.within_ceiling(rows[i].trust, self.trust_ceiling)]
        open_wrap = self._repos.wraps.open_wrap()
        if open_wrap:  # episodes frozen in an open wrap stay until it is saved or cancelled
            frozen = set(open_wrap.episode_ids)
            ids = [i for i in ids if i not in frozen]
        return ids

    def _remove(self, ids: Sequence[str], *, reason: str,
                audit_extra: Mapping[str, Any] | None = None) -> int:
        repos = self._repos
        rows = repos.episodes.get_episodes(ids, exact=True)
        if not rows:
            return 0
        if self.embedder is not None:  # their vectors go with the rows (ON DELETE CASCADE)
            self._vector_cache.clear()
        eff = trust.effective_trust_map(self, list(rows))
        links_of = {repos.scope: repos.links}  # a tombstone lives in its episode's namespace
        for eid, r in rows.items():
            mark = "external" if reason == "deleted" else eff.get(eid, r.trust)
            repos.links.mark_source_removed(eid, mark)
            if r.scope not in links_of:
                links_of[r.scope] = repos.within(r.scope).links
            links_of[r.scope].add_tombstone(eid, r.type, r.timestamp,
                                            self._audit.hash_content(r.content), now_iso(),
                                            reason, eff.get(eid, r.trust))
            facts.detach_links(self, eid)
            if reason == "deleted":
                self._audit.append("delete", {"episode_id": eid,
                                              "content_hash": self._audit.hash_content(r.content),
                                              **(audit_extra or {})},
                                   actor="operator")
        return repos.episodes.delete_episode_rows(list(rows))

    def _scrub(self) -> None:
        with contextlib.suppress(Exception):
            with self._units.plain():
                self._repos.episodes.scrub_indexes()
            self._repos.episodes.checkpoint()

    # ------------------------------------------------------------------ supersession, keys, trust
    def supersede(self, *, old_id: str, new_id: str) -> bool:
        """Record that ``new_id`` replaces ``old_id`` (validated like ``supersedes=``);
        False when that link already exists."""
        return facts.supersede(self, old_id, new_id)

    def unsupersede(self, *, old_id: str, new_id: str) -> bool:
        """Remove a supersession link; the old episode is served by recall again."""
        return facts.unsupersede(self, old_id, new_id)

    def supersession_chain(self, episode_id: str) -> list[facts.ChainLink]:
        """The links replacing and replaced by an episode, oldest first (see
        ``facts.supersession_chain``): for an operator reading what changed."""
        return facts.supersession_chain(self, episode_id)

    def namespaces(self) -> list[NamespaceEntry]:
        """The namespaces holding memory in this store, with counts; open one with
        ``store.scoped(entry["namespace"])``. The root store only."""
        return _namespaces(self)

    def set_state_key(self, episode_id: str, key: str) -> list[tuple[str, str]]:
        """Put an existing episode into a state-key slot; returns the links it added."""
        return facts.set_state_key(self, episode_id, key)

    def clear_state_key(self, episode_id: str) -> facts.StateKeyCleared:
        """Take an episode out of its state-key slot (and undo what the slot hid)."""
        return facts.clear_state_key(self, episode_id)

    def state_report(self, key: str | None = None) -> list[facts.StateSlot]:
        """Each state key's current holder and the history it replaced."""
        return facts.state_report(self, key)

    def state_key_report(self, key: str | None = None) -> list[facts.StateKeySlot]:
        """The state report in 1.0.2's shape (``current`` and ``replaced`` lists)."""
        return facts.state_key_report(self, key)

    def set_trust(self, episode_id: str, trust_class: str, *, via: str = "library") -> str:
        """Change an episode's own trust class (never above the store's ceiling); returns
        the class it had."""
        return trust.set_trust(self, episode_id, trust_class, via=via)

    def effective_trust_map(self, ids: Sequence[str]) -> dict[str, str]:
        """Each id's effective trust: its own class, capped by its most trusted source."""
        return trust.effective_trust_map(self, facts.normalize_ids(ids, "ids"))

    # ------------------------------------------------------------------ status
    def status(self) -> StoreStatus:
        """Counts and health of the store."""
        r = self._repos
        with r.read():
            total_wraps, last_wrap = r.wraps.wrap_counts()
            open_wrap = r.wraps.open_wrap()
            text = self.load_continuity()
            failures = int(r.meta.get_meta("audit_write_failures") or 0)
            return StoreStatus(
                total_episodes=r.episodes.count_episodes(),
                episodes_since_wrap=r.episodes.count_unwrapped(),
                total_wraps=total_wraps,
                last_wrap_at=last_wrap,
                wrap_in_progress=open_wrap is not None,
                tombstone_count=r.links.count_tombstones(),
                continuity_chars=None if text is None else len(text),
                episodes_by_type=r.episodes.counts_by_type(),
                audit_enabled=self._audit_requested,
                audit_entry_count=self._audit_entry_count(),
                audit_write_failures=failures,
                audit_last_failure=r.meta.get_meta("audit_last_failure"),
                consolidate_requires_baton=self.consolidate_requires_baton(),
                path=redact(self.dsn) if self.dsn else str(self.path),
                superseded_count=r.links.count_superseded(),
                trust_counts=r.episodes.counts_by_trust(),
                wrap_started_at=open_wrap.started_at if open_wrap else None,
                wrap_stale=open_wrap is not None and stale_wrap(self, open_wrap._asdict()),
                namespace=self._status_namespace(),
                all_namespaces=self._namespace_totals(),
                **self._embedding_status(),
            )

    def _embedding_status(self) -> dict[str, Any]:
        counts = self._repos.vectors.counts()
        out: dict[str, Any] = {"vectors": [{"model": m, "dims": d, "episodes": n}
                                           for m, d, n in counts]}
        if self.embedder is not None:
            emb = self.embedder
            out.update(embedder=emb.model, embedding_dims=emb.dims, embedded_episodes=sum(
                n for m, d, n in counts if m == emb.model and emb.dims in (None, d)))
        return out

    # What the root's status adds and a view's narrows (ScopedStore overrides these).
    def _audit_entry_count(self) -> int:
        return self._units.audit_count()

    def _status_namespace(self) -> dict[str, Any] | None:
        return None

    def _namespace_totals(self) -> NamespaceTotals | None:
        wraps, last, open_wraps, continuities = self._repos.wraps.wrap_totals()
        named = len(self.namespaces())  # those holding episodes, wraps or governed records
        return NamespaceTotals(namespaces=named, wraps=wraps, last_wrap_at=last,
                               open_wraps=open_wraps, continuities=continuities)

    def wrap_history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Saved wraps, newest first, with their metrics."""
        if limit is not None:
            whole_number(limit, "limit")
        return [w._asdict() for w in self._repos.wraps.wrap_history(limit)]

    # ------------------------------------------------------------------ export / import
    def export(self) -> ExportDocument:
        """Every episode and link as one JSON-ready document; from the root store also
        its ``state`` (each namespace's continuity, wraps, items, pattern history, probes,
        governed records, settings), which an import into a new store restores."""
        from .portability import export_store

        return export_store(self)

    def export_json(self, path: str | os.PathLike[str] | None = None) -> str:
        text = json.dumps(self.export(), indent=2, ensure_ascii=False)
        if path is not None:
            target = Path(path)
            if target.is_dir():
                raise ValidationError(f"{str(target)!r} is a folder: pass the path of the "
                                      "export file to write")
            if not target.parent.is_dir():
                raise ValidationError(f"the folder {str(target.parent)!r} does not exist: "
                                      "create it first or pass another path")
            try:
                atomic_write_text(target, text + "\n")
            except OSError as exc:
                raise StoreError(f"cannot write the export to {str(target)!r}: "
                                 f"{exc.strerror or exc}") from exc
        return text

    @tracing.traced(tracing.UPDATE, "import", result=tracing.imported)
    def import_(self, data: Mapping[str, object] | str, *, via: str = "library",
                progress: Callable[[int, int], None] | None = None,
                restore: bool | None = None) -> ImportResult:
        """Load an export. All or nothing; ids already here are skipped, deleted ids are
        never brought back. ``restore``: also put back the backup's state (continuities,
        wraps, items, governed records), which needs a new store opened at
        ``trust_ceiling='operator'``; None (default) restores when it can and says why
        not in the result's ``state``, True refuses the import when it cannot (nothing
        written), False imports the episodes only (as not yet wrapped)."""
        from .portability import import_store

        return import_store(self, data, via=via, progress=progress, restore=restore)


class ScopedStore(Store):
    """A Store view limited to one namespace. Close the parent, not the view."""

    namespace: MemoryNamespace

    def __init__(self, store: Store, namespace: NamespaceLike) -> None:
        # Not Store.__init__: the view reuses the parent's open database and state.
        if isinstance(store, ScopedStore):
            raise ValidationError("scope the parent Store, not another scoped view")
        if not isinstance(store, Store):
            raise ValidationError("ScopedStore needs an open anneal_memory.Store")
        ns = coerce_namespace(namespace, partial=True)
        self.__dict__.update(copy.copy(store.__dict__))
        self.namespace = ns
        self.parent = store
        self.scope = Scope(ns.owner, ns.project)
        self.ns_tag = digest("continuity", ns.to_dict())[:16]
        self._repos = storage.scoped_roles(store._repos, self.scope)
        _seam.register(self, self._repos, self._open_unit)
        self._audit = NamespaceAudit(store.audit_trail, ns.to_dict(),
                                     audit_counter_key(self.ns_tag))

    def __repr__(self) -> str:
        return f"ScopedStore({str(self.path)!r}, {self.namespace.label()!r})"

    def close(self) -> None:
        """A view owns nothing: closing it leaves the parent Store open."""

    @property
    def continuity_path(self) -> Path:
        return sidecar_path(self.path, f".ns-{self.ns_tag}.continuity.md")

    def _audit_entry_count(self) -> int:
        # the entries this namespace caused, counted as they were appended
        return int(self._repos.meta.get_meta(audit_counter_key(self.ns_tag)) or 0)

    def _status_namespace(self) -> dict[str, Any] | None:
        return dict(self.namespace.to_dict())

    def _namespace_totals(self) -> None:
        return None

    def scoped(self, namespace: NamespaceLike) -> ScopedStore:
        """Refused: scope the parent Store (a view of a view would widen nothing)."""
        raise ValidationError("scope the parent Store, not another scoped view")

    def import_(self, data: Mapping[str, object] | str, *, via: str = "library",
                progress: Callable[[int, int], None] | None = None,
                restore: bool | None = None) -> ImportResult:
        """Refused: an export's episodes carry their own namespaces (or none), so
        importing them through a view could write into another namespace."""
        raise GovernanceError("import through the parent Store, not a scoped view: an "
                              "export's namespaces are its own")


class UnscopedView(Store):
    """The root store as a model served from it reads it: only the episodes written
    without a namespace. What a ``MemorySession`` without a namespace recalls through,
    so one user's memory in a shared store never reaches a run that named nobody."""

    namespace = None

    def __init__(self, store: Store) -> None:
        if isinstance(store, (ScopedStore, UnscopedView)):
            raise ValidationError("build the view over the parent Store")
        self.__dict__.update(copy.copy(store.__dict__))
        self.parent = store
        self.scope = Scope(None, None, unscoped_only=True)
        self._repos = storage.scoped_roles(store._repos, self.scope)
        _seam.register(self, self._repos, self._open_unit)

    def __repr__(self) -> str:
        return f"UnscopedView({str(self.path)!r})"

    def scoped(self, namespace: NamespaceLike) -> ScopedStore:
        return ScopedStore(self.parent, namespace)

    def _namespace_totals(self) -> None:
        return None

    def close(self) -> None:
        """A view owns nothing: closing it leaves the parent Store open."""


def _namespaces(store: Store) -> list[NamespaceEntry]:
    """Every namespace that holds episodes, saved wraps, governed records or pending
    reviews in ``store``: ``{"namespace": MemoryNamespace, "episodes", "wraps",
    "records", "pending_reviews"}``, ordered by tenant, user, project, agent. Episodes
    written without a namespace (the root's) are not listed."""
    import json


    if isinstance(store, ScopedStore):
        raise ValidationError("list namespaces on the parent Store, not a scoped view")
    counts: dict[tuple[str, str | None], dict[str, int]] = {}

    def slot(owner: str, project: str | None) -> dict[str, int]:
        return counts.setdefault((owner, project), {"episodes": 0, "wraps": 0, "records": 0,
                                                    "pending_reviews": 0})

    r = roles_of(store)
    with r.read():
        for owner, project, eps, wraps in r.episodes.namespace_counts():
            slot(owner, project).update(episodes=eps, wraps=wraps)
        if r.governance.has_schema():
            for owner, project, records, pending in r.governance.namespace_counts():
                slot(owner, project).update(records=records, pending_reviews=pending)
    out: list[NamespaceEntry] = []
    for (owner, project), n in counts.items():
        try:
            tenant, user, agent = json.loads(owner)
            ns = MemoryNamespace(tenant=tenant, user=user, agent=agent, project=project)
        except (ValueError, TypeError, ValidationError):
            continue  # not a namespace this version writes
        out.append({"namespace": ns, "episodes": n["episodes"], "wraps": n["wraps"],
                    "records": n["records"], "pending_reviews": n["pending_reviews"]})
    return sorted(out, key=lambda d: (d["namespace"].tenant, d["namespace"].user,
                                      d["namespace"].project or "", d["namespace"].agent))
