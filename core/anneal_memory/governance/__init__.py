"""The governed memory runtime: namespaces, a write policy gate, immutable versions
with compare-and-set correction, tombstones, scoped recall with a score trace, and a
namespace-scoped view of the episodic Store.

Everything lives in the Store's own database and audit chain. See docs/governance.md.
"""

from __future__ import annotations

from .contracts import (
    AUTHORITY_RANK,
    SOURCE_AUTHORITY,
    Authority,
    ContextItem,
    DeletionReceipt,
    GovernanceRefusal,
    MemoryCandidate,
    MemoryLifetime,
    MemoryRecord,
    MemoryType,
    PolicyDecision,
    RecallOutcome,
    ScoreParts,
    Sensitivity,
    SourceKind,
    SourceRef,
    WriteResult,
    memory_id_for,
)
from .namespace import MemoryNamespace
from .policy import REASONS, PolicyConfig, evaluate
from .runtime import MemoryRuntime
from .scoped import NS_META_KEY, ScopedStore, scoped
from .secrets import scan_secrets

__all__ = [
    "AUTHORITY_RANK",
    "Authority",
    "ContextItem",
    "DeletionReceipt",
    "GovernanceRefusal",
    "MemoryCandidate",
    "MemoryLifetime",
    "MemoryNamespace",
    "MemoryRecord",
    "MemoryRuntime",
    "MemoryType",
    "NS_META_KEY",
    "PolicyConfig",
    "PolicyDecision",
    "REASONS",
    "RecallOutcome",
    "SOURCE_AUTHORITY",
    "ScopedStore",
    "ScoreParts",
    "Sensitivity",
    "SourceKind",
    "SourceRef",
    "WriteResult",
    "evaluate",
    "memory_id_for",
    "scan_secrets",
    "scoped",
]
