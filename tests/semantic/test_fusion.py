"""Rank fusion (anneal_memory.fusion): the arithmetic of weighted reciprocal rank, the
shipped constants, and the weak-query promotion, on hand-made rankings."""

from __future__ import annotations

import pytest

from anneal_memory import Embedder, fusion


def test_rrf_sums_weight_over_k_plus_rank() -> None:
    # a: 2/(10+1) + 1/(10+3) = 0.2587; b: 2/(10+2) = 0.1667; c: 1/(10+1) = 0.0909
    # d: 1/(10+2) = 0.0833
    assert fusion.rrf([(["a", "b"], 2.0), (["c", "d", "a"], 1.0)], k=10) == ["a", "b", "c", "d"]
    # at k=60 the heads come closer: c (1/61) still trails b (2/62)
    assert fusion.rrf([(["a", "b"], 2.0), (["c", "d", "a"], 1.0)], k=60)[:2] == ["a", "b"]


def test_the_shipped_weights_are_k10_two_to_one() -> None:
    assert (fusion.RRF_K, fusion.KEYWORD_WEIGHT) == (10, 2.0)
    kw = [f"k{i}" for i in range(1, 21)]
    # a vector-only first (1/11 = 0.0909) ranks after keyword rank 12 (2/22 = 0.0909, first
    # seen wins the tie) and before rank 13 (2/23 = 0.0870)
    fused = fusion.fuse(kw, ["v"])
    assert fused.index("v") == 12
    # an episode both rankings hold rises above keyword recall's first
    both = fusion.fuse(kw, ["k3"])
    assert both[0] == "k3"


def test_an_infinite_keyword_weight_keeps_keyword_order_then_vectors() -> None:
    kw, vec = ["a", "b", "c"], ["z", "c", "y", "a"]
    assert fusion.fuse(kw, vec, float("inf")) == ["a", "b", "c", "z", "y"]


def test_ties_keep_the_order_of_first_appearance() -> None:
    assert fusion.rrf([(["x"], 1.0), (["y"], 1.0)]) == ["x", "y"]
    assert fusion.rrf([(["y"], 1.0), (["x"], 1.0)]) == ["y", "x"]


def test_a_rank_constant_of_zero_or_less_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be > 0"):
        fusion.rrf([(["a"], 1.0)], k=0)


def test_a_weak_query_puts_what_is_closer_in_meaning_first() -> None:
    kw, vec = ["s1", "s2"], ["p", "q", "s1"]
    cosine = {"p": 0.60, "q": 0.52, "s1": 0.50, "s2": 0.10}
    # p beats the best keyword match's cosine (0.50) by more than the margin; q does not
    assert fusion.hybrid_order(kw, vec, cosine, weak=True)[0] == "p"
    assert fusion.hybrid_order(kw, vec, cosine, weak=True)[1:] == [
        i for i in fusion.fuse(kw, vec) if i != "p"]
    assert fusion.hybrid_order(kw, vec, cosine, weak=False) == fusion.fuse(kw, vec)


def test_weak_means_no_result_holds_two_of_the_querys_words() -> None:
    assert fusion.keyword_is_weak("what does she do for a living", ["a day at the beach"])
    assert not fusion.keyword_is_weak("violin lessons", ["I take violin lessons"])
    assert fusion.keyword_is_weak("violin lessons", ["violin strings", "more lessons"])


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("-inf"), True, "2"])
def test_a_keyword_weight_that_is_not_a_positive_number_is_refused(bad: object) -> None:
    from anneal_memory import EmbedderError
    from anneal_memory.testing import HashingEmbedder

    with pytest.raises(EmbedderError, match="keyword_weight must be a number > 0"):
        Embedder(HashingEmbedder(), keyword_weight=bad)  # type: ignore[arg-type]


def test_the_embedders_keyword_weight_is_the_one_hybrid_recall_fuses_with(tmp_path) -> None:
    from anneal_memory import Store
    from anneal_memory.testing import HashingEmbedder

    texts = [f"garden note {i} on watering" for i in range(12)] + [
        "watering can", "the hose for the garden", "note to self"]
    for weight in (0.5, 2.0, 40.0, float("inf")):
        emb = Embedder(HashingEmbedder(dims=16), keyword_weight=weight)
        assert Embedder(emb).keyword_weight == weight  # kept when wrapped again
        with Store(tmp_path / f"w{weight}.db", embedder=emb) as s:
            for t in texts:
                s.record(t, "observation")
            q = "garden watering note"
            kw = [e.id for e in s.recall(keyword=q, mode="keyword", limit=50).episodes]
            sem = s.recall(keyword=q, mode="semantic", limit=100)
            vec = [e.id for e in sem.episodes if sem.query_params["scores"][e.id] > 0]
            got = [e.id for e in s.recall(keyword=q, mode="hybrid", limit=15).episodes]
            assert got == fusion.fuse(kw, vec, weight)[:15]
