"""A store that lost its database (SQLite) or its tables (PostgreSQL) while its audit trail
or metadata remain is refused with StoreGoneError and not created anew (issue 52, item 1):
read-write and read-only, the library and the CLI, nothing changed by the refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anneal_memory import Store, StoreGoneError
from anneal_memory.cli.main import main


def _filled(location: str) -> None:
    with Store(location) as s:
        for i in range(3):
            s.record(f"note {i} about the tram", "observation")
        s.scoped({"user": "alice"}).record("alice takes the bus", "context")


def _pg_tables(location: str) -> set[str]:
    import psycopg

    with psycopg.connect(location, autocommit=True) as conn:
        return {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema()")}


def _pg(location: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(location, autocommit=True) as conn:
        conn.execute(sql)


def _what_is_there(location: str) -> Any:
    if location.startswith("postgresql"):
        return _pg_tables(location)
    folder = Path(location).parent
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


#: how the store was lost: SQLite loses its file; PostgreSQL a table, all but the audit
#: trail, or all but its metadata
LOSSES = {
    "episodes": "DROP TABLE episodes CASCADE",
    "all-but-audit": None,
    "all-but-meta": None,
}


def _lose(location: str, how: str) -> None:
    if not location.startswith("postgresql"):
        if how == "episodes":
            Path(location).unlink()
        elif how == "all-but-audit":
            Path(location).write_bytes(b"")
        else:
            Path(location).unlink()
            for p in Path(location).parent.glob("memory.audit*"):
                p.unlink()
            (Path(location).parent / "memory.continuity.md").write_text("# Continuity\n")
        return
    keep = {"all-but-audit": "audit_log", "all-but-meta": "meta"}.get(how)
    if keep is None:
        _pg(location, LOSSES[how] or "")
        return
    for table in sorted(_pg_tables(location) - {keep}):
        _pg(location, f"DROP TABLE IF EXISTS {table} CASCADE")


@pytest.mark.parametrize("how", sorted(LOSSES))
@pytest.mark.parametrize("read_only", [False, True])
def test_a_lost_store_is_refused_not_recreated(location: str, how: str,
                                               read_only: bool) -> None:
    _filled(location)
    _lose(location, how)
    before = _what_is_there(location)
    with pytest.raises(StoreGoneError) as info:
        Store(location, read_only=read_only)
    assert "nothing was created" in str(info.value) and "backup" in str(info.value)
    assert _what_is_there(location) == before


@pytest.mark.parametrize("argv", [["status"], ["record", "x"], ["search", "tram"],
                                  ["init"], ["verify"]])
def test_every_command_refuses_a_lost_store(location: str, argv: list[str],
                                            capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("ANNEAL_MEMORY_DB", raising=False)
    _filled(location)
    _lose(location, "episodes")
    before = _what_is_there(location)
    capsys.readouterr()
    rc = main(["--db", location] + argv)
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "memory was lost" in err or "is missing" in err, err
    assert _what_is_there(location) == before


def test_a_healthy_store_and_an_empty_place_still_open(location: str) -> None:
    with Store(location) as s:  # an empty schema / a new path: a new store
        s.record("first", "observation")
    with Store(location, read_only=True) as s:
        assert s.status().total_episodes == 1
