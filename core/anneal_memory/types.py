"""Value types shared across the library: episode types, episodes and result records."""

from __future__ import annotations

import builtins
import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict

from .errors import TrustError, UnknownEpisodeTypeError


class EpisodeType(str, enum.Enum):
    """The six kinds of episode. Every call that takes a type also takes the plain string."""

    OBSERVATION = "observation"
    DECISION = "decision"
    TENSION = "tension"
    QUESTION = "question"
    OUTCOME = "outcome"
    CONTEXT = "context"

    def __str__(self) -> str:  # "decision", not "EpisodeType.DECISION"
        return self.value

    @classmethod
    def coerce(cls, value: object) -> EpisodeType:
        """Accept an EpisodeType or its string (any case); refuse anything else."""
        if isinstance(value, EpisodeType):
            return value
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        valid = ", ".join(t.value for t in cls)
        raise UnknownEpisodeTypeError(f"unknown episode type {value!r}: use one of {valid}")


#: Trust classes, least trusted first. The number is the rank.
TRUST_LEVELS: dict[str, int] = {"external": 0, "tool": 1, "agent": 2, "operator": 3}
#: Classes whose content was relayed from outside the agent.
RELAYED_TRUST = frozenset({"tool", "external"})


def coerce_trust(value: object) -> str:
    """Validate a trust class name and return it in canonical form."""
    if isinstance(value, str) and value.strip().lower() in TRUST_LEVELS:
        return value.strip().lower()
    raise TrustError(
        f"unknown trust class {value!r}: use one of agent, tool, external, operator"
    )


class FieldMapping(Mapping[str, Any]):
    """A typed result that also answers ``result["key"]``, ``.get`` and ``.keys()`` with
    the dict 1.0.2 returned in its place (``as_mapping``); attributes stay typed."""

    __slots__ = ()

    def as_mapping(self) -> Mapping[str, object]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.as_mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_mapping())

    def __len__(self) -> int:
        return len(self.as_mapping())


class EpisodeDict(TypedDict):
    """``Episode.to_dict()``: the episode as JSON (export, ``--json``, MCP)."""

    id: str
    timestamp: str
    type: str
    content: str
    source: str
    session_id: str | None
    metadata: dict[str, object] | None
    superseded_by: str | None
    trust: str
    state_key: str | None
    derived_from: list[str]


@dataclass
class Episode:
    """One typed, timestamped record in the episodic store."""

    id: str
    timestamp: str
    type: EpisodeType
    content: str
    source: str = "agent"
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    superseded_by: str | None = None
    trust: str = "agent"
    state_key: str | None = None
    derived_from: list[str] = field(default_factory=list)

    def to_dict(self) -> EpisodeDict:
        return {
            "id": self.id,
            "timestamp": self.timestamp,
            "type": self.type.value,
            "content": self.content,
            "source": self.source,
            "session_id": self.session_id,
            "metadata": self.metadata,
            "superseded_by": self.superseded_by,
            "trust": self.trust,
            "state_key": self.state_key,
            "derived_from": list(self.derived_from),
        }


class RecallResult(NamedTuple):
    """What recall returns: the page of episodes, the full match count (matches only,
    never the context shown beside them), the query used."""

    episodes: list[Episode]
    total_matching: int
    query_params: dict[str, Any]

    @property
    def why(self) -> dict[str, str]:
        """Why each returned episode is there, by id: ``"phrase"`` (it holds the keyword
        as written), ``"words"`` (it holds words of it), ``"next to <id>"`` (context:
        recorded beside that match, its reply or the turn it answers). Empty for a
        recall without a keyword."""
        return dict(self.query_params.get("why") or {})

    @property
    def semantic(self) -> VectorUse | None:
        """How vectors took part (None: a keyword-only recall): the mode, the model,
        whether they were used and, when not (or not all), why."""
        info = self.query_params.get("semantic")
        return VectorUse(**info) if info else None

    @property
    def vectors_used(self) -> bool:
        """Whether meaning-based ranking took part in this recall."""
        use = self.semantic
        return bool(use and use.used)


class VectorUseDict(TypedDict):
    """``VectorUse.to_dict()``."""

    mode: str
    used: bool
    model: str | None
    dims: int | None
    candidates: int
    pending: int
    embedded: int
    reason: str | None


@dataclass(frozen=True)
class VectorUse:
    """What a hybrid or semantic recall did with vectors.

    ``used`` is False when no vector ranked anything (the embedder failed on the query,
    or no episode has a vector yet): the result is then keyword recall's, and ``reason``
    says why. ``pending``: episodes the filters let through that have no vector of this
    model yet (they are not ranked by meaning until embedded); ``embedded``: how many this
    recall embedded on the way.
    """

    mode: str
    used: bool
    model: str | None = None
    dims: int | None = None
    candidates: int = 0
    pending: int = 0
    embedded: int = 0
    reason: str | None = None

    def to_dict(self) -> VectorUseDict:
        return {"mode": self.mode, "used": self.used, "model": self.model, "dims": self.dims,
                "candidates": self.candidates, "pending": self.pending,
                "embedded": self.embedded, "reason": self.reason}


class NamespaceTotalsDict(TypedDict):
    """``NamespaceTotals.to_dict()``."""

    namespaces: int
    wraps: int
    last_wrap_at: str | None
    open_wraps: int
    continuities: int


@dataclass
class NamespaceTotals:
    """The root's status across every namespace (the root's own memory included): how
    many namespaces hold memory, their saved wraps and the last one, wraps open now, and
    how many namespaces have a saved continuity."""

    namespaces: int
    wraps: int
    last_wrap_at: str | None
    open_wraps: int
    continuities: int

    def to_dict(self) -> NamespaceTotalsDict:
        return {"namespaces": self.namespaces, "wraps": self.wraps,
                "last_wrap_at": self.last_wrap_at, "open_wraps": self.open_wraps,
                "continuities": self.continuities}


class VectorCount(TypedDict):
    """The stored vectors of one model: ``StoreStatus.vectors``."""

    model: str
    dims: int
    episodes: int


class StoreStatusDict(TypedDict):
    """``StoreStatus.to_dict()``: 1.0.2's status keys and what came after them."""

    total_episodes: int
    episodes_since_wrap: int
    total_wraps: int
    last_wrap_at: str | None
    wrap_in_progress: bool
    tombstone_count: int
    continuity_chars: int | None
    episodes_by_type: dict[str, int]
    audit_enabled: bool
    audit_entry_count: int
    audit_write_failures: int
    audit_last_failure: str | None
    consolidate_requires_baton: bool
    path: str
    superseded_count: int
    trust_counts: dict[str, int]
    wrap_started_at: str | None
    wrap_stale: bool
    namespace: dict[str, str | None] | None
    all_namespaces: NamespaceTotalsDict | None
    embedder: str | None
    embedding_dims: int | None
    embedded_episodes: int
    vectors: list[VectorCount]


@dataclass
class StoreStatus:
    """A snapshot of the store's health and counts: on a namespace view, that
    namespace's (``namespace`` names it); on the root, the root's own wraps and
    continuity, with ``all_namespaces`` the totals across every namespace."""

    total_episodes: int
    episodes_since_wrap: int
    total_wraps: int
    last_wrap_at: str | None
    wrap_in_progress: bool
    tombstone_count: int
    continuity_chars: int | None
    episodes_by_type: dict[str, int]
    audit_enabled: bool
    audit_entry_count: int
    audit_write_failures: int
    audit_last_failure: str | None
    consolidate_requires_baton: bool
    path: str = ""
    superseded_count: int = 0
    trust_counts: dict[str, int] = field(default_factory=dict)
    wrap_started_at: str | None = None
    #: the open wrap is older than the store's stale_wrap_after (or, without that policy,
    #: than STALE_WRAP_NOTICE seconds): its host may have died holding it
    wrap_stale: bool = False
    namespace: dict[str, str | None] | None = None
    all_namespaces: NamespaceTotals | None = None
    #: the store's embedder (its model id; None: keyword recall only), its dimension once
    #: known, and how many of the episodes counted here have a vector of it
    embedder: str | None = None
    embedding_dims: int | None = None
    embedded_episodes: int = 0
    #: the stored vectors of the episodes counted here, by model: {model, dims, episodes}
    vectors: list[VectorCount] = field(default_factory=list)

    def to_dict(self) -> StoreStatusDict:
        """The status as JSON, every container a copy (as ``dataclasses.asdict`` makes)."""
        return {
            "total_episodes": self.total_episodes,
            "episodes_since_wrap": self.episodes_since_wrap,
            "total_wraps": self.total_wraps,
            "last_wrap_at": self.last_wrap_at,
            "wrap_in_progress": self.wrap_in_progress,
            "tombstone_count": self.tombstone_count,
            "continuity_chars": self.continuity_chars,
            "episodes_by_type": dict(self.episodes_by_type),
            "audit_enabled": self.audit_enabled,
            "audit_entry_count": self.audit_entry_count,
            "audit_write_failures": self.audit_write_failures,
            "audit_last_failure": self.audit_last_failure,
            "consolidate_requires_baton": self.consolidate_requires_baton,
            "path": self.path,
            "superseded_count": self.superseded_count,
            "trust_counts": dict(self.trust_counts),
            "wrap_started_at": self.wrap_started_at,
            "wrap_stale": self.wrap_stale,
            "namespace": None if self.namespace is None else dict(self.namespace),
            "all_namespaces": (None if self.all_namespaces is None
                               else self.all_namespaces.to_dict()),
            "embedder": self.embedder,
            "embedding_dims": self.embedding_dims,
            "embedded_episodes": self.embedded_episodes,
            "vectors": [VectorCount(model=v["model"], dims=v["dims"], episodes=v["episodes"])
                        for v in self.vectors],
        }


class WrapCancelReceipt(NamedTuple):
    """What ``Store.wrap_cancelled`` abandoned: the wrap's token, start and episodes (all
    None when no wrap was open, and then the receipt is falsy)."""

    token: str | None
    started_at: str | None
    episode_ids: list[str] | None
    partial_state: bool = False

    def __bool__(self) -> bool:
        return self.token is not None


class ReplacedEpisode(NamedTuple):
    """An episode that a scored-recall hit replaced."""

    id: str
    timestamp: str
    content: str
    trust: str


class ScoredEpisode(NamedTuple):
    """One episode from scored recall, with its score and what it replaced."""

    id: str
    timestamp: str
    type: str
    source: str
    content: str
    score: float
    replaces: list[ReplacedEpisode]
    trust: str


class DurableFact(NamedTuple):
    """One durable fact: its whole bullet (``line``), the fact, its cue words, and the
    indented lines that continue it (``continuation``, as 1.0.2 gives them)."""

    line: str
    fact: str
    cues: list[str]
    continuation: list[str] = []


class PatternMatchDict(TypedDict):
    """``PatternMatch.to_dict()``."""

    name: str
    level: int
    text: str
    score: float
    via: list[str]
    matched_words: list[str]
    via_episodes: list[str]
    evidence: list[str]
    tags: list[str]
    activation: str


class PatternMapping(PatternMatchDict):
    """``PatternMatch.as_mapping()``: 1.0.2's RelevantPattern keys beside ours."""

    explanation: str
    source: str


class PatternMatch(NamedTuple):
    """One crystal recall found, and why."""

    name: str
    level: int
    text: str
    score: float
    via: tuple[str, ...]  # "keyword" and/or "citation"
    matched_words: list[str]
    via_episodes: list[str]
    evidence: list[str]
    tags: tuple[str, ...] = ()
    activation: str = ""

    def to_dict(self) -> PatternMatchDict:
        return {"name": self.name, "level": self.level, "text": self.text, "score": self.score,
                "via": list(self.via), "matched_words": list(self.matched_words),
                "via_episodes": list(self.via_episodes), "evidence": list(self.evidence),
                "tags": list(self.tags), "activation": self.activation}

    def as_mapping(self) -> PatternMapping:
        """1.0.2's RelevantPattern dict (name, level, explanation, tags, activation, score,
        source: how it was found) and ours."""
        d = self.to_dict()
        return {**d, "explanation": self.text, "source": "+".join(self.via)}

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        """``match["name"]`` as with 1.0.2's dicts; ``match[0]`` as a tuple."""
        if isinstance(key, str):
            mapping: Mapping[str, object] = self.as_mapping()
            return mapping[key]
        return tuple.__getitem__(self, key)

    def keys(self) -> builtins.list[str]:
        return builtins.list(self.as_mapping())

    def get(self, key: str, default: Any = None) -> Any:
        """1.0.2's ``dict.get``: the value's type is the key's (Any, as the dict gave it)."""
        mapping: Mapping[str, object] = self.as_mapping()
        return mapping.get(key, default)


class RelevantResult(NamedTuple):
    """Scored recall over crystallized patterns, episodes and durable facts."""

    patterns: list[PatternMatch]
    episodes: list[ScoredEpisode]
    query_keywords: list[str]
    facts: list[DurableFact]


@dataclass(frozen=True)
class AffectiveState:
    """Accepted for compatibility and ignored: the affect layer is retired."""

    tag: str
    intensity: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "tag", str(self.tag).strip().lower())
        try:
            value = float(self.intensity)
        except (TypeError, ValueError):
            value = 0.0
        object.__setattr__(self, "intensity", max(0.0, min(1.0, value)))
