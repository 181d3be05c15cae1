"""Rank fusion for hybrid recall: keyword recall's ranking and the vector ranking as one.

Weighted reciprocal-rank fusion: an episode at rank ``r`` (1-based) of a ranking scores
``weight / (k + r)`` from it, summed over the rankings it is in. Keyword recall weighs
KEYWORD_WEIGHT, vectors 1, with ``k`` = RRF_K. Measured on LoCoMo with a real sentence
embedder (all-MiniLM-L6-v2; bench/semantic.py reports the sweep): with k = 10 and 2:1 the
fusion ranks above keyword recall alone, mostly on questions whose evidence is spread
over several turns; at k = 60 (the usual default) every weight fell below keyword
recall, because a small k keeps the head of each ranking apart from its tail.

A weak query (:func:`keyword_is_weak`: none of keyword recall's first WEAK_TOP results
holds two of the query's words) is one keyword recall answers with stray words at best:
there episodes closer in meaning than every one of its first PROMOTE_POOL matches by
PROMOTE_MARGIN of cosine go first (:func:`promote`), so a paraphrase is not buried under
matches that share a word like "day".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .stem import stem
from .text import meaningful_words

#: the rank constant: rank r of a ranking adds weight / (RRF_K + r)
RRF_K = 10
#: keyword recall's weight (vectors weigh 1)
KEYWORD_WEIGHT = 2.0
#: keyword recall counts as weak for a query when none of its first WEAK_TOP results
#: holds two of the query's words (one, for a one-word query)
WEAK_TOP = 10
#: for a weak query, an episode closer in meaning than every one of keyword recall's
#: first PROMOTE_POOL results, by at least PROMOTE_MARGIN of cosine, ranks ahead of them
PROMOTE_POOL = 50
PROMOTE_MARGIN = 0.05


def rrf(rankings: Sequence[tuple[Sequence[str], float]], k: float = RRF_K) -> list[str]:
    """Weighted reciprocal-rank fusion of ``(ids best first, weight)`` rankings: ids by
    their summed ``weight / (k + rank)``, ties in order of first appearance."""
    if k <= 0:
        raise ValueError("the rank constant k must be > 0")
    score: dict[str, float] = {}
    first: dict[str, int] = {}
    for ids, weight in rankings:
        for rank, eid in enumerate(ids, 1):
            # an infinite weight: that ranking's order first (its ids tie at infinity and
            # keep the order they first appeared in), the others' after it
            score[eid] = score.get(eid, 0.0) + (weight if math.isinf(weight)
                                                else weight / (k + rank))
            first.setdefault(eid, len(first))
    return sorted(score, key=lambda e: (-score[e], first[e]))


def fuse(keyword_ids: Sequence[str], vector_ids: Sequence[str],
         weight: float = KEYWORD_WEIGHT, k: float = RRF_K) -> list[str]:
    """Keyword recall's ranking (weighing ``weight``) fused with the vector ranking
    (weighing 1), best first."""
    return rrf([(keyword_ids, weight), (vector_ids, 1.0)], k)


def _stems(text: str) -> set[str]:
    return {stem(w) for w in meaningful_words(text)}


def keyword_is_weak(query: str, contents: Sequence[str]) -> bool:
    """Whether none of keyword recall's first WEAK_TOP results holds two of the query's
    words (one for a one-word query): its matches then share a stray word at best."""
    q = _stems(query)
    need = min(2, len(q))
    return not need or not any(len(q & _stems(c)) >= need for c in contents[:WEAK_TOP])


def promote(ranked: Sequence[str], keyword_ids: Sequence[str], vector_ids: Sequence[str],
            cosine: Mapping[str, float], bar_ids: Sequence[str] | None = None) -> list[str]:
    """``ranked`` with the episodes only vectors found that are closer in meaning than
    every one of keyword recall's first PROMOTE_POOL results (``bar_ids``, default
    ``keyword_ids``) by PROMOTE_MARGIN moved first, in cosine order (for a weak query)."""
    taken = set(keyword_ids)
    bar = max((cosine.get(i, 0.0) for i in (bar_ids or keyword_ids)[:PROMOTE_POOL]),
              default=0.0)
    ahead = [v for v in vector_ids if v not in taken and cosine.get(v, 0.0) > bar + PROMOTE_MARGIN]
    lead = set(ahead)
    return ahead + [i for i in ranked if i not in lead]


def hybrid_order(keyword_ids: Sequence[str], vector_ids: Sequence[str],
                 cosine: Mapping[str, float], weak: bool,
                 bar_ids: Sequence[str] | None = None,
                 weight: float = KEYWORD_WEIGHT) -> list[str]:
    """The hybrid ranking: :func:`fuse` (keyword recall weighing ``weight``), and for a
    ``weak`` query :func:`promote`."""
    ranked = fuse(keyword_ids, vector_ids, weight)
    return promote(ranked, keyword_ids, vector_ids, cosine, bar_ids) if weak else ranked
