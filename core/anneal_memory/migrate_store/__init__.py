"""Copy a store between SQLite and PostgreSQL: ``migrate(src, dst)``. The command line
is ``anneal-memory migrate-store SRC DST`` (``python -m anneal_memory.migrate_store`` runs
the same command).

The work is done in :mod:`anneal_memory.store_copy`, below the CLI: this package is its
public name and its ``python -m`` entry, both above the CLI, so no import runs back up.
"""

from __future__ import annotations

from ..store_copy import MigrationReport, migrate

__all__ = ["MigrationReport", "migrate"]
