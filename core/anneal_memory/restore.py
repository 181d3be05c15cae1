"""The store's state beyond its episodes, carried by a JSON export so that an import
into a new store restores it: each namespace's continuity, the wrap history (and an open
wrap), pattern history, drift probes, item collections (crystals, spores, outcomes, chat
histories), governed records with their history, reviews and receipts, and the settings
(section schema, baton policy) kept as metadata.

``state_out`` writes the ``state`` section; ``state_in`` restores it. A restore is all or
nothing and only into a store that holds none of that state yet (a new store: the
backup's continuity is never put over one the store already has), and only by a store
opened at the operator trust ceiling: the continuity and governed records are what the
immune system and the write gate vouch for, so only the operator may restore them from a
file. Otherwise the import takes the episodes and the result says why the state was left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict, cast

from ._seam import roles_of
from .errors import ValidationError
from .storage.pg_copy import BLOBS, GOV_TABLES, TABLES

if TYPE_CHECKING:
    from ._unit import Facade, UnitOfWork

#: the tables a state section carries (episodes, links and tombstones go through the
#: import's own rules; the audit trail stays the target's, anchored to the source's head)
STATE_TABLES = ("wraps", "pattern_history", "drift_probes", "items")
#: metadata that is the database's own identity or bookkeeping, never restored
_OWN_META_PREFIXES = ("schema_version", "application", "store_id", "audit_", "created_at",
                      "staged_blob:", "pending_blob:", "erased_blob:")
STATE_FORMAT = 1


class StateTable(TypedDict):
    """One table of a state section: its column names and its rows' values."""

    columns: list[str]
    rows: list[list[object]]


class _StateParts(TypedDict):
    format: int
    tables: dict[str, StateTable]
    meta: dict[str, str]
    continuities: dict[str, str]


class StateSection(_StateParts, total=False):
    """An export's ``state`` section (``governed``: the store had the governed runtime's
    tables; absent in the state a 1.0.2 export carries)."""

    governed: bool


class _Restored(TypedDict):
    restored: bool


class RestoreResult(_Restored, total=False):
    """What :func:`state_in` restored: ``rows`` per table (and ``continuities``), or the
    ``reason`` it restored nothing."""

    reason: str
    rows: dict[str, int]


def _table(name: str) -> tuple[str, str, str]:
    return next(t for t in [*TABLES, *GOV_TABLES] if t[0] == name)


def state_out(store: Facade) -> StateSection:
    """The ``state`` section of an export (inside the export's read transaction)."""
    b = roles_of(store)
    tables: dict[str, StateTable] = {}
    for name in STATE_TABLES + (tuple(t[0] for t in GOV_TABLES) if b.tables.governed() else ()):
        cols = _table(name)[1]
        tables[name] = {"columns": [c.strip() for c in cols.split(",")],
                        "rows": b.tables.rows(name)}
    meta = {k: v for k, v in sorted(b.meta.meta_rows()) if not k.startswith(_OWN_META_PREFIXES)}
    blobs = {}
    for name in b.tables.blob_names():
        if name.endswith(BLOBS[0]):  # continuities (a baton's holder is not state)
            view = _view_of_blob(store, name)
            text = view.load_continuity() if view is not None else None
            if text is not None:
                blobs[name] = text
    return {"format": STATE_FORMAT, "tables": tables, "meta": meta, "continuities": blobs,
            "governed": b.tables.governed()}


def check_state(state: object) -> StateSection:
    """``state`` as an import reads it, checked whole (tables, columns, row widths, meta
    and continuity names) before anything is written: ValidationError otherwise."""
    if not isinstance(state, Mapping) or not isinstance(state.get("tables"), Mapping):
        raise ValidationError("the import's 'state' must be an object with 'tables' (as "
                              "'anneal-memory export' writes it)")
    fmt = state.get("format", STATE_FORMAT)
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > STATE_FORMAT:
        raise ValidationError(f"the import's state format {str(fmt)[:20]!r} is newer than "
                              f"this package reads ({STATE_FORMAT}): upgrade anneal-memory")
    known = set(STATE_TABLES) | {t[0] for t in GOV_TABLES}
    for name, body in state["tables"].items():
        if name not in known:
            raise ValidationError(f"the import's state has an unknown table {str(name)[:40]!r}")
        want = [c.strip() for c in _table(name)[1].split(",")]
        if not isinstance(body, Mapping) or body.get("columns") != want \
                or not isinstance(body.get("rows"), list) \
                or not all(isinstance(r, list) and len(r) == len(want) for r in body["rows"]):
            raise ValidationError(f"the import's state table {name!r} must hold 'columns' "
                                  f"{want} and 'rows' of that many values each")
    for key in ("meta", "continuities"):
        value = state.get(key) or {}
        if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise ValidationError(f"the import's state {key!r} must map names to text")
    for name in (state.get("continuities") or {}):
        if not (name == BLOBS[0] or (name.startswith(".ns-") and name.endswith(BLOBS[0]))
                ) or "/" in name or len(name) > 80:
            raise ValidationError(f"the import's state names a continuity {name[:80]!r} "
                                  "that is not one a store writes")
    # checked above, key by key, in ways the type system cannot follow
    return cast(StateSection, dict(state))


def holds_state(store: Facade) -> str | None:
    """What state the store already holds (None: none, a restore may go ahead)."""
    b = roles_of(store)
    for name in STATE_TABLES:
        if b.tables.count(name):
            return name
    if b.tables.governed() and b.tables.count("gov_records"):
        return "governed records"
    if any(b.meta.read_blob(n) is not None for n in b.tables.blob_names() if n.endswith(BLOBS[0])):
        return "a continuity"
    return None


def can_restore(store: Facade) -> str | None:
    """Why a backup's state may not be restored into ``store`` (None: it may)."""
    if store.trust_ceiling != "operator":
        return ("the continuity, wraps and governed records are restored only by a store "
                "opened with trust_ceiling='operator' (the CLI's import is)")
    taken = holds_state(store)
    if taken is not None:
        return (f"this store already holds {taken}: a backup's state is restored only into a "
                "new store")
    return None


def legacy_state(doc: Mapping[str, object]) -> StateSection | None:
    """The state an export without a ``state`` section (1.0.2's) carries: its
    continuity and baton policy."""
    text = doc.get("continuity")
    if not isinstance(text, str) or not text.strip():
        return None
    meta = {}
    if isinstance(doc.get("consolidate_requires_baton"), bool):
        meta["consolidate_requires_baton"] = "1" if doc["consolidate_requires_baton"] else "0"
    return {"format": STATE_FORMAT, "tables": {}, "meta": meta,
            "continuities": {BLOBS[0]: text}}


def state_in(store: Facade, state: object, tx: UnitOfWork) -> RestoreResult:
    """Inside the import's unit of work ``tx``, after its episodes: restore ``state``
    (each continuity staged in ``tx``, put in place after the commit); returns what was
    restored, or why not."""
    doc = check_state(state)
    why = can_restore(store)
    if why is not None:  # an import that was not asked to restore: its episodes went in
        return {"restored": False,
                "reason": f"{why}; its episodes were imported as not yet wrapped"}
    b = roles_of(store)
    done: dict[str, int] = {}
    if doc.get("governed") or any(n.startswith("gov_") for n in doc["tables"]):
        b.tables.create_governance_schema()  # inside the import's transaction
    for name, body in doc["tables"].items():
        done[name] = b.tables.insert(name, body["rows"])
    for key, value in (doc.get("meta") or {}).items():
        if not key.startswith(_OWN_META_PREFIXES):
            b.meta.set_meta(key, value)
    for name, text in (doc.get("continuities") or {}).items():
        view = _view_of_blob(store, name)
        if view is None:
            continue
        tx.stage_continuity(text, view)
        done.setdefault("continuities", 0)
        done["continuities"] += 1
    return {"restored": True, "rows": done}


def _view_of_blob(store: Facade, name: str) -> Facade | None:
    """The store or namespace view whose continuity is blob ``name`` (None: no namespace
    of this store has that tag, e.g. one erased since)."""
    if name == BLOBS[0]:
        return store
    from ._namespace import MemoryNamespace
    from ._unit import continuity_blob

    for owner in roles_of(store).meta.owners():
        for project in roles_of(store).meta.owner_projects(owner):
            tenant, user, agent = json.loads(owner)
            view = store.scoped(MemoryNamespace(tenant=tenant, user=user, agent=agent,
                                                project=project))
            if continuity_blob(view.path, view.continuity_path) == name:
                return view
    return None
