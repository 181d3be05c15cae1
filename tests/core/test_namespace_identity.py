"""The identity rule in the core (issue 30 item 1): a namespace value that is empty,
whitespace, only invisible characters, or mixes invisible characters with visible ones
("a\u200b" displays as "a") is an IdentityError (a ValidationError), wherever a namespace
is built: a view, a MemoryNamespace, a session's for_namespace."""

from __future__ import annotations

from pathlib import Path

import pytest

from anneal_memory import MemorySession, Store
from anneal_memory.errors import IdentityError, ValidationError
from anneal_memory.governance.namespace import MemoryNamespace, identity_problem

BAD = ["", " ", "\t", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
       "\u200b\ufeff", "a\u200b", "\u2060bob", "al\u00adice", "\u3164"]


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "m.db", project_name="T")
    yield s
    s.close()


@pytest.mark.parametrize("value", BAD)
def test_a_blank_or_invisible_namespace_value_is_refused(store: Store, value: str) -> None:
    for field in ("tenant", "user", "project", "agent"):
        with pytest.raises(IdentityError, match=f"namespace {field}"):
            store.scoped({field: value})
        with pytest.raises(IdentityError):
            MemorySession(store).for_namespace({field: value})
    with pytest.raises(IdentityError):
        MemoryNamespace(tenant="t", user=value, agent="a")
    assert store.recall(limit=10).episodes == []


def test_an_impersonating_value_names_what_it_displays_as() -> None:
    assert "display as 'a'" in (identity_problem("a\u200b") or "")
    assert "only of invisible" in (identity_problem("\u200b\u2060") or "")
    assert issubclass(IdentityError, ValidationError) and issubclass(IdentityError, ValueError)


@pytest.mark.parametrize("value", ["a", "alice", "Ali Ce", "日本", "user-1.x", "ç"])
def test_plain_ids_are_accepted(store: Store, value: str) -> None:
    assert identity_problem(value) is None
    store.scoped({"user": value}).record("a note", "observation")
    assert len(store.scoped({"user": value}).recall(limit=5).episodes) == 1
