"""The TypedDicts that type the dict results (types.py) are the dicts 1.0.2 gave: the
same keys in the same order with the same values as ``dataclasses.asdict`` (which
``to_dict`` used to return), and each TypedDict declares exactly those keys."""

from __future__ import annotations

import dataclasses
import typing

from anneal_memory import Store
from anneal_memory.types import (
    NamespaceTotals,
    NamespaceTotalsDict,
    PatternMatch,
    PatternMatchDict,
    StoreStatus,
    StoreStatusDict,
    VectorUse,
    VectorUseDict,
)


def _status() -> StoreStatus:
    return StoreStatus(
        total_episodes=3, episodes_since_wrap=2, total_wraps=1, last_wrap_at="2026-01-01",
        wrap_in_progress=True, tombstone_count=1, continuity_chars=40,
        episodes_by_type={"decision": 2, "observation": 1}, audit_enabled=True,
        audit_entry_count=9, audit_write_failures=0, audit_last_failure=None,
        consolidate_requires_baton=True, path="/x/db", superseded_count=1,
        trust_counts={"agent": 3}, wrap_started_at="2026-01-02", wrap_stale=True,
        namespace={"user": "alice"}, all_namespaces=NamespaceTotals(2, 3, None, 1, 2),
        embedder="m", embedding_dims=8, embedded_episodes=2,
        vectors=[{"model": "m", "dims": 8, "episodes": 2}])


def test_to_dict_is_asdict_key_for_key_in_order() -> None:
    for value in (_status(), NamespaceTotals(2, 3, "t", 1, 2),
                  VectorUse("hybrid", True, "m", 8, 4, 1, 1, None)):
        got, want = value.to_dict(), dataclasses.asdict(value)
        assert got == want and list(got) == list(want)


def test_to_dict_copies_its_containers() -> None:
    st = _status()
    d = st.to_dict()
    d["episodes_by_type"]["decision"] = 99
    d["vectors"][0]["episodes"] = 99
    assert st.episodes_by_type["decision"] == 2 and st.vectors[0]["episodes"] == 2


def test_a_real_stores_status_as_before(store: Store) -> None:
    store.record("one", "decision")
    st = store.status()
    assert st.to_dict() == dataclasses.asdict(st)


def test_pattern_to_dict_as_before() -> None:
    m = PatternMatch("p", 2, "text", 0.5, ("keyword",), ["w"], ["e1"], ["e1"], ("t",), "a")
    want = m._asdict()
    want.update(via=["keyword"], tags=["t"])
    assert m.to_dict() == want and list(m.to_dict()) == list(want)
    assert m.as_mapping() == dict(want, explanation="text", source="keyword")
    assert m["level"] == 2 and m.get("source") == "keyword" and m[0] == "p"


def test_each_typeddict_declares_the_keys_it_holds() -> None:
    pairs = [(StoreStatusDict, StoreStatus), (NamespaceTotalsDict, NamespaceTotals),
             (VectorUseDict, VectorUse)]
    for td, cls in pairs:
        assert list(typing.get_type_hints(td)) == [f.name for f in dataclasses.fields(cls)]
    assert list(typing.get_type_hints(PatternMatchDict)) == list(PatternMatch._fields)


def _keys(td: type) -> tuple[set[str], set[str]]:
    """(every key, the required keys) a TypedDict declares."""
    return set(typing.get_type_hints(td)), set(td.__required_keys__)


def _holds(result: object, td: type) -> None:
    """``result`` has every required key of ``td`` and no key ``td`` does not declare."""
    declared, required = _keys(td)
    assert isinstance(result, dict)
    assert required <= set(result), sorted(required - set(result))
    assert set(result) <= declared, sorted(set(result) - declared)


def test_a_real_wrap_gives_what_its_typeddicts_declare(store: Store, tmp_path) -> None:
    from anneal_memory.crystal import CrystalStore
    from anneal_memory.testing import scripted_compress
    from anneal_memory.wrap.prepare import PrepareResult, prepare_wrap
    from anneal_memory.wrap.render import WrapPackage, render_package
    from anneal_memory.wrap.save import SaveResult, validated_save_continuity

    _holds(prepare_wrap(store), PrepareResult)  # empty
    for i in range(3):
        store.record(f"decision {i}: keep the pool at {i + 4} connections " + "x" * 40,
                     "decision")
    crystals = CrystalStore(store)
    ready = prepare_wrap(store, crystal_store=crystals)
    _holds(ready, PrepareResult)
    package = ready["package"]
    _holds(package, WrapPackage)
    assert {"instructions", "crystallization_candidates", "uncovered_proven",
            "rewarm_candidates", "crystal_index"} <= set(package)
    saved = validated_save_continuity(store, scripted_compress(render_package(package)),
                                      wrap_token=ready["wrap_token"], crystal_store=crystals)
    assert set(saved) == _keys(SaveResult)[0]  # the two keys added on the way too


def test_migrate_and_tokens_give_what_their_typeddicts_declare(store: Store, tmp_path) -> None:
    from anneal_memory.mcp.tokens import TokenDict, create_token
    from anneal_memory.migrate_store import MigrationReport, migrate

    store.record("one", "decision")
    _secret, info = create_token(store, {"user": "alice"})
    assert set(info.to_dict()) == _keys(TokenDict)[0]
    store.close()
    report = migrate(str(store.path), str(tmp_path / "copy.db"))
    assert set(report) == _keys(MigrationReport)[0]
