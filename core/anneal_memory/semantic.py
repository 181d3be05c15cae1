"""Hybrid and semantic recall: vectors add what keyword recall misses.

``mode="hybrid"`` fuses keyword recall's ranking with the vector ranking by weighted
reciprocal rank (:mod:`.fusion`: k = 10, keyword 2 : vectors 1, measured on LoCoMo with
all-MiniLM-L6-v2; bench/semantic.py reports the sweep and the held-out figures); for a
query keyword recall answers weakly (none of its first results holds two of the query's
words), the episodes closer in meaning than every keyword match go first.
``mode="semantic"`` ranks by cosine alone.

Every hard filter applies before anything is scored: the candidates are read through
the same filters as keyword recall (namespace, type, trust, source, time, superseded),
and deleted or erased episodes have no vector (the database removes it with the row).

Recording never waits for the embedder: episodes are embedded later, a bounded number
at each recall (``Embedder.catch_up``) and all of them by ``embed_pending`` (the CLI's
``embed``). A recall whose embedder fails, or whose episodes have no vector yet, says so
in ``result.semantic`` and serves keyword recall's result.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from . import tracing
from ._inputs import storable_text, whole_number
from ._seam import roles_of, unit_of
from ._unit import Facade, require_writable
from .embedding import Embedder, _numpy, cosine_similarities, pack_vector, top
from .errors import EmbedderError, ValidationError
from .fusion import PROMOTE_POOL, hybrid_order, keyword_is_weak
from .storage.base import SearchFilters
from .storage.vectors import VectorRepo
from .types import RecallResult, ScoredEpisode, VectorUse
from .vector_cache import VectorMatrix

if TYPE_CHECKING:  # no import of the Store or recall: they call this module, not it them
    from .types import Episode, EpisodeType
    from .vector_cache import VectorCache


class SemanticStore(Facade, Protocol):
    """What semantic recall needs of the Store (or a view): its embedder and the vector
    cache it shares with its views, episodes by id, and its own recall."""

    embedder: Embedder | None
    _vector_cache: VectorCache

    def get_many(self, ids: Sequence[str]) -> dict[str, Episode]: ...

    def recall(self, since: str | datetime | None = None, until: str | datetime | None = None,
               episode_type: EpisodeType | str | None = None, source: str | None = None,
               keyword: str | None = None, limit: int = 100, offset: int = 0,
               include_superseded: bool = False, *, context: bool = True,
               trust: str | None = None, mode: str | None = None) -> RecallResult: ...


class KeywordSearch(Protocol):
    """Keyword recall, as ``recall.keyword_recall`` (the Store passes it in)."""

    def __call__(self, store: Facade, *, since: str | datetime | None = None,
                 until: str | datetime | None = None,
                 episode_type: EpisodeType | str | None = None, source: str | None = None,
                 keyword: str | None = None, limit: int = 100, offset: int = 0,
                 include_superseded: bool = False, context: bool = True,
                 trust: str | None = None) -> RecallResult: ...

MODES = ("keyword", "hybrid", "semantic")
#: candidates the vector ranking contributes, at least
POOL = 100
#: candidates keyword recall contributes to the fusion, at least (its first 50: with only
#: its first ten, k = 10 and 2:1 leave keyword recall's top ten as they are; with 50, R@10
#: on LoCoMo's held-out conversations rose 0.775 -> 0.787, bench/semantic.py)
KEYWORD_POOL = PROMOTE_POOL


class EmbedReportDict(TypedDict):
    """:meth:`EmbedReport.to_dict`."""

    embedded: int
    pending: int
    model: str
    dims: int | None
    dropped: int


@dataclass(frozen=True)
class EmbedReport:
    """What ``embed_pending`` did: vectors made, episodes still without one (those the
    store refused to embed stay pending), the model and its dimension."""

    embedded: int
    pending: int
    model: str
    dims: int | None
    dropped: int = 0

    def to_dict(self) -> EmbedReportDict:
        """The report as a JSON-ready dict (its fields, in order)."""
        return {"embedded": self.embedded, "pending": self.pending, "model": self.model,
                "dims": self.dims, "dropped": self.dropped}


def resolve_mode(store: SemanticStore, mode: str | None) -> str:
    """The recall mode: the caller's, else hybrid with an embedder, keyword without."""
    if mode is None:
        return "hybrid" if store.embedder is not None else "keyword"
    if mode not in MODES:
        raise ValidationError(f"unknown recall mode {str(mode)[:40]!r}: use keyword, hybrid "
                              "or semantic")
    if mode != "keyword" and store.embedder is None:
        raise ValidationError(f"mode={mode!r} needs an embedder: open the store with "
                              "Store(path, embedder=...) (see docs/semantic.md)")
    return mode


@tracing.phase("embedding")
def _embed(store: SemanticStore, emb: Embedder, repo: VectorRepo, ids: Sequence[str], newest: int
           ) -> tuple[dict[str, bytes], str | None]:
    """Embed and store the ``newest`` of these episodes (those still there); (their
    vectors, the embedder's error or None). The embedder runs outside any transaction
    or lock."""
    with roles_of(store).read():
        rows = repo.contents(ids, newest=newest)
    if not rows:
        return {}, None
    try:
        vectors = emb.embed_documents([content for _i, content, _ns in rows])
    except EmbedderError as exc:
        return {}, str(exc)
    dim = len(vectors[0])
    packed = [(eid, ns, pack_vector(v)) for (eid, _c, ns), v in zip(rows, vectors)]
    with unit_of(store):
        repo.put(emb.model, dim, packed)
    made = {eid: blob for eid, _ns, blob in packed}
    store._vector_cache.put(emb.model, dim, made)
    return made, None


@dataclass
class _Ranking:
    """Vector ranking of one query over the filters' candidates."""

    ids: list[str]           # best first, at most the pool
    cosine: dict[str, float]  # every candidate's
    use: VectorUse


def _matrix_scope(repo: VectorRepo, filters: SearchFilters) -> str | None:
    """The cached matrix's key for these filters, or None when the matrix path does not
    apply: PostgreSQL or no numpy (no cheap change counter / matrix product), or filters
    that keep few episodes (type, trust, source, time, ids: their candidates are read from
    the database, and their vectors taken from the matrix)."""
    if (filters.since or filters.until or filters.episode_type or filters.source
            or filters.trust is not None or filters.ids is not None or filters.only_unwrapped):
        return None
    scope = repo.scope
    if repo._scope is None and filters.scope != scope:
        return None
    return f"{scope.key}\x1e{int(scope.unscoped_only)}"


def _sync(repo: VectorRepo, m: VectorMatrix, model: str, dims: int) -> None:
    """Bring ``m`` up to date with the database (inside a read snapshot; see
    :mod:`.vector_cache`): the vectors added since its last row, a reload when some were
    removed, and the episodes recorded since, those without a vector kept as pending."""
    version = repo.data_version()
    if (not m.stale and version is not None and version == m.version
            and repo.max_episode_rowid() == m.checked_rowid):  # nothing recorded here either
        return
    m.add(repo.vectors_since(model, dims, m.last_rowid))
    if repo.count_vectors(model, dims) != m.size:  # some were removed: read them all again
        fresh = VectorMatrix(dims, m.np)
        fresh.add(repo.vectors_since(model, dims, 0))
        m.ids, m.pos, m.rows, m.last_rowid = fresh.ids, fresh.pos, fresh.rows, fresh.last_rowid
        m.pending, m.checked_rowid = set(), 0
    if m.checked_rowid == 0:
        m.pending = set(repo.pending_ids(model, dims))
        m.checked_rowid = repo.max_episode_rowid()
    else:
        new, m.checked_rowid = repo.episodes_since(m.checked_rowid)
        m.pending.update(i for i in new if i not in m.pos)
    m.version, m.stale = version, False


@tracing.phase("vector_scan")
def _rank(store: SemanticStore, emb: Embedder, text: str, filters: SearchFilters, pool: int,
          mode: str, during: Callable[[], Any] | None = None) -> tuple[_Ranking, Any]:
    """Embed the query, catch up on unembedded candidates, rank them by cosine (in
    hybrid mode only those with some similarity); (the ranking, what ``during`` returned:
    it runs in this thread while the matrix is scanned in another). EmbedderError when
    the query cannot be embedded (``during`` has not run then)."""
    qvec = emb.embed_query(text)
    repo = roles_of(store).vectors
    np = _numpy()
    key = _matrix_scope(repo, filters) if np is not None else None
    if key is not None and repo.data_version() is not None:
        return _rank_matrix(store, emb, qvec, filters, pool, mode, key, np, during)
    r = _rank_by_id(store, emb, qvec, filters, pool, mode)
    return r, (during() if during is not None else None)


def _rank_matrix(store: SemanticStore, emb: Embedder, qvec: list[float], filters: SearchFilters,
                 pool: int, mode: str, key: str, np: Any,
                 during: Callable[[], Any] | None = None) -> tuple[_Ranking, Any]:
    """The ranking from the namespace's cached matrix: one matrix product, the best rows
    checked against the database with the filters (widening until ``pool`` pass or every
    row was looked at), so nothing removed or hidden since the matrix was read is served."""
    dims = len(qvec)
    repo = roles_of(store).vectors
    m = store._vector_cache.matrix(key, emb.model, dims, np)
    failed, embedded = None, 0
    with m.lock:
        with roles_of(store).read():
            _sync(repo, m, emb.model, dims)
            pending = list(m.pending)
        if pending and emb.catch_up and not store.read_only:
            made, failed = _embed(store, emb, repo, pending, emb.catch_up)  # the newest first
            embedded = len(made)
            if made:
                with roles_of(store).read():
                    _sync(repo, m, emb.model, dims)
        norm = math.sqrt(sum(x * x for x in qvec)) or 1.0  # as cosine_similarities does
        q = np.asarray([x / norm for x in qvec], dtype=np.float32)
        rows, ids, npending = m.matrix(), m.ids, len(m.pending)
    want = min(pool, len(rows))
    window = min(len(rows), max(2 * want, want + 16))

    def scan() -> tuple[Any, Any]:
        sims = rows @ q if len(rows) else np.zeros(0, dtype=np.float32)
        part = (np.argpartition(-sims, window - 1)[:window] if 0 < window < len(sims)
                else np.arange(len(sims)))
        return sims, part

    other = None
    if during is not None and len(rows) >= PARALLEL_ROWS:
        job = _pool().submit(scan)  # numpy releases the GIL: the two run side by side
        try:
            other = during()
        finally:
            sims, part = job.result()
    else:
        sims, part = scan()
        other = during() if during is not None else None
    ranked: list[str] = []
    cosine: dict[str, float] = {}
    while want:
        if part is None:
            part = (np.argpartition(-sims, window - 1)[:window] if window < len(sims)
                    else np.arange(len(sims)))
        if window < len(sims):  # every row tied with the window's last one too
            tied = np.nonzero(sims >= sims[part].min())[0]
            part = tied if len(tied) <= 4 * window else part
        order = part[sims[part] > 0] if mode == "hybrid" else part
        scored = sims[order].tolist()
        top_ids = [ids[i] for i, _s in sorted(  # best first; ties: the larger id first
            zip(order.tolist(), scored), key=lambda t: (t[1], ids[t[0]]), reverse=True)]
        with roles_of(store).read():
            ok = repo.passing(filters, top_ids)
        ranked = [i for i in top_ids if i in ok][:pool]
        if (len(ranked) >= want or window >= len(sims)
                or (mode == "hybrid" and len(order) < len(part))):  # no positive row left
            break
        window, part = min(len(sims), 4 * window), None
    for i in ranked:
        cosine[i] = float(sims[m.pos[i]]) if i in m.pos else 0.0
    reason = failed or (f"{npending} episode(s) have no vector of this model yet: "
                        "store.embed_pending() embeds them" if npending else None)
    use = VectorUse(mode=mode, used=bool(len(sims)), model=emb.model, dims=dims,
                    candidates=len(sims), pending=npending, embedded=embedded,
                    reason=reason if len(sims) else (reason or "no episode has a vector yet"))
    return _Ranking(ranked, _CosineOf(cosine, m, sims), use), other


def _rank_sqlite_vec(store: SemanticStore, emb: Embedder, qvec: list[float], filters: SearchFilters,
                     pool: int, mode: str) -> _Ranking:
    """The ranking with sqlite-vec computing every candidate's cosine in the database
    (no numpy, and a SQLite that loads it): the same candidates, catch-up and order as
    the scan by id, without a cosine computed in Python."""
    dims = len(qvec)
    repo = roles_of(store).vectors
    qblob = pack_vector(qvec)
    with roles_of(store).read():
        ids = repo.visible(filters)
        sims = dict(repo.similarities(emb.model, dims, qblob, filters))
    pending = [i for i in ids if i not in sims]
    failed, embedded = None, 0
    if pending and emb.catch_up and not store.read_only:
        made, failed = _embed(store, emb, repo, pending, emb.catch_up)  # the newest first
        embedded = len(made)
        if made:
            with roles_of(store).read():
                sims = dict(repo.similarities(emb.model, dims, qblob, filters))
            pending = [i for i in pending if i not in sims]
    cand = [i for i in ids if i in sims]
    scores = [sims[i] for i in cand]
    order = top(scores, pool, cand)
    if mode == "hybrid":
        order = [i for i in order if scores[i] > 0]
    reason = failed or (f"{len(pending)} episode(s) have no vector of this model yet: "
                        "store.embed_pending() embeds them" if pending else None)
    use = VectorUse(mode=mode, used=bool(cand), model=emb.model, dims=dims,
                    candidates=len(cand), pending=len(pending), embedded=embedded,
                    reason=reason if cand else (reason or "no episode has a vector yet"))
    return _Ranking([cand[i] for i in order], dict(zip(cand, scores)), use)


#: from this many rows, hybrid recall scans the matrix in a worker thread while keyword
#: recall runs (below it the thread costs more than it saves)
PARALLEL_ROWS = 20_000
_POOL: Any = None
_POOL_LOCK = threading.Lock()


def _pool() -> Any:
    """The worker threads matrix scans run in (made on first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(2, thread_name_prefix="anneal-vector-scan")
        return _POOL


class _CosineOf(dict):  # type: ignore[type-arg]
    """The cosine of any matrix row by episode id (the ranked ones stored, the rest looked
    up on demand: the promotion rule asks for keyword matches' cosines)."""

    def __init__(self, known: dict[str, float], m: VectorMatrix, sims: Any) -> None:
        super().__init__(known)
        self._pos, self._sims = m.pos, sims  # a reload makes a new dict: this one stays

    def __missing__(self, eid: str) -> float:
        i = self._pos.get(eid)
        if i is None or i >= len(self._sims):
            raise KeyError(eid)
        return float(self._sims[i])

    def get(self, eid: str, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[eid]
        except KeyError:
            return default

    def __contains__(self, eid: object) -> bool:
        return dict.__contains__(self, eid) or (isinstance(eid, str) and eid in self._pos
                                               and self._pos[eid] < len(self._sims))


def _rank_by_id(store: SemanticStore, emb: Embedder, qvec: list[float], filters: SearchFilters,
                pool: int, mode: str) -> _Ranking:
    """The ranking from the filters' candidates read from the database and their vectors
    by id (PostgreSQL, no numpy, or selective filters)."""
    dims = len(qvec)
    repo = roles_of(store).vectors
    if _numpy() is None and repo.sqlite_vec():
        return _rank_sqlite_vec(store, emb, qvec, filters, pool, mode)
    with roles_of(store).read():  # the filters pick the candidates; the cache only their vectors
        ids = repo.visible(filters)
        vecs = store._vector_cache.get(emb.model, dims, ids,
                                       lambda missing: repo.vectors_of(emb.model, dims, missing))
    pending = [i for i in ids if i not in vecs]
    failed, embedded = None, 0
    if pending and emb.catch_up and not store.read_only:
        made, failed = _embed(store, emb, repo, pending, emb.catch_up)  # the newest first
        embedded = len(made)
        if made and len(next(iter(made.values()))) != 4 * dims:
            made = {}  # another dimension than the query's: not comparable
        pending = [i for i in pending if i not in made]
        vecs = {**vecs, **made} if made else vecs
    cand = [i for i in ids if i in vecs]
    sims = cosine_similarities(qvec, store._vector_cache.stacked(emb.model, dims, cand, vecs))
    order = top(sims, pool, cand)
    if mode == "hybrid":  # nothing in common by meaning either: not a candidate
        order = [i for i in order if sims[i] > 0]
    reason = failed or (f"{len(pending)} episode(s) have no vector of this model yet: "
                        "store.embed_pending() embeds them" if pending else None)
    use = VectorUse(mode=mode, used=bool(cand), model=emb.model, dims=dims,
                    candidates=len(cand), pending=len(pending), embedded=embedded,
                    reason=reason if cand else (reason or "no episode has a vector yet"))
    return _Ranking([cand[i] for i in order], dict(zip(cand, sims)), use)


class KeywordArgs(TypedDict):
    """The filters keyword recall takes besides its keyword and page."""

    since: str | datetime | None
    until: str | datetime | None
    episode_type: EpisodeType | str | None
    source: str | None
    include_superseded: bool
    context: bool
    trust: str | None


def recall(store: SemanticStore, mode: str, keyword_recall: KeywordSearch, filters: SearchFilters,
           *, keyword: str | None, limit: int, offset: int,
           since: str | datetime | None = None, until: str | datetime | None = None,
           episode_type: EpisodeType | str | None = None, source: str | None = None,
           include_superseded: bool = False, context: bool = True,
           trust: str | None = None) -> RecallResult:
    """``store.recall`` in ``mode`` (hybrid or semantic; see the module's docstring):
    ``keyword_recall`` is keyword recall, ``filters`` the recall's filters, built from
    the arguments after ``offset`` (which keyword recall takes as they are)."""
    kw = KeywordArgs(since=since, until=until, episode_type=episode_type, source=source,
                     include_superseded=include_superseded, context=context, trust=trust)
    emb = store.embedder
    kw_text = keyword.strip() if isinstance(keyword, str) else ""
    if mode == "keyword" or emb is None or not kw_text:
        return keyword_recall(store, keyword=keyword, limit=limit, offset=offset, **kw)
    storable_text(keyword, "keyword", allow_empty=True)
    limit = whole_number(limit, "limit", minimum=0)
    offset = whole_number(offset, "offset", minimum=0)
    def keyword_pool() -> RecallResult:
        return keyword_recall(store, keyword=keyword, limit=max(KEYWORD_POOL, 2 * (offset + limit)),
                              offset=0, **kw)

    try:
        r, base = _rank(store, emb, kw_text, filters, max(POOL, 2 * (offset + limit)), mode,
                        keyword_pool if mode == "hybrid" else None)
    except EmbedderError as exc:
        return _keyword_only(keyword_recall(store, keyword=keyword, limit=limit, offset=offset,
                                            **kw), mode, emb, str(exc))
    if not r.use.used:
        return _keyword_only(keyword_recall(store, keyword=keyword, limit=limit, offset=offset,
                                            **kw), mode, emb, r.use.reason, r.use)
    have: dict[str, Any] = {}
    if mode == "semantic":
        ranked, why, total = r.ids, {}, r.use.candidates
        params: dict[str, Any] = {
            "since": filters.since, "until": filters.until,
            "episode_type": filters.episode_type, "source": source,
            "include_superseded": filters.include_superseded, "match": "meaning",
            **({"trust": filters.trust} if filters.trust is not None else {})}
    else:
        keyword_ids = [e.id for e in base.episodes]
        have = {e.id: e for e in base.episodes}
        weak = keyword_is_weak(kw_text, [e.content for e in base.episodes])
        ranked = hybrid_order(keyword_ids, r.ids, r.cosine, weak, weight=emb.keyword_weight)
        why, params = base.why, dict(base.query_params)
        total = len(ranked)
    page = ranked[offset:offset + limit]
    missing = [i for i in page if i not in have]
    if missing:
        have.update(store.get_many(missing))
    episodes = [have[i] for i in page if i in have]
    params.update(keyword=keyword, limit=limit, offset=offset, mode=mode,
                  why={e.id: why.get(e.id, "meaning") for e in episodes},
                  scores={e.id: round(r.cosine[e.id], 6) for e in episodes if e.id in r.cosine},
                  semantic=r.use.to_dict())
    return RecallResult(episodes, total, params)


def add_by_meaning(store: SemanticStore, query: str, scored: list[ScoredEpisode], k: int,
                   filters: SearchFilters, exclude: set[str]) -> list[ScoredEpisode]:
    """Scored recall (``retrieve_relevant``, what every adapter's per-turn hook calls)
    with the store's embedder: keyword recall's ``scored`` episodes as the hybrid ranks
    them, and the slots they leave (or, for a weak query, the places ahead of them) taken
    by episodes found by meaning, scored by their cosine. Unchanged when the embedder
    fails or nothing has a vector."""
    emb = store.embedder
    if emb is None or not query.strip() or k <= 0:
        return scored
    try:
        r, _none = _rank(store, emb, query.strip(), filters, max(POOL, 4 * k), "hybrid")
    except EmbedderError:
        return scored
    shown = {e.id for e in scored} | {x.id for e in scored for x in e.replaces}
    extra = [i for i in r.ids if i not in shown and i not in exclude]
    weak = keyword_is_weak(query, [e.content for e in scored])
    # the bar: keyword recall's first KEYWORD_POOL matches, as the hybrid recall sets it
    bar = ([e.id for e in store.recall(keyword=query, limit=KEYWORD_POOL, mode="keyword",
                                       episode_type=filters.episode_type, since=filters.since,
                                       include_superseded=True).episodes] if weak else None)
    order = hybrid_order([e.id for e in scored], extra, r.cosine, weak, bar,
                         weight=emb.keyword_weight)[:k]
    by_id = {e.id: e for e in scored}
    new = store.get_many([i for i in order if i not in by_id])
    out = []
    for eid in order:
        if eid in by_id:
            out.append(by_id[eid])
        elif eid in new:
            e = new[eid]
            out.append(ScoredEpisode(id=e.id, timestamp=e.timestamp, type=e.type.value,
                                     source=e.source, content=e.content,
                                     score=round(r.cosine[eid], 6), replaces=[],
                                     trust=e.trust))
    return out


def _keyword_only(res: RecallResult, mode: str, emb: Embedder, reason: str | None,
                  use: VectorUse | None = None) -> RecallResult:
    """Keyword recall's result ``res``, saying why vectors took no part."""
    use = use or VectorUse(mode=mode, used=False, model=emb.model, dims=emb.dims,
                           reason=reason)
    use = replace(use, used=False, reason=reason)
    res.query_params.update(mode=mode, semantic=use.to_dict())
    return res


def embed_pending(store: SemanticStore, *, rebuild: bool = False, limit: int | None = None,
                  progress: Callable[[int, int], None] | None = None) -> EmbedReport:
    """Embed every episode this store (or view) sees that has no vector of its
    embedder's model; ``rebuild`` first removes every vector of the episodes it may
    change (any model), so all are made again. Each batch commits on its own: a failure
    keeps what was done and raises EmbedderError. ``progress(done, total)`` after each
    batch."""
    emb = store.embedder
    if emb is None:
        raise ValidationError("this store has no embedder: open it with Store(path, "
                              "embedder=...) to embed its episodes")
    require_writable(store)
    if limit is not None:
        whole_number(limit, "limit")
    repo = roles_of(store).vectors
    f = SearchFilters(include_superseded=True)
    dropped = 0
    if rebuild:
        with unit_of(store) as tx:
            dropped = tx.vectors.drop()
        store._vector_cache.clear()
    with roles_of(store).read():
        total = repo.count_pending(f, emb.model, emb.dims)
    if limit is not None:
        total = min(total, limit)
    done, after = 0, 0
    while done < total:
        with roles_of(store).read():
            rows = repo.pending(f, emb.model, emb.dims, min(emb.batch_size, total - done),
                                after=after)
        if not rows:
            break
        after = rows[-1][0]
        vectors = emb.embed_documents([content for _r, _i, content, _ns in rows])
        packed = [(eid, ns, pack_vector(v)) for (_r, eid, _c, ns), v in zip(rows, vectors)]
        with unit_of(store):
            repo.put(emb.model, len(vectors[0]), packed)
        store._vector_cache.put(emb.model, len(vectors[0]), {e: b for e, _n, b in packed})
        done += len(rows)
        if progress is not None:
            progress(done, total)
    with roles_of(store).read():
        left = repo.count_pending(f, emb.model, emb.dims)
    return EmbedReport(embedded=done, pending=left, model=emb.model, dims=emb.dims,
                       dropped=dropped)
