"""Episode writes as a service: a record's checks, its staging, the group commit and the
audit entry, in one place.

``Store.record`` (and ``record_many``) call, in this order:

1. :func:`draft` checks the caller's arguments (a typed error, nothing written) and gives
   an :class:`EpisodeDraft`;
2. inside the caller's own transaction (``store.batch()``, ``record_many``) :func:`insert`
   writes the draft through that unit of work; else :func:`record_grouped` queues it for
   the store's group commit, which writes it with its neighbours in one transaction: a
   draft that checks nothing against the store (no link, key or source) is staged first
   (:func:`stage_plain`: its row and audit entry, out of the commit's way) and written in
   one statement each for the batch's ids, rows and entries (:func:`write_plain_run`);
   any other draft goes through :func:`insert` under its own savepoint.

Every write goes through a :class:`~._unit.UnitOfWork` of the store or view that records
(its repositories carry the view's namespace); nothing here reaches below the seam.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, cast

from . import facts, trust
from ._inputs import check_episode_size, metadata_text, storable_text
from ._lazy import id_token, sha256_hex
from ._seam import unit_of
from ._unit import Ground, UnitOfWork
from .clock import normalize_timestamp, now_iso
from .episode_rows import episode
from .errors import ValidationError
from .storage.base import EpisodeRow
from .types import Episode, EpisodeType, coerce_trust

if TYPE_CHECKING:
    from ._audit_chain import StagedEntry
    from .group_commit import GroupCommit

#: metadata key reserved for the namespace (kept in columns since schema 2)
RESERVED_METADATA_KEY = "_anneal_ns"
#: the actors an audit entry names; any other source records as the agent's
ACTORS = ("agent", "operator", "system")


@dataclass
class EpisodeDraft:
    """One checked ``record()``: what the episode will hold, before it has an id.

    ``row`` and ``entry`` are filled by :func:`stage_plain` for a draft written with its
    group commit's batch (its row under a new id, and its staged audit entry)."""

    content: str
    type: str
    source: str
    metadata: str | None
    timestamp: str
    supersedes: list[str]
    state_key: str | None
    trust: str
    derived_from: list[str]
    row: EpisodeRow | None = field(default=None, repr=False)
    entry: StagedEntry | None = field(default=None, repr=False)

    @property
    def plain(self) -> bool:
        """It checks nothing against the store: no link, state key or source."""
        return not (self.supersedes or self.state_key or self.derived_from)


class Writer(Ground, Protocol):
    """What the write path needs of the Store (or scoped view) that records."""

    session_id: str | None
    max_episode_chars: int | None


def draft(writer: Writer, content: object, episode_type: object, source: object = "agent",
          metadata: object = None, timestamp: object = None, supersedes: object = None,
          state_key: object = None, trust_label: object = "agent",
          derived_from: object = None) -> EpisodeDraft:
    """``record()``'s arguments checked and normalised; refused with a typed error
    (nothing written): a read_only store, empty or oversized content, an unknown type,
    a bad source, metadata or timestamp, a trust class above the store's ceiling, a
    malformed link list or state key."""
    if writer.read_only:
        from .errors import ReadOnlyStoreError

        raise ReadOnlyStoreError("this store was opened read_only: reopen it to record")
    content = storable_text(content, "content")
    check_episode_size(content, writer.max_episode_chars)
    etype = EpisodeType.coerce(episode_type)
    if not isinstance(source, str) or not source.strip():
        raise ValidationError("source must be a non-empty string such as 'agent'")
    storable_text(source, "source")
    meta_text: str | None = None
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise ValidationError("metadata must be a dict (or None)")
        if RESERVED_METADATA_KEY in metadata:
            raise ValidationError(f"metadata key {RESERVED_METADATA_KEY!r} is reserved "
                                  "for the namespace: rename your key")
        meta_text = metadata_text(metadata, "metadata")
    ts = now_iso() if timestamp is None else normalize_timestamp(timestamp)
    label = coerce_trust(trust_label)
    trust.check_ceiling(label, writer.trust_ceiling)
    return EpisodeDraft(
        content=content, type=etype.value, source=source.strip(), metadata=meta_text,
        timestamp=ts, supersedes=facts.normalize_ids(supersedes, "supersedes"),
        state_key=facts.validate_state_key(state_key) if state_key is not None else None,
        trust=label, derived_from=facts.normalize_ids(derived_from, "derived_from"))


def id_candidate(content: str, ts: str) -> str:
    """A new episode id (8 hex digits): the caller checks that no episode or tombstone
    holds it yet."""
    return sha256_hex(f"{content}\x00{ts}\x00{id_token()}".encode())[:8]


def record_entry(writer: Ground, d: EpisodeDraft, eid: str,
                 replaced_by_key: Sequence[str] = ()) -> tuple[dict[str, object], str]:
    """The data and actor of the audit entry that records the draft ``d`` as ``eid``."""
    return {
        "episode_id": eid, "type": d.type, "trust": d.trust, "source": d.source,
        "content_hash": writer.audit_trail.hash_content(d.content),
        **({"supersedes": d.supersedes} if d.supersedes else {}),
        **({"state_key": d.state_key, "replaced": list(replaced_by_key)} if d.state_key else {}),
        **({"derived_from": d.derived_from} if d.derived_from else {}),
    }, d.source if d.source in ACTORS else "agent"


def insert(writer: Writer, tx: UnitOfWork, d: EpisodeDraft) -> Episode:
    """Write the draft through ``tx`` (a unit of ``writer``: its repositories carry the
    writer's namespace): its sources, links and state key checked against the store
    first, then the row, its links and its audit entry."""
    if d.derived_from:
        known = tx.episodes.get_episodes(d.derived_from)
        missing = [i for i in d.derived_from if i not in known]
        if missing:
            raise ValidationError(f"derived_from names unknown episode(s) {missing}: "
                                  "record the sources first")
    eid = id_candidate(d.content, d.timestamp)
    while tx.episodes.id_taken(eid):
        eid = id_candidate(d.content, d.timestamp)
    row = EpisodeRow(id=eid, timestamp=d.timestamp, type=d.type, content=d.content,
                     source=d.source, session_id=writer.session_id, metadata=d.metadata,
                     trust=d.trust, state_key=d.state_key, wrap_id=None,
                     ns_owner=writer.scope.owner, ns_project=writer.scope.project)
    # validate links against the store before anything is written
    if d.supersedes:
        facts.validate_explicit_links(writer, row, d.supersedes, d.derived_from)
    if d.state_key:
        facts.check_key_trust(writer, row, d.state_key,
                              facts.new_episode_trust(writer, d.trust, d.derived_from))
    tx.episodes.insert_episode(row)
    if d.derived_from:
        tx.links.add_derivations(eid, d.derived_from)
    for old in d.supersedes:
        tx.links.add_supersession(old, eid, "explicit", now_iso())
    replaced_by_key = facts.apply_state_key(writer, row) if d.state_key else []
    data, actor = record_entry(writer, d, eid, replaced_by_key)
    tx.audit.append("record", data, actor=actor)
    effective = (trust.effective_trust_map(writer, [eid]).get(eid, d.trust)
                 if d.derived_from else d.trust)
    return episode(row, derived_from=d.derived_from, trust_value=effective)


def write_one(writer: Writer, d: EpisodeDraft) -> Episode:
    """The group commit's writer of one draft: :func:`insert` through a unit of
    ``writer`` that joins the commit's open transaction."""
    with unit_of(writer) as tx:
        return insert(writer, tx, d)


def stage_plain(writer: Writer, d: EpisodeDraft) -> None:
    """Before a draft that checks nothing against the store queues for its group
    commit: its row and its audit entry, under a new id the commit still checks (in the
    caller's thread, while the batch before it is being written)."""
    eid = id_candidate(d.content, d.timestamp)
    d.row = EpisodeRow(
        id=eid, timestamp=d.timestamp, type=d.type, content=d.content, source=d.source,
        session_id=writer.session_id, metadata=d.metadata, trust=d.trust, state_key=None,
        wrap_id=None, ns_owner=writer.scope.owner, ns_project=writer.scope.project)
    _stage_entry(writer, d, eid)


def _stage_entry(writer: Writer, d: EpisodeDraft, eid: str) -> None:
    audit = writer.audit_trail
    if audit.enabled:
        data, actor = record_entry(writer, d, eid)
        d.entry = audit.stage("record", data, actor=actor)


def write_plain_run(pairs: Sequence[tuple[Writer, EpisodeDraft]]) -> list[EpisodeRow]:
    """Write a group commit's run of drafts staged by :func:`stage_plain`, each
    ``(store or view, draft)`` of one database, through one unit of the root store (the
    rows carry their own namespaces): the rows and audit entries :func:`insert` writes
    one by one, in the same order, in one statement each for the ids' check, the rows
    and the entries."""
    first = pairs[0][0]
    root = cast("Writer", getattr(first, "parent", first))
    with unit_of(root, appends_only=True) as tx:
        episodes = tx.episodes
        rows = [cast(EpisodeRow, d.row) for _w, d in pairs]
        taken = (episodes.ids_taken([r.id for r in rows]) if len(rows) > 1
                 else {rows[0].id} if episodes.id_taken(rows[0].id) else set())
        seen: set[str] = set()
        for i, (writer, d) in enumerate(pairs):
            if rows[i].id in taken or rows[i].id in seen:  # held already: draw another
                while rows[i].id in taken or rows[i].id in seen or episodes.id_taken(rows[i].id):
                    rows[i] = replace(rows[i], id=id_candidate(d.content, d.timestamp))
                _stage_entry(writer, d, rows[i].id)
            seen.add(rows[i].id)
        episodes.insert_episodes(rows)
        entries = [d.entry for _w, d in pairs if d.entry is not None]
        if entries:
            tx.audit.append_staged(entries)
    return rows


def record_grouped(writer: Writer, d: EpisodeDraft,
                   group: GroupCommit[Writer, EpisodeDraft, Episode | EpisodeRow]) -> Episode:
    """Write the draft with the others queued on ``group`` (the store's group commit);
    returns once the commit that holds it is durable."""
    queue = group.record
    if not d.plain:
        return cast(Episode, queue(writer, d, write_one))  # write_one returns the Episode
    stage_plain(writer, d)
    out = queue(writer, d, write_one, write_plain_run)
    # written with its batch: the row, made the episode here, out of the commit's way
    return out if isinstance(out, Episode) else episode(out, trust_value=d.trust)
