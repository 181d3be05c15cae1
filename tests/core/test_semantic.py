"""Semantic recall (issue 33): the embedder seam, hybrid and semantic modes, lazy
embedding, model changes, and vectors that go with their episode."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from anneal_memory import EmbedderError, Store, ValidationError
from anneal_memory.embedding import Embedder, cosine_similarities, pack_vector, unpack_vector
from anneal_memory.storage.roles import Meta
from anneal_memory.storage.sqlite import SCHEMA_VERSION
from anneal_memory.testing import HashingEmbedder, backend_of

NURSE = "I started as a nurse at the county hospital"
QUERY = "what does she do for a living"
FILLER = ["We went hiking in the mountains last weekend",
          "The cat knocked the vase off the table",
          "Lunch was a bowl of ramen with extra egg"]


def job_embedder(**kw: object) -> HashingEmbedder:
    """Paraphrase-aware by construction: 'living', 'nurse', 'hospital' count as one word."""
    return HashingEmbedder(aliases={"living": "job", "nurse": "job", "hospital": "job"},
                           **kw)  # type: ignore[arg-type]


def raw_vectors(db: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT episode_id, model, dim FROM episode_vectors").fetchall()


# ---------------------------------------------------------------- the seam

def test_a_plain_callable_an_async_one_and_framework_objects_embed(tmp_path: Path) -> None:
    base = HashingEmbedder(dims=16)

    async def async_fn(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return base(texts)

    class LangChainLike:
        model = "lc-test"

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return base(texts)

        def embed_query(self, text: str) -> list[float]:
            return base([text])[0]

    class LlamaIndexLike:
        model_name = "li-test"

        def get_text_embedding_batch(self, texts: list[str]) -> list[list[float]]:
            return base(texts)

        def get_query_embedding(self, text: str) -> list[float]:
            return base([text])[0]

    for source in (base, async_fn, LangChainLike(), LlamaIndexLike(), Embedder(base, model="x")):
        emb = Embedder(source)
        assert emb.embed_documents(["a b", "c"]) == base(["a b", "c"])
        assert emb.embed_query("a b") == base(["a b"])[0]
        assert emb.dims == 16
    assert Embedder(LangChainLike()).model.endswith(":lc-test")
    assert Embedder(LlamaIndexLike()).model.endswith(":li-test")
    assert Embedder(base, model="mine").model == "mine"


def test_an_async_embedder_works_inside_a_running_loop(tmp_path: Path) -> None:
    base = HashingEmbedder(dims=8)

    async def async_fn(texts: list[str]) -> list[list[float]]:
        return base(texts)

    async def main() -> list[float]:
        return Embedder(async_fn).embed_query("inside a loop")

    assert asyncio.run(main()) == base(["inside a loop"])[0]


@pytest.mark.parametrize("bad", [42, "text", None.__class__, object()])
def test_something_that_cannot_embed_is_refused_at_open(tmp_path: Path, bad: object) -> None:
    with pytest.raises(EmbedderError, match="callable taking a list of texts"):
        Store(tmp_path / "m.db", embedder=bad)
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("output, message", [
    ([], "for 1 text"), ([[]], "non-empty list of floats"), ([["x"]], "list of floats"),
    ([[float("nan")]], "NaN"), ("vector", "for 1 text"), ([[1.0], [2.0]], "for 1 text"),
])
def test_bad_embedder_output_is_a_typed_error(output: object, message: str) -> None:
    emb = Embedder(lambda texts: output)
    with pytest.raises(EmbedderError, match=message):
        emb.embed_documents(["one"])


def test_a_model_that_changes_dimension_is_refused() -> None:
    sizes = iter([4, 5])
    emb = Embedder(lambda texts: [[1.0] * next(sizes) for _ in texts])
    emb.embed_documents(["a"])
    with pytest.raises(EmbedderError, match="one model, one dimension"):
        emb.embed_documents(["b"])


def test_vectors_round_trip_normalised_and_cosine_without_numpy(monkeypatch) -> None:
    from anneal_memory import embedding

    v = [3.0, 4.0]
    assert unpack_vector(pack_vector(v)) == pytest.approx([0.6, 0.8])
    blobs = [pack_vector([1.0, 0.0]), pack_vector([0.0, 2.0]), pack_vector([-1.0, 1.0])]
    expected = [0.6, 0.8, pytest.approx(0.2 / 2 ** 0.5 * 1, abs=1e-6)]
    monkeypatch.setattr(embedding, "_numpy", lambda: None)  # the pure-Python path
    pure = cosine_similarities(v, blobs)
    assert pure[:2] == pytest.approx([0.6, 0.8]) and pure[2] == expected[2]
    monkeypatch.undo()
    assert cosine_similarities(v, blobs) == pytest.approx(pure, abs=1e-6)


# ---------------------------------------------------------------- recall

def test_hybrid_finds_a_paraphrase_keyword_recall_misses(db: Path) -> None:
    with Store(db, embedder=job_embedder()) as s:
        nurse = s.record(NURSE, "observation")
        for text in FILLER:
            s.record(text, "observation")
        assert s.recall(keyword=QUERY, mode="keyword").episodes == []
        res = s.recall(keyword=QUERY, limit=3)  # hybrid: the default with an embedder
        assert res.query_params["mode"] == "hybrid"
        assert res.episodes[0].id == nurse.id and res.why[nurse.id] == "meaning"
        assert res.vectors_used and res.semantic.embedded == 4 and res.semantic.pending == 0
        assert 0 < res.query_params["scores"][nurse.id] <= 1
        sem = s.recall(keyword=QUERY, limit=1, mode="semantic")
        assert [e.id for e in sem.episodes] == [nurse.id]


def test_hybrid_fuses_keyword_and_vector_ranks(db: Path) -> None:
    from anneal_memory import fusion

    with Store(db, embedder=job_embedder()) as s:
        hits = [s.record(f"the county fair had {x} rides", "observation") for x in "abc"]
        cat = s.record(FILLER[1], "observation")  # shares only "the" with them
        kw = s.recall(keyword="the fair rides", mode="keyword")
        sem = s.recall(keyword="the fair rides", mode="semantic", limit=100)
        hy = s.recall(keyword="the fair rides")
        assert {e.id for e in kw.episodes} == {h.id for h in hits}
        vec = [e.id for e in sem.episodes if sem.query_params["scores"][e.id] > 0]
        want = fusion.fuse([e.id for e in kw.episodes], vec)
        assert [e.id for e in hy.episodes] == want[:10]
        # found by meaning only, it ranks after the three keyword matches
        assert [e.id for e in hy.episodes][-1] == cat.id and hy.why[cat.id] == "meaning"


def test_without_an_embedder_recall_is_keyword_and_modes_are_refused(store: Store) -> None:
    store.record(NURSE, "observation")
    res = store.recall(keyword="nurse")
    assert res.semantic is None and not res.vectors_used and len(res.episodes) == 1
    with pytest.raises(ValidationError, match="needs an embedder"):
        store.recall(keyword="nurse", mode="hybrid")
    with pytest.raises(ValidationError, match="unknown recall mode"):
        store.recall(keyword="nurse", mode="fuzzy")
    assert "episode_vectors" in {r[0] for r in backend_of(store).q(
        "SELECT name FROM sqlite_master WHERE type='table'")}
    assert backend_of(store).q("SELECT COUNT(*) FROM episode_vectors") == [(0,)]


def test_recording_never_waits_for_a_failing_embedder(db: Path) -> None:
    broken = HashingEmbedder(fail=True)
    with Store(db, embedder=broken) as s:
        e = s.record("the deploy key rotates on Mondays", "decision")
        assert s.get(e.id) is not None
        res = s.recall(keyword="deploy key")
        assert [x.id for x in res.episodes] == [e.id]  # keyword recall's result
        assert not res.vectors_used
        assert "embedding service unavailable" in (res.semantic.reason or "")
        sem = s.recall(keyword="deploy key", mode="semantic")
        assert not sem.vectors_used and [x.id for x in sem.episodes] == [e.id]
        with pytest.raises(EmbedderError, match="unavailable"):
            s.embed_pending()
    assert raw_vectors(db) == []
    # the embedder recovers: the next store catches up
    with Store(db, embedder=HashingEmbedder()) as s:
        assert s.status().embedded_episodes == 0
        rep = s.embed_pending()
        assert (rep.embedded, rep.pending) == (1, 0)
        assert s.status().embedded_episodes == 1


def test_catch_up_is_bounded_and_says_what_is_pending(db: Path) -> None:
    with Store(db) as s:
        s.record_many([{"content": f"note {i} about the garden", "episode_type": "observation"}
                       for i in range(30)])
    emb = Embedder(HashingEmbedder(), catch_up=10)
    with Store(db, embedder=emb) as s:
        res = s.recall(keyword="garden", mode="semantic")
        assert res.semantic.embedded == 10 and res.semantic.pending == 20
        assert "20 episode(s) have no vector" in res.semantic.reason
        seen: list[tuple[int, int]] = []
        rep = s.embed_pending(progress=lambda done, total: seen.append((done, total)))
        assert rep.embedded == 20 and rep.pending == 0 and seen[-1] == (20, 20)
        assert s.recall(keyword="garden", mode="semantic").semantic.reason is None


def test_read_only_stores_rank_what_is_embedded_and_write_nothing(db: Path) -> None:
    with Store(db, embedder=HashingEmbedder()) as s:
        s.record(NURSE, "observation")
        s.embed_pending()
        s.record(FILLER[0], "observation")
    before = raw_vectors(db)
    with Store(db, embedder=HashingEmbedder(), read_only=True) as s:
        res = s.recall(keyword="county hospital", mode="semantic")
        assert res.semantic.pending == 1 and res.semantic.embedded == 0
        assert [e.content for e in res.episodes] == [NURSE]
    assert raw_vectors(db) == before


def test_every_filter_applies_before_scoring(db: Path) -> None:
    with Store(db, embedder=job_embedder()) as s:
        old = s.record(NURSE, "observation")
        new = s.record(NURSE + " again", "observation", supersedes=[old.id])
        tool = s.record(NURSE + " (tool)", "context", trust="tool")
        gone = s.record(NURSE + " (gone)", "observation")
        s.delete(gone.id)
        ids = {e.id for e in s.recall(keyword=QUERY, mode="semantic").episodes}
        assert ids == {new.id, tool.id}
        assert {e.id for e in s.recall(keyword=QUERY, mode="semantic",
                                       include_superseded=True).episodes} == {old.id, new.id,
                                                                              tool.id}
        assert [e.id for e in s.recall(keyword=QUERY, mode="semantic",
                                       episode_type="context").episodes] == [tool.id]
        assert [e.id for e in s.recall(keyword=QUERY, mode="hybrid",
                                       trust="tool").episodes] == [tool.id]
        assert s.recall(keyword=QUERY, mode="semantic", since="2999-01-01").episodes == []


def test_one_namespace_never_ranks_anothers_vectors(db: Path) -> None:
    with Store(db, embedder=job_embedder()) as s:
        alice = s.scoped({"user": "alice"})
        bob = s.scoped({"user": "bob"})
        a = alice.record(NURSE, "observation")
        b = bob.record(NURSE, "observation")
        for view, mine in ((alice, a.id), (bob, b.id)):
            for mode in ("hybrid", "semantic"):
                res = view.recall(keyword=QUERY, mode=mode)
                assert [e.id for e in res.episodes] == [mine], (mode, res.episodes)
                assert res.semantic.candidates == 1  # the other's vector was never read
        assert alice.status().embedded_episodes == 1
        assert s.status().embedded_episodes == 2  # the operator's view: both
        bob.embed_pending(rebuild=True)  # a view rebuilds its own vectors only
        assert {r[0] for r in raw_vectors(db)} == {a.id, b.id}


def test_a_new_model_never_mixes_with_the_old_ones_vectors(db: Path) -> None:
    with Store(db, embedder=HashingEmbedder(dims=32, model="old")) as s:
        e = s.record(NURSE, "observation")
        s.embed_pending()
    with Store(db, embedder=HashingEmbedder(dims=64, model="new")) as s:
        res = s.recall(keyword="county hospital", mode="semantic")
        assert res.semantic.model.endswith("new") and res.semantic.embedded == 1
        assert sorted((m.rsplit(":", 1)[-1], d) for _i, m, d in raw_vectors(db)) == [
            ("new", 64), ("old", 32)]
        rep = s.embed_pending(rebuild=True)
        assert rep.dropped == 2 and rep.embedded == 1
        assert [(i, d) for i, _m, d in raw_vectors(db)] == [(e.id, 64)]


def test_erase_delete_prune_and_erase_namespace_take_the_vectors(db: Path) -> None:
    with Store(db, embedder=HashingEmbedder(), retention_days=30) as s:
        a = s.record("alpha episode", "observation")
        b = s.record("beta episode", "observation")
        old = s.record("ancient episode", "observation", timestamp="2001-01-01T00:00:00Z")
        user = s.scoped({"user": "erin"})
        u = user.record("erin's private note", "observation")
        s.embed_pending()
        assert len(raw_vectors(db)) == 4
        s.delete(a.id)
        s.erase([b.id])
        s.prune()
        s.erase_namespace({"user": "erin"})
        assert s.recall(keyword="episode", mode="semantic").episodes == []
    assert raw_vectors(db) == []
    for eid in (a.id, b.id, old.id, u.id):
        assert eid not in {r[0] for r in raw_vectors(db)}


def test_a_store_from_before_vectors_gains_the_table(db: Path) -> None:
    with Store(db) as s:
        e = s.record(NURSE, "observation")
    with sqlite3.connect(db) as c:
        c.execute("DROP TABLE episode_vectors")
        c.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION - 1),))
    with Store(db, embedder=job_embedder()) as s:
        assert [x.id for x in s.recall(keyword=QUERY).episodes] == [e.id]
        assert Meta(backend_of(s)).get_meta("schema_version") == str(SCHEMA_VERSION)


def test_status_shows_the_embedder(db: Path) -> None:
    with Store(db) as s:
        st = s.status()
        assert (st.embedder, st.embedding_dims, st.embedded_episodes) == (None, None, 0)
    with Store(db, embedder=HashingEmbedder(dims=16)) as s:
        s.record(NURSE, "observation")
        s.embed_pending()
        st = s.status().to_dict()
        assert st["embedder"].endswith("hashing-bow-16") and st["embedding_dims"] == 16
        assert st["embedded_episodes"] == 1


def test_paging_through_a_hybrid_result(db: Path) -> None:
    with Store(db, embedder=job_embedder()) as s:
        for i in range(12):
            s.record(f"garden note {i}", "observation")
        full = [e.id for e in s.recall(keyword="garden note", limit=12).episodes]
        paged = [e.id for off in range(0, 12, 5)
                 for e in s.recall(keyword="garden note", limit=5, offset=off).episodes]
        assert paged == full and len(set(full)) == 12


def test_a_read_only_open_of_a_schema_4_store_has_no_vectors_and_says_so(db: Path) -> None:
    with Store(db) as s:
        s.record(NURSE, "observation")
    with sqlite3.connect(db) as c:
        c.execute("DROP TABLE episode_vectors")
        c.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    with Store(db, embedder=job_embedder(), read_only=True) as s:
        assert s.status().vectors == [] and s.status().embedded_episodes == 0
        res = s.recall(keyword=QUERY, mode="semantic")
        assert not res.vectors_used and res.semantic.pending == 1 and res.episodes == []


def test_scored_recall_for_hooks_adds_what_only_meaning_finds(db: Path) -> None:
    from anneal_memory import retrieve_relevant

    with Store(db, embedder=job_embedder()) as s:
        nurse = s.record(NURSE, "observation")
        hike = s.record(FILLER[0], "observation")
        s.record(FILLER[2], "observation")
        res = retrieve_relevant(s, None, QUERY, max_episodes=2)
        assert [e.id for e in res.episodes][:1] == [nurse.id] and res.episodes[0].score > 0
        # keyword matches keep their places; exclusions and filters hold
        res = retrieve_relevant(s, None, "hiking in the mountains", max_episodes=2)
        assert res.episodes[0].id == hike.id
        assert nurse.id not in [e.id for e in retrieve_relevant(
            s, None, QUERY, max_episodes=3, exclude_ids=[nurse.id]).episodes]
        assert retrieve_relevant(s, None, QUERY, max_episodes=3,
                                 episode_type="decision").episodes == []
        alice = s.scoped({"user": "alice"})
        assert retrieve_relevant(alice, None, QUERY, max_episodes=3).episodes == []
    with Store(db) as s:  # without the embedder: keyword recall's result, as before
        assert retrieve_relevant(s, None, QUERY, max_episodes=2).episodes == []


def test_an_export_leaves_vectors_out_and_an_import_embeds_again(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db", embedder=job_embedder()) as a:
        nurse = a.record(NURSE, "observation")
        a.embed_pending()
        doc = a.export()
    assert "episode_vectors" not in str(doc.keys()) and "vector" not in doc
    with Store(tmp_path / "b.db", embedder=job_embedder()) as b:
        b.import_(doc)
        assert b.status().embedded_episodes == 0  # derived data: made again here
        res = b.recall(keyword=QUERY, limit=1)
        assert [e.id for e in res.episodes] == [nurse.id] and res.semantic.embedded == 1


def test_a_recall_catches_up_on_the_newest_episodes_first(db: Path) -> None:
    with Store(db) as s:
        ids = [e.id for e in s.record_many([{"content": f"garden note {i}",
                                             "episode_type": "observation"}
                                            for i in range(30)])]
    with Store(db, embedder=Embedder(HashingEmbedder(), catch_up=10)) as s:
        s.recall(keyword="garden", mode="semantic")
    assert {r[0] for r in raw_vectors(db)} == set(ids[-10:])


def test_a_fake_that_names_no_model_is_told_apart_by_its_size() -> None:
    """LlamaIndex's MockEmbedding calls every size model "unknown": two sizes must not read
    as one model (an adapter's check would take one store's embedder for the other's)."""

    class Fake:
        model_name = "unknown"

        def __init__(self, embed_dim: int) -> None:
            self.embed_dim = embed_dim

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1.0] * self.embed_dim for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [1.0] * self.embed_dim

    eight, sixteen = Embedder(Fake(8)), Embedder(Fake(16))
    assert eight.model != sixteen.model
    assert eight.model.endswith(":8") and Embedder(Fake(8)).model == eight.model
    named = Fake(8)
    named.model_name = "text-embedding-3-small"  # type: ignore[misc]
    assert Embedder(named).model.endswith(":text-embedding-3-small")
