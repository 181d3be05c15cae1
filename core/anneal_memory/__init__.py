"""anneal-memory: living, governed memory for AI agents.

An episodic SQLite store, a bounded continuity file rewritten at each wrap,
citation-validated graduation of patterns, supersession and trust for changed and
relayed facts, and a hash-chained audit trail. Standard library only.
"""

from __future__ import annotations

from ._version import __version__
from .audit import AuditTrail, AuditVerifyResult
from .continuity.durable import DurableFact, parse_durable_facts
from .continuity.parse import PatternSummary, extract_pattern_summaries
from .continuity.schema import (
    DEFAULT_SCHEMA,
    FLOW_SCHEMA,
    SectionSpec,
    default_max_chars,
    hard_max_chars,
    schema_role_warning,
    validate_schema,
)
from .crystal import CrystalStore, retrieve_patterns
from .engine import Engine
from .errors import (
    AnnealMemoryError,
    AuditError,
    BatonError,
    ContinuityValidationError,
    EpisodeNotFoundError,
    GovernanceError,
    MissingExtraError,
    NoWrapInProgressError,
    ReadOnlyStoreError,
    SchemaError,
    SidecarError,
    StoreError,
    StoreLocationError,
    SupersessionError,
    TrustError,
    UnknownEpisodeTypeError,
    ValidationError,
    WrapError,
    WrapInProgressError,
    WrapTokenError,
)
from .recall import retrieve_relevant
from .session import MemorySession, WrapOutcome
from .spores import SporeStore
from .store import Store
from .text import check_explanation_overlap
from .types import (
    AffectiveState,
    Episode,
    EpisodeType,
    RecallResult,
    RelevantResult,
    ReplacedEpisode,
    ScoredEpisode,
    StoreStatus,
)
from .wrap.baton import baton_status, claim_baton, release_baton
from .wrap.prepare import prepare_wrap
from .wrap.save import validated_save_continuity

__all__ = [
    "DEFAULT_SCHEMA",
    "FLOW_SCHEMA",
    "AffectiveState",
    "AnnealMemoryError",
    "AuditError",
    "AuditTrail",
    "AuditVerifyResult",
    "BatonError",
    "ContinuityValidationError",
    "CrystalStore",
    "DurableFact",
    "Engine",
    "Episode",
    "EpisodeNotFoundError",
    "EpisodeType",
    "GovernanceError",
    "MemorySession",
    "MissingExtraError",
    "NoWrapInProgressError",
    "PatternSummary",
    "ReadOnlyStoreError",
    "RecallResult",
    "RelevantResult",
    "ReplacedEpisode",
    "SchemaError",
    "ScoredEpisode",
    "SectionSpec",
    "SidecarError",
    "SporeStore",
    "Store",
    "StoreError",
    "StoreLocationError",
    "StoreStatus",
    "SupersessionError",
    "TrustError",
    "UnknownEpisodeTypeError",
    "ValidationError",
    "WrapError",
    "WrapInProgressError",
    "WrapOutcome",
    "WrapTokenError",
    "__version__",
    "baton_status",
    "check_explanation_overlap",
    "claim_baton",
    "default_max_chars",
    "extract_pattern_summaries",
    "hard_max_chars",
    "parse_durable_facts",
    "prepare_wrap",
    "release_baton",
    "retrieve_patterns",
    "retrieve_relevant",
    "schema_role_warning",
    "validate_schema",
    "validated_save_continuity",
]
