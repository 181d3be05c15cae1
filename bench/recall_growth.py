"""Issue 54 goals 1 and 3: keyword recall as one store grows, and small stores against 1.0.2.

Goal 1: p95 of ``store.recall(keyword=q, limit=10)`` per query class (a stored phrase,
2-3 words of different episodes, a whole LoCoMo question, and each of the first two
filtered by type) on stores of 10k, 1M and larger, each query asked once, every ratio
to the same class at 10k. The large stores are built once and reused (``--store-dir``,
default ``/tmp/rs10m``): the store is created by ``Store`` (its schema, triggers and both
keyword indexes), then the workload's episodes are inserted through that schema by SQL
in transactions of 50,000 (the triggers fill both indexes as ``record()`` does; no audit
entry per episode: recall reads none). ``record_many`` loads about 500 episodes/s on
this shared machine, which would take days for 10M.

Goal 3: at 1k, the same classes in ``record_many``-loaded stores of this checkout and of
the published 1.0.2 (its own venv: ``--peer-python``), alternated ``--rounds`` times in
one run; the ratio is ours / 1.0.2 of the median round's p95.

Writes ``results/goals54/recall.json`` and ``recall.md`` (the shape of issue 54's bench
contract); with ``--pg-dsn`` goal 1 on PostgreSQL goes to ``recall_pg.json`` / ``recall_pg.md``
(area ``recall_pg``), so each backend's run can be made apart (``--only sqlite|postgres``).
``--quick`` asks fewer queries and stops at the sizes already built.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workload as wl  # noqa: E402

LOCOMO = os.environ.get("ANNEAL_BENCH_LOCOMO",
                        str(HERE.parent.parent.parent / "shared" / "data" / "locomo"))
CLASSES = ("phrase", "phrase_typed", "words", "words_typed", "question")
#: goal 1's four classes (the typed figure is the worse of the two typed classes)
GOAL1 = ("phrase", "words", "question", "typed")
CHUNK = 50_000
#: the index operations measured alone per store (see ``components``)
COMPONENTS = ("phrase_trigrams", "phrase_trigrams_narrowest", "phrase_gram_sample",
              "question_trigrams", "question_trigrams_window",
              "word_walk", "word_walk_typed", "word_walk_unscored", "bm25_stats")


def _peer_python() -> str:
    """The published 1.0.2 in its own venv (``bench/peer.py``: built with uv when missing)."""
    from peer import peer_python

    return peer_python(HERE.parent / ".nox" / "bench-peer", "1.0.2")


def _fallback_locomo() -> str:
    for cand in (LOCOMO, "/work/shared/data/locomo", str(HERE.parent / "shared/data/locomo")):
        if Path(cand).is_dir():
            return cand
    return LOCOMO


# ------------------------------------------------------------------ arithmetic

def ratio(value: float | None, base: float | None) -> float | None:
    """``value / base``, None when either is missing or the base is not positive."""
    if value is None or base is None or base <= 0:
        return None
    return value / base


def typed_p95(p95: dict[str, float]) -> float | None:
    """The type-filtered figure of one store: the worse of its two typed classes."""
    vals = [p95[c] for c in ("phrase_typed", "words_typed") if c in p95]
    return max(vals) if vals else None


def goal1_p95(p95: dict[str, float]) -> dict[str, float | None]:
    """Goal 1's four figures from one store's p95 per class."""
    return {"phrase": p95.get("phrase"), "words": p95.get("words"),
            "question": p95.get("question"), "typed": typed_p95(p95)}


def goal1_verdict(ratios: dict[str, float | None], limit: float = 3.0) -> str:
    """``met`` when every class is within ``limit`` times its 10k figure, ``missed`` when
    one is past it, ``not measured`` when a class has no ratio."""
    if not ratios or any(r is None for r in ratios.values()):
        return "not measured"
    return "met" if all(r <= limit for r in ratios.values() if r is not None) else "missed"


def goal3_verdict(ratios: dict[str, float | None], limit: float = 1.0) -> str:
    """``met`` when ours is at most ``limit`` times 1.0.2 for every class measured."""
    return goal1_verdict(ratios, limit)


def p95_of(summary: dict[str, Any], metric: str) -> float:
    """One class's p95 in ms: ``cpu`` (the calling thread's CPU time) or ``wall``."""
    return float(summary["cpu"]["p95_ms"] if metric == "cpu" else summary["p95_ms"])


def like_for_like(details: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per typed and plain phrase class, CPU p95 of ours and 1.0.2 over only the queries
    ours answered by the phrase (the rest 1.0.2 answers with nothing): each query's
    median over rounds."""
    out: dict[str, dict[str, Any]] = {}
    if not details.get("ours") or not details.get("peer"):
        return out
    for cls in ("phrase", "phrase_typed"):
        how = details["ours"][0][cls]["answered_by"]
        keep = [i for i, h in enumerate(how) if h == "phrase"]
        if not keep:
            continue
        med = {who: [statistics.median(r[cls]["per_query_cpu_ms"][i] for r in details[who])
                     for i in keep] for who in ("ours", "peer")}
        ours, peer = wl.percentile(med["ours"], 95), wl.percentile(med["peer"], 95)
        out[cls] = {"n": len(keep), "ours": ours, "peer": peer, "ratio": ratio(ours, peer)}
    return out


def median_round(rounds: list[dict[str, float]], cls: str) -> float | None:
    """The median over rounds of one class's p95 (None when no round has it)."""
    vals = [r[cls] for r in rounds if cls in r]
    return statistics.median(vals) if vals else None


# ------------------------------------------------------------------ stores

def build_store(path: Path, size: int, vocab: wl.Vocabulary, *, deadline: float) -> int:
    """Grow the store at ``path`` to ``size`` workload episodes (creating it with the
    library, then SQL inserts through its schema and triggers); returns its size (less
    than ``size`` when ``deadline`` came first)."""
    import anneal_memory as am

    if not path.exists():
        am.Store(str(path), project_name="bench").close()
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-400000")
        have = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM episodes").fetchone()[0])
        base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
        while have < size and time.time() < deadline:
            rows = []
            for j in range(have, min(size, have + CHUNK)):
                e = wl.episode(vocab, j)
                ts = (base + dt.timedelta(seconds=j)).isoformat(timespec="microseconds")
                rows.append((j + 1, f"{j:08x}", ts, e["episode_type"], e["content"]))
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO episodes(rowid, id, timestamp, type, content) "
                             "VALUES (?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
            have += len(rows)
            print(f"  {path.name}: {have:,} episodes", flush=True)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return have
    finally:
        conn.close()


def store_size(path: Path) -> int:
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM episodes").fetchone()[0])
    finally:
        conn.close()


def with_schema(dsn: str, schema: str) -> str:
    """``dsn`` with its search path set to ``schema`` (one store per schema)."""
    from urllib.parse import quote

    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options={quote(f'-csearch_path={schema}')}"


def build_pg(dsn: str, size: int, vocab: wl.Vocabulary, *, deadline: float) -> tuple[str, int]:
    """A PostgreSQL store of ``size`` workload episodes in schema ``rg_<size>`` (created
    by ``Store``, then COPY into its episodes table: its generated word vector and both
    indexes are filled by the server); returns its location and size."""
    import psycopg

    import anneal_memory as am

    schema = f"rg_{size}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    loc = with_schema(dsn, schema)
    am.Store(loc, project_name="bench").close()
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    with psycopg.connect(loc) as conn:
        have = int(conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
        while have < size and time.time() < deadline:
            top = min(size, have + CHUNK)
            with conn.cursor() as cur, cur.copy(
                    "COPY episodes (id, timestamp, type, content) FROM STDIN") as copy:
                for j in range(have, top):
                    e = wl.episode(vocab, j)
                    ts = (base + dt.timedelta(seconds=j)).isoformat(timespec="microseconds")
                    copy.write_row((f"{j:08x}", ts, e["episode_type"], e["content"]))
            conn.commit()
            have = top
            print(f"  postgres {schema}: {have:,} episodes", flush=True)
        conn.execute("ANALYZE episodes")
        conn.commit()
    return loc, have


def components(path: Path, vocab: wl.Vocabulary, size: int, n: int) -> dict[str, Any]:
    """CPU p95 of the index operations a recall is made of, in raw SQL on the store's
    file: what bounds goal 1, measured part by part.

    - ``phrase_trigrams``: the trigram AND of the phrase class over :func:`trigrams` (what
      a phrase's count intersects before any row is read), ``phrase_trigrams_narrowest``
      the AND a large store's page intersects (of each stretch of the phrase, the trigram
      its index holds least often),
      ``phrase_gram_sample`` the statement that picks them;
    - ``question_trigrams`` and ``question_trigrams_window``: the same AND for the whole
      questions (nearly all match nothing), over the whole store and with the row ids
      bounded to the newest 2,000 (``rowid > top - 2000``): FTS5 applies a row id bound to
      matches only, so an AND that matches nothing reads every term's doclist whatever
      the bound (a bounded phrase walk cannot be had from the row id alone);
    - ``word_walk``: the bounded word walk's BM25 (the newest 5,000 matches of the words
      class, scored), ``word_walk_typed`` the same with the type in the query (as a typed
      recall had it before stop 59: BM25 then also reads the type's whole doclist for its
      statistics, though a type's score is 0; a typed recall now filters outside BM25), ``word_walk_unscored`` the walk without BM25, and
      ``bm25_stats`` BM25 over the newest 50 only (what BM25 reads before its first row:
      every query word's whole doclist for the IDF)."""
    import anneal_memory as am
    from anneal_memory.storage.common import trigrams
    from anneal_memory.storage.sqlite import fts_quote
    from anneal_memory.testing import backend_of
    from anneal_memory.text import query_terms, spell_letters, word_groups

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out: dict[str, Any] = {}

    def cpu(sql: str, params: list[Any]) -> float:
        c0 = time.thread_time()
        conn.execute(sql, params).fetchall()
        return time.thread_time() - c0

    try:
        top = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM episodes").fetchone()[0])
        tri: list[float] = []
        narrow: list[float] = []
        sample: list[float] = []
        store = am.Store(str(path), read_only=True)
        backend = backend_of(store)
        try:
            for q in wl.queries(vocab, size, n):
                grams = trigrams(q)
                if grams:
                    tri.append(cpu("SELECT COUNT(*) FROM episodes_tri WHERE episodes_tri "
                                   "MATCH ?", [" AND ".join(fts_quote(g) for g in grams)]))
                    c0 = time.thread_time()
                    chosen = backend._narrowest_grams(q)  # the page's trigrams
                    sample.append(time.thread_time() - c0)
                    narrow.append(cpu("SELECT COUNT(*) FROM episodes_tri WHERE episodes_tri "
                                      "MATCH ?", [" AND ".join(fts_quote(g) for g in chosen)]))
        finally:
            store.close()
        qtri: list[float] = []
        qwin: list[float] = []
        for q in wl.locomo_questions(_fallback_locomo(), n):
            grams = trigrams(q.strip())
            if not grams:
                continue
            m = " AND ".join(fts_quote(g) for g in grams)
            head = "SELECT rowid FROM episodes_tri WHERE episodes_tri MATCH ? "
            qtri.append(cpu(head + "ORDER BY rowid DESC LIMIT 10", [m]))
            qwin.append(cpu(head + "AND rowid > ? ORDER BY rowid DESC LIMIT 10",
                            [m, top - 2000]))
        walk: list[float] = []
        typed: list[float] = []
        bare: list[float] = []
        stats: list[float] = []
        inner = ("SELECT rowid FROM (SELECT rowid, {score} AS s FROM episodes_words WHERE "
                 "episodes_words MATCH ? ORDER BY rowid DESC LIMIT {n}) ORDER BY s LIMIT 200")
        bm25 = "bm25(episodes_words, 1.0, 0.0, 0.0)"
        for q in wl.word_queries(vocab, size, n):
            words = [w for g in word_groups(query_terms(q)) for w in g]
            if not words:
                continue
            expr = "content : (" + " OR ".join(fts_quote(spell_letters(w)) for w in words) + ")"
            walk.append(cpu(inner.format(score=bm25, n=5000), [expr]))
            typed.append(cpu(inner.format(score=bm25, n=5000),
                             [f'({expr}) AND type : "decision"']))
            bare.append(cpu(inner.format(score="0", n=5000), [expr]))
            stats.append(cpu(inner.format(score=bm25, n=50), [expr]))
        out["phrase_trigrams"] = wl.latency_summary(tri)
        out["phrase_trigrams_narrowest"] = wl.latency_summary(narrow)
        out["phrase_gram_sample"] = wl.latency_summary(sample)
        out["question_trigrams"] = wl.latency_summary(qtri)
        out["question_trigrams_window"] = wl.latency_summary(qwin)
        out["word_walk"] = wl.latency_summary(walk)
        out["word_walk_typed"] = wl.latency_summary(typed)
        out["word_walk_unscored"] = wl.latency_summary(bare)
        out["bm25_stats"] = wl.latency_summary(stats)
    finally:
        conn.close()
    return out


#: rows per era of the era probe's trigram index (2**14)
ERA_SHIFT = 14


def era_token(rowid: int, shift: int = ERA_SHIFT) -> str:
    """The era of a row id as three private-use characters: one trigram no text holds,
    the same for the 2**shift row ids of an era."""
    era = rowid >> shift
    return "".join(chr(0xE000 + ((era >> (8 * i)) & 0xFF)) for i in range(3))


def era_probe(path: Path, vocab: wl.Vocabulary, size: int, n: int, work_dir: Path
              ) -> dict[str, Any]:
    """What a trigram index with one era token per row would cost (``--era-probe``).

    FTS5 checks a row id bound on matches only, so no SQL on today's index bounds the
    trigram AND of a phrase that matches nothing. Built here beside the store (a
    contentless copy of its trigram index, each row's text followed by its era token,
    2**ERA_SHIFT row ids per era), the AND restricted to the newest era
    (``(grams) AND era``) is confined to that era's rows; CPU p95 of both on the copy,
    per query class, each query once. Build time is reported too."""
    from anneal_memory.storage.common import trigrams
    from anneal_memory.storage.sqlite import fts_quote

    copy = work_dir / f"era{size}.db"
    copy.unlink(missing_ok=True)
    # URIs on: the store is attached read-only by its file: URI
    conn = sqlite3.connect(f"file:{copy}", uri=True, isolation_level=None)
    out: dict[str, Any] = {"rows_per_era": 1 << ERA_SHIFT}
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("CREATE VIRTUAL TABLE tri USING fts5(content, content='', "
                     "tokenize='trigram', detail='none', columnsize=0)")
        conn.execute("ATTACH ? AS s", [f"file:{path}?mode=ro"])
        conn.create_function("era", 1, era_token, deterministic=True)
        t0 = time.perf_counter()
        conn.execute("BEGIN")
        conn.execute("INSERT INTO tri(rowid, content) SELECT rowid, content || ' ' || "
                     "era(rowid) FROM s.episodes")
        conn.execute("COMMIT")
        out["build_seconds"] = round(time.perf_counter() - t0, 1)
        top = int(conn.execute("SELECT MAX(rowid) FROM s.episodes").fetchone()[0])
        newest = fts_quote(era_token(top))
        qs = class_queries(vocab, size, n)
        out["phrase_page"] = era_page_walk(conn, qs["phrase"], top)
        for cls in ("phrase", "words", "question"):
            whole: list[float] = []
            bounded: list[float] = []
            for q in qs[cls]:
                grams = trigrams(q.strip())
                if not grams:
                    continue
                m = " AND ".join(fts_quote(g) for g in grams)
                for expr, into in ((m, whole), (f"({m}) AND {newest}", bounded)):
                    c0 = time.thread_time()
                    conn.execute("SELECT rowid FROM tri WHERE tri MATCH ? ORDER BY rowid DESC "
                                 "LIMIT 10", [expr]).fetchall()
                    into.append(time.thread_time() - c0)
            out[cls] = {"whole": wl.latency_summary(whole),
                        "newest_era": wl.latency_summary(bounded)}
    finally:
        conn.close()
        copy.unlink(missing_ok=True)
    return out


def era_page_walk(conn: sqlite3.Connection, phrases: list[str], top: int,
                  limit: int = 10) -> dict[str, Any]:
    """What the era index gives a phrase's page (the probe's copy ``tri`` beside the
    attached store ``s``): the eras walked newest first, each one's AND joined to its rows
    and checked for the phrase, until ``limit`` rows hold it or no era is left (a phrase in
    fewer rows than the page walks every era), against the whole AND with the same check:
    CPU p95 of each, and the eras walked. The same rows, in the same order, either way."""
    from anneal_memory.storage.common import trigrams
    from anneal_memory.storage.sqlite import _contains_test, fts_quote

    whole: list[float] = []
    walked: list[float] = []
    eras: list[float] = []
    for q in phrases:
        grams = trigrams(q.strip())
        if not grams:
            continue
        m = " AND ".join(fts_quote(g) for g in grams)
        test, needle = _contains_test(q)
        if "am_fold" in test:  # the library's own fold function: not on this connection
            continue
        sql = ("SELECT t.rowid FROM tri t CROSS JOIN s.episodes e ON e.rowid = t.rowid "
               f"WHERE tri MATCH ? AND {test} ORDER BY t.rowid DESC LIMIT ?")
        c0 = time.thread_time()
        want = [r[0] for r in conn.execute(sql, [m, needle, limit])]
        whole.append(time.thread_time() - c0)
        c0 = time.thread_time()
        got: list[int] = []
        era = top >> ERA_SHIFT
        while era >= 0 and len(got) < limit:
            token = fts_quote(era_token(era << ERA_SHIFT))
            got += [r[0] for r in conn.execute(sql, [f"({m}) AND {token}", needle,
                                                      limit - len(got)])]
            era -= 1
        walked.append(time.thread_time() - c0)
        eras.append(float((top >> ERA_SHIFT) - era))
        assert got == want, q
    eras.sort()
    return {"whole": wl.latency_summary(whole), "era_walk": wl.latency_summary(walked),
            "eras_walked_p50": eras[len(eras) // 2] if eras else 0,
            "eras_walked_p95": eras[int(len(eras) * 0.95)] if eras else 0,
            "eras": (top >> ERA_SHIFT) + 1}


# ------------------------------------------------------------------ measuring

def class_queries(vocab: wl.Vocabulary, size: int, n: int) -> dict[str, list[str]]:
    spans = wl.queries(vocab, size, n)
    words = wl.word_queries(vocab, size, n)
    return {"phrase": spans, "phrase_typed": spans, "words": words, "words_typed": words,
            "question": wl.locomo_questions(_fallback_locomo(), n)}


def measure_store(store: Any, vocab: wl.Vocabulary, size: int, n: int) -> dict[str, Any]:
    """p50/p95 per class of ``store.recall(keyword=q, limit=10)``, each query once."""
    for q in wl.queries(vocab, size, 5, seed=wl.SEED + 1):  # warm pages and statements
        store.recall(keyword=q, limit=10)
    out: dict[str, Any] = {}
    for cls, qs in class_queries(vocab, size, n).items():
        extra = {"episode_type": "decision"} if cls.endswith("_typed") else {}
        lat, cpu, how = [], [], []
        for q in qs:
            c0, t0 = time.thread_time(), time.perf_counter()
            r = store.recall(keyword=q, limit=10, **extra)
            lat.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
            # how it was answered: 1.0.2 has no word fallback, so "match" is ours only
            how.append(r.query_params.get("match") or ("phrase" if r.episodes else "none"))
        out[cls] = wl.latency_summary(lat)
        out[cls]["cpu"] = wl.latency_summary(cpu)
        out[cls]["per_query_cpu_ms"] = [round(c * 1000, 4) for c in cpu]
        out[cls]["answered_by"] = how
    return out


def _child(args: argparse.Namespace) -> int:
    """Measure one store in this interpreter (ours or the peer's) and print JSON."""
    import anneal_memory as am

    vocab = wl.Vocabulary.from_texts(wl.locomo_texts(_fallback_locomo()))
    info = {"package": am.__file__, "version": getattr(am, "__version__", None)}
    if args.child_build:  # a fresh store of this package, record_many / batch loaded
        tmp = tempfile.mkdtemp(prefix="rg-")
        store = am.Store(os.path.join(tmp, "m.db"), project_name="bench")
        items = list(wl.episodes(vocab, args.child_size))
        for i in range(0, len(items), 1000):
            chunk = items[i:i + 1000]
            if hasattr(store, "record_many"):
                store.record_many(chunk)
            else:  # 1.0.2 has no batch API: one record at a time, as bench/measure.py
                for item in chunk:
                    store.record(**item)
    else:
        store = am.Store(args.child, project_name="bench")
    res = measure_store(store, vocab, args.child_size, args.queries)
    store.close()
    print(json.dumps({"info": info, "classes": res}))
    return 0


def run_child(python: str, *, path: str | None, size: int, queries: int,
              build: bool = False) -> dict[str, Any]:
    cmd = [python, str(Path(__file__).resolve()), "--child", path or "-", "--child-size",
           str(size), "--queries", str(queries)]
    if build:
        cmd.append("--child-build")
    env = dict(os.environ)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


# ------------------------------------------------------------------ the run

def machine() -> str:
    return (f"nproc {os.cpu_count()}, python {platform.python_version()}, "
            f"sqlite {sqlite3.sqlite_version}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", default="10000,1000000,10000000")
    p.add_argument("--store-dir", default="/tmp/rs10m")
    p.add_argument("--max-load-seconds", type=float, default=3600.0)
    p.add_argument("--no-build", action="store_true",
                   help="measure only the stores already built (as --quick does)")
    p.add_argument("--peer-python", default="",
                   help="1.0.2's interpreter (default: .nox/bench-peer, built when missing)")
    p.add_argument("--no-peer", action="store_true", help="goal 3 without 1.0.2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--queries", type=int, default=0)
    p.add_argument("--out-dir", default=str(HERE / "results" / "goals54"))
    p.add_argument("--pg-dsn", default=os.environ.get("ANNEAL_BENCH_PG_DSN")
                   or os.environ.get("ANNEAL_TEST_PG_DSN", ""),
                   help="a PostgreSQL server for goal 1's PostgreSQL rows (else not run)")
    p.add_argument("--pg-sizes", default="10000,100000,1000000")
    p.add_argument("--era-probe", action="store_true",
                   help="also build a trigram index with era tokens beside each store and "
                        "measure the phrase AND bounded to the newest era (minutes at 1M)")
    p.add_argument("--era-dir", default="", help="where the era probe's copy is built "
                   "(default: --store-dir; removed after)")
    p.add_argument("--pg-queries", type=int, default=0,
                   help="queries per class on PostgreSQL (default: as SQLite)")
    p.add_argument("--only", choices=("sqlite", "postgres"),
                   help="one backend's part: sqlite (goal 1 on SQLite and goal 3: recall.json)"
                        " or postgres (goal 1 on PostgreSQL: recall_pg.json); default both")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--child-build", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    if args.only == "postgres" and not args.pg_dsn:
        p.error("--only postgres needs --pg-dsn (or ANNEAL_BENCH_PG_DSN)")
    n = args.queries or (40 if args.quick else 200)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    store_dir = Path(args.store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    vocab = wl.Vocabulary.from_texts(wl.locomo_texts(_fallback_locomo()))
    figures: dict[str, Any] = {"queries_per_class": n, "growth": {}, "small": {}}
    if args.only == "postgres":
        return run_pg(args, vocab, n, time.time() + args.max_load_seconds)

    # goal 1: one store per size, built once
    deadline = time.time() + args.max_load_seconds
    for size in sizes:
        path = store_dir / f"r{size}.db"
        have = store_size(path)
        if have < size and not (args.quick or args.no_build):
            have = build_store(path, size, vocab, deadline=deadline)
        if have < size:
            figures["growth"][str(size)] = {"built": have, "measured": False}
            continue
        print(f"recall at {size:,}", flush=True)
        res = run_child(sys.executable, path=str(path), size=size, queries=n)
        figures["growth"][str(size)] = {"built": have, "measured": True,
                                        "classes": res["classes"]}
        figures.setdefault("components", {})[str(size)] = components(path, vocab, size, n)
        if args.era_probe:
            print(f"era probe at {size:,}", flush=True)
            figures.setdefault("era_probe", {})[str(size)] = era_probe(
                path, vocab, size, n, Path(args.era_dir or store_dir))

    if args.only != "sqlite":
        run_pg(args, vocab, n, deadline)

    # goal 3: 1k, ours and 1.0.2 alternated
    peer = None if args.no_peer else args.peer_python or _peer_python()
    details: dict[str, list[dict[str, Any]]] = {"ours": [], "peer": []}
    rounds: dict[str, list[dict[str, float]]] = {"ours": [], "peer": [], "ours_wall": [],
                                                 "peer_wall": []}
    for _ in range(args.rounds if not args.quick else 1):
        for who, py in (("ours", sys.executable), ("peer", peer)):
            if py is None:
                continue
            res = run_child(py, path=None, size=1000, queries=n, build=True)
            figures["small"].setdefault(f"{who}_info", res["info"])
            details[who].append(res["classes"])
            rounds[who].append({c: p95_of(v, "cpu") for c, v in res["classes"].items()})
            rounds[f"{who}_wall"].append({c: p95_of(v, "wall")
                                          for c, v in res["classes"].items()})
    figures["small"]["rounds"] = rounds
    figures["small"]["like_for_like"] = like_for_like(details)

    goals = summarize(figures, sizes)
    out = {"area": "recall", "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(),
           "machine": machine(), "goals": goals, "figures": figures}
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "recall.json").write_text(json.dumps(out, indent=1) + "\n")
    (out_dir / "recall.md").write_text(markdown(out, sizes))
    print(markdown(out, sizes))
    return 0


def pg_server_info(dsn: str) -> dict[str, str]:
    """The server's version and the settings that decide how many row reads are page
    copies from the OS (shared_buffers) or hits."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return {k: str(conn.execute(f"SHOW {k}").fetchone()[0])
                for k in ("server_version", "shared_buffers", "work_mem",
                          "effective_cache_size")}


def run_pg(args: argparse.Namespace, vocab: wl.Vocabulary, n: int, deadline: float) -> int:
    """Goal 1 on PostgreSQL: one schema per size (built once, kept), each measured in a
    fresh process; writes ``recall_pg.json`` / ``recall_pg.md`` (area ``recall_pg``), apart
    from the SQLite run's ``recall.json``. Without a server it writes a "not measured"
    file only where none exists, so a SQLite-only run never overwrites a PostgreSQL one."""
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pg_sizes = [int(s) for s in args.pg_sizes.split(",") if s]
    figures: dict[str, Any] = {"queries_per_class": args.pg_queries or n, "growth_pg": {}}
    if args.pg_dsn:
        figures["server"] = pg_server_info(args.pg_dsn)
        for size in pg_sizes:
            loc, have = build_pg(args.pg_dsn, size, vocab, deadline=0.0 if (
                args.quick or args.no_build) else deadline)
            if have < size:
                figures["growth_pg"][str(size)] = {"built": have, "measured": False}
                continue
            print(f"PostgreSQL recall at {size:,}", flush=True)
            res = run_child(sys.executable, path=loc, size=size, queries=args.pg_queries or n)
            figures["growth_pg"][str(size)] = {"built": have, "measured": True,
                                               "classes": res["classes"]}
    elif (out_dir / "recall_pg.json").exists():
        return 0
    out = {"area": "recall_pg", "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(),
           "machine": machine(), "goals": summarize_pg(figures, pg_sizes, bool(args.pg_dsn)),
           "figures": figures}
    (out_dir / "recall_pg.json").write_text(json.dumps(out, indent=1) + "\n")
    (out_dir / "recall_pg.md").write_text(markdown_pg(out, pg_sizes))
    print(markdown_pg(out, pg_sizes))
    return 0


def growth_goals(growth: dict[str, Any], sizes: list[int], backend: str, metric: str,
                 bound: str) -> list[dict[str, Any]]:
    """Goal 1's rows of one backend: each size's p95 per class against its 10k store
    (``metric``: ``cpu`` for SQLite, which runs in the calling thread; ``wall`` for
    PostgreSQL, whose work is the server's)."""
    p95 = {s: {c: p95_of(v, metric) for c, v in g["classes"].items()}
           for s, g in growth.items() if g.get("measured")}
    base = goal1_p95(p95["10000"]) if "10000" in p95 else {}
    label = "CPU p95" if metric == "cpu" else "wall p95"
    goals = []
    for size in sizes:
        if size == 10000:
            continue
        key = str(size)
        name = f"keyword recall p95 at {size:,} within 3x of 10k ({backend})"
        if key not in p95 or not base:
            built = growth.get(key, {}).get("built", 0)
            goals.append({"goal": name, "figure": f"store not built (reached {built:,} episodes)",
                          "target": "<= 3x per class", "verdict": "not measured",
                          "bound": "load time on this shared 2-core machine"})
            continue
        mine = goal1_p95(p95[key])
        ratios = {c: ratio(mine[c], base.get(c)) for c in GOAL1}
        verdict = goal1_verdict(ratios)
        worst = max((c for c in GOAL1 if ratios[c] is not None),
                    key=lambda c: ratios[c] or 0.0, default=None)
        goals.append({
            "goal": name,
            "figure": f"{label} " + ", ".join(
                f"{c} {mine[c]:.1f} ms ({ratios[c]:.1f}x)" for c in GOAL1
                if mine[c] is not None and ratios[c] is not None),
            "target": "<= 3x per class",
            "verdict": verdict,
            "bound": "" if verdict == "met" else f"worst class: {worst}; {bound}"})
    return goals


SQLITE_BOUND = ("the trigram AND of a phrase reads doclists that grow with the store "
                "(figures.components: phrase_trigrams, question_trigrams), and a row id "
                "bound does not bound it: FTS5 checks the bound on matches only, so an AND "
                "matching nothing reads every term's doclist (question_trigrams_window); "
                "BM25 reads every query word's whole doclist for its statistics "
                "(bm25_stats) and each scored match's size and positions (word_walk "
                "against word_walk_unscored); a typed query keeps its type out of BM25 "
                "(word_walk_typed times the former statement, the type inside), but a "
                "query of words from different episodes is first tried as a phrase, whose "
                "trigram AND matching nothing is about half a typed query's CPU at 1M. A large store's phrase page intersects, of each stretch "
                "of the phrase, the trigram its index holds least often "
                "(phrase_trigrams_narrowest), but a phrase held "
                "by fewer episodes than a page, made of trigrams each in 100,000+ episodes, "
                "still walks their whole intersection, and the count walks the letters' "
                "trigrams to 1,001 candidates (identical totals); an era token per 16,384 "
                "row ids does not bound it (--era-probe, phrase_page: such a phrase walks "
                "every era)")
PG_BOUND = ("ranked words are bounded as on SQLite (the newest 5,000 matches and every "
            "match of words held by <= 2,000 episodes, each scored by ts_rank_cd: ~10 us a "
            "row), but the walk to the 5,000th newest match reads 5,000 * N / M rows off the "
            "row id index for M matches, or, where the words' counts put M under a fifth of "
            "that, the M matches off the word index (with the type's index for a typed "
            "query): either grows with the store; the word statistics count each word held "
            "by 2,000-25,000 episodes row by row up to 20,000 (GIN cannot count without "
            "reading rows; far commoner words come from ANALYZE's statistics, counts are "
            "kept per snapshot); pg_trgm reads every trigram's whole posting list of a "
            "phrase (2,800 pages for three words at 1M) and rechecks every row holding its "
            "trigrams apart (10,284 rows read for 176 matches of a two-word phrase at 1M); "
            "JIT compilation is off in the library's sessions (50-100 ms a statement at 1M)")


def summarize_pg(figures: dict[str, Any], pg_sizes: list[int], ran: bool = True
                 ) -> list[dict[str, Any]]:
    """Goal 1's PostgreSQL rows (wall p95 ratios to the 10k schema): ``recall_pg.json``."""
    if not ran:
        return [{"goal": "keyword recall p95 at 1,000,000 within 3x of 10k (PostgreSQL)",
                 "figure": "not run", "target": "<= 3x per class",
                 "verdict": "not measured", "bound": "no PostgreSQL server given"}]
    return growth_goals(figures["growth_pg"], pg_sizes, "PostgreSQL", "wall", PG_BOUND)


def summarize(figures: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    """Goal rows from the raw figures (ratios to the 10k store, and to 1.0.2 at 1k); the
    PostgreSQL rows are ``summarize_pg``'s, in their own file."""
    goals = growth_goals(figures["growth"], sizes, "SQLite", "cpu", SQLITE_BOUND)
    small = figures["small"]["rounds"]
    if small["ours"] and small["peer"]:
        ratios = {c: ratio(median_round(small["ours"], c), median_round(small["peer"], c))
                  for c in ("phrase", "phrase_typed")}
        verdict = goal3_verdict(ratios)
        goals.append({
            "goal": "keyword and typed p95 at 1k <= 1x of 1.0.2 (goal 0.5x)",
            "figure": "CPU p95 " + ", ".join(
                f"{c} {median_round(small['ours'], c):.2f} vs "
                f"{median_round(small['peer'], c):.2f} ms ({r:.2f}x)"
                for c, r in ratios.items() if r is not None) + "; wall p95 " + ", ".join(
                f"{c} {median_round(small['ours_wall'], c):.2f} vs "
                f"{median_round(small['peer_wall'], c):.2f} ms" for c in ratios),
            "target": "<= 1x (goal 0.5x)", "verdict": verdict,
            "bound": "" if verdict == "met" else "see figures.small"})
        like = figures["small"].get("like_for_like", {})
        if like:
            goals.append({
                "goal": "typed p95 at 1k <= 1x of 1.0.2, queries a phrase answers (like for like)",
                "figure": ", ".join(f"{c} {v['ours']:.2f} vs {v['peer']:.2f} ms CPU "
                                    f"({v['ratio']:.2f}x, {v['n']} queries)"
                                    for c, v in like.items() if v.get("ratio") is not None),
                "target": "<= 1x (goal 0.5x)",
                "verdict": goal3_verdict({c: v.get("ratio") for c, v in like.items()}),
                "bound": "1.0.2 answers a phrase absent from the type with nothing; ours "
                         "ranks the words then (the other typed queries)"})
    else:
        goals.append({"goal": "keyword and typed p95 at 1k <= 1x of 1.0.2 (goal 0.5x)",
                      "figure": "1.0.2 venv missing", "target": "<= 1x (goal 0.5x)",
                      "verdict": "not measured", "bound": "no peer venv"})
    return goals


def _size_rows(growth: dict[str, Any], sizes: list[int], metric: str, label: str
               ) -> list[str]:
    rows = []
    for size in sizes:
        g = growth.get(str(size), {})
        if g.get("measured"):
            rows.append(f"| {label} {size:,} | " + " | ".join(
                f"{p95_of(g['classes'][c], metric):.1f}" for c in CLASSES) + " |")
        else:
            rows.append(f"| {label} {size:,} | not built ({g.get('built', 0):,} episodes) |"
                        + " |" * (len(CLASSES) - 1))
    return rows


def markdown_pg(out: dict[str, Any], pg_sizes: list[int]) -> str:
    """``recall_pg.md``: goal 1's PostgreSQL rows and p95 per class and size."""
    fig = out["figures"]
    server = fig.get("server", {})
    lines = [f"# Issue 54 goal 1 on PostgreSQL: keyword recall growth "
             f"({out['measured_at'][:16]})", "",
             f"Machine: {out['machine']}; server: " + (", ".join(
                 f"{k} {v}" for k, v in server.items()) or "none") + " (the library's "
             "sessions set jit off; a server started by `scripts/pg_server.py start DIR "
             "--bench` has shared_buffers a quarter of RAM). Wall clock (the "
             "work is the server's), each query asked once, single runs on shared cores.", "",
             "| goal | figure | target | verdict | bound |", "|---|---|---|---|---|"]
    for g in out["goals"]:
        lines.append(f"| {g['goal']} | {g['figure']} | {g['target']} | {g['verdict']} | "
                     f"{g['bound']} |")
    if fig.get("growth_pg"):
        lines += ["", "Wall p95 ms per class and store size:", "",
                  "| store | " + " | ".join(CLASSES) + " |", "|---" * (len(CLASSES) + 1) + "|"]
        lines += _size_rows(fig["growth_pg"], pg_sizes, "wall", "PostgreSQL")
    return "\n".join(lines) + "\n"


def markdown(out: dict[str, Any], sizes: list[int]) -> str:
    fig = out["figures"]
    lines = [f"# Issue 54 goals 1 and 3: keyword recall growth ({out['measured_at'][:16]})", "",
             f"Machine: {out['machine']}. Single runs on 2 cores that may "
             "be shared: ratios are within one run.", "",
             "| goal | figure | target | verdict | bound |", "|---|---|---|---|---|"]
    for g in out["goals"]:
        lines.append(f"| {g['goal']} | {g['figure']} | {g['target']} | {g['verdict']} | "
                     f"{g['bound']} |")
    lines += ["", "SQLite verdicts use the CPU time of the calling thread "
              "(``time.thread_time``: SQLite runs in it), because wall clock on this shared "
              "machine also measures the other sessions' load; wall-clock p95 is in the "
              "JSON. PostgreSQL's rows are in recall_pg.md.", "",
              "p95 ms per class and store size (each query asked once; SQLite CPU):", "",
              "| store | " + " | ".join(CLASSES) + " |", "|---" * (len(CLASSES) + 1) + "|"]
    lines += _size_rows(fig["growth"], sizes, "cpu", "SQLite")
    small = fig["small"]["rounds"]
    for who in ("ours", "peer"):
        if small[who]:
            lines.append(f"| SQLite 1,000 {who} (median of {len(small[who])}) | " + " | ".join(
                f"{median_round(small[who], c):.2f}" for c in CLASSES) + " |")
    comp = fig.get("components", {})
    if comp:
        lines += ["", "Index operations alone (CPU p95 ms, raw SQL on the same files; see "
                  "``components``): the trigram AND of a phrase and of a whole question "
                  "(also with the row ids bounded to the newest 2,000), the word walk with "
                  "BM25 (also with the type in the query) and without, and BM25's "
                  "statistics alone:", "",
                  "| store | " + " | ".join(COMPONENTS) + " |",
                  "|---" * (len(COMPONENTS) + 1) + "|"]
        for size in sizes:
            c = comp.get(str(size))
            if c:
                lines.append(f"| {size:,} | " + " | ".join(
                    f"{c[k]['p95_ms']:.1f}" if k in c else "" for k in COMPONENTS) + " |")
    era = fig.get("era_probe", {})
    if era:
        lines += ["", "Era probe (``--era-probe``): the phrase class's trigram AND on a copy of "
                  "the trigram index whose rows carry an era token (one per "
                  f"{next(iter(era.values()))['rows_per_era']:,} row ids), CPU p95 ms over the "
                  "whole index and bounded to the newest era:", "",
                  "| store | build s | phrase whole | phrase newest era | words whole | "
                  "words newest era | question whole | question newest era |",
                  "|---|---|---|---|---|---|---|---|"]
        for size in sizes:
            e = era.get(str(size))
            if e:
                lines.append(f"| {size:,} | {e['build_seconds']} | " + " | ".join(
                    f"{e[c][k]['p95_ms']:.2f}" for c in ("phrase", "words", "question")
                    for k in ("whole", "newest_era")) + " |")
        lines += ["", "The phrase class's page (10 rows, each checked for the phrase) walked era "
                  "by era, newest first, until full, against the whole AND (CPU p95 ms; a "
                  "phrase in fewer than 10 episodes walks every era):", "",
                  "| store | eras | page whole | page era walk | eras walked p50 | p95 |",
                  "|---|---|---|---|---|---|"]
        for size in sizes:
            w = era.get(str(size), {}).get("phrase_page")
            if w:
                lines.append(f"| {size:,} | {w['eras']} | {w['whole']['p95_ms']:.2f} | "
                             f"{w['era_walk']['p95_ms']:.2f} | {w['eras_walked_p50']:.0f} | "
                             f"{w['eras_walked_p95']:.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
