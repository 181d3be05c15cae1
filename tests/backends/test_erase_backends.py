"""Erase on each backend (issue 29 item 1): after ``erase`` and ``erase_namespace`` no
byte of the canary is left in any file of the store's folder and its sidecar folder, nor,
on PostgreSQL, in any row of any table of the store's schema (read through SQL, as an
operator with database access would). A control reads the canary before the erase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anneal_memory import CrystalStore, MemoryRuntime, MemorySession, SporeStore, Store
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, SourceRef
from anneal_memory.testing import backend_of, scripted_compress


def _files_with(folder: Path, needle: str) -> list[str]:
    return sorted(f.name for f in folder.rglob("*")
                  if f.is_file() and needle.encode() in f.read_bytes())


def _rows_with(store: Store, needle: str) -> list[str]:
    """Tables of a PostgreSQL store whose rows (as text) hold ``needle``."""
    if store.dsn is None:
        return []
    b = backend_of(store)
    tables = [r[0] for r in b.q("SELECT table_name FROM information_schema.tables WHERE "
                                "table_schema = current_schema()")]
    return [t for t in tables
            if b.q1(f"SELECT 1 FROM {t} x WHERE x::text LIKE ? LIMIT 1", (f"%{needle}%",))]


def _traces(store: Store, folder: Path, needle: str) -> list[str]:
    return _files_with(folder, needle) + _rows_with(store, needle)


def _plant(store: Store, user: str, canary: str) -> tuple[MemorySession, list[str]]:
    ses = MemorySession(store, namespace={"user": user})
    v = ses.store
    ids = [v.record(f"{canary} the locker code is under the third step of the stairs",
                    "observation", metadata={"k": canary}).id,
           v.record(f"Decided that {canary} stays off the shared calendar from now on",
                    "decision").id]
    v.record("A plain note about lunch on the terrace", "observation")
    assert ses.wrap(scripted_compress).status == "saved"
    v.items("history").append({"text": f"{canary} the locker code is under the third step"})
    CrystalStore(v).crystallize("locker", level=4, text=f"{canary} locker code under the "
                                "third step of the stairs", evidence=[ids[0]])
    SporeStore(v).add(type="task", text=f"move {canary} the locker code is under the third step")
    MemoryRuntime(store).write(MemoryCandidate(
        f"c-{user}", MemoryNamespace(tenant="default", user=user, agent="default"),
        "semantic", "locker", f"{canary} governed", SourceRef("conv#1", "user_message")))
    return ses, ids


def test_erase_episodes_and_namespace_leave_no_trace(store: Store, tmp_path: Path) -> None:
    ses, ids = _plant(store, "alice", "ZQXBKA")
    other, _ = _plant(store, "bob-ZQXBOB", "ZQXBKB")
    assert _traces(store, tmp_path, "ZQXBKA") and _traces(store, tmp_path, "ZQXBOB")
    report = ses.store.erase(ids)
    assert len(report.episodes) == 2 and report.continuity_lines
    # the governed record is not an episode: forget it the governed way
    MemoryRuntime(store).forget(MemoryNamespace(tenant="default", user="alice",
                                                agent="default"), "semantic", "locker",
                                reason="asked")
    assert _traces(store, tmp_path, "ZQXBKA") == []
    assert "lunch" in ses.store.load_continuity()
    bob_continuity = other.store.load_continuity()
    store.erase_namespace({"user": "bob-ZQXBOB"})
    assert _traces(store, tmp_path, "ZQXBOB") == [] and _traces(store, tmp_path, "ZQXBKB") == []
    assert [n["namespace"].user for n in store.namespaces()] == ["alice"]
    assert other.store.load_continuity() is None and bob_continuity


def test_erase_namespace_counts(store: Store) -> None:
    for u in ("u1", "u2", "u3"):
        s = store.scoped({"user": u})
        s.record_many({"content": f"{u} row {i} about a topic number {i}",
                       "episode_type": "observation"} for i in range(200))
    got: Any = store.erase_namespace({"user": "u2"})
    assert len(got.episodes) == 200
    counts = {n["namespace"].user: n["episodes"] for n in store.namespaces()}
    assert counts == {"u1": 200, "u3": 200}
    assert store.status().tombstone_count == 200
