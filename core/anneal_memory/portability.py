"""JSON export and import of a whole store.

An export carries every episode with its effective trust class (so a round trip never
raises trust), its links, its state key and its wrap state, plus the store's
supersession links and tombstones (ids and hashes only). Import is all or nothing: the
whole document is validated before anything is written, ids already in the store are
skipped, and a deleted id is never brought back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from . import trust as trust_mod
from ._audit_deep import import_hash_entries
from ._identity import episode_id_key, is_canonical_id
from ._import_rules import ImportRules, links_in
from ._inputs import load_json, metadata_text, storable_text
from ._seam import roles_of, unit_of
from .clock import normalize_timestamp, now_iso
from .errors import SupersessionError, ValidationError
from .facts import ChainLink, validate_state_key
from .legacy.formats import adopt_export, is_legacy_export
from .restore import (
    RestoreResult,
    StateSection,
    can_restore,
    check_state,
    legacy_state,
    state_in,
    state_out,
)
from .storage.base import EpisodeRow, Scope
from .types import EpisodeType, coerce_trust

if TYPE_CHECKING:
    from ._unit import Facade

FORMAT = "anneal-memory-export"
VERSION = 1  # the export format's version (``format_version``)


class ExportedEpisode(TypedDict):
    """One episode of an export, with its effective trust and its links."""

    id: str
    timestamp: str
    type: str
    content: str
    source: str
    session_id: str | None
    metadata: object  # the episode's metadata as its JSON decodes (None: none)
    trust: str
    state_key: str | None
    derived_from: list[str]
    superseded_by: str | None
    wrapped: bool
    wrap_id: int | None
    namespace: dict[str, str | None] | None


class AuditHeadOut(TypedDict):
    """The exporting store's newest audit entry, an anchor for the importer's trail."""

    seq: int
    hash: str


class _ExportParts(TypedDict):
    format: str
    format_version: int
    version: str
    anneal_memory_export: bool
    exported_at: str
    store_id: str
    project_name: str
    episode_count: int
    episodes: list[ExportedEpisode]
    supersessions: list[ChainLink]
    tombstones: list[dict[str, object]]
    continuity: str | None
    wraps: list[dict[str, object]]
    associations: list[object]
    consolidate_requires_baton: bool
    meta: dict[str, object]
    audit_head: AuditHeadOut


class _StatePart(TypedDict, total=False):
    state: StateSection


class ExportDocument(_ExportParts, _StatePart):
    """What :func:`export_store` writes (``state``: from the root store only)."""


class _Imported(TypedDict):
    imported: int
    skipped_existing: list[str]
    refused_deleted: list[str]
    ids: list[str]
    tombstones_added: int
    state: RestoreResult


class ImportResult(_Imported, total=False):
    """What :func:`import_store` did (``oversized``: imported episodes longer than
    ``record()`` accepts; ``from_version``: the 1.0.x version a legacy export came from)."""

    oversized: list[str]
    from_version: str


def export_store(store: Facade) -> ExportDocument:
    """Every episode and link of ``store`` as one JSON-ready document (see
    :meth:`Store.export`)."""
    b = roles_of(store)
    with b.read():
        rows = list(b.episodes.all_episodes())
        ids = [r.id for r in rows]
        eff = trust_mod.effective_trust_map(store, ids)
        sup = b.links.supersessions_of(ids)
        der = b.links.derivations_of(ids)
        episodes: list[ExportedEpisode] = []
        for r in rows:
            links = sup.get(r.id, [])
            episodes.append({
                "id": r.id, "timestamp": r.timestamp, "type": r.type, "content": r.content,
                "source": r.source, "session_id": r.session_id,
                "metadata": json.loads(r.metadata) if r.metadata else None,
                "trust": eff.get(r.id, r.trust), "state_key": r.state_key,
                "derived_from": [s for s, _t in der.get(r.id, [])],
                "superseded_by": links[-1][0] if links else None,
                "wrapped": r.wrap_id is not None, "wrap_id": r.wrap_id,
                "namespace": _namespace_out(r.ns_owner, r.ns_project),
            })
        links_out: list[ChainLink] = [{"old_id": o, "new_id": n, "kind": k, "created_at": c}
                     for o, n, k, c in b.links.all_supersessions()]
        tombs = [{**{k: v for k, v in t._asdict().items()
                     if k not in ("trust", "ns_owner", "ns_project")},
                  "namespace": _namespace_out(t.ns_owner, t.ns_project)}
                 for t in b.links.tombstones().values()]
        wraps = [w._asdict() for w in b.wraps.wrap_history(None)]
        status = store.status()
        root = getattr(store, "namespace", None) is None and not getattr(
            store.scope, "unscoped_only", False)
        state = state_out(store) if root else None
        tip = store.audit_trail.tip()
    from ._version import __version__
    from .legacy.formats import wrap_record

    episodes.reverse()  # newest first, as 1.0.2 lists them; import sorts by time
    # what an import into a new store restores besides the episodes (restore.py)
    restores: _StatePart = {"state": state} if state is not None else {}
    return {
        "format": FORMAT, "format_version": VERSION, "version": __version__,
        "anneal_memory_export": True, "exported_at": now_iso(),
        "store_id": store.store_id, "project_name": store.project_name,
        "episode_count": len(episodes), "episodes": episodes, "supersessions": links_out,
        "tombstones": tombs, "continuity": store.load_continuity(),
        "wraps": [{k: v for k, v in wrap_record(w).items() if k != "metrics"} for w in wraps],
        "associations": [],  # retired layer: none are formed
        "consolidate_requires_baton": status.consolidate_requires_baton,
        "meta": {"sessions_produced": status.total_wraps, "format_version": VERSION,
                 "citations_seen": b.meta.get_meta("citations_seen") == "1"},
        **restores,
        "audit_head": {"seq": tip[0], "hash": tip[1]},
    }


def _namespace_out(owner: str | None, project: str | None) -> dict[str, Any] | None:
    """The namespace an episode was written in, as the mapping a view is opened with
    (None: written without one), so an import puts it back where it was."""
    if owner is None:
        return None
    tenant, user, agent = json.loads(owner)
    return {"tenant": tenant, "user": user, "project": project, "agent": agent}


def _namespace_in(value: Any, where: str) -> tuple[str | None, str | None]:
    """``(ns_owner, ns_project)`` from an exported ``namespace`` (validated as a view's)."""
    ns = _namespace_of(value, where)
    return (None, None) if ns is None else (ns.owner, ns.project)


def _namespace_of(value: Any, where: str) -> Any:
    """The ``MemoryNamespace`` of an exported ``namespace`` (None: the root's)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError(f"{where} namespace must be an object with tenant, user, "
                              "project, agent (or null)")
    from ._namespace import coerce_namespace

    return coerce_namespace(value, partial=True, allow_default=True)


def _load(data: Any) -> Any:
    if isinstance(data, (str, bytes)):
        return load_json(data, "the import")
    return data


def _check_version(data: Mapping[str, Any]) -> None:
    # format_version since 2.0 (``version`` is then the package's); ``version`` before
    fmt, version = data.get("format", FORMAT), data.get("format_version", data.get("version", 1))
    if isinstance(version, str) and version.strip().isascii() and version.strip().isdigit() \
            and len(version.strip()) <= 9:
        version = int(version.strip())  # "1" as written by hand
    if fmt != FORMAT:
        raise ValidationError(f"the import's format {str(fmt)[:60]!r} is not {FORMAT!r}: pass "
                              "a file written by 'anneal-memory export'")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1 \
            or version > 10**9:
        shown = "a huge number" if isinstance(version, int) and abs(version) > 10**9 \
            else str(version)[:60]
        raise ValidationError(f"the import's version {shown!r} is not a format "
                              f"version (a whole number such as {VERSION})")
    if version > VERSION:
        raise ValidationError(f"the import is format version {version}, newer than this "
                              f"package reads ({VERSION}): upgrade anneal-memory")


def _check_id(eid: Any, where: str) -> str:
    if not isinstance(eid, str) or not eid.strip():
        raise ValidationError(f"{where} has no usable id")
    storable_text(eid, f"{where} id")
    if not is_canonical_id(eid):
        hint = episode_id_key(eid)
        raise ValidationError(
            f"{where} id {eid[:70]!r} is not canonical: ids are 1 to 64 lower-case letters, "
            "digits, '.', '_' or '-'" + (f" (did you mean {hint[:70]!r}?)"
                                         if is_canonical_id(hint) else ""))
    return eid


def _validate(store: Facade, data: Any) -> list[dict[str, Any]]:
    data = _load(data)
    if is_legacy_export(data):  # written by anneal-memory 1.0.2
        data = adopt_export(dict(data), FORMAT, VERSION)
    if not isinstance(data, Mapping) or not isinstance(data.get("episodes"), list):
        raise ValidationError("the import is not an anneal-memory export: it needs an "
                              "'episodes' list (write one with 'anneal-memory export')")
    _check_version(data)
    out = []
    seen: set[str] = set()
    for i, e in enumerate(data["episodes"]):
        where = f"episode {i}"
        if not isinstance(e, Mapping):
            raise ValidationError(f"{where} is not an object")
        eid = _check_id(e.get("id"), where)
        if eid in seen:
            raise ValidationError(f"{where}: id {eid} appears twice in the import")
        seen.add(eid)
        content = e.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ValidationError(f"{where} ({eid}) has empty content")
        storable_text(content, f"{where} ({eid}) content")
        etype = EpisodeType.coerce(e.get("type", ""))
        ts = normalize_timestamp(e.get("timestamp") or "", field=f"{where} timestamp")
        label = coerce_trust(e.get("trust") or "agent")
        trust_mod.check_ceiling(label, store.trust_ceiling)
        meta = e.get("metadata")
        if meta is not None and not isinstance(meta, Mapping):
            raise ValidationError(f"{where} ({eid}) metadata must be an object")
        source = storable_text(str(e.get("source") or "agent"), f"{where} ({eid}) source")
        session = e.get("session_id")
        if session is not None:
            session = storable_text(str(session), f"{where} ({eid}) session_id")
        key = e.get("state_key") or None
        if key is not None:
            try:
                key = validate_state_key(key)
            except SupersessionError as exc:  # record's check; malformed input here
                raise ValidationError(f"{where} ({eid}) state_key: {exc}") from None
        ns = _namespace_of(e.get("namespace"), where)
        derived = e.get("derived_from") or []
        if not isinstance(derived, list):
            raise ValidationError(f"{where} ({eid}) derived_from must be a list of ids")
        out.append({"index": i, "ns": ns, "id": eid, "timestamp": ts, "type": etype.value, "content": content,
                    "source": source, "session_id": session,
                    "metadata": metadata_text(dict(meta), f"{where} ({eid}) metadata") if meta else None,
                    "trust": label, "state_key": key,
                    "derived_from": [_check_id(x, f"{where} ({eid}) derived_from")
                                     for x in derived],
                    "wrapped": bool(e.get("wrapped")),
                    "wrap_id": _wrap_id(e.get("wrap_id"), where),
                    "ns_owner": ns and ns.owner, "ns_project": ns and ns.project})
    out.sort(key=lambda it: str(it["timestamp"]))  # stored oldest first, whatever the file's order
    return out


def _restored_wrap(it: Mapping[str, Any], wrap_ids: set[int]) -> int | None:
    """The wrap an imported episode belongs to once the backup's wraps are restored
    (0: wrapped by one the backup does not list, as 1.0.2's exports say)."""
    if not it["wrapped"]:
        return None
    return it["wrap_id"] if it["wrap_id"] in wrap_ids else 0


def restore_wrap_ids(state: StateSection) -> set[int]:
    """The wrap numbers a (checked) state section restores."""
    body = state["tables"].get("wraps")
    if body is None or "id" not in body["columns"]:
        return set()
    i = body["columns"].index("id")
    return {v for r in body["rows"] if isinstance(r, list) and len(r) > i
            for v in (r[i],) if isinstance(v, int)}


def _wrap_id(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
        raise ValidationError(f"{where} wrap_id must be a wrap number (or null)")
    return value


def _tombstones_in(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The export's tombstones (ids and hashes of deleted episodes), validated, so an
    import carries the deletions too: an older backup imported later cannot bring one
    back. An export without them (1.0.2's) has none."""
    tombs = doc.get("tombstones")
    if tombs is None:
        return []
    if not isinstance(tombs, list):
        raise ValidationError("the import's 'tombstones' must be a list of objects with an id")
    out = []
    for i, t in enumerate(tombs):
        where = f"tombstone {i}"
        if not isinstance(t, Mapping):
            raise ValidationError(f"{where} is not an object")
        row: dict[str, Any] = {"id": _check_id(t.get("id"), where)}
        row["type"] = EpisodeType.coerce(t.get("type") or "observation").value
        for key in ("timestamp", "removed_at"):
            value = t.get(key)
            row[key] = normalize_timestamp(value, field=f"{where} {key}") if value else ""
        for key in ("content_hash", "reason"):
            value = t.get(key)
            row[key] = storable_text(str(value), f"{where} {key}") if value is not None else ""
        row["scope"] = Scope(*_namespace_in(t.get("namespace"), where))
        out.append(row)
    return out


def _deleted(store: Facade, ids: list[str]) -> set[str]:
    """The ids among ``ids`` that a tombstone covers, compared in canonical form, so an
    id re-spelt (other case, a stray space, a lookalike letter) is still refused."""
    b = roles_of(store)
    exact = set(b.links.tombstones(ids))
    wanted = {episode_id_key(i): i for i in ids}
    folded = {wanted[k] for k in (episode_id_key(t) for t in b.links.tombstones()) if k in wanted}
    return exact | folded


def _carry_tombstones(store: Facade, deletions: list[dict[str, Any]]) -> int:
    """Record the export's deletions this store does not know yet, as deletions (no
    text; the hash is the source store's). An id this store still holds as an episode
    is left alone: an import adds, it never deletes. Returns how many were added."""
    if not deletions:
        return 0
    b = roles_of(store)
    ids = [t["id"] for t in deletions]
    known = _deleted(store, ids) | set(b.episodes.get_episodes(ids, exact=True))
    added = 0
    for t in deletions:
        if t["id"] in known:
            continue
        known.add(t["id"])
        b.within(t["scope"]).links.add_tombstone(
            t["id"], t["type"], t["timestamp"], t["content_hash"], t["removed_at"] or now_iso(),
            t["reason"] or "deleted", "external")
        added += 1
    return added


def import_store(store: Facade, data: Mapping[str, object] | str, *, via: str = "library",
                 progress: Callable[[int, int], None] | None = None,
                 restore: bool | None = None) -> ImportResult:
    """Load an export into ``store``, all or nothing (see :meth:`Store.import_`)."""
    doc = _load(data)
    if is_legacy_export(doc):
        doc = adopt_export(dict(doc), FORMAT, VERSION)
    items = _validate(store, doc)
    deletions = _tombstones_in(doc)
    links = links_in(doc, _check_id)
    b = roles_of(store)
    rules = ImportRules(store)
    state = doc.get("state") if restore is not False else None
    if state is None and restore is not False:
        state = legacy_state(doc)  # an export without one (1.0.2's): its continuity
    if state is not None:
        state = check_state(state)  # malformed: refused before anything is written
    if restore and state is None:
        raise ValidationError("the import carries no state to restore (no 'state' section "
                              "and no continuity): import it without restore")
    imported: list[str] = []
    skipped: list[str] = []
    refused_deleted: list[str] = []
    with unit_of(store) as tx:
        # the export's deletions first: an episode the same document also lists stays out
        carried = _carry_tombstones(store, deletions)
        tombs = _deleted(store, [i["id"] for i in items])
        present = b.episodes.get_episodes([i["id"] for i in items])
        rules.known = {i["id"] for i in items} | set(tombs)
        new: set[str] = set()
        new_rows: list[EpisodeRow] = []
        # the backup's wrap state stands only where its continuity is restored too:
        # otherwise a "wrapped" episode would never be compressed into this store's
        why = can_restore(store) if state is not None else None
        if restore and why is not None:
            raise ValidationError(
                f"cannot restore this backup: {why}; nothing was imported. Restore it into a "
                "new store (a path that holds none), or import it without restore to add "
                "its episodes here as not yet wrapped")
        restoring = state is not None and why is None
        wrap_ids = restore_wrap_ids(state) if restoring and state else set()
        for done, it in enumerate(items, 1):
            if progress is not None and (done % 1000 == 0 or done == len(items)):
                progress(done, len(items))
            if it["id"] in tombs:
                refused_deleted.append(it["id"])
                continue
            if it["id"] in present:
                skipped.append(it["id"])
                continue
            row = EpisodeRow(
                id=it["id"], timestamp=it["timestamp"], type=it["type"], content=it["content"],
                source=it["source"], session_id=it["session_id"], metadata=it["metadata"],
                trust=it["trust"], state_key=it["state_key"],
                wrap_id=_restored_wrap(it, wrap_ids) if restoring else None,
                ns_owner=it["ns_owner"], ns_project=it["ns_project"])
            rules.check_episode(it, row)  # refusal rolls the whole import back
            b.episodes.insert_episode(row)
            new_rows.append(row)
            for src in it["derived_from"]:
                # pinned at the exported class: an import never re-derives (or raises) trust
                b.links.add_derivations(it["id"], [src], pinned_trust=it["trust"])
            imported.append(it["id"])
            new.add(it["id"])
        rules.settle_keys()
        rules.add_links(links, new, set(refused_deleted) | set(tombs))
        restored = (state_in(store, state, tx) if state is not None else
                    {"restored": False, "reason": "the import carries no state" if
                     restore is not False else "not asked to restore"})
        head = doc.get("audit_head")
        tx.audit.append("import", {"count": len(imported), "ids": imported,
                                   "state_restored": restored["restored"],
                                   **({"source_audit_head": head}
                                      if isinstance(head, Mapping) else {}),
                                   "skipped": len(skipped),
                                   "refused_deleted": refused_deleted,
                                   "tombstones": carried, "via": via},
                        actor="operator")
        # each imported episode's content hash, type, trust and namespace, so the deep
        # verify covers imported episodes as it covers recorded ones
        for data in import_hash_entries(store, new_rows):
            tx.audit.append("import_hashes", data, actor="operator")
    out: ImportResult = {"imported": len(imported), "skipped_existing": skipped,
           "refused_deleted": refused_deleted, "ids": imported, "tombstones_added": carried,
           "state": restored}
    bound = getattr(store, "max_episode_chars", None)
    if bound is not None:
        # kept whole (a 1.0.2 store had no bound), and named: record() would refuse them,
        # and a wrap or a memory block shows them shortened
        big = [r.id for r in new_rows if len(r.content) > bound]
        if big:
            out["oversized"] = big
    if "legacy" in doc:
        out["from_version"] = doc["legacy"]["from_version"]
    return out
