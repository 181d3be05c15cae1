"""Recall: filtered keyword recall (phrase first, then words by BM25) and scored recall
(``retrieve_relevant``), which swaps a replaced hit for the episode that replaced it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, cast

from . import facts, tracing
from ._inputs import storable_text, whole_number
from ._seam import roles_of
from .clock import parse_since
from .episode_rows import to_episodes
from .errors import ValidationError
from .storage.base import EpisodeRow, SearchFilters
from .text import meaningful_words, query_terms, word_groups
from .types import (
    RELAYED_TRUST,
    EpisodeType,
    RecallResult,
    RelevantResult,
    ReplacedEpisode,
    ScoredEpisode,
    coerce_trust,
)

if TYPE_CHECKING:
    from ._unit import Facade
    from .crystal import CrystalStore
    from .types import DurableFact, PatternMatch


def _int_arg(value: Any, name: str, minimum: int) -> int:
    return whole_number(value, name, minimum=minimum)


def build_filters(since: object = None, until: object = None, episode_type: object = None,
                  source: object = None, include_superseded: bool = False,
                  trust: object = None) -> SearchFilters:
    """Recall's filters from its arguments as a caller gave them, each checked (a typed
    error names the first that is not what recall takes)."""
    return SearchFilters(
        since=parse_since(since, field="since") if since is not None else None,
        until=parse_since(until, field="until") if until is not None else None,
        episode_type=EpisodeType.coerce(episode_type).value if episode_type is not None else None,
        source=storable_text(source, "source") if source else None,
        include_superseded=bool(include_superseded),
        trust=coerce_trust(trust) if trust is not None else None,
    )


def ranked_words(store: Facade, filters: SearchFilters, terms: Sequence[str],
                 pool: int, *, context: bool = True, query: str | None = None,
                 via: dict[int, int] | None = None,
                 ) -> tuple[list[tuple[int, float]], int]:
    """Word matches ranked by :mod:`.ranking`: the index's pool of matches for the terms
    and their other forms, scored by BM25 with rare words (and the word a ``query``
    asking "what X" names) weighing more; then the
    episodes recorded right before and after a match (within an hour) inherit part of
    its score (so the reply that answers a matching turn ranks even when it repeats
    none of its words); for a ``query`` asking when, matches that say when rank higher,
    and episodes recorded on a date ``query`` names rank higher.

    Returns (row ids with scores, best first) and the number of word matches; ranking
    reads ids, times and scores only, and the caller loads the rows it shows. ``via``
    (filled when given) maps each context row id ranked to the match it is context of.
    The ranking is kept per database state (``EpisodeRepo.memo``): the same question
    asked again before anything is written costs a lookup.
    """
    key = ("ranked_words", filters_key(filters), tuple(terms), pool, context, query)
    ranked, total, found_via = roles_of(store).episodes.memo(
        key, lambda: _ranked_words(store, filters, terms, pool, context, query),
        size=lambda v: len(v[0]) + len(v[2]))
    if via is not None:
        via.update(found_via)
    return list(ranked), total


def rerank_pool(wanted: int, *, most: int | None = None) -> int:
    """How many of the index's best word matches are rescored for a page of ``wanted``:
    ten times the page, at least 100 (on LoCoMo, 100 ranks the top ten as well as 200
    did, and half the pool is half the scoring), never more than ``most`` (default: the
    larger of 200 and twice the page, what a big page always had)."""
    cap = max(200, 2 * wanted) if most is None else most
    return min(max(100, 10 * wanted), cap)


def paged_words(store: Facade, filters: SearchFilters, terms: Sequence[str], wanted: int, *,
                context: bool = True, query: str | None = None,
                via: dict[int, int] | None = None) -> tuple[list[tuple[int, float]], int]:
    """At least ``wanted`` ranked word matches (fewer when there are no more) in one order
    that does not depend on the page asked for: the best of the first pool (100 rescored),
    then what each doubled pool adds, in its own order. Pages of any size then tile it:
    ``offset``/``limit`` paging shows every match once, and a page of ten is the start of a
    page of fifty (a pool sized by the page would rank each page differently)."""
    order: list[tuple[int, float]] = []
    seen: set[int] = set()
    pool = rerank_pool(10)
    while True:
        ranked, matches = ranked_words(store, filters, terms, pool=pool, context=context,
                                       query=query, via=via)
        if not order:  # the first pool's ranking as it is (its row ids are unique)
            order = ranked
        else:  # what a larger pool adds, in its own order
            if not seen:
                seen = {rid for rid, _s in order}
            for rid, score in ranked:
                if rid not in seen:
                    seen.add(rid)
                    order.append((rid, score))
        if len(order) >= wanted or pool >= int(matches):
            return order, matches
        pool *= 2


def filters_key(f: SearchFilters) -> tuple[object, ...]:
    """``f`` as a hashable key (its fields, in order)."""
    return (f.since, f.until, f.episode_type, f.source, f.include_superseded,
            f.only_unwrapped, f.trust, None if f.ids is None else tuple(f.ids), f.scope)


@tracing.phase("ranking")
def _ranked_words(store: Facade, filters: SearchFilters, terms: Sequence[str], pool: int,
                  context: bool, query: str | None
                  ) -> tuple[tuple[tuple[int, float], ...], int, dict[int, int]]:
    from . import ranking  # loaded on the first ranked search, not at import

    via: dict[int, int] = {}
    b = roles_of(store)
    groups = word_groups(list(terms))
    words = [w for g in groups for w in g]
    hits, total = b.episodes.ranked_ids(filters, words, pool)
    if not hits:
        return (), total, via
    episodes, counts = _word_counts(store, filters, words, ranking.COUNT_CAP)
    weights = ranking.group_weights(episodes, counts, groups)
    if query:
        weights = ranking.weigh_focus(weights, groups, query)
    hits = ranking.score_hits(hits, weights, {g[0]: g[1:] for g in groups if len(g) > 1},
                              lambda ids: b.episodes.index_scores(filters, words, ids))
    if query and ranking.asks_when(query):
        hits = ranking.boost_when(hits)
    if context:
        ranked, times = ranking.spread_context(hits, lambda ids: b.episodes.times_by_rowid(ids, filters),
                                               via)
    else:
        ranked, times = [(h.rowid, h.score) for h in hits], {h.rowid: h.t for h in hits}
    periods = ranking.dated_periods(query) if query else []
    if periods:
        ranked = ranking.boost_dated(ranked, times, periods)
    return tuple(ranked), total, via


def load_ranked(store: Facade, ranked: Sequence[tuple[int, float]], filters: SearchFilters
                ) -> list[tuple[EpisodeRow, float]]:
    """The rows of ranked row ids, in rank order (ids the filters hide are left out)."""
    rows = roles_of(store).episodes.rows_by_rowid([rid for rid, _s in ranked], filters) if ranked else {}
    return [(rows[rid], sc) for rid, sc in ranked if rid in rows]


#: at most this many words' counts are kept per database state and filters (then
#: forgotten at once): a long-lived store that is only read stays bounded
COUNTS_KEPT = 4096


def _word_counts(store: Facade, filters: SearchFilters, words: Sequence[str], cap: int
                 ) -> tuple[int, dict[str, int]]:
    """(episodes the filters see, how many hold each word up to ``cap``): the backend's
    ``word_counts``, asked only for the words not counted yet in this database state
    (a common word is in many queries; a store's size and a word's count change only
    with a write, and the memo is dropped at every write). No statement when all are
    known. The counts are the namespace's whatever the other filters (the contract of
    ``word_counts``: BM25's document frequencies), so queries with and without a type
    share them."""
    known: dict[str, int] = roles_of(store).episodes.memo(
        ("word_counts", filters.scope, cap), dict, size=lambda v: COUNTS_KEPT // 64)
    missing = [w for w in words if w not in known]
    if missing or _EPISODES not in known:
        got = roles_of(store).episodes.word_counts(filters, missing, cap)
        if len(known) + len(missing) > COUNTS_KEPT:
            known.clear()
        known.update(got.per_word)
        known[_EPISODES] = got.total
        return got.total, {w: known.get(w, got.per_word.get(w, 0)) for w in words}
    return known[_EPISODES], {w: known[w] for w in words}


#: the key of the episode count among the words' counts (no query word is empty)
_EPISODES = ""


def keyword_recall(store: Facade, *, since: str | datetime | None = None,
                   until: str | datetime | None = None,
                   episode_type: EpisodeType | str | None = None,
                   source: str | None = None, keyword: str | None = None, limit: int = 100,
                   offset: int = 0, include_superseded: bool = False,
                   context: bool = True, trust: str | None = None) -> RecallResult:
    limit = _int_arg(limit, "limit", 0)
    offset = _int_arg(offset, "offset", 0)
    if keyword is not None:
        storable_text(keyword, "keyword", allow_empty=True)
    filters = build_filters(since, until, episode_type, source, include_superseded, trust)
    params: dict[str, Any] = {
        "since": filters.since, "until": filters.until, "episode_type": filters.episode_type,
        "source": source, "keyword": keyword, "limit": limit, "offset": offset,
        "include_superseded": bool(include_superseded), "match": None,
        **({"trust": filters.trust} if trust is not None else {}),
    }
    b = roles_of(store)
    kw = keyword.strip() if keyword else ""
    with b.read():
        if kw:
            rows, total = _search(store, filters, kw, limit, offset)
            params["match"] = "phrase"
            if getattr(total, "estimated", False):  # past the exact bound of a count
                params["total_estimated"] = True
                total = int(total)
            if total == 0:
                terms = query_terms(kw)
                params["match"] = "words"
                params["words"] = terms
                if terms:
                    via: dict[int, int] = {}
                    ranked, matches = paged_words(store, filters, terms, offset + limit,
                                                  context=context, query=kw, via=via)
                    params["word_matches"] = int(matches)
                    if getattr(matches, "estimated", False):  # past the bounded walk
                        params["total_estimated"] = True
                        matches = int(matches)
                    # only matches count; context rides along (see RecallResult.why)
                    total = matches
                    params["context_ranked"] = len(via)
                    rows, known = _page_rows(store, ranked[offset:offset + limit], via,
                                             filters)
                    params["why"] = _why(rows, via, known)
                else:
                    rows, total = [], 0
            else:
                params["why"] = {r.id: "phrase" for r, _s in rows}
        else:
            rows, total = _search(store, filters, None, limit, offset)
        episodes = to_episodes(store, [r for r, _s in rows], kept=True)
    return RecallResult(episodes, total, params)


@tracing.phase("text_search")
def _search(store: Facade, filters: SearchFilters, phrase: str | None, limit: int,
            offset: int) -> tuple[list[tuple[Any, float]], int]:
    """One page of the episodes holding ``phrase`` (or of all, without one) and the
    number of them, kept per database state like ranked words."""
    def run() -> tuple[tuple[tuple[Any, float], ...], int]:
        rows, total = roles_of(store).episodes.search(filters, phrase=phrase, limit=limit,
                                                  offset=offset)
        return tuple(rows), total

    rows, total = roles_of(store).episodes.memo(
        ("search", filters_key(filters), phrase, limit, offset), run,
        size=lambda v: 8 * len(v[0]))  # a row with its text weighs about 8 ranked ids
    return list(rows), total


def _page_rows(store: Facade, page: Sequence[tuple[int, float]], via: dict[int, int],
               filters: SearchFilters) -> tuple[list[tuple[EpisodeRow, float]], dict[int, str]]:
    """The rows of a page of ranked row ids, in rank order (ids the filters hide are left
    out), and the episode id of every row read: the page's and those of the matches its
    context rows are next to, read in the same statement."""
    if not page:
        return [], {}
    wanted = [rid for rid, _s in page]
    in_page = set(wanted)
    wanted += sorted({via[rid] for rid in wanted if rid in via} - in_page)
    found = roles_of(store).episodes.rows_by_rowid(wanted, filters)
    return ([(found[rid], sc) for rid, sc in page if rid in found],
            {rid: r.id for rid, r in found.items()})


def _why(rows: Sequence[tuple[EpisodeRow, float]], via: dict[int, int],
         known: dict[int, str]) -> dict[str, str]:
    """Why each episode of a word recall is there: ``"words"`` (it holds query words) or
    ``"next to <id>"`` (recorded beside that match: its reply, or the turn it answers);
    ``known``: episode ids by row id."""
    return {r.id: (f"next to {known.get(via[r.rowid], '?')}" if r.rowid in via else "words")
            for r, _s in rows}


RETRIEVAL_MODES = ("prompt", "query")


@tracing.traced(tracing.SEARCH, "retrieve_relevant", query="query", result=tracing.found)
def retrieve_relevant(store: Facade, crystal_store: CrystalStore | None, query: str, *,
                      max_patterns: int = 3, max_episodes: int = 3,
                      episode_type: EpisodeType | str | None = None,
                      include_facts: bool = True, since: str | datetime | None = None,
                      exclude_ids: Sequence[str] = (), context: bool = True,
                      mode: str = "prompt", exclude_recent_minutes: int | None = None,
                      now: str | datetime | None = None, today: date | str | None = None,
                      associative: bool = True, durable: bool = True) -> RelevantResult:
    """Scored recall for a per-turn hook: crystallized patterns, ranked episodes (a hit on
    a replaced episode is swapped in its slot for the episode that replaced it) and the
    durable facts the query cues.

    ``mode`` is the crystal recall's: ``"prompt"`` (the default, for a whole user prompt)
    needs two distinctive shared words, ``"query"`` (a deliberate question) takes one;
    episodes are ranked the same either way. ``exclude_recent_minutes`` hides episodes
    recorded within that
    many minutes before ``now``. ``today`` and ``associative`` are accepted as in 1.0.2
    (recall reads no association links); ``durable=False`` is ``include_facts=False``.
    """
    storable_text(query, "query", allow_empty=True)
    if mode not in RETRIEVAL_MODES:
        raise ValidationError(f"unknown recall mode {mode!r}: use prompt or query")
    max_patterns = _int_arg(max_patterns, "max_patterns", 0)
    max_episodes = _int_arg(max_episodes, "max_episodes", 0)
    terms = query_terms(query)
    patterns: list[PatternMatch] = []
    if crystal_store is not None and max_patterns and query.strip():
        from .crystal import retrieve_patterns

        patterns = list(retrieve_patterns(crystal_store, query, max_patterns=max_patterns,
                                          store=store, mode=mode))
    exclude = set(exclude_ids) | _recent_ids(store, exclude_recent_minutes, now)
    episodes = _scored_episodes(store, query, terms, max_episodes, episode_type, since,
                                exclude, context) if max_episodes and terms else []
    if max_episodes and getattr(store, "embedder", None) is not None:  # and by meaning
        from .semantic import SemanticStore, add_by_meaning

        # only a Store (or a view of one) has an embedder: the check above
        episodes = add_by_meaning(cast(SemanticStore, store), query, episodes, max_episodes,
                                  build_filters(since, None, episode_type), exclude)
    found_facts = (_cued_facts(store, query) if include_facts and durable and query.strip()
                   else [])
    return RelevantResult(patterns, episodes, terms, found_facts)


def _recent_ids(store: Facade, minutes: int | None, now: Any) -> set[str]:
    """Ids of episodes recorded in the ``minutes`` before ``now`` (default: the clock)."""
    if minutes is None:
        return set()
    minutes = _int_arg(minutes, "exclude_recent_minutes", 0)
    from datetime import timedelta

    from .clock import iso, parse_timestamp, utcnow

    end = parse_timestamp(now, field="now") if now is not None else utcnow()
    cutoff = iso(end - timedelta(minutes=minutes))
    recent = store.recall(since=cutoff, limit=100_000, include_superseded=True).episodes
    return {e.id for e in recent}


def _scored_episodes(store: Facade, query: str, terms: list[str], k: int, episode_type: Any,
                     since: Any, exclude: set[str], context: bool = True) -> list[ScoredEpisode]:
    b = roles_of(store)
    filters = build_filters(since, None, episode_type, None, include_superseded=True)
    with b.read():
        ranked_ids, _total = ranked_words(store, filters, terms,
                                          pool=rerank_pool(k, most=max(200, k * 20)),
                                          context=context, query=query)
        phrase_rows: list[Any] = []
        if len(query.strip()) >= 3:
            phrase_rows, _ = _search(store, filters, query.strip(), k, 0)
        top = (ranked_ids[0][1] if ranked_ids else 1.0) or 1.0  # ranked best first
        results: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        seen_ids: set[str] = set()
        # an exact phrase hit outranks any word hit; word rows load in slices, since
        # most calls fill k slots from the first few candidates
        step = max(4 * k, 40)
        batches = [[(r, top * 2.0) for r, _s in phrase_rows]]
        batches += [ranked_ids[i:i + step] for i in range(0, len(ranked_ids), step)]
        for n, batch in enumerate(batches):
            if len(order) >= k:
                break
            rows = batch if n == 0 else load_ranked(store, batch, filters)
            _take(store, rows, k, exclude, seen_ids, results, order)
        all_ids = order + [x.id for v in results.values() for x in v["replaces"]]
        eff = store.effective_trust_map(all_ids)
    out = []
    for eid in order:
        v = results[eid]
        row = v["row"]
        out.append(ScoredEpisode(
            id=row.id, timestamp=row.timestamp, type=row.type, source=row.source,
            content=row.content, score=round(float(v["score"]), 6),
            replaces=[ReplacedEpisode(x.id, x.timestamp, x.content, eff.get(x.id, x.trust))
                      for x in v["replaces"]],
            trust=eff.get(row.id, row.trust)))
    return out


def _take(store: Facade, ranked: list[tuple[Any, float]], k: int, exclude: set[str],
          seen_ids: set[str], results: dict[str, dict[str, Any]], order: list[str]) -> None:
    """Fill ``results`` / ``order`` up to ``k`` from ranked rows: a replaced hit takes
    its slot for the episode that replaced it (its chain's head)."""
    b = roles_of(store)
    fresh = [(r, s) for r, s in ranked if r.id not in seen_ids]
    seen_ids.update(r.id for r, _s in fresh)
    superseded = b.links.supersessions_of([r.id for r, _ in fresh])
    for r, score in fresh:
        if len(order) >= k:
            break
        if r.id in exclude:
            continue
        if r.id in superseded:
            head, swappable = facts.link_chain_head(store, r.id)
            if head is None or not swappable:
                continue
            if head in results:
                results[head]["replaces"].append(r)
                continue
            heads = b.episodes.get_episodes([head])
            if head not in heads:
                continue
            results[head] = {"row": heads[head], "score": score, "replaces": [r]}
            order.append(head)
        elif r.id not in results:
            results[r.id] = {"row": r, "score": score, "replaces": []}
            order.append(r.id)


def _cued_facts(store: Facade, query: str) -> list[DurableFact]:
    text = store.load_continuity()
    if not text:
        return []
    from .continuity.durable import parse_durable_facts

    try:
        found = parse_durable_facts(text, store.section_schema)
    except Exception:
        return []
    q = meaningful_words(query)
    out = []
    for f in found:
        cues = {c.lower() for c in f.cues}
        if q & cues or len(q & meaningful_words(f.fact)) >= 2:
            out.append(f)
    return out


def split_relayed(episodes: Sequence[ScoredEpisode]) -> tuple[list[ScoredEpisode], list[ScoredEpisode]]:
    """(the agent's own, relayed): relayed episodes render last, labelled as data."""
    own = [e for e in episodes if e.trust not in RELAYED_TRUST]
    relayed = [e for e in episodes if e.trust in RELAYED_TRUST]
    return own, relayed
