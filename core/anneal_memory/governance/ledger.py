"""The ledger: immutable versions, the current projection and tombstones, committed in
the Store's write transaction.

Every commit runs inside one unit of work (``_seam.unit_of``: BEGIN IMMEDIATE), so the
checks and the insert are one serialised step across threads and processes: of two racing first
writes of the same memory exactly one becomes version 1, the other gets
``memory_id_conflict``; a correction whose expected record is no longer current gets
``stale_expected_record``; any append after a tombstone gets ``memory_deleted``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .._seam import roles_of, unit_of
from ..errors import GovernanceError
from .contracts import (
    Authority,
    DeletionReceipt,
    MemoryCandidate,
    MemoryRecord,
    WriteResult,
)
from .namespace import MemoryNamespace, digest

if TYPE_CHECKING:
    from ..store import Store


def record_id_for(namespace: MemoryNamespace, memory_id: str, candidate_id: str) -> str:
    """A write request's id: the idempotency key, namespaced."""
    return "rec-" + digest("record", namespace.to_dict(), memory_id, candidate_id)[:32]


def audit_data(namespace: MemoryNamespace, memory_id: str,
               **extra: object) -> dict[str, object]:
    """An audit entry's data about one governed memory (its namespace and id first)."""
    return {"namespace": namespace.to_dict(), "memory_id": memory_id, **extra}


class Ledger:
    """Storage-facing half of the runtime (one per Store)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.gov = roles_of(store).governance
        self.gov.ensure_schema()

    # ------------------------------------------------------------------ reads
    def current_record(self, memory_id: str) -> MemoryRecord | None:
        cur = self.gov.current(memory_id) if self.gov.has_schema() else None
        if cur is None or cur.state != "active" or cur.record_id is None:
            return None
        got = self.gov.record_by_id(cur.record_id)
        return None if got is None else MemoryRecord.from_dict(got[1])

    def is_deleted(self, memory_id: str) -> bool:
        return self.gov.has_schema() and self.gov.tombstone(memory_id) is not None

    def versions(self, memory_id: str) -> list[MemoryRecord]:
        return [MemoryRecord.from_dict(v.body) for v in self.gov.versions(memory_id)]

    # ------------------------------------------------------------------ commit
    def commit(self, candidate: MemoryCandidate, authority: Authority, *, created_at: str,
               expected_record_id: str | None, first: bool, actor: str = "agent",
               event: str = "gov_write") -> WriteResult:
        """Append one version, or refuse with a stable reason. ``first``: the caller
        expects no version yet; otherwise ``expected_record_id`` must be current."""
        ns, mid = candidate.namespace, candidate.memory_id
        rid = record_id_for(ns, mid, candidate.candidate_id)
        payload = candidate.payload_digest(authority)
        with unit_of(self.store) as tx:
            # A tombstone outranks everything, even the retry of a write it deleted.
            if tx.governance.tombstone(mid) is not None:
                return self._refuse(ns, mid, "memory_deleted", record_id=rid)
            existing = tx.governance.record_by_id(rid)
            if existing is not None:
                same = existing[0] == payload
                return self._refuse(ns, mid, "idempotent" if same else "record_id_conflict",
                                    MemoryRecord.from_dict(existing[1]) if same else None,
                                    audit=not same, record_id=rid)
            cur = tx.governance.current(mid)
            if first:
                if cur is not None:
                    return self._refuse(ns, mid, "memory_id_conflict", record_id=rid)
                version, supersedes = 1, None
            else:
                if cur is None or cur.state != "active":
                    return self._refuse(ns, mid, "no_current_record", record_id=rid)
                if cur.record_id != expected_record_id:
                    return self._refuse(ns, mid, "stale_expected_record", record_id=rid,
                                        expected=expected_record_id)
                version, supersedes = cur.version + 1, cur.record_id
            record = MemoryRecord(
                record_id=rid, memory_id=mid, namespace=ns, memory_type=candidate.memory_type,
                subject=candidate.subject, content=candidate.content,
                source_id=candidate.source.source_id, authority=authority,
                confidence=candidate.confidence, sensitivity=candidate.sensitivity,
                valid_from=candidate.valid_from or created_at,
                expires_at=candidate.expires_at, created_at=created_at, version=version,
                supersedes=supersedes, candidate_id=candidate.candidate_id)
            if record.expires_at is not None and record.expires_at <= record.valid_from:
                return self._refuse(ns, mid, "expired_on_arrival", record_id=rid)
            if not tx.governance.insert_record(record_id=rid, memory_id=mid, ns_key=ns.key,
                                               ns_owner=ns.owner, ns_project=ns.project, version=version,
                                               payload_digest=payload, body=record.to_dict(),
                                               created_at=created_at):
                return self._refuse(ns, mid, "memory_id_conflict" if first
                                    else "stale_expected_record", record_id=rid)
            tx.governance.set_current(memory_id=mid, ns_key=ns.key, ns_owner=ns.owner,
                                      ns_project=ns.project, record_id=rid, version=version,
                                      state="active")
            tx.audit.append(event, audit_data(
                ns, mid, record_id=rid, version=version, supersedes=supersedes,
                authority=authority.value, memory_type=candidate.memory_type.value,
                source_id=candidate.source.source_id,
                content_hash=self.store.audit_trail.hash_content(candidate.content)),
                            actor=actor)
        return WriteResult("written", "accepted" if event != "gov_approve" else "human_reviewed",
                           mid, record)

    def _refuse(self, ns: MemoryNamespace, mid: str, reason: str,
                record: MemoryRecord | None = None, *, audit: bool = True,
                **data: Any) -> WriteResult:
        if audit:
            self.store.audit_trail.append("gov_refused", audit_data(ns, mid, reason=reason,
                                                                    **data), actor="system")
        outcome = "idempotent" if reason == "idempotent" else "rejected"
        return WriteResult(outcome, reason, mid, record)

    # ------------------------------------------------------------------ forget
    def forget(self, ns: MemoryNamespace, memory_id: str, *, reason: str, at: str,
               request_id: str | None) -> DeletionReceipt | str:
        """Tombstone a memory; returns the receipt, or a refusal reason code."""
        request_key = digest("forget", ns.to_dict(), request_id) if request_id else None
        with unit_of(self.store) as tx:
            if request_key is not None:
                prior = tx.governance.tombstone_by_request(request_key)
                if prior is not None:
                    return (DeletionReceipt.from_dict(prior.receipt)
                            if prior.receipt["memory_id"] == memory_id
                            else "request_id_conflict")
            prior = tx.governance.tombstone(memory_id)
            if prior is not None:
                return DeletionReceipt.from_dict(prior.receipt)
            versions = tx.governance.versions(memory_id)
            if not versions:
                return "no_current_record"
            h = self.store.audit_trail.hash_content
            receipt = DeletionReceipt(
                receipt_id="del-" + digest("receipt", ns.to_dict(), memory_id)[:32],
                memory_id=memory_id, namespace=ns.to_dict(),
                record_ids=tuple(v.record_id for v in versions), deleted_at=at,
                reason=reason,
                content_digests=tuple(h(c) for v in versions
                                      if isinstance(c := v.body["content"], str) and c),
                request_id=request_id)
            tx.governance.insert_tombstone(memory_id=memory_id, ns_key=ns.key, ns_owner=ns.owner,
                                           ns_project=ns.project, receipt=receipt.to_dict(),
                                           request_key=request_key)
            tx.governance.set_current(memory_id=memory_id, ns_key=ns.key, ns_owner=ns.owner,
                                      ns_project=ns.project, record_id=None,
                                      version=len(versions), state="deleted")
            tx.governance.scrub_versions(memory_id)
            cancelled = tx.governance.cancel_reviews(memory_id, decided_at=at)
            tx.governance.scrub_reviews(memory_id)
            tx.audit.append("gov_forget", audit_data(
                ns, memory_id, receipt_id=receipt.receipt_id, record_ids=list(receipt.record_ids),
                reason=reason, content_digests=list(receipt.content_digests),
                reviews_cancelled=cancelled), actor="operator")
        # the scrubbed text must not linger in the write-ahead log either
        with contextlib.suppress(Exception):
            roles_of(self.store).episodes.checkpoint()
        return receipt

    # ------------------------------------------------------------------ replay
    def rebuild_projection(self) -> dict[str, int]:
        """Rebuild ``current`` from the event history. A tombstone is final: no record
        event, wherever it sits in the history, brings a deleted memory back."""
        with unit_of(self.store) as tx:
            hidden = tx.governance.clear_projection()
            events = tx.governance.events()
            deleted = {m for kind, m, _ns, _ref in events if kind == "tombstone"}
            heads: dict[str, dict[str, Any]] = {}
            for kind, mid, _ns, ref in events:
                if kind != "record" or mid in deleted:
                    continue
                got = tx.governance.record_by_id(ref)
                if got is not None and got[1]["version"] > heads.get(mid, {"version": 0})["version"]:
                    heads[mid] = got[1]
            for mid, body in heads.items():
                ns = MemoryNamespace.from_dict(body["namespace"])
                tx.governance.set_current(memory_id=mid, ns_key=ns.key, ns_owner=ns.owner,
                                          ns_project=ns.project, record_id=body["record_id"],
                                          version=body["version"], state="active")
            for mid in deleted:
                tomb = tx.governance.tombstone(mid)
                if tomb is None:
                    raise GovernanceError(f"the history tombstones {mid!r}, but its receipt "
                                          "is gone: the governance tables were changed "
                                          "outside anneal-memory")
                receipt = DeletionReceipt.from_dict(tomb.receipt)
                ns = MemoryNamespace.from_dict(receipt.namespace)
                tx.governance.set_current(memory_id=mid, ns_key=ns.key, ns_owner=ns.owner,
                                          ns_project=ns.project, record_id=None,
                                          version=len(receipt.record_ids), state="deleted")
            for mid in hidden:
                tx.governance.set_hidden(mid, True)
            tx.audit.append("gov_rebuild", {"active": len(heads),
                                            "deleted": len(deleted)},
                            actor="system")
        return {"active": len(heads), "deleted": len(deleted), "events": len(events)}
