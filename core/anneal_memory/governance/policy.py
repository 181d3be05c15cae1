"""The write gate: every candidate gets ``allow``, ``reject`` or ``review`` and a stable
reason code before anything is stored.

The order is deliberate. Secrets and lifetime are checked first, so a low-confidence
secret is still ``sensitive_content`` (raising its confidence would not let it in).
Authority is re-derived from the trusted source kind; a candidate's own claim can only
lower it, never raise it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._identity import content_key
from ..text import meaningful_words
from .contracts import (
    SOURCE_AUTHORITY,
    Authority,
    MemoryCandidate,
    MemoryLifetime,
    MemoryRecord,
    PolicyDecision,
    Sensitivity,
)
from .secrets import scan_secrets

ALLOW, REJECT, REVIEW = "allow", "reject", "review"

#: Every reason code the gate and the ledger can return. Codes are stable API: tests,
#: dashboards and the evaluation key on them, never on message text.
REASONS: frozenset[str] = frozenset({
    "accepted", "sensitive_content", "one_time_content", "task_state_content",
    "authority_exceeds_source", "memory_deleted", "low_value_content", "low_confidence",
    "duplicate_memory", "conflict_requires_correction", "model_inferred_needs_review",
    "tool_observed_needs_review", "confidential_needs_review", "no_current_record",
    "idempotent", "record_id_conflict", "memory_id_conflict", "stale_expected_record",
    "human_reviewed", "expired_on_arrival", "request_id_conflict",
})


@dataclass(frozen=True)
class PolicyConfig:
    min_confidence: float = 0.5
    review_authorities: frozenset[Authority] = field(default_factory=lambda: frozenset(
        {Authority.MODEL_INFERRED, Authority.TOOL_OBSERVED}))
    review_sensitivities: frozenset[Sensitivity] = field(default_factory=lambda: frozenset(
        {Sensitivity.CONFIDENTIAL}))


def derive_authority(candidate: MemoryCandidate) -> tuple[Authority, bool]:
    """(authority, permitted): the source's authority, or the claim when it only lowers
    it to an inference."""
    earned = SOURCE_AUTHORITY[candidate.source.kind]
    claim = candidate.authority
    if claim is None or claim == earned:
        return earned, True
    if claim == Authority.MODEL_INFERRED:
        return claim, True
    return earned, False


def evaluate(candidate: MemoryCandidate, *, current: MemoryRecord | None, deleted: bool,
             mode: str = "write", config: PolicyConfig | None = None) -> PolicyDecision:
    """Judge one candidate against the memory's current state.

    ``mode``: ``write`` (a first write), ``correct`` (a new version of an existing
    memory) or ``approve`` (a reviewer committing a queued item).
    """
    cfg = config or PolicyConfig()
    findings = tuple(scan_secrets(candidate.content) + scan_secrets(candidate.subject))
    if candidate.sensitivity == Sensitivity.SECRET or findings:
        return PolicyDecision(REJECT, "sensitive_content", findings=findings)
    if candidate.lifetime == MemoryLifetime.ONE_TIME:
        return PolicyDecision(REJECT, "one_time_content")
    if candidate.lifetime == MemoryLifetime.TASK:
        return PolicyDecision(REJECT, "task_state_content")
    authority, permitted = derive_authority(candidate)
    if not permitted:
        return PolicyDecision(REJECT, "authority_exceeds_source", authority)
    if mode == "approve":
        authority = Authority.HUMAN_REVIEWED
    if deleted:
        return PolicyDecision(REJECT, "memory_deleted", authority)
    if not meaningful_words(candidate.content):
        return PolicyDecision(REJECT, "low_value_content", authority)
    if candidate.confidence < cfg.min_confidence:
        return PolicyDecision(REJECT, "low_confidence", authority)
    if mode == "correct" and current is None:
        return PolicyDecision(REJECT, "no_current_record", authority)
    if current is not None and content_key(current.content or "") == content_key(candidate.content):
        return PolicyDecision(REJECT, "duplicate_memory", authority)
    if mode != "approve":
        if authority in cfg.review_authorities:
            return PolicyDecision(REVIEW, f"{authority.value}_needs_review", authority)
        if candidate.sensitivity in cfg.review_sensitivities:
            return PolicyDecision(REVIEW, "confidential_needs_review", authority)
    if mode != "correct" and current is not None:
        return PolicyDecision(REJECT, "conflict_requires_correction", authority)
    return PolicyDecision(ALLOW, "accepted", authority)
