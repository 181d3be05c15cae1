"""Semantic recall on each backend (issue 33): vectors in the database, filters first,
one namespace never reads another's vectors, and a vector goes with its episode."""

from __future__ import annotations

from collections.abc import Callable

from anneal_memory import Store
from anneal_memory.testing import HashingEmbedder, backend_of

NURSE = "I started as a nurse at the county hospital"
QUERY = "what does she do for a living"


def embedder(**kw: object) -> HashingEmbedder:
    return HashingEmbedder(aliases={"living": "job", "nurse": "job"}, **kw)  # type: ignore[arg-type]


def vector_rows(store: Store) -> list[tuple[str, int]]:
    return sorted((str(r[0]), int(r[1])) for r in backend_of(store).q(
        "SELECT episode_id, dim FROM episode_vectors"))


def test_hybrid_and_semantic_recall_on_this_backend(open_store: Callable[..., Store]) -> None:
    s = open_store(embedder=embedder())
    nurse = s.record(NURSE, "observation")
    other = s.record("We went hiking in the mountains last weekend", "decision")
    assert s.recall(keyword=QUERY, mode="keyword").episodes == []
    res = s.recall(keyword=QUERY, limit=1)
    assert [e.id for e in res.episodes] == [nurse.id] and res.vectors_used
    assert vector_rows(s) == sorted([(nurse.id, 256), (other.id, 256)])
    assert [e.id for e in s.recall(keyword=QUERY, mode="semantic",
                                   episode_type="decision").episodes] == [other.id]
    s.delete(nurse.id)
    assert vector_rows(s) == [(other.id, 256)]  # ON DELETE CASCADE
    assert s.status().embedded_episodes == 1


def test_namespaces_and_rebuild_on_this_backend(open_store: Callable[..., Store]) -> None:
    s = open_store(embedder=embedder())
    alice, bob = s.scoped({"user": "alice"}), s.scoped({"user": "bob"})
    a = alice.record(NURSE, "observation")
    b = bob.record(NURSE, "observation")
    for view, mine in ((alice, a.id), (bob, b.id)):
        res = view.recall(keyword=QUERY, mode="semantic")
        assert [e.id for e in res.episodes] == [mine] and res.semantic.candidates == 1
    s.erase_namespace({"user": "alice"})
    assert [r[0] for r in vector_rows(s)] == [b.id]
    s2 = open_store(embedder=embedder(dims=32, model="v2"))
    rep = s2.embed_pending(rebuild=True)
    assert (rep.dropped, rep.embedded) == (1, 1) and vector_rows(s2) == [(b.id, 32)]
