"""The operator's instruments for judging graduated patterns: each pattern's level across
wraps, the review worklist, drift verdicts per wrap, and demotion or retirement by hand.

The library proves grounding; whether a grounded claim is true stays the operator's
call. Every save records, with its wrap, the level each named pattern landed at and
why (``record_wrap_patterns``). From that record come the pattern timeline and the
worklist: every pattern a save graduated to 2x or higher with a validated citation,
since the operator last marked the worklist reviewed. An operator's hand demotion or
retirement edits the continuity and the store's pattern record in one transaction, so
the next save measures the pattern against the lowered level (or as new).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from .._inputs import storable_text, whole_number
from .._seam import roles_of, unit_of
from .._unit import require_writable
from ..clock import now_iso
from ..continuity.parse import parse_pattern_line, parse_sections, pattern_key
from ..errors import ValidationError, WrapInProgressError
from ..storage.common import ns_meta_key
from ..storage.rows import PatternRow
from .graduation import LineOutcome, rewrite_line
from .probes import ProbeVerdict

if TYPE_CHECKING:
    from ..store import Store

#: meta keys (per namespace): the newest wrap the operator reviewed, and hand edits
REVIEWED_KEY = "worklist_reviewed_through"
EDITS_KEY = "pattern_operator_edits"
#: hand edits kept for the timeline (the audit chain keeps every one)
MAX_EDITS = 500


class PatternRecord(TypedDict):
    """What a save did to one named pattern (its highest line), kept in the wrap's
    metrics (``patterns``)."""

    name: str
    key: str
    section: str
    claimed: int
    level: int
    prior: int | None
    events: list[str]
    cited: list[str]
    grounding: list[str]
    contradicts: list[str]
    no_contradicts: bool
    cap_reason: str | None
    line: str


class DriftRecord(TypedDict):
    """One probe a save checked, kept in the wrap's metrics (``drift_probes``)."""

    id: int | str
    status: str
    detail: str | None


class DriftOfWrap(TypedDict):
    """The drift verdicts of one saved wrap (``counts``: a wrap saved before ``probes``
    were kept per probe has its verdict counts only)."""

    wrap_id: int
    wrapped_at: str | None
    probes: list[DriftRecord]
    counts: dict[str, int] | None


class WorklistMark(TypedDict):
    """What :func:`mark_worklist_reviewed` marked."""

    through_wrap: int
    previous: int
    items: int


#: what :func:`demote_pattern` did (``from`` is a keyword: the functional form)
Demoted = TypedDict("Demoted", {"name": str, "from": int, "to": int})
#: what :func:`retire_pattern` did
Retired = TypedDict("Retired", {"name": str, "from": int, "lines_removed": int})


class TimelineDict(TypedDict):
    """:meth:`TimelinePoint.to_dict`."""

    wrap_id: int | None
    at: str
    level: int
    events: list[str]
    claimed: int | None
    cap_reason: str | None


class CitedDict(TypedDict):
    """A :class:`CitedEpisode` as a dict."""

    id: str
    content: str | None
    trust: str | None
    type: str | None
    timestamp: str | None
    removed: str | None


class WorklistDict(TypedDict):
    """:meth:`WorklistItem.to_dict`."""

    wrap_id: int
    wrapped_at: str
    name: str
    level: int
    prior: int | None
    cited: list[CitedDict]
    contradicts: list[str]
    no_contradicts: bool
    current_level: int | None
    events: list[str]
    line: str | None
    stance: str


# ---------------------------------------------------------------------- recorded at a save

def _events(o: LineOutcome) -> list[str]:
    out = []
    if o.cap_reason and o.cap_reason.startswith("revoked"):
        out.append("revoked")
    if o.demoted or o.bare_demoted:
        out.append("demoted")
    if o.uncorroborated:
        out.append("uncorroborated")
    if o.validated and not o.uncorroborated and o.final_level >= 2 \
            and o.final_level > (o.prior_level or 0):
        out.append("graduated")
    if o.capped and o.final_level < o.line.level and "revoked" not in out:
        out.append("capped")
    if o.carried:
        out.append("carried")
    if o.prior_level is None:
        out.append("new")
    return out or ["held"]


def record_wrap_patterns(outcomes: Iterable[LineOutcome]) -> list[PatternRecord]:
    """What a save did to each named pattern (its highest line), for the wrap's record."""
    best: dict[str, LineOutcome] = {}
    for o in outcomes:
        if o.line.key and (o.line.key not in best or o.final_level > best[o.line.key].final_level):
            best[o.line.key] = o
    return [{
        "name": o.line.name, "key": key, "section": o.line.section, "claimed": o.line.level,
        "level": o.final_level, "prior": o.prior_level, "events": _events(o),
        "cited": [c.episode_id for c in o.line.citations], "grounding": list(o.grounding_ids),
        "contradicts": list(o.line.contradicts), "no_contradicts": o.line.no_contradicts,
        "cap_reason": o.cap_reason, "line": o.new_text,
    } for key, o in best.items()]


def record_wrap_drift(probe_rows: Sequence[Mapping[str, object]],
                      checked: Sequence[ProbeVerdict]) -> list[DriftRecord]:
    """Each probe this save checked, with its verdict and detail (never the probe text)."""
    detail = {str(r["id"]): d if isinstance(d, str) else None
              for r in probe_rows for d in (r.get("last_detail"),)}
    return [{"id": p["id"], "status": p["status"], "detail": detail.get(str(p["id"]))}
            for p in checked]


# ---------------------------------------------------------------------- read by the operator

@dataclass(frozen=True)
class TimelinePoint:
    """A pattern's level after one wrap (``wrap_id``) or one hand edit (``operator``)."""

    wrap_id: int | None
    at: str
    level: int
    events: list[str]
    claimed: int | None = None
    cap_reason: str | None = None

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)

    def to_dict(self) -> TimelineDict:
        """The point as a dict (its fields, in order)."""
        return {"wrap_id": self.wrap_id, "at": self.at, "level": self.level,
                "events": list(self.events), "claimed": self.claimed,
                "cap_reason": self.cap_reason}


def _saved_wraps(store: Store) -> list[dict[str, Any]]:
    return list(reversed(store.wrap_history()))  # oldest first


def _edits(store: Store) -> list[dict[str, Any]]:
    raw = roles_of(store).meta.get_meta(ns_meta_key(EDITS_KEY, store.scope))
    try:
        data = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def pattern_timeline(store: Store) -> dict[str, list[TimelinePoint]]:
    """Each named pattern's level across the saved wraps (and hand edits), oldest first,
    keyed by its display name. Wraps saved before this record existed have no points."""
    points: dict[str, list[tuple[str, TimelinePoint]]] = {}
    names: dict[str, str] = {}
    for w in _saved_wraps(store):
        for p in (w.get("metrics") or {}).get("patterns") or []:
            names[p["key"]] = p["name"]
            points.setdefault(p["key"], []).append((str(w["wrapped_at"]), TimelinePoint(
                w["id"], str(w["wrapped_at"]), int(p["level"]), list(p.get("events") or []),
                p.get("claimed"), p.get("cap_reason"))))
    for e in _edits(store):
        key = str(e.get("key", ""))
        if key in points or key in names:
            ev = "operator-retired" if e.get("to") is None else "operator-demoted"
            points.setdefault(key, []).append((str(e.get("at")), TimelinePoint(
                None, str(e.get("at")), int(e.get("to") or 0), [ev], e.get("from"))))
    return {names.get(k, k): [pt for _at, pt in sorted(v, key=lambda x: x[0])]
            for k, v in sorted(points.items())}


@dataclass(frozen=True)
class CitedEpisode:
    """An episode a graduation cited, as it stands now (``content`` None once removed)."""

    id: str
    content: str | None
    trust: str | None
    type: str | None
    timestamp: str | None
    removed: str | None = None  # "deleted" or "pruned"

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


@dataclass(frozen=True)
class WorklistItem:
    """One graduation for the operator to judge: true, and consistent with what is Proven?"""

    wrap_id: int
    wrapped_at: str
    name: str
    level: int
    prior: int | None
    cited: list[CitedEpisode]
    contradicts: list[str]
    no_contradicts: bool
    current_level: int | None = None
    events: list[str] = field(default_factory=list)
    line: str | None = None  # the line as that save wrote it

    @property
    def stance(self) -> str:
        """``contradicts``, ``no-contradicts`` or ``none`` (no stance was declared)."""
        return "contradicts" if self.contradicts else "no-contradicts" if self.no_contradicts \
            else "none"

    def __getitem__(self, name: str) -> Any:
        return self.stance if name == "stance" else getattr(self, name)

    def to_dict(self) -> WorklistDict:
        """The item as a dict (its fields, the cited episodes as dicts, and ``stance``)."""
        return {"wrap_id": self.wrap_id, "wrapped_at": self.wrapped_at, "name": self.name,
                "level": self.level, "prior": self.prior,
                "cited": [{"id": c.id, "content": c.content, "trust": c.trust, "type": c.type,
                           "timestamp": c.timestamp, "removed": c.removed}
                          for c in self.cited],
                "contradicts": list(self.contradicts), "no_contradicts": self.no_contradicts,
                "current_level": self.current_level, "events": list(self.events),
                "line": self.line, "stance": self.stance}


def reviewed_through(store: Store) -> int:
    """The newest wrap id the operator marked reviewed (0: never)."""
    raw = roles_of(store).meta.get_meta(ns_meta_key(REVIEWED_KEY, store.scope))
    return int(raw) if raw and raw.isdigit() else 0


def review_worklist(store: Store, *, since_wrap: int | None = None) -> list[WorklistItem]:
    """Every pattern a save graduated to 2x or higher with a validated citation, in wraps
    after ``since_wrap`` (default: the last one the operator marked reviewed), oldest
    first, with the cited episodes' text as it stands now and the contradiction stance."""
    after = reviewed_through(store) if since_wrap is None else whole_number(since_wrap,
                                                                             "since_wrap")
    from ..continuity.parse import pattern_levels

    now_levels = pattern_levels(store.load_continuity(), store.section_schema)
    found = [(w, p) for w in _saved_wraps(store) if int(w["id"]) > after
             for p in (w.get("metrics") or {}).get("patterns") or []
             if "graduated" in (p.get("events") or [])]
    ids = sorted({i for _w, p in found for i in p.get("cited") or []})
    eps = store.get_many(ids) if ids else {}
    gone = roles_of(store).links.tombstones([i for i in ids if i not in eps]) if ids else {}
    out = []
    for w, p in found:
        cited = []
        for i in p.get("cited") or []:
            e = eps.get(i)
            if e is not None:
                cited.append(CitedEpisode(i, e.content, e.trust, e.type.value, e.timestamp))
            else:
                t = gone.get(i)
                cited.append(CitedEpisode(i, None, t.trust, t.type, t.timestamp,
                                          t.reason or "unknown") if t is not None else
                             CitedEpisode(i, None, None, None, None, "unknown"))
        out.append(WorklistItem(int(w["id"]), str(w["wrapped_at"]), p["name"], int(p["level"]),
                                p.get("prior"), cited, list(p.get("contradicts") or []),
                                bool(p.get("no_contradicts")), now_levels.get(p["key"]),
                                list(p.get("events") or []), p.get("line")))
    return out


def drift_by_wrap(store: Store) -> list[DriftOfWrap]:
    """Drift probe verdicts per saved wrap, newest first: ``{"wrap_id", "wrapped_at",
    "probes": [{"id", "status", "detail"}]}``; a wrap saved before this record existed
    lists its verdict counts only (``counts``)."""
    out: list[DriftOfWrap] = []
    for w in store.wrap_history():
        m = w.get("metrics") or {}
        probes = m.get("drift_probes")
        out.append({"wrap_id": w["id"], "wrapped_at": w["wrapped_at"],
                    "probes": list(probes or []),
                    "counts": _count(probes) if probes is not None else None})
    return out


def _count(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def mark_worklist_reviewed(store: Store, *, through_wrap: int | None = None) -> WorklistMark:
    """Record that the operator judged the worklist up to ``through_wrap`` (default: the
    newest saved wrap). Audited as ``worklist_reviewed``; returns what was marked."""
    require_writable(store)
    with unit_of(store) as tx:
        newest = store.wrap_history(1)
        last = int(newest[0]["id"]) if newest else 0
        upto = last if through_wrap is None else whole_number(through_wrap, "through_wrap")
        if upto > last:
            raise ValidationError(f"through_wrap {upto} is after the newest saved wrap ({last})")
        before = reviewed_through(store)
        items = len(review_worklist(store, since_wrap=before)) if upto > before else 0
        tx.meta.set_meta(ns_meta_key(REVIEWED_KEY, store.scope), str(max(upto, before)))
        tx.audit.append("worklist_reviewed", {"through_wrap": max(upto, before),
                                              "previous": before, "items": items},
                        actor="operator")
    return {"through_wrap": max(upto, before), "previous": before, "items": items}


# ---------------------------------------------------------------------- by the operator's hand

def _edit_continuity(store: Store, name: str, edit: Any) -> tuple[str, list[int]]:
    """The continuity with ``edit(line) -> new line | None (drop) | line`` applied to each
    graduating line named ``name``; returns the text and the levels of the lines found."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("the pattern name is empty: pass the name before its '| Nx' marker")
    storable_text(name, "pattern name")
    text = store.load_continuity()
    key = pattern_key(name)
    doc = parse_sections(text or "", store.section_schema, require=False)
    levels: list[int] = []
    for s in doc.by_role("graduating"):
        kept = []
        for i, line in enumerate(s.lines):
            p = parse_pattern_line(line, section=s.heading, index=i)
            if p is not None and p.key == key:
                levels.append(p.level)
                new = edit(p)
                if new is not None:
                    kept.append(new)
            else:
                kept.append(line)
        s.lines = kept
    if not levels:
        raise ValidationError(f"no pattern named {name!r} in the continuity's graduating "
                              "sections: check the name (the text before its '| Nx' marker)")
    return doc.render(), levels


def _commit_edit(store: Store, key: str, text: str, rec: PatternRow | None, *,
                 event: str, data: dict[str, Any]) -> None:
    b = roles_of(store)
    with unit_of(store) as tx:
        if b.wraps.open_wrap() is not None:
            raise WrapInProgressError("a wrap is open: save or cancel it (wrap-cancel) before "
                                      "editing a pattern by hand")
        if rec is None:
            b.wraps.delete_pattern(key)
        else:
            b.wraps.upsert_pattern(rec)
        edits = _edits(store) + [{"key": key, "from": data["from"], "to": data.get("to"),
                                  "at": now_iso()}]
        b.meta.set_meta(ns_meta_key(EDITS_KEY, store.scope), json.dumps(edits[-MAX_EDITS:]))
        tx.audit.append(event, {**data, "name_hash": store.audit_trail.hash_content(key),
                                "content_hash": store.audit_trail.hash_content(text)},
                        actor="operator")
        tx.stage_continuity(text)


def demote_pattern(store: Store, name: str, level: int | None = None) -> Demoted:
    """Lower a pattern to ``level`` (default: one rung down, never below 1x) in the
    continuity and in the store's pattern record, so the next save measures it from
    there. Refused while a wrap is open, and for a level that is not lower."""
    require_writable(store)
    key = pattern_key(name) if isinstance(name, str) else ""
    current = max(_edit_continuity(store, name, lambda p: p.line)[1])
    to = max(1, current - 1) if level is None else whole_number(level, "level", minimum=1)
    if to >= current:
        raise ValidationError(f"{name!r} stands at {current}x: a demotion must go lower "
                              f"(1 to {current - 1}); the continuity never raises a level by hand"
                              if current > 1 else f"{name!r} is at 1x, the lowest level")
    text, _ = _edit_continuity(store, name, lambda p: rewrite_line(
        p, min(p.level, to), p.date, [m for m in p.marks if m != "level-capped"], False))
    old = roles_of(store).wraps.pattern_history().get(key)
    at = now_iso()
    rec = PatternRow(name=key, level=to,
                     max_level_reached=min(old.max_level_reached, to) if old else to,
                     first_seen_at=old.first_seen_at if old else at,
                     last_seen_at=old.last_seen_at if old else None, last_saved_at=at,
                     explanations=old.explanations if old else [],
                     grounding=old.grounding if old else [])
    _commit_edit(store, key, text, rec, event="pattern_demoted", data={"from": current, "to": to})
    return {"name": name, "from": current, "to": to}


def retire_pattern(store: Store, name: str) -> Retired:
    """Take a pattern out of the continuity and forget its level record, so it counts as
    new (1x) if it is ever written again. Refused while a wrap is open."""
    require_writable(store)
    key = pattern_key(name) if isinstance(name, str) else ""
    text, levels = _edit_continuity(store, name, lambda p: None)
    _commit_edit(store, key, text, None, event="pattern_retired",
                 data={"from": max(levels), "lines": len(levels)})
    return {"name": name, "from": max(levels), "lines_removed": len(levels)}
