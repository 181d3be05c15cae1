"""The package's private way from a Store to its roles and its unit of work
(``anneal_memory._seam``): what each Store and view registered when it was made, on real
SQLite stores; nothing public on the Store and no private member on Facade / Ground."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from anneal_memory import Store, _seam
from anneal_memory._unit import Facade, Ground
from anneal_memory.errors import ReadOnlyStoreError
from anneal_memory.testing import repos_of, unit_of


def test_roles_and_unit_are_the_stores_own(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        roles = _seam.roles_of(s)
        assert roles is repos_of(s)
        assert not hasattr(s, "repos") and not hasattr(s, "transaction")  # no public way down
        with _seam.unit_of(s) as tx:
            tx.meta.set_meta("seam_probe", "1")
            tx.audit.append("seam_checked", {"n": 1}, actor="operator")
        assert roles.meta.get_meta("seam_probe") == "1"
        with pytest.raises(RuntimeError), _seam.unit_of(s) as tx:
            tx.meta.set_meta("seam_probe", "2")
            raise RuntimeError("roll back")
        assert roles.meta.get_meta("seam_probe") == "1"  # the unit rolled back whole
        assert [e["event"] for e in s.audit_trail.entries()].count("seam_checked") == 1


def test_each_view_registers_its_own_scoped_roles(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        alice = s.scoped({"user": "alice"})
        bob = s.scoped({"user": "bob"})
        assert _seam.roles_of(alice) is not _seam.roles_of(s)
        with unit_of(alice) as tx:
            tx.meta.set_meta("x", "1")
        alice.record("alice likes tea", "observation")
        ids = [e.id for e in alice.recall().episodes]
        assert set(_seam.roles_of(alice).episodes.get_episodes(ids, exact=True)) == set(ids)
        assert _seam.roles_of(bob).episodes.get_episodes(ids, exact=True) == {}


def test_what_registered_nothing_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        # a copy of a store's attributes (a view is made so) carries no registration:
        # refused, never served the parent's roles
        copied = object.__new__(Store)
        copied.__dict__.update(s.__dict__)
        for thing in (copied, object(), None, "m.db"):
            with pytest.raises(TypeError, match="not an open anneal_memory Store"):
                _seam.roles_of(thing)
            with pytest.raises(TypeError):
                _seam.unit_of(thing)


def test_a_read_only_store_refuses_a_unit_before_writing(tmp_path: Path) -> None:
    Store(tmp_path / "m.db").close()
    with Store(tmp_path / "m.db", read_only=True) as s:
        with pytest.raises(ReadOnlyStoreError), _seam.unit_of(s):
            pass


def test_the_registry_keeps_no_store_alive(tmp_path: Path) -> None:
    s = Store(tmp_path / "m.db")
    view = s.scoped({"user": "alice"})
    keys = {id(s), id(view)}
    assert keys <= set(_seam._SEAMS)
    gone = weakref.ref(s)
    s.close()
    del s, view
    gc.collect()
    assert gone() is None  # nothing in the registry held it
    assert not keys & set(_seam._SEAMS)  # and its entries went with it


def test_facade_and_ground_declare_no_private_member() -> None:
    typing_own = {"_abc_impl", "_is_protocol", "_is_runtime_protocol"}  # Protocol's own
    for proto in (Ground, Facade):
        names = (set(vars(proto)) | set(getattr(proto, "__annotations__", {}))) - typing_own
        private = sorted(n for n in names if n.startswith("_") and not n.startswith("__"))
        assert not private, f"{proto.__name__} declares {private}"
