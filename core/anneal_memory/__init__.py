"""anneal-memory: living, governed memory for AI agents.

An episodic SQLite store, a bounded continuity file rewritten at each wrap,
citation-validated graduation of patterns, supersession and trust for changed and
relayed facts, and a hash-chained audit trail. Standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._version import __version__

if _TYPE_CHECKING:  # the names for type checkers; at run time they load on first use
    from ._audit_files import AuditVerifyResult
    from .audit import AuditTrail
    from .continuity.durable import parse_durable_facts
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
    from .embedding import Embedder, cosine_similarities, pack_vector
    from .engine import Engine
    from .errors import (
        AnnealMemoryError,
        AuditError,
        BatonError,
        ContinuityValidationError,
        EmbedderError,
        EpisodeNotFoundError,
        GovernanceError,
        MissingExtraError,
        NoWrapInProgressError,
        ReadOnlyStoreError,
        SchemaError,
        SidecarError,
        StoreError,
        StoreGoneError,
        StoreLocationError,
        SupersessionError,
        TrustError,
        UnknownEpisodeTypeError,
        ValidationError,
        WrapError,
        WrapInProgressError,
        WrapTokenError,
    )
    from .governance import (
        DeletionReceipt,
        GovernanceRefusal,
        MemoryCandidate,
        MemoryNamespace,
        MemoryRecord,
        MemoryRuntime,
        ScopedStore,
        SourceRef,
        WriteResult,
        scoped,
    )
    from .immune.review import (
        demote_pattern,
        drift_by_wrap,
        mark_worklist_reviewed,
        pattern_timeline,
        retire_pattern,
        review_worklist,
    )
    from .items import Item, ItemCollection
    from .recall import retrieve_relevant
    from .session import MemorySession, WrapOutcome
    from .spores import SporeStore
    from .store import Store
    from .text import check_explanation_overlap
    from .types import (
        AffectiveState,
        DurableFact,
        Episode,
        EpisodeType,
        NamespaceTotals,
        RecallResult,
        RelevantResult,
        ReplacedEpisode,
        ScoredEpisode,
        StoreStatus,
        VectorUse,
    )
    from .wrap.baton import baton_status, claim_baton, release_baton
    from .wrap.prepare import prepare_wrap
    from .wrap.render import render_package
    from .wrap.save import validated_save_continuity

_LAZY: dict[str, str] = {
    "AffectiveState": ".types",
    "AnnealMemoryError": ".errors",
    "AuditError": ".errors",
    "AuditTrail": ".audit",
    "AuditVerifyResult": ".audit",
    "BatonError": ".errors",
    "ContinuityValidationError": ".errors",
    "CrystalStore": ".crystal",
    "DEFAULT_SCHEMA": ".continuity.schema",
    "DurableFact": ".continuity.durable",
    "Embedder": ".embedding",
    "cosine_similarities": ".embedding",
    "pack_vector": ".embedding",
    "EmbedderError": ".errors",
    "Engine": ".engine",
    "Episode": ".types",
    "EpisodeNotFoundError": ".errors",
    "EpisodeType": ".types",
    "ErasureReport": ".erasure",
    "ContentCheck": "._audit_deep",
    "IdentityError": ".errors",
    "ContentTooLargeError": ".errors",
    "FLOW_SCHEMA": ".continuity.schema",
    "GovernanceError": ".errors",
    "MemorySession": ".session",
    "Item": ".items",
    "ItemCollection": ".items",
    "MissingExtraError": ".errors",
    "NoWrapInProgressError": ".errors",
    "PatternSummary": ".continuity.parse",
    "ReadOnlyStoreError": ".errors",
    "StoreGoneError": ".errors",
    "RecallResult": ".types",
    "RelevantResult": ".types",
    "ReplacedEpisode": ".types",
    "SchemaError": ".errors",
    "ScoredEpisode": ".types",
    "SectionSpec": ".continuity.schema",
    "SidecarError": ".errors",
    "SporeStore": ".spores",
    "Store": ".store",
    "StoreError": ".errors",
    "StoreLocationError": ".errors",
    "StoreStatus": ".types",
    "VectorUse": ".types",
    "NamespaceTotals": ".types",
    "SupersessionError": ".errors",
    "TrustError": ".errors",
    "UnknownEpisodeTypeError": ".errors",
    "ValidationError": ".errors",
    "WrapError": ".errors",
    "WrapInProgressError": ".errors",
    "WrapOutcome": ".session",
    "WrapTokenError": ".errors",
    "baton_status": ".wrap.baton",
    "check_explanation_overlap": ".text",
    "claim_baton": ".wrap.baton",
    "default_max_chars": ".continuity.schema",
    "extract_pattern_summaries": ".continuity.parse",
    "hard_max_chars": ".continuity.schema",
    "parse_durable_facts": ".continuity.durable",
    "prepare_wrap": ".wrap.prepare",
    "release_baton": ".wrap.baton",
    "render_package": ".wrap.render",
    "retrieve_patterns": ".crystal",
    "retrieve_relevant": ".recall",
    "schema_role_warning": ".continuity.schema",
    "validate_schema": ".continuity.schema",
    "validated_save_continuity": ".wrap.save",
    "demote_pattern": ".immune.review",
    "drift_by_wrap": ".immune.review",
    "mark_worklist_reviewed": ".immune.review",
    "pattern_timeline": ".immune.review",
    "retire_pattern": ".immune.review",
    "review_worklist": ".immune.review",
    "MemoryRuntime": ".governance",
    "MemoryNamespace": ".governance",
    "MemoryCandidate": ".governance",
    "MemoryRecord": ".governance",
    "SourceRef": ".governance",
    "WriteResult": ".governance",
    "DeletionReceipt": ".governance",
    "GovernanceRefusal": ".governance",
    "ScopedStore": ".governance",
    "scoped": ".governance",
}


def __getattr__(name: str) -> _Any:
    """Load public names on first use, so ``import anneal_memory`` stays cheap."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'anneal_memory' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AffectiveState",
    "AnnealMemoryError",
    "AuditError",
    "AuditTrail",
    "AuditVerifyResult",
    "BatonError",
    "ContinuityValidationError",
    "CrystalStore",
    "DEFAULT_SCHEMA",
    "DeletionReceipt",
    "DurableFact",
    "Embedder",
    "EmbedderError",
    "Engine",
    "Episode",
    "EpisodeNotFoundError",
    "EpisodeType",
    "ErasureReport",
    "ContentCheck",
    "IdentityError",
    "ContentTooLargeError",
    "FLOW_SCHEMA",
    "GovernanceError",
    "GovernanceRefusal",
    "MemoryCandidate",
    "MemoryNamespace",
    "MemoryRecord",
    "MemoryRuntime",
    "MemorySession",
    "Item",
    "ItemCollection",
    "MissingExtraError",
    "NoWrapInProgressError",
    "PatternSummary",
    "ReadOnlyStoreError",
    "StoreGoneError",
    "RecallResult",
    "RelevantResult",
    "ReplacedEpisode",
    "SchemaError",
    "ScopedStore",
    "ScoredEpisode",
    "SectionSpec",
    "SidecarError",
    "SourceRef",
    "SporeStore",
    "Store",
    "StoreError",
    "StoreLocationError",
    "StoreStatus",
    "VectorUse",
    "NamespaceTotals",
    "SupersessionError",
    "TrustError",
    "UnknownEpisodeTypeError",
    "ValidationError",
    "WrapError",
    "WrapInProgressError",
    "WrapOutcome",
    "WrapTokenError",
    "WriteResult",
    "__version__",
    "baton_status",
    "check_explanation_overlap",
    "claim_baton",
    "cosine_similarities",
    "default_max_chars",
    "extract_pattern_summaries",
    "hard_max_chars",
    "pack_vector",
    "parse_durable_facts",
    "prepare_wrap",
    "release_baton",
    "render_package",
    "retrieve_patterns",
    "retrieve_relevant",
    "schema_role_warning",
    "scoped",
    "validate_schema",
    "validated_save_continuity",
    "demote_pattern",
    "drift_by_wrap",
    "mark_worklist_reviewed",
    "pattern_timeline",
    "retire_pattern",
    "review_worklist",
]
