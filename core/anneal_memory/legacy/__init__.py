"""Reading what anneal-memory 1.0.2 wrote: its SQLite store, audit trail, sidecars and
exports. Above storage (it uses the SQLite driver) and below the Store, the audit trail,
the sibling stores and the export, which call it; nothing here imports them.

``upgrade``: the in-place upgrade of a 1.0.2 database and the reading of its audit files;
``formats``: 1.0.2's crystal and spore sidecars and JSON export in our layout.
"""

from .formats import adopt_crystals, adopt_export, adopt_spores, is_legacy_export, wrap_record
from .upgrade import (
    BACKUP_SUFFIX,
    LEGACY_AUDIT_FORMAT,
    LEGACY_TAIL_KEY,
    LEGACY_VERSION,
    as_entry,
    backup_path,
    finish_pending,
    is_legacy_entry,
    is_legacy_store,
    legacy_entries,
    legacy_line_hash,
    legacy_tail,
    sealed_part,
    upgrade_report,
    upgrade_store,
)

__all__ = [
    "BACKUP_SUFFIX", "LEGACY_AUDIT_FORMAT", "LEGACY_TAIL_KEY", "LEGACY_VERSION",
    "adopt_crystals", "adopt_export", "adopt_spores", "as_entry", "backup_path",
    "finish_pending", "is_legacy_entry", "is_legacy_export", "is_legacy_store",
    "legacy_entries", "legacy_line_hash", "legacy_tail", "sealed_part", "upgrade_report",
    "upgrade_store", "wrap_record",
]
