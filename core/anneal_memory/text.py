"""Tokenising and word overlap: one implementation shared by recall, the grounding
check, supersession validation and the durable-facts comparison."""

from __future__ import annotations

import re

from .errors import ValidationError
from .stem import stem

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
#: Japanese kana, CJK ideographs and Hangul, as code point ranges (a regex class this
#: large costs milliseconds to compile, which a first wrap would pay)
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),
               (0xAC00, 0xD7AF))


def _has_cjk(word: str) -> bool:
    """True when ``word`` holds a kana, CJK ideograph or Hangul character."""
    if word.isascii():
        return False
    return any(lo <= ord(c) <= hi for c in word for lo, hi in _CJK_RANGES)

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't down during each few for from further get got had hadn't has
    hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
    his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me
    more most mustn't my myself no nor not now of off on once only or other ought our ours
    ourselves out over own same shan't she she'd she'll she's should shouldn't so some such
    than that that's the their theirs them themselves then there there's these they they'd
    they'll they're they've this those through to too under until up upon very was wasn't
    we we'd we'll we're we've were weren't what what's when when's where where's which while
    who who's whom why why's will with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves yes via per etc its thing things like really
    """.split()
)

#: Words that ask rather than say: dropped from recall queries, not from grounding.
QUESTION_WORDS: frozenset[str] = frozenset(
    "did does do what when where which who whom whose why how kind sort ever much many "
    "would could should might may".split()
)


#: Letters that neither Unicode case folding nor removing diacritics makes ASCII, spelled
#: as PostgreSQL's unaccent spells them, so the word index finds "strasse" in "Straße",
#: "oresund" in "Øresund" and "finance" in "ﬁnance" on SQLite as on PostgreSQL (the
#: letters of European languages; rarer ones, e.g. ŧ, ŋ, ĸ, still differ).
LETTER_SPELLINGS = {
    "ß": "ss", "ẞ": "ss", "æ": "ae", "Æ": "ae", "œ": "oe", "Œ": "oe", "ø": "o", "Ø": "o",
    "ł": "l", "Ł": "l", "đ": "d", "Đ": "d", "ð": "d", "Ð": "d", "þ": "th", "Þ": "th",
    "ħ": "h", "Ħ": "h", "ı": "i", "ﬁ": "fi", "ﬂ": "fl", "ﬀ": "ff", "ﬃ": "ffi", "ﬄ": "ffl",
}  # (SQLite's parser takes about 30 nested replace() calls: keep this table short)
_SPELL = str.maketrans(LETTER_SPELLINGS)


def spell_letters(text: str) -> str:
    """``text`` with the letters of :data:`LETTER_SPELLINGS` spelled out: the one
    folding rule of the word index on both backends (case and diacritics the indexes
    fold themselves)."""
    return text if text.isascii() else text.translate(_SPELL)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens, apostrophes folded ("don’t" -> "don't")."""
    return [w.replace("’", "'") for w in _WORD_RE.findall(text.lower())]


def is_meaningful(word: str) -> bool:
    """A word that can carry grounding: longer than two characters and not a stopword.

    A run of CJK characters counts when it has at least two characters, since those
    scripts pack a word into fewer characters.
    """
    if word in STOPWORDS:
        return False
    if _has_cjk(word):
        return len(word) >= 2
    return len(word) > 2


def meaningful_words(text: str) -> set[str]:
    """The set of meaningful words in ``text``."""
    return {w for w in tokenize(text) if is_meaningful(w)}


def shared_meaningful_words(a: str, b: str) -> set[str]:
    """Meaningful words that both texts contain."""
    return meaningful_words(a) & meaningful_words(b)


def check_explanation_overlap(explanation: str, content: str, *, minimum: int = 2) -> bool:
    """True when a citation's explanation shares at least ``minimum`` meaningful words
    with the episode it cites: the anti-fabrication grounding check."""
    for name, value in (("explanation", explanation), ("content", content)):
        if not isinstance(value, str):
            raise ValidationError(f"{name} must be a string, not {type(value).__name__}")
    return len(shared_meaningful_words(explanation, content)) >= minimum


def overlap_fraction_of_shorter(a: str, b: str) -> float:
    """Shared meaningful words as a share of the smaller text's meaningful words."""
    wa, wb = meaningful_words(a), meaningful_words(b)
    smaller = min(len(wa), len(wb))
    if smaller == 0:
        return 0.0
    return len(wa & wb) / smaller


def query_terms(text: str) -> list[str]:
    """The words of a recall query worth searching for, in order, without repeats."""
    seen: dict[str, None] = {}
    for word in tokenize(text):
        if word in STOPWORDS or word in QUESTION_WORDS:
            continue
        if len(word) < 2 and not _has_cjk(word):
            continue
        seen.setdefault(word, None)
    return list(seen)


def normalize_space(text: str) -> str:
    return " ".join(text.split())


def first_clause(text: str, limit: int = 120) -> str:
    """The first sentence or clause of ``text``, cut to ``limit`` characters."""
    flat = normalize_space(text)
    m = re.search(r"[.;:!?](\s|$)", flat)
    clause = flat[: m.start() + 1] if m else flat
    if len(clause) > limit:
        clause = clause[: limit - 1].rstrip() + "…"
    return clause



#: Irregular English verbs, base form first: a question asks in one form ("What did she
#: draw?", "How did he feel?") and the memory says another ("I drew it", "I felt tiny"),
#: which no suffix-stripping stemmer joins. One group per line.
IRREGULAR_VERBS: tuple[tuple[str, ...], ...] = tuple(tuple(line.split()) for line in """
    become became | begin began begun | break broke broken | bring brought | build built
    buy bought | catch caught | choose chose chosen | come came | draw drew drawn
    drink drank drunk | drive drove driven | eat ate eaten | fall fell fallen | feed fed
    feel felt | fight fought | find found | fly flew flown | forget forgot forgotten
    forgive forgave forgiven | freeze froze frozen | give gave given | go went gone
    grow grew grown | hang hung | hear heard | hide hid hidden | hold held | keep kept
    know knew known | lead led | leave left | lend lent | lose lost | make made
    mean meant | meet met | pay paid | ride rode ridden | ring rang rung | rise rose risen
    run ran | say said | see saw seen | seek sought | sell sold | send sent
    shake shook shaken | shine shone | shoot shot | show showed shown | sing sang sung
    sink sank sunk | sit sat | sleep slept | speak spoke spoken | spend spent
    stand stood | steal stole stolen | stick stuck | strike struck | swear swore sworn
    swim swam swum | take took taken | teach taught | tear tore torn | tell told
    think thought | throw threw thrown | understand understood | wake woke woken
    wear wore worn | win won | write wrote written
    """.replace("|", "\n").strip().splitlines())

# keyed by stem, so "drawing" and "feeling" find their verb as "draw" and "feel" do
_VERB_FORMS: dict[str, tuple[str, ...]] = {
    stem(form): group for group in IRREGULAR_VERBS for form in group}

_POSSESSIVE = re.compile(r"^(.+?)['’]s$")


def word_groups(terms: list[str]) -> list[tuple[str, ...]]:
    """Per query term, the words a ranked word search looks for: the term, a possessive by
    its owner ("caroline's" -> "caroline", as the memory mostly names them bare), and the
    other forms of an irregular verb ("drawing" -> "draw", "drew", "drawn"). The forms of
    one term count as that term (one weight, from how many episodes hold any of them); a
    form already in an earlier group is not repeated (one spelling per stem: the index
    stems them alike).
    """
    groups: list[tuple[str, ...]] = []
    stems: set[str] = set()
    for term in terms:
        m = _POSSESSIVE.match(term)
        word = m.group(1) if m else term
        group: list[str] = []
        for form in (word, *_VERB_FORMS.get(stem(word), ())):
            if form != word and (form in STOPWORDS or form in QUESTION_WORDS):
                continue
            key = stem(form)
            if key not in stems:
                stems.add(key)
                group.append(form)
        if group:
            groups.append(tuple(group))
    return groups


def word_forms(terms: list[str]) -> list[str]:
    """Every word of :func:`word_groups`, in order, no repeats."""
    return [w for group in word_groups(terms) for w in group]
