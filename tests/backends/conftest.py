"""The backend-agnostic suite: every test runs once per backend.

``sqlite`` always; ``postgres`` when ``ANNEAL_TEST_PG_DSN`` names a server (the ``postgres``
nox session starts a private one). With ``ANNEAL_TEST_BACKEND=postgres`` a missing DSN is
an error, never a silent skip. Each PostgreSQL test gets a schema of its own.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest

from anneal_memory import Store

# The wrap helpers of the core suite (a continuity text around given sections).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "core"))

PG_DSN = os.environ.get("ANNEAL_TEST_PG_DSN", "")
BACKENDS = ["sqlite", "postgres"] if PG_DSN else ["sqlite"]


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("ANNEAL_TEST_BACKEND") == "postgres" and not PG_DSN:
        raise pytest.UsageError("ANNEAL_TEST_BACKEND=postgres needs ANNEAL_TEST_PG_DSN: run "
                                "'nox -s postgres', which starts a server")


def with_schema(dsn: str, schema: str) -> str:
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options={quote(f'-csearch_path={schema}')}"


def admin_sql(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path, monkeypatch) -> Iterator[str]:
    """Where a fresh store lives: a SQLite file, or a PostgreSQL URL with its own schema."""
    monkeypatch.setenv("ANNEAL_MEMORY_SIDECAR_DIR", str(tmp_path / "sidecars"))
    if request.param == "sqlite":
        yield str(tmp_path / "memory.db")
        return
    schema = f"t_{secrets.token_hex(6)}"
    admin_sql(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(PG_DSN, schema)
    finally:
        admin_sql(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def open_store(location: str) -> Iterator[Callable[..., Store]]:
    """Open any number of Stores on the one location; all are closed at the end."""
    opened: list[Store] = []

    def make(**kw: object) -> Store:
        s = Store(location, **kw)  # type: ignore[arg-type]
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


@pytest.fixture
def store(open_store: Callable[..., Store]) -> Store:
    return open_store()


@pytest.fixture
def pg_location(tmp_path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A PostgreSQL schema of this test's own, with a write lock of its own too: the real
    lock is the database's, which tests running beside this one take as well."""
    from anneal_memory.storage import pg_schema

    monkeypatch.setenv("ANNEAL_MEMORY_SIDECAR_DIR", str(tmp_path))
    monkeypatch.setattr(pg_schema, "WRITE_LOCK", secrets.randbelow(2**31 - 2) + 1)
    schema = f"t_{secrets.token_hex(6)}"
    admin_sql(f"CREATE SCHEMA {schema}")
    yield with_schema(PG_DSN, schema)
    admin_sql(f"DROP SCHEMA {schema} CASCADE")
