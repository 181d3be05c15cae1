"""Governed recall: hard filters first, then a ranking whose parts are kept, then a
top-K budget and a compact context projection.

The namespace, current-version and tombstone filters are applied in SQL before this
module sees a record; expiry, sensitivity and type are applied here, still before any
score is computed. A record that fails a hard filter never gets a score, so no amount
of similarity can buy it back in.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from ..clock import parse_timestamp
from ..text import query_terms
from .contracts import (
    AUTHORITY_RANK,
    ContextItem,
    MemoryRecord,
    MemoryType,
    RecallOutcome,
    ScoreParts,
    Sensitivity,
)

DEFAULT_SENSITIVITY: frozenset[Sensitivity] = frozenset({Sensitivity.PUBLIC,
                                                         Sensitivity.INTERNAL})
#: Recency buckets in days: (at most this old, points).
RECENCY_BUCKETS: tuple[tuple[int, int], ...] = ((30, 2), (180, 1))


def record_terms(record: MemoryRecord) -> set[str]:
    return set(query_terms(f"{record.subject} {record.content or ''}"))


def score(record: MemoryRecord, terms: set[str], at: str) -> ScoreParts:
    """The four parts of a record's rank for one query."""
    age = (parse_timestamp(at) - parse_timestamp(record.created_at)).days
    recency = next((pts for days, pts in RECENCY_BUCKETS if age <= days), 0)
    return ScoreParts(task_match=len(terms & record_terms(record)),
                      authority=AUTHORITY_RANK[record.authority], recency=recency,
                      confidence=record.confidence)


def hard_filter(record: MemoryRecord, at: str, sensitivity: Collection[Sensitivity],
                types: Collection[MemoryType] | None) -> str | None:
    """Why the record may not be ranked at all, or None."""
    if record.content is None:
        return "deleted"
    if record.expires_at is not None and at >= record.expires_at:
        return "expired"
    if record.valid_from > at:
        return "not_yet_valid"
    if record.sensitivity not in sensitivity:
        return "sensitivity_not_allowed"
    if types is not None and record.memory_type not in types:
        return "type_not_requested"
    return None


def project(record: MemoryRecord, parts: ScoreParts) -> ContextItem:
    why = (f"task_match={parts.task_match}, authority={parts.authority}, "
           f"recency={parts.recency}, confidence={parts.confidence:g}")
    return ContextItem(memory_type=record.memory_type.value, authority=record.authority.value,
                       date=record.created_at[:10], source=record.source_id,
                       content=record.content or "", why=why, record_id=record.record_id)


def rank(records: Iterable[MemoryRecord], query: str, *, at: str, k: int,
         sensitivity: Collection[Sensitivity] = DEFAULT_SENSITIVITY,
         types: Collection[MemoryType] | None = None, min_task_match: int = 1) -> RecallOutcome:
    """Filter, score, rank and cut to ``k`` records already scoped to the reader."""
    terms = query_terms(query)
    tset = set(terms)
    trace: list[dict[str, Any]] = []
    scored: list[tuple[MemoryRecord, ScoreParts]] = []
    for rec in sorted(records, key=lambda r: r.memory_id):
        base = {"memory_id": rec.memory_id, "record_id": rec.record_id}
        why_not = hard_filter(rec, at, sensitivity, types)
        if why_not is not None:
            trace.append({**base, "stage": "filtered", "reason": why_not})
            continue
        parts = score(rec, tset, at)
        if parts.task_match < min_task_match:
            trace.append({**base, "stage": "below_threshold", "score": _parts(parts)})
            continue
        scored.append((rec, parts))
    scored.sort(key=lambda rp: (-rp[1].total, -rp[1].task_match, rp[0].memory_id))
    chosen = scored[:k]
    for i, (rec, parts) in enumerate(scored):
        trace.append({"memory_id": rec.memory_id, "record_id": rec.record_id,
                      "stage": "selected" if i < k else "over_budget", "rank": i + 1,
                      "score": _parts(parts)})
    return RecallOutcome(items=[project(r, p) for r, p in chosen],
                         records=[r for r, _p in chosen], trace=trace, query_terms=terms)


def _parts(p: ScoreParts) -> dict[str, Any]:
    return {"task_match": p.task_match, "authority": p.authority, "recency": p.recency,
            "confidence": p.confidence, "total": p.total}
