"""The Meta role owns the metadata and erasure SQL (storage/meta_sql.py): what erasing
one project namespace removes, counted in an ErasedCounts row, on a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.storage.base import ROOT
from anneal_memory.storage.common import ns_meta_key
from anneal_memory.storage.roles import AuditChain, Meta
from anneal_memory.storage.rows import ErasedCounts
from anneal_memory.testing import backend_of, repos_of


def test_erasing_a_project_takes_its_meta_keys_and_rows_and_counts_them(tmp_path: Path) -> None:
    store = Store(tmp_path / "meta.db")
    try:
        gone_view = store.scoped({"user": "dan", "project": "x"})
        kept_view = store.scoped({"user": "dan", "project": "y"})
        gone, kept = gone_view.scope, kept_view.scope
        meta = repos_of(store).meta
        with backend_of(store).transaction():
            meta.set_meta(ns_meta_key("citations_seen", gone), "1")
            meta.set_meta(ns_meta_key("citations_seen", kept), "1")
        repos_of(gone_view).items.item_put("state", "k", "v", None, "2026-01-01T00:00:00Z")
        repos_of(kept_view).items.item_put("state", "k", "v", None, "2026-01-01T00:00:00Z")
        with backend_of(store).transaction():
            counts = meta.erase_scope_rows(gone)
        assert counts == ErasedCounts(items=1, pattern_history=0, drift_probes=0, wraps=0,
                                      tombstones=0, meta=1)
        assert meta.get_meta(ns_meta_key("citations_seen", gone)) is None
        assert meta.get_meta(ns_meta_key("citations_seen", kept)) == "1"
        assert repos_of(gone_view).items.item_get("state", "k") is None
        assert repos_of(kept_view).items.item_get("state", "k") is not None
    finally:
        store.close()


def test_erase_namespace_through_the_store_drops_the_projects_meta_keys(tmp_path: Path) -> None:
    store = Store(tmp_path / "meta.db")
    try:
        view = store.scoped({"user": "dan", "project": "x"})
        view.record("project only", "observation")
        key = ns_meta_key("citations_seen", view.scope)
        with backend_of(store).transaction():
            Meta(backend_of(store)).set_meta(key, "1")
        store.erase_namespace({"user": "dan", "project": "x"})
        assert Meta(backend_of(store)).get_meta(key) is None
    finally:
        store.close()


def test_a_role_over_something_that_is_not_a_sql_backend_is_refused() -> None:
    with pytest.raises(TypeError, match="SQL backend"):
        Meta(object(), ROOT)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="SQL backend"):
        AuditChain(object(), ROOT)  # type: ignore[arg-type]
