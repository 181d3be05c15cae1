"""migrate-store: SQLite -> (SQLite | PostgreSQL) -> SQLite, verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from anneal_memory import AuditTrail, Store
from anneal_memory.cli.main import main as cli_main
from anneal_memory.errors import StoreError
from anneal_memory.migrate_store import migrate

from wraphelp import doc, wrap


def main(argv: list[str]) -> int:
    return cli_main(["migrate-store", *argv])


def _fill(path: Path) -> dict[str, str]:
    with Store(path) as s:
        a = s.record("we moved the memory to a server", "decision")
        b = s.record("the server is PostgreSQL 15", "observation", supersedes=[a.id])
        t = s.record("tool output", "observation", trust="tool")
        gone = s.record("remove me", "observation")
        s.delete(gone.id)
        wrap(s, doc(patterns=f"- server memory | 1x | moved [{b.id}]"))
        s.record("after the wrap", "context", derived_from=[t.id])
        s.add_drift_probe(pattern="server memory")
        return {"a": a.id, "b": b.id, "continuity": s.load_continuity() or "",
                "store_id": s.store_id}


def _check(location: str | Path, seed: dict[str, str]) -> None:
    with Store(location) as s:
        st = s.status()
        assert (st.total_episodes, st.tombstone_count, st.total_wraps) == (4, 1, 1)
        assert s.store_id == seed["store_id"] and s.load_continuity() == seed["continuity"]
        assert s.get(seed["a"]).superseded_by == seed["b"]  # type: ignore[union-attr]
        assert s.recall(keyword="postgresql").episodes[0].id == seed["b"]
        assert len(s.episodes_since_wrap()) == 1
        wrap(s, doc())  # the copy keeps working: wrap ids and the chain continue
        assert s.status().total_wraps == 2


def test_round_trip(location: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    seed = _fill(src)
    seen: list[tuple[str, int, int]] = []
    result = migrate(str(src), location, progress=lambda *a: seen.append(a))
    assert result["verified"] and result["copied"]["episodes"] == 4
    assert ("episodes", 4, 4) in seen
    back = tmp_path / "back.db"
    assert main([location, str(back)]) == 0
    _check(back, seed)
    _check(location, seed)
    assert AuditTrail.verify(back).valid


def test_refuses_a_destination_that_is_not_empty(location: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    _fill(src)
    with Store(location) as s:
        s.record("already here", "observation")
    with pytest.raises(StoreError, match="not empty"):
        migrate(str(src), location)
    assert main([str(src), location]) == 1
