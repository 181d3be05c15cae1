"""sqlite-vec, used when the runtime can load it (issue 54 goal 5): without numpy, a SQLite
that loads extensions (here ``pysqlite3``'s, with the ``sqlite-vec`` wheel) computes the
cosines in the database; where it cannot load (pyenv's ``sqlite3``, or the package
missing) recall falls back silently to the scan in Python, with the same ranking."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from anneal_memory import Store, semantic
from anneal_memory.testing import HashingEmbedder, repos_of

TEXTS = ["I take violin lessons on Tuesdays", "violin strings and a new bow",
         "the garden needs water", "lessons in patience from the garden",
         "a concert with a violin and a cello", "Tuesday is laundry day"]
QUERIES = ["violin lessons", "garden water", "cello concert on Tuesday"]

SCRIPT = textwrap.dedent("""
    import json, sys
    from pysqlite3 import dbapi2
    sys.modules["sqlite3"] = dbapi2    # a SQLite that can load extensions
    sys.modules["numpy"] = None        # no numpy: the matrix path is off
    from anneal_memory import Store
    from anneal_memory.testing import HashingEmbedder, repos_of
    path, texts, queries = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    out = {}
    with Store(path, embedder=HashingEmbedder(dims=32)) as s:
        for t in texts:
            s.record(t, "observation")
        repo = repos_of(s).vectors
        out["loaded"] = repo.sqlite_vec()
        def ranks():
            return {q: {m: [(e.id, res.query_params["scores"].get(e.id)) for e in res.episodes]
                        for m in ("semantic", "hybrid")
                        for res in [s.recall(keyword=q, mode=m, limit=6)]} for q in queries}
        out["vec"] = ranks()
        calls = []
        from anneal_memory.storage.vectors import VectorRepo
        real = VectorRepo.similarities
        VectorRepo.similarities = lambda self, *a: calls.append(1) or real(self, *a)
        ranks()
        out["vec_calls"] = len(calls)
        inner = getattr(repo._b, "inner", repo._b)
        inner._am_sqlite_vec = False   # the fallback: cosine in Python
        out["python"] = ranks()
    print(json.dumps(out))
""")


def test_with_a_sqlite_that_loads_it_sqlite_vec_ranks_as_python_does(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "m.db"),
                           json.dumps(TEXTS), json.dumps(QUERIES)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["loaded"] is True and out["vec_calls"] == 2 * len(QUERIES)
    for q in QUERIES:
        for mode in ("semantic", "hybrid"):
            vec, py = out["vec"][q][mode], out["python"][q][mode]
            assert [i for i, _s in vec] == [i for i, _s in py], (q, mode)
            for (_i, a), (_j, b) in zip(vec, py):
                assert a == pytest.approx(b, abs=1e-5)
    assert out["vec"]["violin lessons"]["semantic"]


def test_where_it_cannot_load_recall_falls_back_silently(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "_numpy", lambda: None)
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # the package missing
    with Store(tmp_path / "m.db", embedder=HashingEmbedder(dims=32)) as s:
        for t in TEXTS:
            s.record(t, "observation")
        assert repos_of(s).vectors.sqlite_vec() is False
        res = s.recall(keyword="violin lessons", mode="semantic", limit=3)
        assert res.vectors_used and res.episodes[0].content == TEXTS[0]
