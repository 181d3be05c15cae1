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
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
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


@lru_cache(maxsize=256)
def _candidates(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    # A Porter stem is a prefix of its word but for the last letter (happy -> happi,
    # hoping -> hope), so a token can only stem to a query stem if it starts with the
    # stem less its last letter: only those tokens are stemmed.
    alts = "|".join(sorted({re.escape(p) for p in prefixes}, key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alts})[^\W_]*")


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
    keys: dict[str, tuple[str, ...]] = {}
    for word in weights:
        k = word_keys(word)
        if k:
            keys[word] = k
    by_token: dict[str, list[str]] = {}
    for word, k in keys.items():
        for token in set(k):
            by_token.setdefault(token, []).append(word)
    if not by_token:
        return list(rows)
    pattern = _candidates(tuple(t[:-1] if len(t) > 3 else t for t in by_token))
    lengths = [r.content.count(" ") + 1 for r, _s in rows]
    avg = sum(lengths) / len(lengths)
    scored: list[tuple[Any, float]] = []
    unseen: list[tuple[Any, float]] = []
    for (row, native), length in zip(rows, lengths):
        tf: dict[str, int] = {}
        for token in pattern.findall(row.content.lower()):
            key = _fold(token)
            if key in by_token:
                tf[key] = tf.get(key, 0) + 1
        score = 0.0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg)
        for word, k in keys.items():
            f = min(tf.get(t, 0) for t in k)  # a phrase word: its rarest token
            if f:
                score += weights[word] * f * (BM25_K1 + 1) / (f + norm)
        (scored if score > 0 else unseen).append((row, score if score > 0 else native))
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
    wanted = {r.rowid + d for r, _s in rows for d in CONTEXT_SHARES} - by_rowid.keys()
    extra = fetch(sorted(wanted)) if wanted else {}
    when: dict[int, float] = {}

    def at(row: Any) -> float:
        t = when.get(row.rowid)
        if t is None:
            t = when[row.rowid] = _epoch(row.timestamp)
        return t

    score: dict[int, float] = {}
    for row, sc in rows:
        asks = "?" in row.content
        score[row.rowid] = score.get(row.rowid, 0.0) + sc * (QUESTION_SHARE if asks else 1.0)
        for d, share in CONTEXT_SHARES.items():
            near = by_rowid.get(row.rowid + d) or extra.get(row.rowid + d)
            # (NaN compares false: an unreadable time is no one's neighbour)
            if near is None or not abs(at(row) - at(near)) <= CONTEXT_WINDOW_SECONDS:
                continue
            if d == 1 and asks:
                share = ANSWER_SHARE
            score[near.rowid] = score.get(near.rowid, 0.0) + share * sc
    out = [(by_rowid.get(rid) or extra[rid], sc) for rid, sc in score.items()]
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
