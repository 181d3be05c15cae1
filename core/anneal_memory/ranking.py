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
* **The question's focus** (:func:`weigh_focus`): the word a "What *book*...", "Which
  *city*..." question names as the kind of its answer weighs FOCUS_BOOST times more.
* **Who speaks of what** (:func:`spread_context`): a match that speaks only of "you"
  (no "I", "my", "we") reacts to what the other person said; it keeps
  OTHER_PERSON_SHARE of its own score (its context still inherits from its whole score).
  The first episode after a pause (a conversation's opening turn, which tends to carry
  the news) has its own score raised by OPENER_BOOST.
* **Questions asking when** (:func:`boost_when`): a match that says when something
  happened ("yesterday", "last week", "in May") ranks higher.
* **Dates in the query** (:func:`boost_dated`): an episode recorded on a day, month or
  year the query names ("on 13 October, 2023", "in June", "in 2023") ranks higher.

Each rule is general (no vocabulary of any data set) and measured on LoCoMo
conversations held out from its development (bench/locomo_split.py).
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from operator import attrgetter, itemgetter

from .stem import stem
from .storage.base import RankedHit
from .text import spell_letters

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
        token = "".join(c for c in unicodedata.normalize("NFKD", spell_letters(token))
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
    lows = [spell_letters(t.lower()) for t in texts]
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


def group_weights(episodes: int, counts: Mapping[str, int],
                  groups: Sequence[Sequence[str]]) -> dict[str, float]:
    """Each group's weight, keyed by its first word: the other forms of a query word
    ("went", "gone" for "go") count as the word itself, so the group is weighed as one
    word held by as many episodes as hold any form (at most the sum of their counts),
    not as several rare words that each outweigh the query's real subject."""
    held = {g[0]: min(episodes, sum(counts.get(w, 0) for w in g)) for g in groups if g}
    return word_weights(episodes, held)


#: each token's index key (see _fold), kept for the tokens seen (at most SEEN_TEXTS)
_FOLDED: dict[str, str] = {}
#: a RankedHit from its fields without the named tuple's keyword handling
_new_hit = tuple.__new__

#: hits best first, the newest row first among equal scores (row ids are unique)
_BEST_FIRST = attrgetter("score", "rowid")


def _index_order(hits: Sequence[RankedHit],
                 index_scores: Callable[[list[int]], Mapping[int, float]] | None
                 ) -> list[RankedHit]:
    """``hits`` in the index's order (its score, then the newest row first); the scores
    a backend left out (NaN: every match fitted in the pool) are asked of it first."""
    missing = [h.rowid for h in hits if h.score != h.score]
    if not missing:
        return list(hits)
    got = index_scores(missing) if index_scores is not None else {}
    out = [h if h.score == h.score else h._replace(score=got.get(h.rowid, 0.0)) for h in hits]
    out.sort(key=_BEST_FIRST, reverse=True)
    return out


def score_hits(hits: Sequence[RankedHit], weights: Mapping[str, float],
               forms: Mapping[str, Sequence[str]] | None = None,
               index_scores: Callable[[list[int]], Mapping[int, float]] | None = None,
               ) -> list[RankedHit]:
    """The index's matches rescored by BM25 with the given word weights, best first.

    Term frequencies come from each episode's text, stemmed as the index stems it;
    ``forms`` names, per weighted word, other words whose occurrences count as it (its
    irregular forms). Lengths are counted in words against the pool's mean. A match
    whose words this cannot see (another stemmer, another script) keeps its place after
    the scored ones, in the index's order. Without weights the index's own ranking stands.
    ``index_scores(rowids)`` gives the index's score of hits that carry none (NaN).
    """
    single: dict[str, float] = {}  # stem -> weight, for one-token words (nearly all)
    group_of: dict[str, str] = {}  # a form's stem -> its word's stem
    phrases: list[tuple[tuple[str, ...], float]] = []
    for word, weight in weights.items():
        k = word_keys(word)
        if len(k) == 1:
            single[k[0]] = single.get(k[0], 0.0) + weight
            for form in (forms or {}).get(word, ()):
                fk = word_keys(form)
                if len(fk) == 1 and fk[0] not in single:
                    group_of.setdefault(fk[0], k[0])
        elif k:
            phrases.append((k, weight))
    wanted = set(single) | set(group_of) | {t for k, _w in phrases for t in k}
    if not hits or not wanted:
        return _index_order(hits, index_scores)
    texts = [h.content for h in hits]
    found = _tokens_from(texts, {t[:-1] if len(t) > 3 else t for t in wanted})
    lengths = [t.count(" ") + 1 for t in texts]
    c1, c2 = BM25_K1 * (1 - BM25_B), BM25_K1 * BM25_B * len(lengths) / sum(lengths)
    k1 = BM25_K1 + 1
    scored: list[RankedHit] = []
    unseen: list[RankedHit] = []
    fold = _FOLDED.get
    singles = single.get
    for hit, tokens, length in zip(hits, found, lengths):
        tf: dict[str, int] = {}
        for token in tokens:
            key = fold(token)
            if key is None:
                key = _fold(token)
                if len(token) <= 64:  # a word, not a run of letters with no space
                    if len(_FOLDED) >= SEEN_TEXTS:
                        _FOLDED.clear()
                    _FOLDED[token] = key
            key = group_of.get(key, key)
            if key in wanted:
                tf[key] = tf.get(key, 0) + 1
        score = 0.0
        if tf:
            norm = c1 + c2 * length
            for key, f in tf.items():
                w = singles(key)
                if w:
                    score += w * f * k1 / (f + norm)
            for k, w in phrases:
                f = min(tf.get(t, 0) for t in k)  # a phrase word: its rarest token
                if f:
                    score += w * f * k1 / (f + norm)
        if score > 0:
            scored.append(_new_hit(RankedHit, (hit.rowid, hit.t, score, hit.prev_t,
                                               hit.next_t, hit.content)))
        else:
            unseen.append(hit)
    scored.sort(key=_BEST_FIRST, reverse=True)
    if unseen:
        unseen = _index_order(unseen, index_scores)
        floor = min((h.score for h in scored), default=1.0)
        top = max(h.score for h in unseen) or 1.0
        scored += [h._replace(score=floor * 0.5 * max(h.score, 0.0) / top) for h in unseen]
    return scored


# ---------------------------------------------------------------------------- per text

#: what a text says of itself (whether it says when, whether it speaks only of "you")
#: is the same each time a query's pool holds its episode: kept for texts up to
#: SEEN_TEXT_CHARS long, at most SEEN_TEXTS of each (then forgotten at once: at most
#: about 4 MB each), so the regular expressions run once per episode text rather than
#: once per query
SEEN_TEXTS = 4096
SEEN_TEXT_CHARS = 1000
_SAYS_WHEN_SEEN: dict[str, bool] = {}
_ONLY_YOU_SEEN: dict[str, bool] = {}


def _remember(seen: dict[str, bool], text: str, value: bool) -> None:
    """Keep ``value`` for ``text`` (a short one), forgetting all once the cache is full."""
    if len(text) <= SEEN_TEXT_CHARS:
        if len(seen) >= SEEN_TEXTS:
            seen.clear()
        seen[text] = value


# ---------------------------------------------------------------------------- focus

#: the weight of the word a "what/which X" question names as its answer's kind is
#: multiplied by this
FOCUS_BOOST = 1.5

_FOCUS = re.compile(r"^\W*(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?([^\W\d_]+)",
                    re.IGNORECASE)


def focus_word(query: str) -> str | None:
    """The lower-case word right after a question's "what" or "which" ("What *book*...",
    "Which *city*...", "What kind of *art*..."), or None. In "What did..." it is an
    auxiliary, which is no query word, so it weighs nothing."""
    m = _FOCUS.match(query)
    return m.group(1).lower() if m else None


def weigh_focus(weights: Mapping[str, float], groups: Sequence[Sequence[str]],
                query: str) -> dict[str, float]:
    """``weights`` (by each group's first word) with the focus word's group weighing
    FOCUS_BOOST times more: the answer to "What instruments does she play?" names an
    instrument or the word, and the other words (a name, "play") are said all the time."""
    out = dict(weights)
    focus = focus_word(query)
    if focus is None:
        return out
    key = stem(focus)
    for group in groups:
        if group and group[0] in out and any(stem(w) == key for w in group):
            out[group[0]] *= FOCUS_BOOST
            break
    return out


# ---------------------------------------------------------------------------- answer type

#: a match that says when something happened, for a question asking when, has its
#: score multiplied by this
WHEN_BOOST = 1.5

_ASKS_WHEN = re.compile(r"^\W*(?:when\b|what\s+(?:time|day|date|year|month)\b|how\s+long\s+ago\b)",
                        re.IGNORECASE)
_SAYS_WHEN = re.compile(
    r"\b(?:(?i:yesterday|today|tonight|tomorrow|ago|last|next|recently|lately|earlier|since|"
    r"weeks?|weekends?|months?|years?|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|"
    r"january|february|april|june|july|august|september|october|november|december)|"
    r"May|March|(?:1[89]|2\d)\d\d)\b")  # "May" and "March" only capitalised
_WHEN_HINTS = ("yesterday", "today", "tonight", "tomorrow", "ago", "last", "next", "recent",
               "lately", "earlier", "since", "week", "month", "year", "day", "jan", "feb",
               "march", "april", "may", "june", "july", "aug", "sept", "oct", "nov", "dec",
               "18", "19", "20")


def asks_when(query: str) -> bool:
    """Whether a query asks for a time ("When did...", "What year...", "How long ago...")."""
    return bool(_ASKS_WHEN.search(query))


def says_when(text: str) -> bool:
    """Whether a text says when something happened (yesterday, last week, in May, 2023)."""
    got = _SAYS_WHEN_SEEN.get(text)
    if got is None:
        low = text.lower()
        # a substring test first: the word pattern runs only on the few texts that may match
        got = any(w in low for w in _WHEN_HINTS) and bool(_SAYS_WHEN.search(text))
        _remember(_SAYS_WHEN_SEEN, text, got)
    return got


def boost_when(hits: Sequence[RankedHit]) -> list[RankedHit]:
    """For a question asking when: matches that say when (yesterday, last week, a month,
    a year...) raised by WHEN_BOOST, best first."""
    # only the best CONTEXT_SOURCES can reach the results by it; the rest stay as they are
    head, tail = hits[:CONTEXT_SOURCES], hits[CONTEXT_SOURCES:]
    out = [h._replace(score=h.score * WHEN_BOOST) if says_when(h.content) else h
           for h in head] + list(tail)
    out.sort(key=lambda h: (-h.score, -h.rowid))
    return out


# ---------------------------------------------------------------------------- context

#: share of a match's score that the episode ``offset`` rows away inherits: the reply
#: most, then the turn it answers, fading over three turns each way
CONTEXT_SHARES: Mapping[int, float] = {1: 0.8, -1: 0.4, 2: 0.3, -2: 0.2, 3: 0.1, -3: 0.1}
#: a match that asks a question keeps this share of its score and passes ANSWER_SHARE
#: of it to the next episode, where its answer is
QUESTION_SHARE = 0.8
ANSWER_SHARE = 1.0
#: a match that speaks only of "you" (no "I", "my", "we") keeps this share of its own
#: score: it answers what the other person said, and the fact is theirs (in the turn
#: its context inherits from)
OTHER_PERSON_SHARE = 0.7
#: the first episode after a pause longer than CONTEXT_WINDOW_SECONDS (a conversation's
#: opening turn, which tends to carry the news) has its own score multiplied by this
OPENER_BOOST = 1.2
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves)\b")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves)\b")
#: only the best this many matches pass score to their neighbours (a share of a weaker
#: match's score cannot lift a neighbour into the results)
CONTEXT_SOURCES = 100
#: neighbours further apart than this in time from the match are not its context
CONTEXT_WINDOW_SECONDS = 3600


def speaks_only_of_you(text: str) -> bool:
    """Whether a text speaks of "you" and not of "I", "my", "we" ("That's so nice of you,
    your kids must love it!")."""
    got = _ONLY_YOU_SEEN.get(text)
    if got is None:
        low = text.lower()
        # a substring test first: the word patterns run only on texts that may say "you"
        got = "you" in low and bool(_SECOND_PERSON.search(low)) and not _FIRST_PERSON.search(low)
        _remember(_ONLY_YOU_SEEN, text, got)
    return got


def own_share(hit: RankedHit, asks: bool) -> float:
    """The share of a match's score it keeps for itself (its context inherits from the
    whole score): less for a question (its answer follows) and for a turn that speaks
    only of "you", more for the first turn after a pause."""
    share = QUESTION_SHARE if asks else 1.0
    if speaks_only_of_you(hit.content):
        share *= OTHER_PERSON_SHARE
    if (hit.t is not None and hit.prev_t is not None
            and hit.t - hit.prev_t > CONTEXT_WINDOW_SECONDS):
        share *= OPENER_BOOST
    return share


def spread_context(hits: Sequence[RankedHit],
                   fetch_times: Callable[[list[int]], Mapping[int, float | None]],
                   via: dict[int, int] | None = None,
                   ) -> tuple[list[tuple[int, float]], dict[int, float | None]]:
    """Matches plus the neighbours that inherit from them, as (row id, score) best
    first, and the time of every row id ranked.

    ``hits`` are scored matches (best first) carrying the times of the rows just before
    and after them; ``fetch_times(rowids)`` gives the times of rows further out that the
    search's filters let through (the others are no one's context). A neighbour earns
    a place only by outranking a match: none is ranked after the last match, so context
    never pads a short result. ``via`` (filled when given): each neighbour ranked, to
    the match it inherits most from.
    """
    when: dict[int, float | None] = {}
    setdefault = when.setdefault
    for h in hits:
        rid = h.rowid
        setdefault(rid - 1, h.prev_t)
        setdefault(rid + 1, h.next_t)
    for h in hits:
        when[h.rowid] = h.t
    sources = hits[:CONTEXT_SOURCES]
    # (offset, share) a neighbour inherits; for a match that asks, the reply's is ANSWER_SHARE
    shares = tuple(CONTEXT_SHARES.items())
    shares_asking = tuple((d, ANSWER_SHARE if d == 1 else part) for d, part in shares)
    # the rows right before and after each match came with it: only those further out
    offsets = [d for d in CONTEXT_SHARES if abs(d) > 1]
    far = {h.rowid + d for h in sources for d in offsets}
    far.difference_update(when)
    if far:
        when.update(fetch_times(sorted(far)))
    window = CONTEXT_WINDOW_SECONDS
    score: dict[int, float] = {}
    best_gain: dict[int, tuple[float, int]] = {}
    get, time_of, gain_of = score.get, when.get, best_gain.get
    only_you = speaks_only_of_you
    for h in sources:
        rid, sc, t = h.rowid, h.score, h.t
        asks = "?" in h.content
        # own_share(h, asks), inlined: the same products in the same order
        share = QUESTION_SHARE if asks else 1.0
        if only_you(h.content):
            share *= OTHER_PERSON_SHARE
        if t is not None and h.prev_t is not None and t - h.prev_t > window:
            share *= OPENER_BOOST
        score[rid] = get(rid, 0.0) + sc * share
        if t is None:
            continue
        for d, part in (shares_asking if asks else shares):
            n = rid + d
            tn = time_of(n)
            if tn is None or abs(t - tn) > window:
                continue
            gain = part * sc
            score[n] = get(n, 0.0) + gain
            best = gain_of(n)
            if best is None or gain > best[0]:
                best_gain[n] = (gain, rid)
    # past the best CONTEXT_SOURCES a match's own share cannot lift it into the results
    for h in hits[CONTEXT_SOURCES:]:
        rid = h.rowid
        score[rid] = get(rid, 0.0) + h.score * (QUESTION_SHARE if "?" in h.content else 1.0)
    # best first, the newest row first among equal scores (row ids are unique)
    out = sorted(score.items(), key=itemgetter(1, 0), reverse=True)
    matched = {h.rowid for h in hits}
    last = len(out) - 1
    while last >= 0 and out[last][0] not in matched:
        last -= 1
    out = out[:last + 1]
    if via is not None:
        via.update({rid: best_gain[rid][1] for rid, _s in out
                    if rid not in matched and rid in best_gain})
    return out, when


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


_DATE_SOURCES = (
    _p(r"\b(?P<iso>(?P<y>(?:1[89]|2\d)\d\d)-(?P<mo>[01]?\d)-(?P<d>[0-3]?\d))\b"),
    _p(r"\b{D}\s+(?:of\s+)?{M},?\s+{Y}\b"),
    _p(r"\b{M}\s+{D},?\s+{Y}\b"),
    _p(r"\b{D}\s+(?:of\s+)?{M}\b"),
    _p(r"\b{M}\s+{D}\b"),
    _p(r"\b{M},?\s+{Y}\b"),
    _p(r"\b(?i:in|during|of|since|last|this|early|late|mid)\s+{M}\b"),
    _p(r"\b(?i:in|during|of|since)\s+{Y}\b"),
)
#: every date a pattern reads holds a digit or a month's first three letters (each month
#: alternative of _MONTH starts with one, in the same case rule): a query without any
#: names no date, and the patterns, costly to compile, are compiled on the first that may
_DATE_HINT = re.compile(r"\d|(?i:jan|feb|apr|jun|jul|aug|sep|oct|nov|dec)|May|Mar")
_compiled_dates: tuple[re.Pattern[str], ...] = ()


def _dates() -> tuple[re.Pattern[str], ...]:
    """The date patterns, compiled once (two threads at once may both compile them)."""
    global _compiled_dates
    if not _compiled_dates:
        _compiled_dates = tuple(re.compile(p) for p in _DATE_SOURCES)
    return _compiled_dates


@dataclass(frozen=True)
class Period:
    """A calendar period a query names; None parts match any (June of any year)."""

    year: int | None = None
    month: int | None = None
    day: int | None = None

    def holds(self, day: date) -> bool:
        """Whether a (UTC) day falls in the period."""
        return ((self.year is None or day.year == self.year)
                and (self.month is None or day.month == self.month)
                and (self.day is None or day.day == self.day))


def _month(text: str) -> int | None:
    return _MONTH_NO.get(text.lower().rstrip(".")) or _MONTH_NO.get(text.lower()[:3])


def dated_periods(query: str) -> list[Period]:
    """The days, months and years a query names, most specific reading first
    ("on 13 October, 2023" is that day, not also October and 2023)."""
    taken: list[tuple[int, int]] = []
    out: list[Period] = []
    if not _DATE_HINT.search(query):
        return out
    for pattern in _dates():
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


def boost_dated(ranked: Iterable[tuple[int, float]], times: Mapping[int, float | None],
                periods: Sequence[Period]) -> list[tuple[int, float]]:
    """``ranked`` (row id, score) with the score of each episode recorded in one of
    ``periods`` (``times``: epoch seconds by row id) raised by DATED_BOOST, best first."""
    out = []
    for rid, sc in ranked:
        t = times.get(rid)
        if t is not None and periods:
            day = datetime.fromtimestamp(t, timezone.utc).date()
            if any(p.holds(day) for p in periods):
                sc *= DATED_BOOST
        out.append((rid, sc))
    out.sort(key=lambda x: (-x[1], -x[0]))
    return out
