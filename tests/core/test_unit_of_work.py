"""The unit of work (``_seam.unit_of``): one typed unit of work whose rows and audit entries commit together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.errors import ReadOnlyStoreError
from anneal_memory.testing import repos_of, unit_of


class Boom(Exception):
    pass


def _audit_count(store: Store) -> int:
    return int(store.status().audit_entry_count or 0)


def test_rows_and_audit_entries_commit_together(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        with unit_of(store) as tx:
            ep = store.record("the kettle is on the left shelf", "observation")
            tx.episodes.update_episode(ep.id, trust="operator")
            tx.audit.append("trust_set", {"id": ep.id, "from": "agent", "to": "operator"},
                            actor="operator")
        entries = _audit_count(store)
    with Store(tmp_path / "m.db") as again:
        assert again.get(ep.id).trust == "operator"
        assert _audit_count(again) == entries
        assert again.audit_trail.verify(tmp_path / "m.db").valid


def test_an_exception_rolls_back_every_row_and_audit_entry(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        start = _audit_count(store)
        store.record("kept before the failed unit", "observation")
        one_record = _audit_count(store) - start
        before = (store.status().total_episodes, _audit_count(store))
        with pytest.raises(Boom), unit_of(store) as tx:
            ep = store.record("never acknowledged", "observation")
            tx.audit.append("trust_set", {"id": ep.id}, actor="operator")
            raise Boom
        assert (store.status().total_episodes, _audit_count(store)) == before
        assert store.recall(keyword="acknowledged").episodes == []
        store.record("written after the failed unit", "observation")  # mirrors what is pending
        assert _audit_count(store) == before[1] + one_record
    lines = [ln for f in tmp_path.glob("m.audit*.jsonl") for ln in f.read_text().splitlines()]
    assert lines and not any(ep.id in ln or '"trust_set"' in ln for ln in lines)
    with Store(tmp_path / "m.db") as again:
        assert again.audit_trail.verify(tmp_path / "m.db").valid


def test_a_read_only_store_refuses_a_unit_of_work_before_writing(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        store.record("one", "observation")
    with Store(tmp_path / "m.db", read_only=True) as ro:
        with pytest.raises(ReadOnlyStoreError), unit_of(ro):
            pytest.fail("the block must not run")  # pragma: no cover
        assert ro.status().total_episodes == 1


def test_a_scoped_views_repositories_see_its_namespace_only(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        alice, bob = store.scoped({"user": "alice"}), store.scoped({"user": "bob"})
        a = alice.record("alice keeps bees", "observation")
        b = bob.record("bob keeps goats", "observation")
        assert set(repos_of(alice).episodes.get_episodes([a.id, b.id])) == {a.id}
        with unit_of(bob) as tx:
            assert set(tx.episodes.get_episodes([a.id, b.id])) == {b.id}
            assert [r.id for r in tx.episodes.all_episodes()] == [b.id]
        assert set(repos_of(store).episodes.get_episodes([a.id, b.id])) == {a.id, b.id}


def test_a_staged_continuity_is_put_in_place_after_the_outermost_commit(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        store.save_continuity("## State\n- before\n")
        with unit_of(store):
            with unit_of(store) as tx:
                tx.stage_continuity("## State\n- after\n")
            # committed only with the outer unit: the file still holds the old text
            assert store.continuity_path.read_text("utf-8") == "## State\n- before\n"
        assert store.continuity_path.read_text("utf-8") == "## State\n- after\n"
        assert store.load_continuity() == "## State\n- after\n"
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_rolled_back_unit_leaves_no_staged_file_and_the_old_continuity(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        store.save_continuity("## State\n- kept\n")
        with pytest.raises(Boom), unit_of(store) as tx:
            tx.stage_continuity("## State\n- ZQXROLLEDBACK\n")
            raise Boom
        assert store.load_continuity() == "## State\n- kept\n"
    for f in tmp_path.iterdir():
        assert b"ZQXROLLEDBACK" not in f.read_bytes(), f.name
    with Store(tmp_path / "m.db") as again:
        assert again.load_continuity() == "## State\n- kept\n"


def test_a_savepoint_rolls_back_its_part_alone_with_its_audit_entries(tmp_path: Path) -> None:
    told: list[dict] = []  # what the audit callback is told after the commit
    with Store(tmp_path / "m.db", on_audit_event=told.append) as store:
        with unit_of(store) as tx:
            kept = store.record("the kept part of the unit", "observation")
            with pytest.raises(Boom), tx.savepoint():
                gone = store.record("ZQXSAVEPOINT the part rolled back", "observation")
                raise Boom
            after = store.record("written after the savepoint", "observation")
        assert store.get(gone.id) is None
        assert store.get(kept.id) is not None and store.get(after.id) is not None
        entries = store.audit_trail.entries()
    assert gone.id not in json.dumps(entries)
    assert gone.id not in json.dumps(told) and kept.id in json.dumps(told)
    assert {kept.id, after.id} <= {e["data"].get("episode_id") for e in entries}
    with Store(tmp_path / "m.db") as again:
        assert again.audit_trail.verify(tmp_path / "m.db").valid
    lines = [ln for f in tmp_path.glob("m.audit*.jsonl") for ln in f.read_text().splitlines()]
    assert not any(gone.id in ln for ln in lines)
