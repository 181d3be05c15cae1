"""The spore store: plant, read, work, close, self-clean, and survive concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

from anneal_memory import _fileio
from anneal_memory.errors import SidecarError, ValidationError
from anneal_memory.spores import Spore, SporeDict, SporeStore, SporeView

DAY = date(2026, 5, 10)


@pytest.fixture
def spores(tmp_path: Path) -> SporeStore:
    return SporeStore(tmp_path / "memory.db")


def test_sidecar_lives_beside_the_database(tmp_path: Path) -> None:
    s = SporeStore(tmp_path / "memory.db")
    assert s.path == tmp_path / "memory.spores.json"
    assert SporeStore(tmp_path / "x.spores.json").path == tmp_path / "x.spores.json"
    s.add(type="task", text="write the migration guide", today=DAY)
    doc = json.loads(s.path.read_text())
    assert doc["schema_version"] == 1
    assert [r["id"] for r in doc["open"]] == ["spore-001"]


def test_add_stores_every_field(spores: SporeStore) -> None:
    sp = spores.add(type="question", text="  does WAL survive NFS? ", tier="hot", salience=2,
                    domain="storage", next="2026-05-20", pointer="docs/wal.md", today=DAY)
    assert (sp.id, sp.type, sp.text, sp.tier, sp.salience) == (
        "spore-001", "question", "does WAL survive NFS?", "hot", 2)
    assert (sp.domain, sp.next, sp.pointer, sp.seen, sp.created, sp.status) == (
        "storage", "2026-05-20", "docs/wal.md", "2026-05-10", "2026-05-10", "open")
    assert spores.get("spore-001") == sp
    assert spores.get("spore-999") is None


@pytest.mark.parametrize("kwargs, fragment", [
    ({"type": "chore", "text": "x"}, "spore type"),
    ({"type": "task", "text": "   "}, "text"),
    ({"type": "task", "text": "x", "tier": "lukewarm"}, "tier"),
    ({"type": "task", "text": "x", "salience": 4}, "salience"),
    ({"type": "task", "text": "x", "salience": True}, "salience"),
    ({"type": "task", "text": "x", "next": "next tuesday"}, "next"),
])
def test_add_refuses_bad_values(spores: SporeStore, kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        spores.add(**kwargs)
    assert not spores.path.exists()


def test_germination_is_computed_from_seen_and_next(spores: SporeStore) -> None:
    sp = spores.add(type="thought", text="memory as a cache", today=DAY)
    assert sp.germination(date(2026, 5, 12)) == "growing"
    assert sp.germination(date(2026, 5, 13)) == "resting"
    assert sp.germination(date(2026, 5, 17)) == "resting"
    assert sp.germination(date(2026, 5, 18)) == "dormant"
    due = spores.add(type="task", text="renew cert", next="2026-05-11", today=DAY)
    assert due.germination(date(2026, 5, 10)) == "growing"
    assert due.germination(date(2026, 5, 11)) == "dormant"
    parked = spores.add(type="task", text="someday", tier="parked", today=DAY)
    assert parked.germination(DAY) == "parked"
    assert "germination" not in json.loads(spores.path.read_text())["open"][0]
    assert spores.get(sp.id).to_dict(date(2026, 5, 30))["germination"] == "dormant"


def test_list_open_ranks_and_filters(spores: SporeStore) -> None:
    spores.add(type="task", text="cold one", tier="cold", salience=3, today=DAY)
    spores.add(type="task", text="warm low", tier="warm", salience=0, today=DAY)
    spores.add(type="question", text="warm high", tier="warm", salience=2, today=DAY)
    spores.add(type="thought", text="hot", tier="hot", domain="ops", today=DAY)
    spores.add(type="task", text="warm high stale", tier="warm", salience=2,
               today=date(2026, 4, 1))
    order = [s.text for s in spores.list_open(today=DAY)]
    assert order == ["hot", "warm high", "warm high stale", "warm low", "cold one"]
    assert [s.text for s in spores.list_open(type="question", today=DAY)] == ["warm high"]
    assert [s.text for s in spores.list_open(domain="ops", today=DAY)] == ["hot"]
    assert [s.text for s in spores.list_open(germination="dormant", today=DAY)] == [
        "warm high stale"]
    with pytest.raises(ValidationError):
        spores.list_open(tier="boiling")


def test_surface_brings_up_hot_growing_and_due(spores: SporeStore) -> None:
    old = date(2026, 4, 1)
    spores.add(type="task", text="stale warm", today=old)
    spores.add(type="task", text="stale hot", tier="hot", today=old)
    spores.add(type="task", text="fresh", salience=1, today=DAY)
    spores.add(type="task", text="due today", next="2026-05-10", tier="cold", today=old)
    spores.add(type="task", text="parked and due", tier="parked", next="2026-05-01", today=old)
    assert [s.text for s in spores.surface(today=DAY)] == ["due today", "stale hot", "fresh"]
    assert [s.text for s in spores.surface(today=DAY, limit=1)] == ["due today"]


def test_touch_marks_seen_and_clears_an_elapsed_next(spores: SporeStore) -> None:
    a = spores.add(type="task", text="a", next="2026-05-12", today=DAY)
    b = spores.add(type="task", text="b", next="2026-06-01", today=DAY)
    later = date(2026, 5, 20)
    ta = spores.touch(a.id, today=later)
    assert (ta.seen, ta.next, ta.germination(later)) == ("2026-05-20", None, "growing")
    tb = spores.touch(b.id, today=later)
    assert (tb.seen, tb.next) == ("2026-05-20", "2026-06-01")
    with pytest.raises(ValidationError, match="no spore"):
        spores.touch("spore-404")


def test_update_changes_fields_but_not_seen(spores: SporeStore) -> None:
    sp = spores.add(type="task", text="draft", next="2026-05-30", today=DAY)
    up = spores.update(sp.id, text="draft v2", tier="hot", salience=3, domain="docs",
                       note="split in two", today=date(2026, 5, 15))
    assert (up.text, up.tier, up.salience, up.domain, up.seen) == (
        "draft v2", "hot", 3, "docs", "2026-05-10")
    assert up.notes == ["2026-05-15 split in two"]
    assert spores.update(sp.id, clear_next=True).next is None
    assert spores.update(sp.id, type="question").type == "question"
    with pytest.raises(ValidationError, match="salience"):
        spores.update(sp.id, salience=-1)
    assert spores.get(sp.id).salience == 3


def test_descend_closes_by_type(spores: SporeStore) -> None:
    t = spores.add(type="task", text="ship it", today=DAY)
    with pytest.raises(ValidationError, match="descend kind for a task"):
        spores.descend(t.id, kind="answered")
    done = spores.descend(t.id, kind="done", note="shipped", today=DAY)
    assert done.status == "resolved"
    assert done.resolution["direction"] == "descend"
    assert (done.resolution["kind"], done.resolution["on"]) == ("done", "2026-05-10")
    assert spores.list_open(today=DAY) == []
    assert spores.get(t.id).status == "resolved"
    with pytest.raises(ValidationError, match="already closed"):
        spores.descend(t.id, kind="done")
    with pytest.raises(ValidationError, match="already closed"):
        spores.touch(t.id)


def test_ascend_records_what_it_became(spores: SporeStore) -> None:
    q = spores.add(type="question", text="why is recall slow?", today=DAY)
    with pytest.raises(ValidationError, match="ref"):
        spores.ascend(q.id, kind="episode", ref=" ")
    with pytest.raises(ValidationError, match="ascend kind"):
        spores.ascend(q.id, kind="project", ref="x")
    up = spores.ascend(q.id, kind="episode", ref="ep-42", today=DAY)
    assert up.resolution["direction"] == "ascend"
    assert (up.resolution["kind"], up.resolution["ref"]) == ("episode", "ep-42")
    assert [s.id for s in spores.list_closed()] == [q.id]


def test_ids_are_never_reused(spores: SporeStore) -> None:
    a = spores.add(type="task", text="a", today=DAY)
    spores.descend(a.id, kind="dropped", today=DAY)
    spores.clean(today=date(2027, 1, 1))
    assert spores.get(a.id) is None
    assert spores.add(type="task", text="b", today=DAY).id == "spore-002"


def test_closed_spores_self_clean(tmp_path: Path) -> None:
    s = SporeStore(tmp_path / "m.db", keep_closed_days=7)
    a = s.add(type="task", text="a", today=DAY)
    b = s.add(type="task", text="b", today=DAY)
    s.descend(a.id, kind="done", today=DAY)
    s.descend(b.id, kind="done", today=date(2026, 5, 15))
    # The next write on the 18th drops a (closed 8 days earlier) but keeps b.
    s.add(type="task", text="c", today=date(2026, 5, 18))
    assert [x.id for x in s.list_closed()] == [b.id]
    assert s.clean(today=date(2026, 5, 30)) == 1
    assert s.list_closed() == []
    assert [x.text for x in s.list_open(today=DAY)] == ["c"]


def test_corrupt_file_is_refused_not_overwritten(spores: SporeStore) -> None:
    spores.path.write_text("{ not json")
    with pytest.raises(SidecarError, match="not valid JSON"):
        spores.list_open()
    with pytest.raises(SidecarError):
        spores.add(type="task", text="x")
    assert spores.path.read_text() == "{ not json"
    spores.path.write_text(json.dumps({"schema_version": 1, "last_id": 0, "open": "x",
                                       "closed": []}))
    with pytest.raises(SidecarError, match="'open'"):
        spores.get("spore-001")


def test_newer_schema_is_refused(spores: SporeStore) -> None:
    spores.path.write_text(json.dumps({"schema_version": 99, "open": [], "closed": []}))
    with pytest.raises(SidecarError, match="upgrade"):
        spores.add(type="task", text="x")


def test_a_failed_write_leaves_the_old_file(spores: SporeStore, monkeypatch) -> None:
    spores.add(type="task", text="kept", today=DAY)
    before = spores.path.read_text()

    def boom(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(_fileio.os, "replace", boom)
    with pytest.raises(OSError):
        spores.add(type="task", text="lost", today=DAY)
    monkeypatch.undo()
    assert spores.path.read_text() == before
    assert [p.name for p in spores.path.parent.iterdir() if p.name.endswith(".tmp")] == []
    assert [s.text for s in spores.list_open(today=DAY)] == ["kept"]


def _add_many(path: str, tag: str, n: int) -> None:
    store = SporeStore(path)
    for i in range(n):
        store.add(type="task", text=f"{tag} {i}", today=DAY)


def run_processes(target: Callable[..., None], *argsets: tuple) -> None:
    """Run ``target`` once per argument tuple, all at once, in separate processes."""
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=target, args=args) for args in argsets]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0


@pytest.mark.slow
def test_two_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    run_processes(_add_many, (path, "a", 40), (path, "b", 40))
    open_ = SporeStore(path).list_open(today=DAY)
    assert len(open_) == 80
    assert len({s.id for s in open_}) == 80
    assert {s.text for s in open_} == {f"{t} {i}" for t in "ab" for i in range(40)}


def _add_forever(path: str) -> None:
    store = SporeStore(path)
    i = 0
    while True:
        store.add(type="thought", text=f"idea {i} " + "x" * 2000, today=DAY)
        i += 1


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_a_readable_file(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    ctx = multiprocessing.get_context("fork")
    for _ in range(3):
        p = ctx.Process(target=_add_forever, args=(path,))
        p.start()
        time.sleep(0.4)
        deadline = time.monotonic() + 30  # a loaded machine: wait for a first commit
        while not SporeStore(path).list_open(today=DAY) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        store = SporeStore(path)
        spores = store.list_open(today=DAY)
        assert spores, "the writer should have committed something before it was killed"
        # Whatever was committed is whole, and a new writer carries on from it.
        ids = [int(s.id.split("-")[1]) for s in spores]
        assert sorted(ids) == list(range(1, len(ids) + 1))
    assert SporeStore(path).add(type="task", text="after", today=DAY).id == f"spore-{len(ids) + 1:03d}"


def _keys(typed: type) -> set[str]:
    return set(typed.__required_keys__) | set(typed.__optional_keys__)  # type: ignore[attr-defined]


def test_the_spore_dicts_name_the_spores_fields(spores: SporeStore) -> None:
    """SporeDict types as_mapping (an asdict): a field added to Spore must be named there."""
    from dataclasses import fields

    assert _keys(SporeDict) == {f.name for f in fields(Spore)}
    s = spores.add(type="question", text="does the pool leak?", today=date(2026, 5, 1))
    assert list(s.as_mapping()) == [f.name for f in fields(Spore)]
    assert set(s.to_dict(date(2026, 5, 2))) == _keys(SporeView) == _keys(SporeDict) | {
        "germination"}

