"""Canonical identity: the one normal form in which two names are compared.

A forgotten memory or a deleted episode must not come back under a spelling that
*looks* the same: ``preferred_language``, ``Preferred-Language.``,
``preferred\u200blanguage`` (zero-width space), ``ｐｒｅｆｅｒｒｅｄ language`` (full
width) and ``prеferred language`` (a Cyrillic ``е``) name one memory. Tombstones,
duplicate detection and every id derived from a subject compare this form.

``subject_key`` folds a governed subject: NFKC, strip format characters (zero-width
space, joiners, soft hyphen, BOM), map common Cyrillic and Greek lookalikes of Latin
letters, case-fold, treat ``-``, ``_``, dots between words and whitespace as one
separator, and drop punctuation at either end.

``episode_id_key`` folds an episode id the same way, minus the separator rule (ids
are opaque tokens); ``is_canonical_id`` says whether an id is already in the one
form the store writes (lower-case letters, digits, ``-``, ``_``, ``.``).
"""

from __future__ import annotations

import re
import unicodedata

# Letters that render like Latin ones in common fonts (Unicode's confusables list,
# restricted to the Cyrillic and Greek letters that pass as a whole Latin letter).
_CONFUSABLES = str.maketrans({
    # Cyrillic lower / upper
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i",
    "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ɡ": "g",
    "А": "a", "В": "b", "Е": "e", "Ё": "e", "К": "k", "М": "m", "Н": "h", "О": "o",
    "Р": "p", "С": "c", "Т": "t", "У": "y", "Х": "x", "Ѕ": "s", "І": "i", "Ї": "i",
    "Ј": "j", "Ԁ": "d", "Һ": "h", "Ԛ": "q", "Ԝ": "w",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u",
    "χ": "x", "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "i", "Κ": "k",
    "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y", "Χ": "x",
    # Latin look-alikes outside ASCII
    "ı": "i", "ℓ": "l",
})

# Punctuation at either end of a subject carries no identity.
_END_PUNCT = ".,;:!?'\"`()[]{}<>*#~|/\\…。、！？"
# Dashes, underscores, middle dots and whitespace: one separator between words.
_SEPARATORS = re.compile(r"[\s_\-\u2010-\u2015\u2212\u00b7\u30fb]+")


def _strip_format(text: str) -> str:
    """Drop format characters (Unicode category Cf: zero-width space, ZWJ, soft hyphen,
    BOM, direction marks) and other invisibles a paste can carry."""
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cc", "Cs"))


def fold(text: str) -> str:
    """The shared core: NFKC, no format characters, no lookalikes, case-folded, NFC."""
    t = unicodedata.normalize("NFKC", text)
    t = _strip_format(t)
    t = t.translate(_CONFUSABLES)
    t = t.casefold()
    # NFKC again: case folding can produce sequences that compose differently
    return unicodedata.normalize("NFKC", t)


def subject_key(subject: str) -> str:
    """A governed subject as identity (see the module docstring)."""
    t = fold(subject)
    t = _SEPARATORS.sub(" ", t)
    # punctuation at the ends carries no identity: "language." = "language"
    t = t.strip(" " + _END_PUNCT)
    return " ".join(t.split())


def content_key(text: str) -> str:
    """Content compared for duplicates: folded, with spacing collapsed (punctuation
    inside the text still counts)."""
    return " ".join(fold(text).split())


_CANONICAL_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def episode_id_key(episode_id: str) -> str:
    """An episode id as tombstones compare it: folded and stripped."""
    return fold(episode_id).strip()


def is_canonical_id(episode_id: str) -> bool:
    """Whether ``episode_id`` is in the form the store writes: 1 to 64 lower-case ASCII
    letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit."""
    return bool(_CANONICAL_ID.fullmatch(episode_id))
