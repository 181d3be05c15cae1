"""Clear, typed errors for a server that cannot be used (PostgreSQL runs only)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from conftest import PG_DSN, admin_sql, with_schema

from anneal_memory import Store
from anneal_memory.errors import StoreError

# Defined only when a server is given: these behaviours have no SQLite counterpart.
if PG_DSN:
    def _swap(**parts: str) -> str:
        return urlunsplit(urlsplit(PG_DSN)._replace(**parts))

    def test_unreachable_server() -> None:
        with pytest.raises(StoreError, match="cannot reach the PostgreSQL server"):
            Store(_swap(netloc="anneal@127.0.0.1:9"))

    def test_bad_credentials_do_not_leak_the_password() -> None:
        host = urlsplit(PG_DSN).netloc.split("@")[-1]
        with pytest.raises(StoreError, match="refused the credentials") as err:
            Store(_swap(netloc=f"no_such_role:s3cret@{host}"))
        assert "s3cret" not in str(err.value)

    def test_missing_database() -> None:
        with pytest.raises(StoreError, match="does not exist"):
            Store(_swap(path="/no_such_db_anneal"))

    def test_database_that_is_not_ours_is_left_alone() -> None:
        schema = f"t_{secrets.token_hex(6)}"
        admin_sql(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.invoices (id int)")
        try:
            with pytest.raises(StoreError, match="not an anneal-memory store"):
                Store(with_schema(PG_DSN, schema))
            admin_sql(f"SELECT * FROM {schema}.invoices")  # untouched
        finally:
            admin_sql(f"DROP SCHEMA {schema} CASCADE")

    @pytest.fixture
    def pg_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
        monkeypatch.setenv("ANNEAL_MEMORY_SIDECAR_DIR", str(tmp_path))
        schema = f"t_{secrets.token_hex(6)}"
        admin_sql(f"CREATE SCHEMA {schema}")
        yield schema
        admin_sql(f"DROP SCHEMA {schema} CASCADE")

    def test_newer_schema_is_refused(pg_schema: str) -> None:
        location = with_schema(PG_DSN, pg_schema)
        Store(location).close()
        schema = pg_schema
        admin_sql(f"UPDATE {schema}.meta SET value='99' WHERE key='schema_version'")
        with pytest.raises(StoreError, match="newer anneal-memory"):
            Store(location)

    def test_path_form_of_the_url_selects_the_server(pg_schema: str) -> None:
        location = with_schema(PG_DSN, pg_schema)
        with Store(Path(location)) as s:  # the CLI's --db goes through Path
            s.record("via a Path", "observation")
        with Store(location) as s:
            assert s.recall(keyword="via a path").total_matching == 1
