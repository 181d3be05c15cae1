"""Deterministic workload for the benchmark: corpus, queries, statistics.

Standard library only, because this module is imported by ``measure.py`` inside both
the project's venv and the published package's venv. Everything is derived from a
fixed seed so two runs (and two packages) see exactly the same episodes and queries.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

TYPES = ("observation", "decision", "tension", "question", "outcome", "context")
# Skewed like a real agent's log: mostly observations, fewer decisions and outcomes.
TYPE_WEIGHTS = (50, 15, 8, 8, 12, 7)
SEED = 20240613

# Words too common to make a meaningful keyword query; a query made only of these
# would measure a full-table scan in one package and an empty result in the other.
QUERY_SKIP = frozenset(
    "the a an and or but if of to in on at by for with from as is are was were be been "
    "it its this that these those i you he she we they me him her us them my your his our "
    "their what when where who how why do did does done have has had not no yes so just "
    "very really too also can could would should will shall may might must than then there "
    "here about into over out up down off all any some more most much many such own same "
    "im its dont thats youre ive".split()
)

_WORD = re.compile(r"[a-z][a-z']*")


def words(text: str) -> list[str]:
    """Lowercase alphabetic words of ``text`` (apostrophes kept inside words)."""
    return [w.strip("'") for w in _WORD.findall(text.lower()) if w.strip("'")]


class Vocabulary:
    """Word frequencies from a real text corpus, sampled with their own frequency.

    Sampling real frequencies gives the Zipf-shaped word distribution that keyword
    recall meets in practice (a few very common words, a long tail of rare ones).
    """

    def __init__(self, counts: Counter[str]) -> None:
        if not counts:
            raise ValueError("empty vocabulary: pass at least one text with words in it")
        # Sorted for determinism independent of insertion order.
        items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.words = [w for w, _ in items]
        self.cum: list[int] = []
        total = 0
        for _, c in items:
            total += c
            self.cum.append(total)
        self.total = total

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> Vocabulary:
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(words(text))
        return cls(counts)

    def sample(self, rng: random.Random, k: int) -> list[str]:
        # Same as rng.choices(cum_weights=...) but without rebuilding state per call.
        return [self.words[bisect.bisect_right(self.cum, rng.random() * self.total)]
                for _ in range(k)]


def episode(vocab: Vocabulary, index: int, seed: int = SEED) -> dict[str, str]:
    """The ``index``-th synthetic episode as ``record()`` keyword arguments.

    A pure function of (vocab, index, seed), so a query generator can rebuild any
    episode without the whole corpus being held in memory.
    """
    rng = random.Random(seed * 1_000_003 + index)
    n = rng.randint(8, 40)
    text = " ".join(vocab.sample(rng, n))
    etype = rng.choices(TYPES, weights=TYPE_WEIGHTS)[0]
    return {"content": text.capitalize() + ".", "episode_type": etype}


def episodes(vocab: Vocabulary, n: int, seed: int = SEED, start: int = 0) -> Iterator[dict]:
    """Episodes ``start`` .. ``start + n - 1``."""
    for i in range(start, start + n):
        yield episode(vocab, i, seed)


def queries(vocab: Vocabulary, store_size: int, count: int, seed: int = SEED) -> list[str]:
    """``count`` keyword queries of 1-3 words, each a span of a stored episode.

    Spans are taken from episodes that exist in a store of ``store_size``, so every
    query has at least one true match in both packages; spans that start or end on a
    function word are redrawn.
    """
    rng = random.Random(seed + 7919 * store_size)
    out: list[str] = []
    while len(out) < count:
        toks = words(episode(vocab, rng.randrange(store_size), seed)["content"])
        length = rng.choice((1, 1, 2, 2, 3))
        if len(toks) < length:
            continue
        at = rng.randrange(len(toks) - length + 1)
        span = toks[at:at + length]
        if span[0] in QUERY_SKIP or span[-1] in QUERY_SKIP or len(span[0]) < 3:
            continue
        out.append(" ".join(span))
    return out


def word_queries(vocab: Vocabulary, store_size: int, count: int, seed: int = SEED) -> list[str]:
    """``count`` queries of 2-3 content words, each from a different stored episode, so
    they are rarely a phrase of any one episode: the ranked-words path."""
    rng = random.Random(seed + 104729 * store_size)
    out: list[str] = []
    while len(out) < count:
        picked = []
        for _ in range(rng.choice((2, 3))):
            toks = [w for w in words(episode(vocab, rng.randrange(store_size), seed)["content"])
                    if w not in QUERY_SKIP and len(w) > 2]
            if toks:
                picked.append(rng.choice(toks))
        if len(picked) >= 2:
            out.append(" ".join(picked))
    return out


def mixed_queries(vocab: Vocabulary, store_size: int, count: int, seed: int = SEED
                  ) -> list[str]:
    """``count`` queries of 1-3 vocabulary words drawn with their corpus frequency, as a
    user types them: most are a phrase or words of some stored episode, and every ninth
    carries one made-up word, so about one in nine is absent from the store and takes the
    ranked-words path (issue 35's mixed workload)."""
    rng = random.Random(seed + 15485863 * store_size)
    out: list[str] = []
    while len(out) < count:
        picked = [w for w in vocab.sample(rng, rng.choice((1, 2, 2, 3)) * 3)
                  if w not in QUERY_SKIP and len(w) > 2][:3]
        if not picked:
            continue
        picked = picked[:rng.randint(1, len(picked))]
        if len(out) % 9 == 8:
            picked[-1] = f"zq{rng.randrange(10**6)}x"
        out.append(" ".join(picked))
    return out


def miss_queries(count: int, seed: int = SEED) -> list[str]:
    """``count`` two-word queries of made-up words: nothing matches."""
    rng = random.Random(seed + 31)
    return [f"zqx{rng.randrange(10**6)}v qjw{rng.randrange(10**6)}k" for _ in range(count)]


def locomo_questions(locomo_dir: str | os.PathLike[str], count: int, seed: int = SEED
                     ) -> list[str]:
    """``count`` real LoCoMo questions (a fixed sample): a user's whole question as the
    keyword, the way a per-turn hook passes it."""
    qs: list[str] = []
    for path in sorted(Path(locomo_dir).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        qs.extend(str(q["question"]) for q in data.get("qa", []) if q.get("question"))
    if not qs:
        raise FileNotFoundError(f"no LoCoMo questions under {locomo_dir}")
    rng = random.Random(seed + 17)
    return [rng.choice(qs) for _ in range(count)]


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100) of a non-empty list."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-pct * len(ordered) // 100))))
    return ordered[rank - 1]


def latency_summary(seconds: list[float]) -> dict[str, float]:
    """p50/p95/p99/mean in milliseconds."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "mean_ms": sum(ms) / len(ms),
    }


def dir_bytes(path: str | os.PathLike[str]) -> dict[str, int]:
    """Logical size of every file under ``path`` (db, WAL, audit and other sidecars)."""
    sizes: dict[str, int] = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            try:
                sizes[os.path.relpath(full, path)] = os.path.getsize(full)
            except OSError:
                pass  # a lock file removed between walk and stat
    return sizes


def locomo_texts(locomo_dir: str | os.PathLike[str]) -> list[str]:
    """Every turn's text in the LoCoMo files: the vocabulary source for the corpus."""
    texts: list[str] = []
    for path in sorted(Path(locomo_dir).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        conv = data.get("conversation", data)
        for key, turns in conv.items():
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list):
                texts.extend(t.get("text", "") for t in turns)
    if not texts:
        raise FileNotFoundError(
            f"no LoCoMo turns under {locomo_dir}: pass --locomo-dir pointing at the folder "
            "with the conversation JSON files")
    return texts
