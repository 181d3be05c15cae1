"""The long-term tiers in the store's database: per namespace, shared by every Store on
the database, copied by migrate-store, and a sidecar of an older store imported once."""

from __future__ import annotations

from pathlib import Path

from anneal_memory import CrystalStore, SporeStore, Store
from anneal_memory.migrate_store import migrate
from anneal_memory.worth import OutcomeLog


def test_tiers_live_in_the_database_per_namespace(db: Path) -> None:
    with Store(db) as store:
        alice, bob = store.scoped({"user": "alice"}), store.scoped({"user": "bob"})
        CrystalStore(alice).crystallize("alice-deploys", level=2,
                                        text="alice deploys on Fridays only")
        SporeStore(alice).add(type="task", text="alice: rotate the vault key")
        OutcomeLog(alice).record("x1", ["crystal:alice-deploys=followed"])
        assert [c.name for c in CrystalStore(alice).list()] == ["alice-deploys"]
        assert CrystalStore(bob).list() == [] and CrystalStore(store).list() == []
        assert SporeStore(bob).list_open() == [] and OutcomeLog(bob).read() == ([], 0)
        assert len(SporeStore(alice).list_open()) == 1 and len(OutcomeLog(alice).read()[0]) == 1
    assert not list(db.parent.glob("*.crystal.json")) and not list(db.parent.glob("*.spores.json"))
    with Store(db) as other:  # another Store (process, host) on the same database sees them
        assert [c.name for c in CrystalStore(other.scoped({"user": "alice"})).list()] == [
            "alice-deploys"]


def test_an_older_stores_sidecars_are_imported_once_and_kept(db: Path) -> None:
    with Store(db) as store:
        store.record("the episode the crystal grew from", "observation")
    CrystalStore(db).crystallize("old-habit", level=3, text="from the sidecar era")
    SporeStore(db).add(type="question", text="is the sidecar still read?")
    OutcomeLog(db).record("e1", ["crystal:old-habit=followed"])
    files = {p.name: p.read_text("utf-8") for p in db.parent.iterdir()
             if p.name.endswith((".crystal.json", ".spores.json", ".outcomes.jsonl"))}
    assert len(files) == 3
    with Store(db) as store:
        assert [c.name for c in CrystalStore(store).list()] == ["old-habit"]
        assert [s.text for s in SporeStore(store).list_open()] == ["is the sidecar still read?"]
        assert len(OutcomeLog(store).read()[0]) == 1
    for name, text in files.items():
        assert not (db.parent / name).exists()
        assert (db.parent / f"{name}.imported").read_text("utf-8") == text  # kept, renamed
    # a sidecar that appears again later is not imported over the database's document
    (db.parent / "memory.crystal.json").write_text(files["memory.crystal.json"], "utf-8")
    with Store(db) as store:
        cs = CrystalStore(store)
        cs.retire("old-habit", kind="obsolete", reason="moved on")
        assert cs.list() == [] and CrystalStore(store).list() == []
        assert (db.parent / "memory.crystal.json").exists()


def test_migrate_store_copies_the_tiers(tmp_path: Path) -> None:
    src, dst = tmp_path / "a.db", tmp_path / "b.db"
    with Store(src) as store:
        CrystalStore(store.scoped({"user": "carol"})).crystallize("c1", level=2, text="carol's")
        SporeStore(store).add(type="task", text="root spore")
    migrate(str(src), str(dst))
    with Store(dst) as store:
        assert [c.name for c in CrystalStore(store.scoped({"user": "carol"})).list()] == ["c1"]
        assert [s.text for s in SporeStore(store).list_open()] == ["root spore"]
