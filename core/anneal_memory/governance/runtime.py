"""MemoryRuntime: write, review, correct, forget and recall governed memory in a Store.

The runtime is the application-facing orchestration: the policy gate decides, the
ledger commits, recall filters and ranks. It shares the Store's database file and
audit chain; every decision it makes is one audit entry carrying the namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from .._inputs import storable_text
from .._seam import roles_of, unit_of
from ..clock import iso, utcnow
from ..errors import ValidationError
from ..storage.rows import ReviewRow
from .contracts import (
    Authority,
    DeletionReceipt,
    GovernanceRefusal,
    MemoryCandidate,
    MemoryRecord,
    MemoryType,
    RecallOutcome,
    Sensitivity,
    WriteResult,
    memory_id_for,
    parse_at,
)
from .ledger import Ledger, audit_data, record_id_for
from .namespace import MemoryNamespace, coerce_namespace, digest, require_view
from .policy import ALLOW, REJECT, PolicyConfig, evaluate
from .recall import DEFAULT_SENSITIVITY, rank

if TYPE_CHECKING:
    from ..store import Store


class ReviewItem(TypedDict):
    """One item of the review queue as ``pending_reviews`` returns it (1.0.2's keys)."""

    review_id: str
    memory_id: str
    ns_key: str
    candidate: dict[str, Any]  # the queued candidate's dict (MemoryCandidate.to_dict)
    reason: str
    status: str
    created_at: str
    decided_at: str | None
    decided_by: str | None
    record_id: str | None


class ProfileEntry(TypedDict):
    """One subject of ``profile``: its current value with where it came from."""

    value: str | None
    record_id: str
    memory_id: str
    version: int
    authority: str
    source_id: str
    scope: str  # "project" or "user"


def review_item(row: ReviewRow) -> ReviewItem:
    """A stored review row as the queue's public item."""
    return ReviewItem(review_id=row.review_id, memory_id=row.memory_id, ns_key=row.ns_key,
                      candidate=row.candidate, reason=row.reason, status=row.status,
                      created_at=row.created_at, decided_at=row.decided_at,
                      decided_by=row.decided_by, record_id=row.record_id)


def _candidate_namespace(candidate: Mapping[str, object]) -> MemoryNamespace:
    """The namespace a queued candidate was written for."""
    ns = candidate["namespace"]
    if not isinstance(ns, Mapping):
        raise ValidationError(f"a queued candidate's namespace is not a mapping: {ns!r}")
    return MemoryNamespace.from_dict(ns)


class MemoryRuntime:
    """Governed memory over one Store. Not thread-safe, like the Store: one per thread
    (several threads or processes may each run their own on the same database)."""

    def __init__(self, store: Store, *, policy: PolicyConfig | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.policy = policy or PolicyConfig()
        self._clock = clock or utcnow
        self.ledger = Ledger(store)
        #: a runtime over a scoped view acts only in the view's own namespace
        self._view: MemoryNamespace | None = getattr(store, "namespace", None)

    def _ns(self, value: object) -> MemoryNamespace:
        """The namespace a call names, refused when it is not the view's own."""
        return require_view(self._view, coerce_namespace(value))

    def now(self) -> str:
        return iso(self._clock())

    def _audit(self, event: str, data: dict[str, Any], actor: str = "agent") -> None:
        with unit_of(self.store) as tx:
            tx.audit.append(event, data, actor=actor)

    # ------------------------------------------------------------------ write
    def write(self, candidate: MemoryCandidate) -> WriteResult:
        """Gate a candidate and commit it as version 1, queue it for review, or reject
        it. A retry of the same candidate is ``idempotent``."""
        c = _candidate(candidate)
        self._ns(c.namespace)
        # The retry check, the gate and the commit share one write transaction: a retry
        # racing its first attempt on another host must be told ``idempotent``, not
        # ``duplicate_memory`` (the gate reading the first attempt's version as current).
        with unit_of(self.store):
            return self._write_gated(c)

    def _write_gated(self, c: MemoryCandidate) -> WriteResult:
        mid = c.memory_id
        rid = record_id_for(c.namespace, mid, c.candidate_id)
        if roles_of(self.store).governance.record_by_id(rid) is not None:
            # a retry: the ledger answers idempotent, record_id_conflict or memory_deleted
            return self.ledger.commit(c, self._authority_of(rid), created_at=self.now(),
                                      expected_record_id=None, first=True)
        decision = evaluate(c, current=self.ledger.current_record(mid),
                            deleted=self.ledger.is_deleted(mid), config=self.policy)
        if decision.outcome == REJECT:
            self._audit("gov_decision", audit_data(
                c.namespace, mid, candidate_id=c.candidate_id, outcome=REJECT,
                reason=decision.reason, findings=list(decision.findings)))
            return WriteResult("rejected", decision.reason, mid)
        if decision.outcome == ALLOW:
            assert decision.authority is not None
            return self.ledger.commit(c, decision.authority, created_at=self.now(),
                                      expected_record_id=None, first=True)
        return self._queue(c, decision.reason)

    def _authority_of(self, record_id: str) -> Authority:
        got = roles_of(self.store).governance.record_by_id(record_id)
        return Authority(got[1]["authority"]) if got else Authority.MODEL_INFERRED

    def _queue(self, c: MemoryCandidate, reason: str) -> WriteResult:
        review_id = "rev-" + digest("review", c.namespace.to_dict(), c.candidate_id)[:32]
        ns = c.namespace
        with unit_of(self.store) as tx:
            if tx.governance.insert_review(review_id=review_id, memory_id=c.memory_id,
                                           ns_key=ns.key, ns_owner=ns.owner, ns_project=ns.project,
                                           candidate=c.to_dict(), reason=reason, created_at=self.now()):
                tx.audit.append("gov_review_queued", audit_data(
                    ns, c.memory_id, review_id=review_id, candidate_id=c.candidate_id,
                    reason=reason), actor="agent")
        return WriteResult("review", reason, c.memory_id, review_id=review_id)

    # ------------------------------------------------------------------ review queue
    def pending_reviews(self, namespace: MemoryNamespace | Mapping[str, str | None] | None = None
                        ) -> list[ReviewItem]:
        """Review items waiting in the namespace (with their candidates). Without one: the
        runtime's scoped store's namespace, or on a root Store every namespace's items
        (the operator's queue)."""
        if namespace is None:
            namespace = getattr(self.store, "namespace", None)
            if namespace is None:
                return [review_item(r) for r in roles_of(self.store).governance.all_reviews()]
        ns = self._ns(namespace)
        return [review_item(r)
                for r in roles_of(self.store).governance.reviews(ns.owner, ns.project)]

    def approve(self, review_id: str, *, reviewer: str,
                namespace: MemoryNamespace | Mapping[str, str | None] | None = None) -> WriteResult:
        """Commit a queued candidate with authority ``human_reviewed``. The other gates
        (secrets, lifetime, deletion, duplicates, conflicts) still apply. ``namespace``
        (or the runtime's scoped store): only that namespace's reviews can be decided;
        another's reads as an unknown review."""
        # The pending check, the gate and the decision share one write transaction: of two
        # reviewers approving at once (or one approving while the memory is forgotten) the
        # second sees the first's outcome, not a stale "pending".
        with unit_of(self.store) as tx:
            item = self._pending(review_id, reviewer, namespace)
            c = MemoryCandidate.from_dict(item.candidate)
            decision = evaluate(c, current=self.ledger.current_record(c.memory_id),
                                deleted=self.ledger.is_deleted(c.memory_id), mode="approve",
                                config=self.policy)
            if decision.outcome == ALLOW:
                res = self.ledger.commit(c, Authority.HUMAN_REVIEWED, created_at=self.now(),
                                         expected_record_id=None, first=True,
                                         actor="operator", event="gov_approve")
            else:
                res = WriteResult("rejected", decision.reason, c.memory_id)
            status = "approved" if res.outcome == "written" else "refused"
            tx.governance.decide_review(review_id, status=status,
                                        decided_at=self.now(), decided_by=reviewer,
                                        record_id=res.record.record_id if res.record else None)
            tx.audit.append("gov_review_decided", audit_data(
                c.namespace, c.memory_id, review_id=review_id, status=status,
                reason=res.reason, reviewer=reviewer), actor="operator")
        return res

    def reject_review(self, review_id: str, *, reviewer: str,
                      namespace: MemoryNamespace | Mapping[str, str | None] | None = None) -> None:
        """Close a review item without writing anything (``namespace`` as in approve)."""
        with unit_of(self.store) as tx:
            item = self._pending(review_id, reviewer, namespace)
            tx.governance.decide_review(review_id, status="rejected",
                                        decided_at=self.now(), decided_by=reviewer, record_id=None)
            tx.audit.append("gov_review_decided", {
                "namespace": _candidate_namespace(item.candidate).to_dict(),
                "memory_id": item.memory_id, "review_id": review_id, "status": "rejected",
                "reviewer": reviewer}, actor="operator")

    def _pending(self, review_id: str, reviewer: str,
                 namespace: MemoryNamespace | Mapping[str, str | None] | None = None) -> ReviewRow:
        if not isinstance(reviewer, str) or not reviewer.strip():
            raise ValidationError("reviewer must name the human who decided")
        storable_text(reviewer, "reviewer")
        storable_text(review_id, "review_id")
        scope = namespace if namespace is not None else self._view
        mine = None if scope is None else require_view(self._view,
                                                       coerce_namespace(scope, partial=True))
        item = roles_of(self.store).governance.review(review_id)
        if item is not None and mine is not None:
            if _candidate_namespace(item.candidate).key != mine.key:
                item = None  # another namespace's review reads exactly like an unknown one
        if item is None:
            raise GovernanceRefusal("unknown_review", f"no review item {review_id!r}: list "
                                    "them with pending_reviews(namespace)")
        if item.status != "pending":
            raise GovernanceRefusal("review_not_pending", f"review {review_id!r} is already "
                                    f"{item.status}")
        return item

    # ------------------------------------------------------------------ correct
    def correct(self, candidate: MemoryCandidate, *, expected_record_id: str) -> WriteResult:
        """Commit a new version of an existing memory, compare-and-set on the version
        the caller read: a stale ``expected_record_id`` gets ``stale_expected_record``."""
        c = _candidate(candidate)
        self._ns(c.namespace)
        if not isinstance(expected_record_id, str) or not expected_record_id:
            raise ValidationError("expected_record_id must be the record_id you last read "
                                  "(runtime.current(...).record_id)")
        with unit_of(self.store):  # one transaction, as in write()
            return self._correct_gated(c, expected_record_id)

    def _correct_gated(self, c: MemoryCandidate, expected_record_id: str) -> WriteResult:
        rid = record_id_for(c.namespace, c.memory_id, c.candidate_id)
        if roles_of(self.store).governance.record_by_id(rid) is not None:
            return self.ledger.commit(c, self._authority_of(rid), created_at=self.now(),
                                      expected_record_id=expected_record_id, first=False)
        decision = evaluate(c, current=self.ledger.current_record(c.memory_id),
                            deleted=self.ledger.is_deleted(c.memory_id), mode="correct",
                            config=self.policy)
        if decision.outcome == REJECT:
            self._audit("gov_decision", audit_data(
                c.namespace, c.memory_id, candidate_id=c.candidate_id, outcome=REJECT,
                reason=decision.reason, findings=list(decision.findings)))
            return WriteResult("rejected", decision.reason, c.memory_id)
        if decision.outcome != ALLOW:
            return self._queue(c, decision.reason)
        assert decision.authority is not None
        return self.ledger.commit(c, decision.authority, created_at=self.now(),
                                  expected_record_id=expected_record_id, first=False,
                                  event="gov_correct")

    # ------------------------------------------------------------------ forget / hide
    def forget(self, namespace: MemoryNamespace | Mapping[str, str | None], memory_type: MemoryType | str,
               subject: str, *, reason: str, request_id: str | None = None) -> DeletionReceipt:
        """Tombstone a memory: recall stops at once, every later append is refused
        (``memory_deleted``), stored text is scrubbed, and the receipt holds no content."""
        ns, mid = self._address(namespace, memory_type, subject)
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError("reason is required: say why the memory is forgotten")
        storable_text(reason, "reason")
        if request_id is not None:
            storable_text(request_id, "request_id")
        got = self.ledger.forget(ns, mid, reason=reason.strip(), at=self.now(),
                                 request_id=request_id)
        if isinstance(got, str):
            raise GovernanceRefusal(got, f"cannot forget {subject!r} in {ns.label()}: " + (
                "the request id was already used for another memory" if got == "request_id_conflict"
                else "there is no such memory in this namespace"))
        return got

    def hide(self, namespace: MemoryNamespace | Mapping[str, str | None], memory_type: MemoryType | str,
             subject: str, hidden: bool = True) -> bool:
        """Hide (or show) a memory in display views such as ``profile``. Hiding is not
        deletion: recall still sees it. Use ``forget`` to stop a memory being used."""
        ns, mid = self._address(namespace, memory_type, subject)
        if not isinstance(hidden, bool):
            raise ValidationError(f"hidden must be True or False, not {hidden!r}")
        with unit_of(self.store) as tx:
            n = tx.governance.set_hidden(mid, hidden)
            if n:
                tx.audit.append("gov_hide", audit_data(ns, mid, hidden=hidden),
                                actor="operator")
        return bool(n)

    # ------------------------------------------------------------------ reads
    def _address(self, namespace: object, memory_type: object, subject: object
                 ) -> tuple[MemoryNamespace, str]:
        ns = self._ns(namespace)
        if not isinstance(subject, str) or not subject.strip():
            raise ValidationError("subject is empty: name the memory to address")
        return ns, memory_id_for(ns, MemoryType.coerce(memory_type), subject)

    def current(self, namespace: MemoryNamespace | Mapping[str, str | None], memory_type: MemoryType | str,
                subject: str) -> MemoryRecord | None:
        """The current version (active, not deleted), expired or not."""
        return self.ledger.current_record(self._address(namespace, memory_type, subject)[1])

    def versions(self, namespace: MemoryNamespace | Mapping[str, str | None], memory_type: MemoryType | str,
                 subject: str) -> list[MemoryRecord]:
        return self.ledger.versions(self._address(namespace, memory_type, subject)[1])

    def state(self, namespace: MemoryNamespace | Mapping[str, str | None], memory_type: MemoryType | str, subject: str, *,
              at: str | datetime | None = None) -> str:
        """``absent``, ``active``, ``expired``, ``not_yet_valid``, ``hidden`` or ``deleted``."""
        _ns, mid = self._address(namespace, memory_type, subject)
        if self.ledger.is_deleted(mid):
            return "deleted"
        rec = self.ledger.current_record(mid)
        if rec is None:
            return "absent"
        when = parse_at(at) if at is not None else self.now()
        if rec.expires_at is not None and when >= rec.expires_at:
            return "expired"
        if rec.valid_from > when:
            return "not_yet_valid"
        cur = roles_of(self.store).governance.current(mid)
        return "hidden" if cur and cur.hidden else "active"

    def _visible(self, ns: MemoryNamespace) -> list[tuple[MemoryRecord, bool]]:
        rows = roles_of(self.store).governance.visible_current(ns.owner, ns.project)
        return [(MemoryRecord.from_dict(r.body), r.hidden) for r in rows]

    def recall(self, namespace: MemoryNamespace | Mapping[str, str | None], query: str, *, k: int = 3,
               sensitivity: Collection[Sensitivity | str] = DEFAULT_SENSITIVITY,
               memory_types: Collection[MemoryType | str] | None = None,
               at: str | datetime | None = None) -> RecallOutcome:
        """Records for this task: namespace, current version and tombstone filtered in
        SQL; expiry, sensitivity and type filtered next; then ranked and cut to ``k``."""
        ns = self._ns(namespace)
        storable_text(query, "query", allow_empty=True)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be a whole number >= 0, not {k!r}")
        sens = frozenset(Sensitivity.coerce(s) for s in _values(sensitivity, "sensitivity"))
        types = None if memory_types is None else frozenset(
            MemoryType.coerce(t) for t in _values(memory_types, "memory_types"))
        when = parse_at(at) if at is not None else self.now()
        return rank([r for r, _h in self._visible(ns)], query, at=when, k=k,
                    sensitivity=sens, types=types)

    def resolve(self, namespace: MemoryNamespace | Mapping[str, str | None], record_ids: Sequence[str], *,
                at: str | datetime | None = None) -> list[MemoryRecord]:
        """Re-check ids from a cache or index against the ledger: only records that
        are still the current, valid, visible version come back."""
        ns = self._ns(namespace)
        when = parse_at(at) if at is not None else self.now()
        ids = _values(record_ids, "record_ids")
        live = {r.record_id: r for r, _h in self._visible(ns) if r.is_valid_at(when)}
        return [live[i] for i in ids if isinstance(i, str) and i in live]

    def profile(self, namespace: MemoryNamespace | Mapping[str, str | None], *,
                at: str | datetime | None = None) -> dict[str, ProfileEntry]:
        """The user's profile as a projection of current semantic records: subject ->
        value with its provenance. A project record wins over a user-level one."""
        ns = self._ns(namespace)
        when = parse_at(at) if at is not None else self.now()
        out: dict[str, ProfileEntry] = {}
        for rec, hidden in sorted(self._visible(ns), key=lambda rh: rh[0].namespace.project or ""):
            if hidden or rec.memory_type != MemoryType.SEMANTIC or not rec.is_valid_at(when):
                continue
            out[rec.subject] = ProfileEntry(
                value=rec.content, record_id=rec.record_id, memory_id=rec.memory_id,
                version=rec.version, authority=rec.authority.value, source_id=rec.source_id,
                scope="project" if rec.namespace.project else "user")
        return out

    def rebuild_projection(self) -> dict[str, int]:
        """Replay the event history into the current projection."""
        return self.ledger.rebuild_projection()


def _candidate(value: Any) -> MemoryCandidate:
    if not isinstance(value, MemoryCandidate):
        raise ValidationError("pass a MemoryCandidate (anneal_memory.governance)")
    return value


def _values(value: Any, name: str) -> list[Any]:
    """A collection argument as a list; one bare string is one value (not its letters)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        raise ValidationError(f"{name} must be a list or set of strings, not "
                              f"{type(value).__name__}")
    return list(value)
