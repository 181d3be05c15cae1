"""How ranked word recall orders what the index found, the same on every backend.

The backend's word index picks a pool of candidate episodes (any query word, by its own
rank); this module scores that pool:

* **Rare words weigh more** (:func:`score_pool`): BM25 over the pool with each word's
  weight ``idf ** RARE_WORD_POWER``, from how many episodes hold the word. A question
  names its subject with one or two rare words among common ones ("How did she *feel*
  at the *meteor* *shower*?"); plain BM25 lets a turn that repeats the common words
  outrank the one that shares the rare ones.
* **Conversational context** (:func:`spread_context`): the episodes recorded just before
  and after a match (within an hour) inherit part of its score, the reply most, and a
  matching question passes its whole score to the reply that answers it.
* **Dates in the query** (:func:`boost_dated`): an episode recorded on a day, month or
  year the query names ("on 13 October, 2023", "in June", "in 2023") ranks higher.

Each rule is general (no vocabulary of any data set) and measured on LoCoMo
conversations held out from its development (bench/locomo_split.py).
"""

from __future__ import annotations

import math
from bisect import bisect_right
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .clock import parse_timestamp
from .errors import ValidationError
from .stem import stem

# ---------------------------------------------------------------------------- words

#: a word's weight is its BM25 idf raised to this power (1.0 is plain BM25)
RARE_WORD_POWER = 1.5
BM25_K1 = 1.2
BM25_B = 0.75
#: a word's episodes are counted up to this many: a word in more is common, and counting
#: it exactly would cost a large store what the ranking does not need
COUNT_CAP = 20_000

_TOKEN = re.compile(r"[^\W_]+")


def _fold(token: str) -> str:
    """A token as the word index keys it: lower case, diacritics removed, stemmed."""
    if not token.isascii():
        token = "".join(c for c in unicodedata.normalize("NFKD", token)
                        if not unicodedata.combining(c))
    return stem(token)


def word_keys(word: str) -> tuple[str, ...]:
    """The index tokens of one query word ("caroline's" is two: carolin, s)."""
    return tuple(_fold(t) for t in _TOKEN.findall(word.lower()))


def word_weights(episodes: int, counts: Mapping[str, int]) -> dict[str, float]:
    """Each word's weight from the number of episodes and how many hold the word
    (the idf FTS5's BM25 uses, floored as it floors it, raised to RARE_WORD_POWER)."""
    out = {}
    for word, n in counts.items():
        if n <= 0:
            continue
        idf = math.log((episodes - n + 0.5) / (n + 0.5)) if episodes > n else 0.0
        out[word] = max(idf, 1e-6) ** RARE_WORD_POWER
    return out


def _tokens_from(texts: Sequence[str], prefixes: Iterable[str]) -> list[list[str]]:
    """Per text, its tokens that start with one of ``prefixes``.

    A Porter stem is a prefix of its word but for the last letter (happy -> happi,
    hoping -> hope), so only tokens starting with a query stem less its last letter can
    stem to it: those are found by plain substring search over the texts joined, which
    costs far less than tokenising every text.
    """
    lows = [t.lower() for t in texts]
    joined = "\n".join(lows)
    starts = [0]
    for t in lows[:-1]:
        starts.append(starts[-1] + len(t) + 1)
    found: dict[int, str] = {}
    for prefix in prefixes:
        pos = joined.find(prefix)
        while pos != -1:
            if pos not in found and (pos == 0 or not joined[pos - 1].isalnum()):
                m = _TOKEN.match(joined, pos)
                if m:
                    found[pos] = m.group()
            pos = joined.find(prefix, pos + 1)
    out: list[list[str]] = [[] for _ in texts]
    for pos in sorted(found):
        out[bisect_right(starts, pos) - 1].append(found[pos])
    return out


def score_pool(rows: Sequence[tuple[Any, float]], weights: Mapping[str, float]
               ) -> list[tuple[Any, float]]:
    """BM25 of each pooled episode with the given word weights, best first.

    Term frequencies come from the episode's own text, stemmed as the index stems it;
    lengths are counted in words against the pool's mean. An episode the index matched
    in a way this cannot see (another stemmer, another script) keeps its place after
    the scored ones, in the index's order.
    """
    if not rows:
        return []
    single: dict[str, float] = {}  # stem -> weight, for one-token words (nearly all)
    phrases: list[tuple[tuple[str, ...], float]] = []
    for word, weight in weights.items():
        k = word_keys(word)
        if len(k) == 1:
            single[k[0]] = single.get(k[0], 0.0) + weight
        elif k:
            phrases.append((k, weight))
    wanted = set(single) | {t for k, _w in phrases for t in k}
    if not wanted:
        return list(rows)
    texts = [r.content for r, _s in rows]
    found = _tokens_from(texts, {t[:-1] if len(t) > 3 else t for t in wanted})
    lengths = [t.count(" ") + 1 for t in texts]
    c1, c2 = BM25_K1 * (1 - BM25_B), BM25_K1 * BM25_B * len(lengths) / sum(lengths)
    k1 = BM25_K1 + 1
    scored: list[tuple[Any, float]] = []
    unseen: list[tuple[Any, float]] = []
    for (row, native), tokens, length in zip(rows, found, lengths):
        tf: dict[str, int] = {}
        for token in tokens:
            key = _fold(token)
            if key in wanted:
                tf[key] = tf.get(key, 0) + 1
        norm = c1 + c2 * length
        score = 0.0
        for key, f in tf.items():
            w = single.get(key)
            if w:
                score += w * f * k1 / (f + norm)
        for k, w in phrases:
            f = min(tf.get(t, 0) for t in k)  # a phrase word: its rarest token
            if f:
                score += w * f * k1 / (f + norm)
        if score > 0:
            scored.append((row, score))
        else:
            unseen.append((row, native))
    scored.sort(key=lambda x: (-x[1], -x[0].rowid))
    if unseen:
        floor = min((s for _r, s in scored), default=1.0)
        top = max(s for _r, s in unseen) or 1.0
        scored += [(r, floor * 0.5 * max(s, 0.0) / top) for r, s in unseen]
    return scored


# ---------------------------------------------------------------------------- context

#: share of a match's score that the episode ``offset`` rows away inherits: the reply
#: most, then the turn it answers, fading over three turns each way
CONTEXT_SHARES: Mapping[int, float] = {1: 0.8, -1: 0.4, 2: 0.3, -2: 0.2, 3: 0.1, -3: 0.1}
#: a match that asks a question keeps this share of its score and passes ANSWER_SHARE
#: of it to the next episode, where its answer is
QUESTION_SHARE = 0.8
ANSWER_SHARE = 1.0
#: only the best this many matches pass score to their neighbours (a share of a weaker
#: match's score cannot lift a neighbour into the results)
CONTEXT_SOURCES = 50
#: neighbours further apart than this in time from the match are not its context
CONTEXT_WINDOW_SECONDS = 3600


def _epoch(timestamp: str) -> float:
    """Seconds of an ISO timestamp (NaN when unreadable: never near anything)."""
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except (TypeError, ValueError):
        try:
            return parse_timestamp(timestamp, field="timestamp").timestamp()
        except ValidationError:
            return math.nan


def spread_context(rows: Sequence[tuple[Any, float]],
                   fetch: Callable[[list[int]], Mapping[int, Any]]
                   ) -> list[tuple[Any, float]]:
    """Matches plus the neighbours that inherit from them, best first.

    ``rows`` are scored matches; ``fetch(rowids)`` returns the episodes at those row ids
    that the search's filters allow (others are no one's context).
    """
    by_rowid = {r.rowid: r for r, _s in rows}
    spreading = rows[:CONTEXT_SOURCES]
    wanted = {r.rowid + d for r, _s in spreading for d in CONTEXT_SHARES} - by_rowid.keys()
    if wanted:
        by_rowid.update(fetch(sorted(wanted)))
    when = {rid: _epoch(r.timestamp) for rid, r in by_rowid.items()}
    window = CONTEXT_WINDOW_SECONDS
    shares = list(CONTEXT_SHARES.items())
    score: dict[int, float] = {}
    get = score.get
    for i, (row, sc) in enumerate(rows):
        rid = row.rowid
        asks = "?" in row.content
        score[rid] = get(rid, 0.0) + (sc * QUESTION_SHARE if asks else sc)
        if i >= CONTEXT_SOURCES:
            continue
        t = when[rid]
        for d, share in shares:
            n = rid + d
            tn = when.get(n)
            # (NaN compares false: an unreadable time is no one's neighbour)
            if tn is None or not abs(t - tn) <= window:
                continue
            score[n] = get(n, 0.0) + (ANSWER_SHARE if d == 1 and asks else share) * sc
    out = [(by_rowid[rid], sc) for rid, sc in score.items()]
    out.sort(key=lambda x: (-x[1], -x[0].rowid))
    return out


# ---------------------------------------------------------------------------- dates

#: an episode recorded in a period the query names has its score multiplied by this
DATED_BOOST = 1.5

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH_NO = {**{m: i for i, m in enumerate(_MONTHS, 1)},
             **{m[:3]: i for i, m in enumerate(_MONTHS, 1)}, "sept": 9}
# "May" and "March" are months only when capitalised ("she may go", "they march")
_MONTH = (r"(?P<{g}>(?i:january|february|april|june|july|august|september|october|november"
          r"|december|jan|feb|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?|May|March|Mar\.?)"
          r"(?![^\W\d_])")
_DAY = r"(?P<{g}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{g}>(?:1[89]|2\d)\d\d)"


def _p(template: str) -> str:
    """Fill each placeholder group name (a pattern can name a group only once)."""
    out = template
    for kind, body in (("M", _MONTH), ("D", _DAY), ("Y", _YEAR)):
        out = out.replace("{" + kind + "}", body.format(g=kind.lower()))
    return out


_DATE_PATTERNS = [re.compile(p) for p in (
    _p(r"\b(?P<iso>(?P<y>(?:1[89]|2\d)\d\d)-(?P<mo>[01]?\d)-(?P<d>[0-3]?\d))\b"),
    _p(r"\b{D}\s+(?:of\s+)?{M},?\s+{Y}\b"),
    _p(r"\b{M}\s+{D},?\s+{Y}\b"),
    _p(r"\b{D}\s+(?:of\s+)?{M}\b"),
    _p(r"\b{M}\s+{D}\b"),
    _p(r"\b{M},?\s+{Y}\b"),
    _p(r"\b(?i:in|during|of|since|last|this|early|late|mid)\s+{M}\b"),
    _p(r"\b(?i:in|during|of|since)\s+{Y}\b"),
)]


@dataclass(frozen=True)
class Period:
    """A calendar period a query names; None parts match any (June of any year)."""

    year: int | None = None
    month: int | None = None
    day: int | None = None

    def holds(self, timestamp: str) -> bool:
        """Whether an ISO timestamp (``YYYY-MM-DD...``) falls in the period."""
        try:
            y, m, d = int(timestamp[0:4]), int(timestamp[5:7]), int(timestamp[8:10])
        except (ValueError, IndexError):
            return False
        return ((self.year is None or y == self.year) and (self.month is None or m == self.month)
                and (self.day is None or d == self.day))


def _month(text: str) -> int | None:
    return _MONTH_NO.get(text.lower().rstrip(".")) or _MONTH_NO.get(text.lower()[:3])


def dated_periods(query: str) -> list[Period]:
    """The days, months and years a query names, most specific reading first
    ("on 13 October, 2023" is that day, not also October and 2023)."""
    taken: list[tuple[int, int]] = []
    out: list[Period] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            month = int(g["mo"]) if g.get("mo") else (_month(g["m"]) if g.get("m") else None)
            day = int(g["d"]) if g.get("d") else None
            year = int(g["y"]) if g.get("y") else None
            if month is not None and not 1 <= month <= 12 or day is not None and not 1 <= day <= 31:
                continue
            taken.append((m.start(), m.end()))
            period = Period(year, month, day)
            if period not in out:
                out.append(period)
    return out


def boost_dated(rows: Iterable[tuple[Any, float]], periods: Sequence[Period]
                ) -> list[tuple[Any, float]]:
    """``rows`` with the score of each episode recorded in one of ``periods`` raised by
    DATED_BOOST, best first."""
    out = [(r, s * DATED_BOOST if any(p.holds(r.timestamp) for p in periods) else s)
           for r, s in rows]
    if periods:
        out.sort(key=lambda x: (-x[1], -x[0].rowid))
    return out
