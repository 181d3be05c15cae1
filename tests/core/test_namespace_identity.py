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


# --- issue 52 item 5: no identity is never a shared "default" user -------------------------
UNSET = [None, "", " ", "\u200b"]


@pytest.mark.parametrize("value", UNSET)
def test_an_unset_identity_field_is_refused_not_read_as_default(store: Store,
                                                                value: object) -> None:
    """``{"tenant": t, "user": run.user}`` with no user on the run: refused, never the
    tenant's shared memory (the field left out still means the default)."""
    store.scoped({"tenant": "acme"}).record("the tenant's shared note", "observation")
    for field in ("tenant", "user", "agent"):
        given = {"tenant": "acme", "user": "alice", field: value}
        with pytest.raises(IdentityError, match=f"namespace {field}"):
            store.scoped(given)
        with pytest.raises(IdentityError, match=f"namespace {field}"):
            MemorySession(store).for_namespace(given)
    with pytest.raises(IdentityError, match="namespace user"):
        MemoryNamespace(tenant="acme", user=value, agent="a")  # type: ignore[arg-type]
    # left out: the documented default, as before
    assert [e.content for e in store.scoped({"tenant": "acme"}).recall().episodes] == [
        "the tenant's shared note"]


def test_project_none_still_means_a_user_level_record(store: Store) -> None:
    store.scoped({"user": "alice", "project": None}).record("user level", "observation")
    assert len(store.scoped({"user": "alice", "project": "p1"}).recall().episodes) == 1


@pytest.mark.parametrize("field", ["tenant", "user", "agent"])
def test_the_reserved_default_id_is_refused_with_why(store: Store, field: str) -> None:
    """A real user named "default" would share the memory of runs that gave no user."""
    store.scoped({"tenant": "acme"}).record("anonymous runs' note", "observation")
    with pytest.raises(IdentityError, match="reserved"):
        store.scoped({"tenant": "acme", field: "default"})
    with pytest.raises(IdentityError, match="reserved"):
        MemorySession(store).for_namespace({field: "default"})
    assert store.recall(limit=10).total_matching == 1  # the refusals wrote nothing


def test_a_namespace_round_trips_through_its_partial_form() -> None:
    from anneal_memory.governance.namespace import coerce_namespace

    for ns in (MemoryNamespace("acme", "alice", "default"),
               MemoryNamespace("default", "bob", "bot", "p1")):
        assert coerce_namespace(ns.to_partial(), partial=True) == ns
        assert "default" not in ns.to_partial().values()


def test_an_export_spelling_the_default_out_still_imports(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a:
        a.scoped({"user": "alice"}).record("alice's note", "observation")
        doc = a.export()
    with Store(tmp_path / "b.db") as b:
        b.import_(doc)
        assert [e.content for e in b.scoped({"user": "alice"}).recall().episodes] == [
            "alice's note"]
