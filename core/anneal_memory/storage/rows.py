"""Named rows that cross the storage seam.

Each is a ``NamedTuple``: a caller reads its fields by name (``link.new_id``), and one
written before the rows had names, unpacking them positionally, reads the same values
(so the change of type changed no caller's behaviour). The episode row itself
(:class:`~.base.EpisodeRow`) is a dataclass in ``base``.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypedDict

from .._audit_chain import AuditEntry as AuditEntry  # the chain's entry, one definition

# -- the audit chain, governance and vector rows (storage/audit_sql.py, governance_sql.py,
#    vectors.py)

class GovernedVersionRow(NamedTuple):
    """One immutable version of a governed record as stored: its id, its number and its
    body (the record's JSON object, which governance validates into its record type)."""

    record_id: str
    version: int
    body: dict[str, object]


class GovernedCurrentRow(NamedTuple):
    """A governed memory's current version in the projection (``record_id`` None once
    it is deleted); ``hidden``: left out of display views."""

    record_id: str | None
    version: int
    state: str
    hidden: bool


class GovernedVisibleRow(NamedTuple):
    """An active current version a namespace may see: its body, and whether it is
    hidden from display views."""

    body: dict[str, object]
    hidden: bool


class GovernedTombstoneRow(NamedTuple):
    """A forgotten memory's tombstone: the deletion receipt it keeps (a JSON object)."""

    memory_id: str
    receipt: dict[str, object]


class ReviewRow(NamedTuple):
    """One item of the governed review queue; ``candidate``: the candidate's JSON object."""

    review_id: str
    memory_id: str
    ns_key: str
    candidate: dict[str, object]
    reason: str
    status: str
    created_at: str
    decided_at: str | None
    decided_by: str | None
    record_id: str | None


class ErasedCounts(NamedTuple):
    """The per-namespace rows an erasure removed, by table, and the tombstones it took
    the owner off (``meta``: the per-namespace meta keys, when one project is erased)."""

    items: int
    pattern_history: int
    drift_probes: int
    wraps: int
    tombstones: int
    meta: int = 0



class MetaEntry(NamedTuple):
    """One metadata key and its value."""

    key: str
    value: str


class NamespaceCount(NamedTuple):
    """What one namespace holds: its episodes and its saved wraps."""

    owner: str
    project: str | None
    episodes: int
    wraps: int


class DayActivity(NamedTuple):
    """One UTC day of a namespace: episodes recorded and wraps saved."""

    day: str
    episodes: int
    wraps: int


class LinkTablesUsed(NamedTuple):
    """Whether the database holds any supersession link, any derivation."""

    supersessions: bool
    derivations: bool


class Successor(NamedTuple):
    """A supersession seen from the old episode: what replaced it, how, when."""

    new_id: str
    kind: str
    created_at: str


class Predecessor(NamedTuple):
    """A supersession seen from the new episode: what it replaced, and how."""

    old_id: str
    kind: str


class LinkRow(NamedTuple):
    """One supersession link whole."""

    old_id: str
    new_id: str
    kind: str
    created_at: str


class RemovedLink(NamedTuple):
    """A supersession link a delete took away."""

    old_id: str
    new_id: str
    kind: str


class Source(NamedTuple):
    """One source an episode was derived from; ``removed_trust``: the trust it had when
    it was removed (None while it exists)."""

    source_id: str
    removed_trust: str | None


class DerivationRow(NamedTuple):
    """One derivation whole: ``episode_id`` was derived from ``source_id``."""

    episode_id: str
    source_id: str
    removed_trust: str | None


class WrapCounts(NamedTuple):
    """A namespace's saved wraps: how many, and when the last completed."""

    saved: int
    last_at: str | None


class WrapTotals(NamedTuple):
    """Every namespace's wraps together (the root's too)."""

    saved: int
    last_at: str | None
    open: int
    namespaces: int


class ItemRow(NamedTuple):
    """One keyed item of a collection (a framework's state)."""

    seq: int
    collection: str
    key: str
    value: str
    metadata: str | None
    created_at: str
    updated_at: str


class CollectionCount(NamedTuple):
    """An item collection and how many items it holds."""

    collection: str
    items: int


class TextCell(NamedTuple):
    """One stored text field besides the episodes (erasure walks them): its table, the
    values of the row's key columns, the column and the text."""

    table: str
    key: tuple[object, ...]
    column: str
    text: str


class GovernedCount(NamedTuple):
    """What one namespace holds of the governed runtime."""

    owner: str
    project: str | None
    records: int
    pending_reviews: int


class AuditTip(NamedTuple):
    """The last entry of the audit chain's database copy (0 and 64 zeros when empty)."""

    seq: int
    hash: str


class AuditDigest(NamedTuple):
    """One entry of the chain's database copy by its hash; ``compacted``: only the hash
    is kept there (its text is in the audit files)."""

    seq: int
    hash: str
    compacted: bool


class AuditRowValues(NamedTuple):
    """One audit entry as its column values, its data still JSON text."""

    seq: int
    ts: str
    actor: str
    event: str
    data: str
    prev_hash: str
    hash: str


class GovernedEvent(NamedTuple):
    """One event of the governed runtime's history, in commit order (the replay source)."""

    kind: str
    memory_id: str
    ns_key: str
    ref: str


class GovernedVersion(NamedTuple):
    """One immutable version of a governed record: its payload digest and its body."""

    payload_digest: str
    body: dict[str, Any]


# ------------------------------------------------ the Links, Wraps and Episodes roles' rows

class TombstoneRow(NamedTuple):
    """What a removed episode leaves: its id, type and time, its content's hash, when and
    why it was removed, the trust it had, and the namespace it was written in."""

    id: str
    type: str
    timestamp: str
    content_hash: str
    removed_at: str
    reason: str
    trust: str | None
    ns_owner: str | None
    ns_project: str | None


class OpenWrapRow(NamedTuple):
    """The wrap in progress: its id, start, token, preparing session, the episodes it
    froze and the day it was prepared for (``_asdict()``: the record 1.0.2 gave)."""

    id: int
    started_at: str
    token: str
    session_id: str | None
    episode_ids: list[str]
    today: str


class WrapRow(NamedTuple):
    """One saved wrap: its fields, in order, are the wrap history record the public API
    returns (``_asdict()``)."""

    id: int
    started_at: str
    wrapped_at: str | None
    chars: int | None
    episodes_compressed: int | None
    metrics: dict[str, object]
    session_id: str | None


class Grounding(TypedDict, total=False):
    """One rung a named pattern earned (``pattern_grounding()``): the level, the day, the
    grounding episodes' ids and how the citation was made (``quoted`` / ``bare``; absent
    from rungs saved before it was kept)."""

    level: int
    date: str
    ids: list[str]
    rule: str


class PatternRow(NamedTuple):
    """A pattern's level record in one namespace: its level and high-water mark, when it
    was first and last grounded and last saved, the explanations that graduated it and
    the grounding of each rung it earned."""

    name: str
    level: int
    max_level_reached: int
    first_seen_at: str
    last_seen_at: str | None
    last_saved_at: str
    explanations: list[str]
    grounding: list[Grounding]


class ProbeRow(NamedTuple):
    """A drift probe (a pattern that must stay at ``min_level``, or a fact that must stay
    in the text, optionally in one ``section``) and the verdict of the last save that
    checked it."""

    id: str
    kind: str
    pattern: str | None
    min_level: int | None
    fact: str | None
    section: str | None
    created_at: str
    last_status: str | None = None
    last_detail: str | None = None
    last_wrap_id: int | None = None


class WordCounts(NamedTuple):
    """How many episodes the filters see, and how many of them hold each word (counted
    up to a cap): the document frequencies ranked recall weighs words by."""

    total: int
    per_word: dict[str, int]
