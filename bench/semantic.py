"""Semantic recall: quality and cost of the hybrid and semantic modes (issue 33).

``python bench/semantic.py [--locomo-dir DIR] [--sizes 10000] [--out FILE]`` measures,
with the offline default embedder (``anneal-memory[semantic]``: WordLlama, 256 dims):

* LoCoMo evidence recall@10 (each question as written) for ``mode="keyword"``,
  ``"hybrid"`` and ``"semantic"``, ``retrieve_relevant`` (the adapters' per-turn recall)
  without and with the embedder, and weighted reciprocal-rank fusion of the keyword
  and vector rankings at each weight of WEIGHTS (the alternative the hybrid was
  measured against);
* a paraphrase set of our own (below): each query shares no content word with its
  memory, among one LoCoMo conversation's turns as distractors; hit@5 and recall@10 for
  keyword vs hybrid;
* embedding throughput (``store.embed_pending()`` over a loaded store, episodes/s);
* recall p50/p95 at each size for keyword, hybrid and semantic (LoCoMo questions as
  queries), with the ratio to keyword recall measured in the same run.

Writes JSON to ``--out`` (default bench/results/semantic.json) and a Markdown table
beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import locomo  # noqa: E402

WEIGHTS = (1.0, 2.0, 4.0, 6.0, 10.0, 20.0)

#: (memory, query): no content word in common (checked below with the LoCoMo bench's
#: own list of common words)
PARAPHRASES = [
    ("I started as a nurse at the county hospital last spring.",
     "What does she do for a living?"),
    ("My daughter just took her first steps yesterday!", "Has the baby begun walking?"),
    ("We adopted a little beagle puppy from the shelter.", "Did they get a new dog?"),
    ("I finally passed my driving test this morning.", "Is he licensed to operate a car?"),
    ("The doctor said my blood sugar is too high, so no more sweets.",
     "What health problem was diagnosed?"),
    ("I'm moving to Berlin in August for the new position.",
     "Where is he relocating for work?"),
    ("I've been learning to play the violin since January.",
     "Which musical instrument is she studying?"),
    ("My grandmother passed away last week; the funeral is on Saturday.",
     "Did a relative die recently?"),
    ("We're expecting twins in the fall!", "Is she pregnant?"),
    ("I quit smoking three months ago and feel great.",
     "Did he give up cigarettes?"),
    ("Our flight to Tokyo got cancelled because of the typhoon.",
     "Why was the trip to Japan disrupted?"),
    ("I sprained my ankle playing basketball.", "How did he get injured?"),
    ("I got engaged to Sam on the beach at sunset.", "Who is she going to marry?"),
    ("I'm allergic to peanuts, so I always carry an EpiPen.",
     "What food can't he eat?"),
    ("We planted tomatoes, basil and peppers in the backyard.",
     "What vegetables are growing in their garden?"),
    ("I was laid off from the factory on Friday.", "Did he lose his job?"),
    ("I bought a used Honda Civic for my commute.", "What vehicle did she purchase?"),
    ("My son graduated from college with an engineering degree.",
     "Did her kid finish university?"),
    ("I ran my first marathon in under four hours.", "How fast was the race she completed?"),
    ("The landlord raised our rent again, so we're looking for a cheaper apartment.",
     "Why are they hunting for housing?"),
    ("I'm vegetarian now; I haven't eaten meat since March.", "What diet does he follow?"),
    ("We spent our honeymoon in Lisbon.", "Where did the newlyweds travel?"),
    ("My laptop crashed and I lost the whole thesis draft.",
     "What happened to her computer?"),
    ("I volunteer at the animal rescue every Sunday.", "Does he do any charity work?"),
]


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0.0


def _content_words(text: str) -> set[str]:
    return {w.casefold() for w in locomo._WORD.findall(text)} - locomo._COMMON


def check_paraphrases() -> None:
    for memory, query in PARAPHRASES:
        shared = _content_words(memory) & _content_words(query)
        if shared:
            raise SystemExit(f"paraphrase pair shares {shared}: {query!r} / {memory!r}")


def _embedder(am: Any) -> Any:
    from anneal_memory.embedding import offline_embedder

    return offline_embedder()


def locomo_quality(am: Any, locomo_dir: str, emb: Any) -> dict[str, Any]:
    """R@10 per mode, and per fusion weight (keyword and vector rankings fused)."""
    from anneal_memory import semantic

    files = sorted(Path(locomo_dir).glob("*.json"))
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {
        m: [] for m in ("keyword", "hybrid", "semantic", "retrieve_relevant",
                        "retrieve_relevant+embedder", *(f"w={w:g}" for w in WEIGHTS))}
    embed_s, embedded = 0.0, 0
    for path in files:
        conv = locomo.load(path)
        with tempfile.TemporaryDirectory() as tmp:
            store = am.Store(os.path.join(tmp, "m.db"), embedder=emb, audit=False)
            plain = am.Store(os.path.join(tmp, "m.db"), audit=False)  # the same, no embedder
            to_dia = {}
            with store.batch():
                for t in conv.turns:
                    ep = store.record(t.content, "observation", source="conversation",
                                      timestamp=t.timestamp)
                    to_dia[ep.id] = t.dia_id
            t0 = time.perf_counter()
            embedded += store.embed_pending().embedded
            embed_s += time.perf_counter() - t0
            for q in conv.questions:
                ranked = {}
                for mode in ("keyword", "hybrid", "semantic"):
                    res = store.recall(keyword=q.text, limit=10, mode=mode)
                    ranked[mode] = [e.id for e in res.episodes]
                kw = [e.id for e in store.recall(keyword=q.text, limit=semantic.POOL,
                                                 mode="keyword").episodes]
                vec = [e.id for e in store.recall(keyword=q.text, limit=semantic.POOL,
                                                  mode="semantic").episodes]
                for w in WEIGHTS:
                    ranked[f"w={w:g}"] = semantic.fuse(kw, vec, w)[:10]
                for name, s in (("retrieve_relevant", plain),
                                ("retrieve_relevant+embedder", store)):
                    ranked[name] = [e.id for e in am.retrieve_relevant(
                        s, None, q.text, max_episodes=10).episodes]
                for name, ids in ranked.items():
                    rows[name].append((q.category, locomo.score(
                        [to_dia.get(i, i) for i in ids], q.evidence)))
            plain.close()
            store.close()
    out = {name: round(locomo.aggregate(r)["overall"]["recall@10"], 4)
           for name, r in rows.items()}
    return {"recall@10": out, "questions": len(rows["keyword"]),
            "conversations": [p.stem for p in files],
            "embed_per_s": round(embedded / embed_s, 1) if embed_s else None}


def paraphrase_quality(am: Any, locomo_dir: str, emb: Any) -> dict[str, Any]:
    """Keyword vs hybrid on queries that share no content word with their memory."""
    check_paraphrases()
    files = sorted(Path(locomo_dir).glob("*.json"))
    distractors = locomo.load(files[0]).turns if files else []
    hits: dict[str, list[float]] = {"keyword": [], "hybrid": [], "semantic": [],
                                    "retrieve_relevant+embedder": []}
    r10: dict[str, list[float]] = {k: [] for k in hits}
    with tempfile.TemporaryDirectory() as tmp:
        store = am.Store(os.path.join(tmp, "p.db"), embedder=emb, audit=False)
        with store.batch():
            for t in distractors:
                store.record(t.content, "observation", timestamp=t.timestamp)
            ids = [store.record(m, "observation").id for m, _q in PARAPHRASES]
        store.embed_pending()
        for eid, (_m, query) in zip(ids, PARAPHRASES):
            for mode in hits:
                got = ([e.id for e in am.retrieve_relevant(store, None, query,
                                                           max_episodes=10).episodes]
                       if mode.startswith("retrieve") else
                       [e.id for e in store.recall(keyword=query, limit=10, mode=mode).episodes])
                hits[mode].append(1.0 if eid in got[:5] else 0.0)
                r10[mode].append(1.0 if eid in got else 0.0)
        store.close()
    return {"pairs": len(PARAPHRASES), "distractors": len(distractors),
            "hit@5": {m: round(statistics.mean(v), 4) for m, v in hits.items()},
            "recall@10": {m: round(statistics.mean(v), 4) for m, v in r10.items()}}


def latency(am: Any, locomo_dir: str, emb: Any, size: int, queries: int = 200
            ) -> dict[str, Any]:
    """Embedding throughput and recall latency per mode at ``size`` episodes."""
    turns, questions = [], []
    for path in sorted(Path(locomo_dir).glob("*.json")):
        conv = locomo.load(path)
        turns += [t.content for t in conv.turns]
        questions += [q.text for q in conv.questions]
    texts = [f"{turns[i % len(turns)]} ({i // len(turns)})" if i >= len(turns) else turns[i]
             for i in range(size)]
    out: dict[str, Any] = {"episodes": size}
    with tempfile.TemporaryDirectory() as tmp:
        store = am.Store(os.path.join(tmp, "l.db"), embedder=emb, audit=False)
        for i in range(0, size, 1000):
            store.record_many([{"content": c, "episode_type": "observation"}
                               for c in texts[i:i + 1000]])
        t0 = time.perf_counter()
        rep = store.embed_pending()
        secs = time.perf_counter() - t0
        out["embed_per_s"] = round(rep.embedded / secs, 1)
        out["embed_seconds"] = round(secs, 2)
        qs = questions[:queries]
        for mode in ("keyword", "hybrid", "semantic"):
            store.recall(keyword=qs[0], limit=10, mode=mode)  # warm
            ms = []
            for q in qs:
                t0 = time.perf_counter()
                store.recall(keyword=q, limit=10, mode=mode)
                ms.append(1000 * (time.perf_counter() - t0))
            out[mode] = {"p50_ms": round(_pct(ms, 0.5), 2), "p95_ms": round(_pct(ms, 0.95), 2)}
        for mode in ("hybrid", "semantic"):
            out[mode]["p95_vs_keyword"] = round(out[mode]["p95_ms"] / out["keyword"]["p95_ms"], 2)
        store.close()
    return out


def markdown(res: dict[str, Any]) -> str:
    lq = res["locomo"]["recall@10"]
    lines = ["# Semantic recall (bench/semantic.py)", "",
             f"Embedder: {res['embedder']}; numpy: {res['numpy']}", "",
             f"## LoCoMo evidence recall@10 ({res['locomo']['questions']} questions)", "",
             "| mode | R@10 |", "|---|---:|"]
    lines += [f"| {m} | {lq[m]:.3f} |" for m in ("keyword", "hybrid", "semantic",
                                                 "retrieve_relevant", "retrieve_relevant+embedder")]
    lines += ["", "Reciprocal-rank fusion, keyword : vector weight (not what hybrid does):", "", "| weight | R@10 |", "|---|---:|"]
    lines += [f"| {k[2:]}:1 | {v:.3f} |" for k, v in lq.items() if k.startswith("w=")]
    p = res["paraphrase"]
    lines += ["", f"## Paraphrases ({p['pairs']} pairs, {p['distractors']} distractors)", "",
              "| mode | hit@5 | R@10 |", "|---|---:|---:|"]
    lines += [f"| {m} | {p['hit@5'][m]:.3f} | {p['recall@10'][m]:.3f} |" for m in p["hit@5"]]
    lines += ["", "## Cost", "", "| episodes | embed/s | keyword p95 | hybrid p95 | semantic p95 |",
              "|---:|---:|---:|---:|---:|"]
    for r in res["latency"]:
        lines.append(f"| {r['episodes']} | {r['embed_per_s']} | {r['keyword']['p95_ms']} ms | "
                     f"{r['hybrid']['p95_ms']} ms ({r['hybrid']['p95_vs_keyword']}x) | "
                     f"{r['semantic']['p95_ms']} ms ({r['semantic']['p95_vs_keyword']}x) |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo-dir", default=os.environ.get(
        "ANNEAL_BENCH_LOCOMO", str(HERE.parent.parent / "shared" / "data" / "locomo")))
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--out", default=str(HERE / "results" / "semantic.json"))
    args = ap.parse_args()
    if not Path(args.locomo_dir).is_dir():
        ap.error(f"LoCoMo folder {args.locomo_dir} not found: pass --locomo-dir")
    import anneal_memory as am
    from anneal_memory import embedding

    emb = _embedder(am)
    res: dict[str, Any] = {"embedder": emb.model, "numpy": embedding._numpy() is not None}
    res["locomo"] = locomo_quality(am, args.locomo_dir, emb)
    print(json.dumps(res["locomo"]), flush=True)
    res["paraphrase"] = paraphrase_quality(am, args.locomo_dir, emb)
    print(json.dumps(res["paraphrase"]), flush=True)
    res["latency"] = [latency(am, args.locomo_dir, emb, int(n)) for n in args.sizes.split(",")]
    print(json.dumps(res["latency"]), flush=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n", "utf-8")
    Path(args.out).with_suffix(".md").write_text(markdown(res), "utf-8")
    print(markdown(res))


if __name__ == "__main__":
    main()
