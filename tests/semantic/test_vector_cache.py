"""The cached vector matrix (issue 54 goal 5): one per namespace and model, kept in step
with the database (this store's writes, another Store's, another process's), and never
the source of a deleted, erased or hidden episode, nor of another namespace's vectors.

Real SQLite files, the real numpy matrix (this session installs numpy with the semantic
extra), the deterministic HashingEmbedder as the model."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy  # noqa: F401  (the semantic extra brings it: the matrix path needs it)
import pytest

from anneal_memory import Store, semantic
from anneal_memory.testing import HashingEmbedder

QUERY = "violin lessons"
FILLER = [f"note {i} about the garden and the weather" for i in range(40)]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def emb() -> HashingEmbedder:
    return HashingEmbedder(dims=32)


def ids(res: Any) -> list[str]:
    return [e.id for e in res.episodes]


def matrix_of(store: Store, key: str = "\x1e0") -> Any:
    m = store._vector_cache._matrices.get((key, store.embedder.model, 32))
    assert m is not None, "the recall did not use the matrix"
    return m


def fill(s: Store) -> str:
    for text in FILLER:
        s.record(text, "observation")
    return s.record("I take violin lessons on Tuesdays", "observation").id


def test_the_matrix_ranks_as_the_scan_by_id_does(db: Path, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    with Store(db, embedder=emb()) as s:
        fill(s)
        s.record("violin strings and a bow", "observation")
        queries = [QUERY, "garden weather", "note 7", "bow", "strings on Tuesdays"]
        got = {q: (ids(s.recall(keyword=q, mode="semantic", limit=20)),
                   ids(s.recall(keyword=q, mode="hybrid", limit=20))) for q in queries}
        assert matrix_of(s).size == 42
    monkeypatch.setattr(semantic, "_numpy", lambda: None)  # the pure-Python path
    with Store(db, embedder=emb()) as s:
        for q in queries:
            want = (ids(s.recall(keyword=q, mode="semantic", limit=20)),
                    ids(s.recall(keyword=q, mode="hybrid", limit=20)))
            assert got[q][0] == want[0], q
            assert got[q][1] == want[1], q
        assert s._vector_cache.matrices() == 0


@pytest.mark.parametrize("how", ["delete", "erase"])
def test_a_removed_episodes_vector_is_never_served(db: Path, how: str) -> None:
    with Store(db, embedder=emb()) as s:
        violin = fill(s)
        assert ids(s.recall(keyword=QUERY, mode="semantic", limit=5))[0] == violin
        assert violin in matrix_of(s).pos
        s.delete(violin) if how == "delete" else s.erase([violin])
        assert s._vector_cache.matrices() == 0  # nothing of it left in memory
        for mode in ("semantic", "hybrid"):
            assert violin not in ids(s.recall(keyword=QUERY, mode=mode, limit=50))
        assert violin not in matrix_of(s).pos and matrix_of(s).size == 40


def test_a_row_the_matrix_still_holds_is_checked_before_it_is_served(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a matrix that missed a removal (its sync switched off here) serves nothing
    the database no longer has: the best rows are checked with the recall's filters."""
    with Store(db, embedder=emb()) as s:
        violin = fill(s)
        s.recall(keyword=QUERY, mode="semantic")
        monkeypatch.setattr(semantic, "_sync", lambda *a: None)
        with sqlite3.connect(db) as c:  # another connection removes it
            c.execute("PRAGMA foreign_keys=ON")
            c.execute("DELETE FROM episodes WHERE id = ?", (violin,))
        assert violin in matrix_of(s).pos
        for mode in ("semantic", "hybrid"):
            assert violin not in ids(s.recall(keyword=QUERY, mode=mode, limit=50))


def test_a_superseded_episode_the_matrix_holds_is_not_served(db: Path) -> None:
    """Superseding changes no vector: the matrix keeps the old episode's row, and the
    check of the best rows against the recall's filters is what leaves it out."""
    with Store(db, embedder=emb()) as s:
        violin = fill(s)
        s.recall(keyword=QUERY, mode="semantic")
        newer = s.record("I take violin lessons on Wednesdays now", "observation",
                         supersedes=violin).id
        res = s.recall(keyword=QUERY, mode="semantic", limit=50)
        assert violin in matrix_of(s).pos
        assert violin not in ids(res) and newer in ids(res)
        assert violin not in ids(s.recall(keyword=QUERY, mode="hybrid", limit=50))
        assert violin in ids(s.recall(keyword=QUERY, mode="semantic", limit=50,
                                      include_superseded=True))


def test_another_namespaces_vectors_are_never_in_its_matrix(db: Path) -> None:
    with Store(db, embedder=emb()) as s:
        alice, bob = s.scoped({"user": "alice"}), s.scoped({"user": "bob"})
        mine = alice.record("I take violin lessons on Tuesdays", "observation").id
        theirs = bob.record("violin lessons are my favourite", "observation").id
        assert ids(alice.recall(keyword=QUERY, mode="semantic")) == [mine]
        assert ids(bob.recall(keyword=QUERY, mode="hybrid")) == [theirs]
        held = sorted((set(m.pos) for m in s._vector_cache._matrices.values()), key=len)
        assert held == [{mine}, {theirs}] or held == [{theirs}, {mine}]
        root = set(ids(s.recall(keyword=QUERY, mode="semantic")))
        assert root == {mine, theirs}  # the operator's view sees both


def test_this_stores_new_vectors_join_the_matrix(db: Path) -> None:
    with Store(db, embedder=emb()) as s:
        fill(s)
        s.recall(keyword=QUERY, mode="semantic")
        new = s.record("violin lessons again, with a new teacher", "observation").id
        res = s.recall(keyword=QUERY, mode="semantic", limit=3)
        assert new in ids(res) and res.semantic.embedded == 1 and res.semantic.pending == 0
        assert new in matrix_of(s).pos


SCRIPT = textwrap.dedent("""
    import sys
    from anneal_memory import Store
    from anneal_memory.testing import HashingEmbedder
    path, action, arg = sys.argv[1:4]
    with Store(path, embedder=HashingEmbedder(dims=32)) as s:
        if action == "record":
            e = s.record(arg, "observation")
            s.embed_pending()
            print(e.id)
        elif action == "erase":
            s.erase([arg])
        else:
            s.delete(arg)
""")


def other_process(db: Path, action: str, arg: str) -> str:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(db), action, arg],
                         capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


def test_two_processes_what_the_other_writes_and_erases(db: Path) -> None:
    with Store(db, embedder=emb()) as s:
        violin = fill(s)
        assert ids(s.recall(keyword=QUERY, mode="semantic", limit=1)) == [violin]
        # the other process records and embeds: this one's matrix reads it
        cello = other_process(db, "record", "violin and cello lessons with violin teachers")
        got = ids(s.recall(keyword=QUERY, mode="semantic", limit=3))
        assert cello in got and cello in matrix_of(s).pos
        # the other process erases: gone from the results and from this one's memory
        other_process(db, "erase", violin)
        for mode in ("semantic", "hybrid"):
            assert violin not in ids(s.recall(keyword=QUERY, mode=mode, limit=50))
        assert violin not in matrix_of(s).pos
        other_process(db, "delete", cello)
        assert cello not in ids(s.recall(keyword=QUERY, mode="hybrid", limit=50))
        assert cello not in matrix_of(s).pos and matrix_of(s).size == 40


def test_filters_that_keep_few_read_their_candidates_and_still_rank(db: Path) -> None:
    with Store(db, embedder=emb()) as s:
        fill(s)
        dec = s.record("decided: violin lessons move to Mondays", "decision").id
        got = ids(s.recall(keyword=QUERY, mode="semantic", episode_type="decision"))
        assert got == [dec]
        assert s._vector_cache.matrices() == 0  # the by-id path, not the matrix
