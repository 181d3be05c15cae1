"""Ranked word recall (ranking.py, text.word_forms, stem.py) on real stores: each rule
finds what it is for, and a control with the rule switched off shows the test can fail."""

from __future__ import annotations

import sqlite3
from datetime import date

import pytest

from anneal_memory import Store, ranking, retrieve_relevant
from anneal_memory.stem import stem
from anneal_memory.testing import backend_of
from anneal_memory.text import query_terms, word_forms, word_groups


def ids(store: Store, question: str, limit: int = 10, context: bool = True) -> list[str]:
    res = store.recall(keyword=question, limit=limit, context=context)
    assert res.query_params["match"] == "words"
    return [e.id for e in res.episodes]


def at(minute: int, day: str = "2023-05-08") -> str:
    return f"{day}T10:{minute:02d}:00Z"


# ------------------------------------------------------------------ the stemmer


def test_stemmer_matches_the_word_index_porter_stemmer() -> None:
    words = ("caresses ponies ties caress cats feed agreed plastered bled motoring sing "
             "conflated troubled sized hopping tanned falling hissing fizzed failing filing "
             "happy sky relational conditional rational valenci hesitanci digitizer "
             "conformabli radicalli differentli vileli analogousli vietnamization "
             "predication operator feudalism decisiveness hopefulness callousness "
             "formaliti sensitiviti sensibiliti triplicate formative formalize electriciti "
             "electrical hopeful goodness revival allowance inference airliner gyroscopic "
             "adjustable defensible irritant replacement adjustment dependent adoption "
             "homologou communism activate angulariti homologous effective bowdlerize "
             "probate rate cease controll roll generalizations oscillators painted paintings "
             "running ran drew felt mentorship journeys ies sses eed").split()
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    con.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(words, 1)))
    fts = {doc: term for doc, term in con.execute("SELECT doc, term FROM v")}
    assert {w: stem(w) for w in words} == {w: fts[i] for i, w in enumerate(words, 1)}
    assert stem("x" * 70 + "ing") == "x" * 70 + "ing"  # FTS5 leaves long tokens alone
    assert stem("café") == "café" and stem("über") == "über"


# ------------------------------------------------------------------ query words


def test_word_forms_add_irregular_verbs_and_drop_possessives() -> None:
    forms = word_forms(query_terms("What does Caroline's drawing mean? How did she feel?"))
    assert forms[:4] == ["caroline", "drawing", "drew", "drawn"]
    assert {"feel", "felt", "mean", "meant"} <= set(forms)
    assert "did" not in forms and "do" not in forms  # forms that are stop words stay out
    assert word_forms(["paint", "painting"]) == ["paint"]  # one spelling per stem


def _filler(store: Store, n: int = 10, day: str = "2023-02-01") -> None:
    """Episodes that match no query word, so the word weights have a store to count in."""
    for i in range(n):
        store.record(f"nothing to report {i}", "observation", timestamp=at(0, day))


def test_word_groups_keep_each_terms_forms_together() -> None:
    assert word_groups(query_terms("When did Caroline's family go drawing?")) == [
        ("caroline",), ("family",), ("go", "went", "gone"), ("drawing", "drew", "drawn")]
    assert word_groups(["draw", "drew"]) == [("draw", "drew", "drawn")]  # one group per stem


def test_group_weights_count_any_form() -> None:
    w = ranking.group_weights(100, {"go": 0, "went": 30, "gone": 2, "rare": 1},
                              [("go", "went", "gone"), ("rare",)])
    assert w == ranking.word_weights(100, {"go": 32, "rare": 1})
    # at most every episode holds the group
    assert ranking.group_weights(10, {"a": 8, "b": 9}, [("a", "b")]) == ranking.word_weights(
        10, {"a": 10})


def _forms_store(store: Store) -> tuple[str, str]:
    """"went" is common, "gone" in one episode, the subject in three."""
    gone = store.record("the cat has gone missing", "observation", timestamp=at(0, "2023-01-01"))
    subject = store.record("the observatory tour is booked", "observation",
                           timestamp=at(0, "2023-01-02"))
    for i in range(2):
        store.record(f"the old observatory roof needs a repair {i}", "observation", timestamp=at(0, "2023-02-01"))
    for i in range(12):
        store.record(f"we went out {i}", "observation", timestamp=at(0, "2023-03-01"))
    _filler(store, 20, "2023-04-01")
    return gone.id, subject.id


def test_a_words_forms_weigh_as_the_word(store: Store) -> None:
    gone, subject = _forms_store(store)
    got = ids(store, "Did she go to the observatory?", context=False)
    assert got[0] == subject and gone not in got[:3]


def test_forms_control_weighed_as_separate_words(store: Store,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # each form weighed by its own count: the rare "gone" outweighs the subject
    monkeypatch.setattr(ranking, "group_weights", lambda n, counts, _g: ranking.word_weights(n, counts))
    gone, _subject = _forms_store(store)
    assert ids(store, "Did she go to the observatory?", context=False)[0] == gone


def test_irregular_verb_form_finds_the_episode(store: Store) -> None:
    drew = store.record("I drew it last week, it stands for freedom", "observation")
    for i in range(6):
        store.record(f"the weekly report number {i} is late again", "observation")
    assert ids(store, "What did she draw?")[:1] == [drew.id]


def test_irregular_verb_control_without_word_forms(store: Store,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from anneal_memory import recall

    monkeypatch.setattr(recall, "word_groups", lambda terms: [(t,) for t in terms])
    store.record("I drew it last week, it stands for freedom", "observation")
    assert store.recall(keyword="What did she draw?").episodes == []


def test_possessive_question_finds_the_bare_name(store: Store) -> None:
    fact = store.record("Caroline moved here from Sweden four years ago", "observation")
    store.record("the move to the new office is planned", "observation",
                 timestamp="2030-01-01T00:00:00Z")  # not the fact's context
    for i in range(8):
        store.record(f"the weekly report number {i} is late again", "observation")
    got = ids(store, "Where did Caroline's family live before the move?")
    assert got[0] == fact.id


def test_possessive_control_as_a_phrase(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from anneal_memory import recall

    monkeypatch.setattr(recall, "word_groups", lambda terms: [(t,) for t in terms])  # "caroline's" searched as written
    fact = store.record("Caroline moved here from Sweden four years ago", "observation")
    store.record("the move to the new office is planned", "observation",
                 timestamp="2030-01-01T00:00:00Z")  # not the fact's context
    for i in range(8):
        store.record(f"the weekly report number {i} is late again", "observation")
    assert ids(store, "Where did Caroline's family live before the move?")[0] != fact.id


# ------------------------------------------------------------------ rare words


def _rare_word_store(store: Store) -> tuple[str, str]:
    """An episode with three common query words and one with the rare one."""
    common = store.record("the team office meeting ran long", "observation")
    rare = store.record("the telescope arrived this morning", "observation")
    for i in range(7):  # each common word in 8 of 40 episodes, the rare one in 1
        store.record(f"team update {i}", "observation")
        store.record(f"office note {i}", "observation")
        store.record(f"meeting slot {i}", "observation")
    for i in range(17):
        store.record(f"nothing to report {i}", "observation")
    return common.id, rare.id


def test_a_rare_word_outweighs_several_common_ones(store: Store) -> None:
    common, rare = _rare_word_store(store)
    got = ids(store, "team office meeting telescope", limit=2, context=False)
    assert got[0] == rare
    assert common in got


def test_rare_word_control_plain_bm25_ranks_the_common_words_first(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    common, rare = _rare_word_store(store)
    monkeypatch.setattr(ranking, "RARE_WORD_POWER", 1.0)
    assert ids(store, "team office meeting telescope", limit=2, context=False)[0] == common


def test_word_weights_follow_the_index_idf() -> None:
    w = ranking.word_weights(100, {"rare": 1, "common": 60, "absent": 0})
    assert set(w) == {"rare", "common"}
    assert w["rare"] > 10 * w["common"] > 0


def test_word_counts_count_episodes_per_word_up_to_the_cap(store: Store) -> None:
    for i in range(7):
        store.record(f"painting number {i}", "observation")
    store.record("a paint brush", "observation")
    b = backend_of(store)
    from anneal_memory.recall import build_filters

    total, counts = b.word_counts(build_filters(), ["paints", "brush", "zebra"], 1000)
    assert total == 8 and counts == {"paints": 8, "brush": 1, "zebra": 0}
    _total, capped = b.word_counts(build_filters(), ["painting"], 3)
    assert capped == {"painting": 3}
    _total, odd = b.word_counts(build_filters(), ['pa"int OR *', "NEAR(a b)"], 10)
    assert odd == {'pa"int OR *': 0, "NEAR(a b)": 0}  # quoted: no query syntax


def test_word_counts_in_a_namespace_see_only_its_episodes(store: Store) -> None:
    from anneal_memory.recall import build_filters

    store.record("shared lighthouse", "observation")
    alice = store.scoped({"user": "alice"})
    alice.record("alice lighthouse keeper", "observation")
    alice.record("alice notes", "observation")
    total, counts = backend_of(alice).word_counts(build_filters(), ["lighthouse"], 100)
    assert (total, counts) == (2, {"lighthouse": 1})


# ------------------------------------------------------------------ context


def test_context_never_pads_a_short_result(store: Store) -> None:
    # issue 31: the turns recorded beside the only match are context, not matches: they
    # are shown only where they outrank a match, never to fill the page
    match = store.record("the lighthouse tour was booked", "observation", timestamp=at(0))
    store.record("sounds great", "observation", timestamp=at(1))
    store.record("we saw seals from the top", "observation", timestamp=at(2))
    for i in range(5):
        store.record(f"filler note {i}", "observation", timestamp=at(10 + i))
    assert ids(store, "Which lighthouse?") == [match.id]
    r = store.recall(keyword="Which lighthouse?")
    assert r.total_matching == 1 and r.why == {match.id: "words"}


def test_context_that_outranks_a_match_is_shown_and_says_whose(store: Store) -> None:
    q = store.record("what did the lighthouse tour cost?", "observation", timestamp=at(0))
    answer = store.record("forty euros each", "observation", timestamp=at(1))
    weak = store.record("a lighthouse postcard", "observation", timestamp=at(0, "2023-06-01"))
    r = store.recall(keyword="How much did the lighthouse tour cost?")
    assert answer.id in [e.id for e in r.episodes]
    assert r.why[answer.id] == f"next to {q.id}" and r.why[q.id] == "words"
    assert r.why[weak.id] == "words" and r.total_matching == 2


def test_context_control_one_turn_only(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "CONTEXT_SHARES", {1: 0.8, -1: 0.4})
    store.record("the lighthouse tour was booked", "observation", timestamp=at(0))
    store.record("sounds great", "observation", timestamp=at(1))
    two = store.record("we saw seals from the top", "observation", timestamp=at(2))
    assert two.id not in ids(store, "Which lighthouse?")


def test_a_matching_question_passes_its_score_to_the_answer(store: Store) -> None:
    store.record("what did the lighthouse tour cost?", "observation", timestamp=at(0))
    answer = store.record("forty euros each", "observation", timestamp=at(1))
    statement = store.record("the lighthouse tour", "observation", timestamp=at(30))
    got = ids(store, "How much did the lighthouse tour cost?")
    assert got[0] == answer.id
    assert statement.id in got


def test_question_control_without_the_answer_share(store: Store,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "ANSWER_SHARE", 0.8)
    monkeypatch.setattr(ranking, "QUESTION_SHARE", 1.0)
    question = store.record("what did the lighthouse tour cost?", "observation", timestamp=at(0))
    store.record("forty euros each", "observation", timestamp=at(1))
    assert ids(store, "How much did the lighthouse tour cost?")[0] == question.id


def test_context_is_not_inherited_across_an_hour(store: Store) -> None:
    store.record("the lighthouse tour was booked", "observation", timestamp=at(0))
    later = store.record("unrelated, much later", "observation",
                         timestamp="2023-05-08T13:00:00Z")
    assert later.id not in ids(store, "Which lighthouse?")


# ------------------------------------------------------------------ the question's focus


@pytest.mark.parametrize("query, focus", [
    ("What book did she read?", "book"), ("Which city did they visit?", "city"),
    ("What kind of art does Caroline make?", "art"), ("what types of pottery", "pottery"),
    ("What did she paint?", "did"), ("Where did she go?", None), ("When?", None),
])
def test_focus_word(query: str, focus: str | None) -> None:
    assert ranking.focus_word(query) == focus


def _focus_store(store: Store) -> tuple[str, str]:
    """One episode with the focus word, a newer one with another query word, alike."""
    book = store.record("that book was a gift", "observation", timestamp=at(0, "2023-01-01"))
    lake = store.record("that lake was a gift", "observation", timestamp=at(0, "2023-01-02"))
    _filler(store)
    return book.id, lake.id


def test_the_focus_word_weighs_more(store: Store) -> None:
    book, lake = _focus_store(store)
    assert ids(store, "What book did she read at the lake?", context=False)[:2] == [book, lake]
    assert ids(store, "What lake did she read the book at?", context=False)[0] == lake


def test_focus_control_without_the_boost(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "FOCUS_BOOST", 1.0)
    _book, lake = _focus_store(store)
    assert ids(store, "What book did she read at the lake?", context=False)[0] == lake  # newer


# ------------------------------------------------------------------ who speaks


def test_speaks_only_of_you() -> None:
    assert ranking.speaks_only_of_you("Wow, your kids must love it! You're lucky.")
    assert not ranking.speaks_only_of_you("You know, I took my kids camping")
    assert not ranking.speaks_only_of_you("The kids went camping")  # no one addressed


def _you_store(store: Store) -> tuple[str, str]:
    """The same match said of oneself, and (newer) said to the other person."""
    store.record("nothing to report", "observation", timestamp=at(0, "2023-01-01"))
    mine = store.record("my telescope trip was great", "observation",
                        timestamp=at(0, "2023-01-02"))
    yours = store.record("your telescope trip was great", "observation",
                         timestamp=at(0, "2023-01-03"))
    _filler(store)
    return mine, yours


def test_a_match_speaking_only_of_you_ranks_after_one_speaking_of_oneself(store: Store) -> None:
    mine, yours = _you_store(store)
    assert ids(store, "How was the telescope trip?")[:2] == [mine.id, yours.id]


def test_you_control_without_the_share(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "OTHER_PERSON_SHARE", 1.0)
    _mine, yours = _you_store(store)
    assert ids(store, "How was the telescope trip?")[0] == yours.id  # newer wins the tie


def _opener_store(store: Store) -> tuple[str, str]:
    """The same match as the first turn after a pause, and (newer) mid-conversation."""
    store.record("nothing to report", "observation", timestamp=at(0, "2023-01-01"))
    opener = store.record("the telescope arrived", "observation", timestamp=at(0, "2023-01-02"))
    store.record("good morning", "observation", timestamp=at(0, "2023-01-03"))
    middle = store.record("the telescope arrived", "observation", timestamp=at(1, "2023-01-03"))
    _filler(store)
    return opener.id, middle.id


def test_the_first_turn_after_a_pause_ranks_higher(store: Store) -> None:
    opener, middle = _opener_store(store)
    assert ids(store, "Has the telescope arrived?")[:2] == [opener, middle]


def test_opener_control_without_the_boost(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "OPENER_BOOST", 1.0)
    _opener, middle = _opener_store(store)
    assert ids(store, "Has the telescope arrived?")[0] == middle


# ------------------------------------------------------------------ dates and "when"


@pytest.mark.parametrize("query, periods", [
    ("When did Gina find it on 1 February, 2023?", [(2023, 2, 1)]),
    ("What did she paint on October 13, 2023?", [(2023, 10, 13)]),
    ("the 13th of Sept", [(None, 9, 13)]),
    ("a setback in October 2023", [(2023, 10, None)]),
    ("camping in June", [(None, 6, None)]),
    ("the beach in 2023", [(2023, None, None)]),
    ("on 2023-05-08", [(2023, 5, 8)]),
    ("What happened in May?", [(None, 5, None)]),
    ("she may march on", []),  # not months in lower case
    ("the 4 dancers and 20 bowls", []),
])
def test_dated_periods(query: str, periods: list[tuple[int | None, ...]]) -> None:
    assert [(p.year, p.month, p.day) for p in ranking.dated_periods(query)] == periods


def test_period_holds() -> None:
    assert ranking.Period(None, 6, None).holds(date(2021, 6, 30))
    assert not ranking.Period(2023, 6, None).holds(date(2021, 6, 30))
    assert ranking.Period(2023, 10, 13).holds(date(2023, 10, 13))


def _camping(store: Store) -> tuple[str, str]:
    june = store.record("we went camping by the lake", "observation",
                        timestamp="2023-06-27T10:00:00Z")
    august = store.record("we went camping by the lake", "observation",
                          timestamp="2023-08-10T10:00:00Z")
    return june.id, august.id


def test_a_date_in_the_query_ranks_the_episode_recorded_then(store: Store) -> None:
    june, august = _camping(store)
    assert ids(store, "camping by the lake in June")[0] == june
    assert ids(store, "camping lake on 10 August, 2023")[0] == august


def test_date_control_without_the_boost(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "DATED_BOOST", 1.0)
    june, august = _camping(store)
    assert ids(store, "camping by the lake in June")[0] == august  # newer wins the tie


def test_asks_when() -> None:
    assert ranking.asks_when("When did she go?") and ranking.asks_when("what year was it")
    assert not ranking.asks_when("Where did she go?")


def _when(store: Store) -> tuple[str, str]:
    said = store.record("the pottery class was last week", "observation",
                        timestamp="2023-06-01T10:00:00Z")
    other = store.record("she joined the pottery class", "observation",
                         timestamp="2023-06-02T10:00:00Z")
    for i in range(8):
        store.record(f"they joined team {i}", "observation", timestamp="2023-06-03T10:00:00Z")
        store.record(f"nothing to report {i}", "observation", timestamp="2023-06-03T10:00:00Z")
    return said.id, other.id


def test_a_when_question_prefers_the_episode_that_says_when(store: Store) -> None:
    said, other = _when(store)
    assert ids(store, "When did she join the pottery class?")[0] == said
    assert ids(store, "Did she join the pottery class?")[0] == other  # not a when question


def test_when_control_without_the_boost(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "WHEN_BOOST", 1.0)
    said, other = _when(store)
    assert ids(store, "When did she join the pottery class?")[0] == other


# ------------------------------------------------------------------ guarantees kept


def test_phrase_first_still_outranks_every_word_match(store: Store) -> None:
    exact = store.record("the lighthouse keeper retired", "observation")
    store.record("lighthouse lighthouse keeper keeper telescope", "observation")
    res = store.recall(keyword="lighthouse keeper retired")
    assert res.query_params["match"] == "phrase" and [e.id for e in res.episodes] == [exact.id]


def test_scored_recall_uses_the_same_ranking(store: Store) -> None:
    june, _august = _camping(store)
    res = retrieve_relevant(store, None, "camping by the lake in June", max_episodes=2)
    assert res.episodes[0].id == june


@pytest.mark.parametrize("question", ['lake" OR camping*', "NEAR(camping lake)",
                                      "camping) AND (lake", "ümlaut café camping?"])
def test_query_syntax_never_reaches_the_index(store: Store, question: str) -> None:
    _camping(store)
    res = store.recall(keyword=question)
    assert res.query_params["match"] == "words" and res.episodes


@pytest.mark.parametrize(("limit", "offset", "extra", "pools"), [
    (10, 0, 0, [100]),     # a page of ten: the first pool (LoCoMo ranks its top ten as at 200)
    (100, 0, 0, [100]),    # every match fits the first pool: nothing more to rank
    (5, 10, 300, [100]),   # a later page inside the first pool's order
    (150, 0, 300, [100, 200]),        # past it: each doubled pool adds its new matches
    (300, 0, 300, [100, 200, 400]),   # (330 matches: the last pool holds them all)
])
def test_a_word_recall_ranks_one_order_in_doubling_pools(
        store: Store, monkeypatch: pytest.MonkeyPatch, limit: int, offset: int, extra: int,
        pools: list[int]) -> None:
    """The pools do not follow the page (which ranked each page differently: see
    test_recall_paging): the first 100, then 200, 400, ... while the page needs more."""
    for i in range(30):
        store.record(f"note {i} on the garden pump", "observation")
    if extra:
        store.record_many([{"content": f"garden bed {i} weeded", "episode_type": "observation"}
                           for i in range(extra)])
    asked: list[int] = []
    backend = backend_of(store)
    real = backend.ranked_ids
    monkeypatch.setattr(backend, "ranked_ids",
                        lambda f, words, p: asked.append(p) or real(f, words, p))
    res = store.recall(keyword="garden hose pump", limit=limit, offset=offset)
    assert res.query_params["match"] == "words" and asked == pools
