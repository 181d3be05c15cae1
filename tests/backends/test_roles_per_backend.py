"""The scoped roles' guarantees (tests/core/test_scoped_roles.py) on every backend: a
namespace's roles read and write nothing of another, what spans every namespace answers
only at the root, rows come back with names; on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_scoped_roles import (  # the core suite's tests, run here per backend
    test_a_namespaces_roles_read_nothing_of_another,
    test_a_namespaces_roles_write_nothing_into_another,
    test_every_role_method_called_on_alices_roles_with_bobs_names_touches_nothing_of_bobs,
    test_rows_cross_the_seam_with_names,
    test_the_flat_view_has_no_dispatch_and_offers_nothing_unlisted,
    test_what_spans_every_namespace_answers_only_at_the_root,
)

from anneal_memory import storage

__all__ = [
    "test_a_namespaces_roles_read_nothing_of_another",
    "test_a_namespaces_roles_write_nothing_into_another",
    "test_every_role_method_called_on_alices_roles_with_bobs_names_touches_nothing_of_bobs",
    "test_rows_cross_the_seam_with_names",
    "test_the_flat_view_has_no_dispatch_and_offers_nothing_unlisted",
    "test_what_spans_every_namespace_answers_only_at_the_root",
]


@pytest.fixture
def db(location: str) -> Iterator[storage.Database]:
    """The database at this backend's location, opened through storage.open."""
    database = storage.open(location)
    yield database
    database.close()


def test_storage_open_gives_the_backend_of_the_location(db: storage.Database,
                                                         location: str) -> None:
    kind = "PostgresBackend" if location.startswith("postgres") else "SQLiteBackend"
    assert type(db.connection).__name__ == kind
    assert db.roles() is db.roles() and db.roles().scope == storage.ROOT
    with db.unit() as roles:
        roles.meta.set_meta("k", "v")
    assert db.roles().meta.get_meta("k") == "v"
    with pytest.raises(RuntimeError), db.unit() as roles:
        roles.meta.set_meta("k", "rolled back")
        raise RuntimeError("abort")
    assert db.roles().meta.get_meta("k") == "v"
