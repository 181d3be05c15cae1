"""One folding rule on both backends (issue 31): keyword recall folds case, diacritics and
the letters PostgreSQL's unaccent spells out (ß, æ, œ, ø, ł, đ, ð, þ, ħ, ı, ligatures) the
same way on SQLite and PostgreSQL, so a query finds the same episodes on either."""

from __future__ import annotations

import pytest

from anneal_memory import Store

PAIRS = [
    ("Flight to İstanbul on Monday", "istanbul"),
    ("Meet at the Straße corner", "strasse"),
    ("Meet at the Strasse corner", "straße"),
    ("Café Noël opens at nine", "cafe noel"),
    ("An Encyclopædia entry", "encyclopaedia"),
    ("The Øresund bridge trip", "oresund"),
    ("Office in ŁÓDŹ moved", "lodz"),
    ("The ﬁnance report is late", "finance"),
    ("Þingvellir hike planned", "thingvellir"),
    ("Ħal Far airfield visit", "hal far"),
    ("Đakovo cathedral tour", "dakovo"),
    ("The œuvre of the painter", "oeuvre"),
]


@pytest.mark.parametrize("content,query", PAIRS, ids=[q for _, q in PAIRS])
def test_each_backend_folds_the_same(store: Store, content: str, query: str) -> None:
    store.record("filler about the garden shed", "observation")
    ep = store.record(content, "observation")
    found = store.recall(keyword=query)
    assert [e.id for e in found.episodes] == [ep.id], (content, query)
    assert found.total_matching == 1


def test_a_namespace_view_folds_the_same(store: Store) -> None:
    alice, bob = store.scoped({"user": "alice"}), store.scoped({"user": "bob"})
    mine = alice.record("alice lives on Hauptstraße", "observation")
    bob.record("bob lives on Hauptstraße", "observation")
    assert [e.id for e in alice.recall(keyword="hauptstrasse").episodes] == [mine.id]
