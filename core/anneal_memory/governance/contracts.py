"""The governed memory's data contracts: what may exist at all.

A ``MemoryCandidate`` is a proposal (from a model, a rule or a form); a ``MemoryRecord``
is one committed, immutable version of a logical memory. Invalid shapes are refused at
construction with a ``ValidationError``, before any policy or storage sees them.
"""

from __future__ import annotations

import copy
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, TypedDict

from .._identity import subject_key
from .._inputs import storable_text
from ..clock import normalize_timestamp
from ..errors import GovernanceError, ValidationError
from .namespace import MemoryNamespace, coerce_namespace, digest


class _StrEnum(str, Enum):
    @classmethod
    def coerce(cls, value: Any) -> Any:
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise ValidationError(f"{cls.__name__} {value!r} is not one of: {allowed}") from None

    def __str__(self) -> str:
        return str(self.value)


class MemoryType(_StrEnum):
    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


class Authority(_StrEnum):
    USER_EXPLICIT = "user_explicit"
    REPOSITORY_VERIFIED = "repository_verified"
    HUMAN_REVIEWED = "human_reviewed"
    TOOL_OBSERVED = "tool_observed"
    MODEL_INFERRED = "model_inferred"


class SourceKind(_StrEnum):
    """Where the evidence came from, as the host's own event log says (trusted metadata)."""

    USER_MESSAGE = "user_message"
    REPOSITORY = "repository"
    TOOL_OUTPUT = "tool_output"
    MODEL = "model"


class MemoryLifetime(_StrEnum):
    ONE_TIME = "one_time"
    TASK = "task"
    CROSS_TASK = "cross_task"


class Sensitivity(_StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    SECRET = "secret"


#: The one authority each source kind can establish. ``human_reviewed`` comes only from
#: approving a review item; nothing can claim it.
SOURCE_AUTHORITY: dict[SourceKind, Authority] = {
    SourceKind.USER_MESSAGE: Authority.USER_EXPLICIT,
    SourceKind.REPOSITORY: Authority.REPOSITORY_VERIFIED,
    SourceKind.TOOL_OUTPUT: Authority.TOOL_OBSERVED,
    SourceKind.MODEL: Authority.MODEL_INFERRED,
}

#: The authority part of the recall score.
AUTHORITY_RANK: dict[Authority, int] = {
    Authority.USER_EXPLICIT: 3, Authority.REPOSITORY_VERIFIED: 3,
    Authority.HUMAN_REVIEWED: 2, Authority.TOOL_OBSERVED: 1, Authority.MODEL_INFERRED: 0,
}


def _text(name: str, value: Any, *, limit: int) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, not {type(value).__name__}")
    text = unicodedata.normalize("NFC", " ".join(value.split()))
    if not text:
        raise ValidationError(f"{name} is empty: give the memory a {name}")
    if len(text) > limit or "\x00" in text:
        raise ValidationError(f"{name} is longer than {limit} characters or holds a NUL: "
                              "shorten it")
    return storable_text(text, name)




def _subject_identity(subject: str) -> str:
    """The subject's canonical form, refused when nothing of it is left: "...", an
    invisible character alone, would otherwise all name one and the same memory."""
    key = subject_key(subject)
    if not key:
        raise ValidationError(f"subject {subject!r} is empty once compared "
                              "(punctuation at the ends and invisible characters are "
                              "ignored): name what the memory is about")
    return key


def memory_id_for(namespace: MemoryNamespace, memory_type: MemoryType, subject: str) -> str:
    """The logical memory's id: a canonical digest of namespace + type + subject."""
    return "mem-" + digest("memory", namespace.to_dict(), memory_type.value,
                           _subject_identity(subject))[:32]


class SourceDict(TypedDict):
    """A candidate's source as its dict."""

    source_id: str
    kind: str


class CandidateDict(TypedDict):
    """``MemoryCandidate.to_dict()``: the candidate's fields, enums as their values."""

    candidate_id: str
    namespace: dict[str, str | None]
    memory_type: str
    subject: str
    content: str
    source: SourceDict
    lifetime: str
    sensitivity: str
    confidence: float
    authority: str | None
    valid_from: str | None
    expires_at: str | None


class RecordDict(TypedDict):
    """``MemoryRecord.to_dict()``: the version's fields, enums as their values (the body
    the ledger stores)."""

    record_id: str
    memory_id: str
    namespace: dict[str, str | None]
    memory_type: str
    subject: str
    content: str | None
    source_id: str
    authority: str
    confidence: float
    sensitivity: str
    valid_from: str
    expires_at: str | None
    created_at: str
    version: int
    supersedes: str | None
    candidate_id: str


class ReceiptDict(TypedDict):
    """``DeletionReceipt.to_dict()``: the receipt's fields, its tuples as lists."""

    receipt_id: str
    memory_id: str
    namespace: dict[str, Any]
    record_ids: list[str]
    deleted_at: str
    reason: str
    content_digests: list[str]
    request_id: str | None


@dataclass(frozen=True)
class SourceRef:
    """The evidence a candidate came from. The host builds it from its own event
    metadata (who sent the message), never from what the candidate text says."""

    source_id: str
    kind: SourceKind

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_id", _text("source_id", self.source_id, limit=300))
        object.__setattr__(self, "kind", SourceKind.coerce(self.kind))


@dataclass(frozen=True)
class MemoryCandidate:
    """A proposed memory, not yet committed. ``authority`` is an optional claim that the
    policy checks against the source; left out, it is derived from the source."""

    candidate_id: str
    namespace: MemoryNamespace
    memory_type: MemoryType
    subject: str
    content: str
    source: SourceRef
    lifetime: MemoryLifetime = MemoryLifetime.CROSS_TASK
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    confidence: float = 1.0
    authority: Authority | None = None
    valid_from: str | None = None
    expires_at: str | None = None

    def __post_init__(self) -> None:
        s = object.__setattr__
        s(self, "candidate_id", _text("candidate_id", self.candidate_id, limit=200))
        s(self, "namespace", coerce_namespace(self.namespace))
        s(self, "memory_type", MemoryType.coerce(self.memory_type))
        s(self, "subject", _text("subject", self.subject, limit=200))
        _subject_identity(self.subject)
        s(self, "content", _text("content", self.content, limit=4000))
        if not isinstance(self.source, SourceRef):
            raise ValidationError("source must be a SourceRef(source_id, kind) built from "
                                  "the host's event metadata")
        s(self, "lifetime", MemoryLifetime.coerce(self.lifetime))
        s(self, "sensitivity", Sensitivity.coerce(self.sensitivity))
        if self.authority is not None:
            s(self, "authority", Authority.coerce(self.authority))
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 <= c <= 1.0:
            raise ValidationError(f"confidence must be a number from 0 to 1, not {c!r}")
        s(self, "confidence", float(c))
        for name in ("valid_from", "expires_at"):
            v = getattr(self, name)
            if v is not None:
                s(self, name, normalize_timestamp(v, field=name))
        if self.valid_from and self.expires_at and self.expires_at <= self.valid_from:
            raise ValidationError(f"expires_at {self.expires_at} is not after valid_from "
                                  f"{self.valid_from}: a memory must be valid for some time")

    @property
    def memory_id(self) -> str:
        return memory_id_for(self.namespace, self.memory_type, self.subject)

    def payload_digest(self, authority: Authority) -> str:
        """What makes two requests 'the same write' (for idempotent retries)."""
        return digest("payload", self.memory_type.value, subject_key(self.subject),
                      self.content, self.source.source_id, self.source.kind.value,
                      authority.value, self.sensitivity.value, self.confidence,
                      self.valid_from, self.expires_at)

    def to_dict(self) -> CandidateDict:
        return CandidateDict(
            candidate_id=self.candidate_id, namespace=self.namespace.to_dict(),
            memory_type=str(self.memory_type.value), subject=self.subject, content=self.content,
            source=SourceDict(source_id=self.source.source_id, kind=str(self.source.kind.value)),
            lifetime=str(self.lifetime.value), sensitivity=str(self.sensitivity.value),
            confidence=self.confidence,
            authority=None if self.authority is None else str(self.authority.value),
            valid_from=self.valid_from, expires_at=self.expires_at)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemoryCandidate:
        args = dict(d)
        args["namespace"] = MemoryNamespace.from_dict(args["namespace"])
        args["source"] = SourceRef(**args["source"])
        return cls(**args)


@dataclass(frozen=True)
class MemoryRecord:
    """One committed, immutable version of a logical memory."""

    record_id: str
    memory_id: str
    namespace: MemoryNamespace
    memory_type: MemoryType
    subject: str
    content: str | None  # None once the memory is forgotten and its text scrubbed
    source_id: str
    authority: Authority
    confidence: float
    sensitivity: Sensitivity
    valid_from: str
    expires_at: str | None
    created_at: str
    version: int
    supersedes: str | None
    candidate_id: str = ""

    def to_dict(self) -> RecordDict:
        return RecordDict(
            record_id=self.record_id, memory_id=self.memory_id,
            namespace=self.namespace.to_dict(), memory_type=self.memory_type.value,
            subject=self.subject, content=self.content, source_id=self.source_id,
            authority=self.authority.value, confidence=self.confidence,
            sensitivity=self.sensitivity.value, valid_from=self.valid_from,
            expires_at=self.expires_at, created_at=self.created_at, version=self.version,
            supersedes=self.supersedes, candidate_id=self.candidate_id)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemoryRecord:
        args = dict(d)
        args["namespace"] = MemoryNamespace.from_dict(args["namespace"])
        args["memory_type"] = MemoryType(args["memory_type"])
        args["authority"] = Authority(args["authority"])
        args["sensitivity"] = Sensitivity(args["sensitivity"])
        return cls(**args)

    def is_valid_at(self, at: str) -> bool:
        return self.valid_from <= at and (self.expires_at is None or at < self.expires_at)


@dataclass(frozen=True)
class PolicyDecision:
    """The write gate's verdict: ``allow``, ``reject`` or ``review`` with a stable code."""

    outcome: str
    reason: str
    authority: Authority | None = None
    findings: tuple[str, ...] = ()


@dataclass(frozen=True)
class WriteResult:
    """What a write, correction or approval did. ``outcome`` is ``written``,
    ``idempotent``, ``rejected`` or ``review``; ``reason`` a stable code."""

    outcome: str
    reason: str
    memory_id: str
    record: MemoryRecord | None = None
    review_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome in ("written", "idempotent")


@dataclass(frozen=True)
class DeletionReceipt:
    """Proof of a forget: ids, time, reason and content digests, never the content."""

    receipt_id: str
    memory_id: str
    namespace: dict[str, Any]
    record_ids: tuple[str, ...]
    deleted_at: str
    reason: str
    content_digests: tuple[str, ...]
    request_id: str | None = None

    def to_dict(self) -> ReceiptDict:
        return ReceiptDict(
            receipt_id=self.receipt_id, memory_id=self.memory_id,
            namespace=copy.deepcopy(self.namespace), record_ids=list(self.record_ids),
            deleted_at=self.deleted_at, reason=self.reason,
            content_digests=list(self.content_digests), request_id=self.request_id)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DeletionReceipt:
        args = dict(d)
        args["record_ids"] = tuple(args["record_ids"])
        args["content_digests"] = tuple(args["content_digests"])
        return cls(**args)


@dataclass(frozen=True)
class ScoreParts:
    task_match: int
    authority: int
    recency: int
    confidence: float

    @property
    def total(self) -> float:
        return round(self.task_match + self.authority + self.recency + self.confidence, 6)


@dataclass(frozen=True)
class ContextItem:
    """The compact projection of one recalled record handed to a model."""

    memory_type: str
    authority: str
    date: str
    source: str
    content: str
    why: str
    record_id: str

    def render(self) -> str:
        return (f"[{self.memory_type} | {self.authority} | {self.date}]\n{self.content}\n"
                f"source: {self.source}\nreason: {self.why}")


@dataclass
class RecallOutcome:
    """Selected context items plus the trace of every candidate's fate."""

    items: list[ContextItem]
    records: list[MemoryRecord]
    trace: list[dict[str, Any]] = field(default_factory=list)
    query_terms: list[str] = field(default_factory=list)

    def render(self) -> str:
        return "\n\n".join(i.render() for i in self.items)


def parse_at(value: str | datetime) -> str:
    return normalize_timestamp(value, field="at")


class GovernanceRefusal(GovernanceError):
    """A governed call refused for a stable ``reason`` code (see ``policy.REASONS``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{message} [{reason}]")
        self.reason = reason
