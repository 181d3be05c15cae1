"""The adapters' base class (anneal_memory.adapters._base): it needs no framework, so it
is tested with the core."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import MemoryNamespace, MissingExtraError, Store, ValidationError
from anneal_memory.adapters import (
    MEMORY_OPTIONS,
    MemoryAdapter,
    MemoryOptions,
    check_memory_role,
    check_namespace,
    hook_guard,
    options_except,
    require_extra,
)
from anneal_memory.errors import EmbedderError, IdentityError
from anneal_memory.session import MemorySession
from anneal_memory.testing import HashingEmbedder, scripted_compress


class Adapter(MemoryAdapter):
    """The smallest adapter: its framework's identity is ``context["who"]``."""

    logger_name = "anneal_memory.adapters.test"

    def __init__(self, memory: Any, **options: Any) -> None:
        self._init_memory(memory, **options)

    def default_namespace(self, context: Any) -> Any:
        if isinstance(context, dict) and "who" in context:
            return {"user": context["who"]}
        return None

    @hook_guard("anneal_memory.adapters.test")
    def hook(self, fail: bool) -> str:
        if fail:
            raise RuntimeError("boom")
        return "ran"


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="BaseTest")
    yield s
    s.close()


def test_import_guard_names_the_extra() -> None:
    require_extra("json", "json")  # present: nothing happens
    with pytest.raises(MissingExtraError, match=r"anneal-memory\[no-such\]") as caught:
        require_extra("nosuchframework", "no-such", "nosuchframework.sub")
    assert isinstance(caught.value, ImportError)


def test_option_checks() -> None:
    assert check_memory_role("user") == "user"
    with pytest.raises(ValidationError, match="memory_role"):
        check_memory_role("assistant")
    with pytest.raises(ValidationError, match="unknown namespace key"):
        check_namespace({"usr": "alice"})
    with pytest.raises(ValidationError, match="namespace must be"):
        check_namespace(42)
    fn = lambda ctx: {"user": "x"}  # noqa: E731
    assert check_namespace(fn) is fn


def test_store_path_or_session(store: Store, tmp_path: Path) -> None:
    assert Adapter(store).session.store is store
    mine = MemorySession(store)
    assert Adapter(mine).session is mine
    owned = Adapter(tmp_path / "owned.db", recall_limit=2)
    assert owned.session.owns_store and owned.session.recall_limit == 2
    assert owned.session.log.name == "anneal_memory.adapters.test"
    owned.close()
    with pytest.raises(Exception):
        owned.session.store.record("after close", "observation")


def test_construction_errors_change_nothing(store: Store, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="compress"):
        Adapter(store, compress="nope")
    with pytest.raises(ValidationError, match="wrap_on_end"):
        Adapter(store, wrap_on_end="yes")
    with pytest.raises(ValidationError, match="memory_role"):
        Adapter(store, memory_role="assistant")
    with pytest.raises(ValidationError, match="unknown namespace key"):
        Adapter(tmp_path / "x.db", namespace={"team": "a"})
    with pytest.raises(ValidationError, match="already one namespace"):
        Adapter(MemorySession(store.scoped({"user": "a"})), namespace={"user": "b"})


def test_fixed_namespace_is_its_own_memory(store: Store) -> None:
    alice = Adapter(store, namespace={"user": "alice"})
    bob = Adapter(store, namespace=MemoryNamespace("default", "bob", "default"))
    alice.session_for().record_observation("alice likes basil")
    bob.session_for().record_observation("bob likes thyme")
    assert [e.content for e in store.scoped({"user": "alice"}).recall().episodes] == [
        "alice likes basil"]
    assert "basil" not in bob.session_for().context_for("what do I like basil thyme")
    assert store.load_continuity() is None


def test_callable_gets_the_run_context_and_none_is_refused(store: Store) -> None:
    seen: list[Any] = []

    def pick(ctx: Any) -> Any:
        seen.append(ctx)
        return {"user": ctx["user"]} if ctx.get("user") else None

    adapter = Adapter(store, namespace=pick)
    s1 = adapter.session_for({"user": "carol"})
    assert s1.namespace.user == "carol" and seen == [{"user": "carol"}]
    assert adapter.session_for({"user": "carol"}) is s1  # one session per namespace
    with pytest.raises(ValidationError, match="returned None"):
        adapter.session_for({})
    with pytest.raises(ValidationError, match="outside a run"):
        adapter.wrap()


def test_default_identity_and_explicit_namespace(store: Store) -> None:
    adapter = Adapter(store)
    assert adapter.session_for({"who": "dave"}).namespace.user == "dave"
    assert adapter.session_for({}) is adapter.session  # no identity: the store as it is
    assert adapter.session_for(namespace={"user": "erin"}).namespace.user == "erin"
    # a namespace option wins over the framework's identity
    fixed = Adapter(store, namespace={"user": "frank"})
    assert fixed.session_for({"who": "dave"}).namespace.user == "frank"


def test_a_view_pins_the_memory(store: Store) -> None:
    view = store.scoped({"user": "gina"})
    adapter = Adapter(MemorySession(view))
    assert adapter.session_for({"who": "harry"}).store is view  # the identity cannot escape
    with pytest.raises(ValidationError, match="one namespace view"):
        adapter.session_for(namespace={"user": "harry"})


def test_wrap_is_per_namespace(store: Store) -> None:
    adapter = Adapter(store, compress=scripted_compress)
    adapter.session_for({"who": "ivy"}).record_decision("Decide to mulch the beds")
    outcome = adapter.wrap(context={"who": "ivy"})
    assert outcome.saved, outcome.message
    assert "mulch" in (store.scoped({"user": "ivy"}).load_continuity() or "")
    assert store.load_continuity() is None
    assert adapter.wrap(namespace={"user": "jack"}).status == "empty"
    no_model = Adapter(store)
    assert no_model.wrap().status == "failed"  # no compressor anywhere: said, not raised


def test_concurrent_awraps_of_two_namespaces(store: Store) -> None:
    adapter = Adapter(store, compress=scripted_compress, wrap_on_end=True)
    for who, text in (("kim", "Decide to stake the beans"), ("lee", "Decide to net the kale")):
        adapter.session_for({"who": who}).record_decision(text)

    async def both() -> list[Any]:
        return list(await asyncio.gather(
            adapter.aend_run(adapter.session_for({"who": "kim"})),
            adapter.aend_run(adapter.session_for({"who": "lee"}))))

    outcomes = asyncio.run(both())
    assert [o.status for o in outcomes] == ["saved", "saved"]
    assert "beans" in store.scoped({"user": "kim"}).load_continuity()
    assert "kale" in store.scoped({"user": "lee"}).load_continuity()
    assert Adapter(store).end_run(adapter.session) is None  # wrap_on_end off: no wrap


def test_hook_guard_logs_unless_strict(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    assert Adapter(store).hook(True) is None
    assert "boom" in caplog.text
    with pytest.raises(RuntimeError):
        Adapter(store, strict=True).hook(True)
    assert Adapter(store).hook(False) == "ran"


def test_memory_role_default_and_choice(store: Store) -> None:
    assert Adapter(store).memory_role == "user"
    assert Adapter(store, memory_role="system").memory_role == "system"



class Narrow(MemoryAdapter):
    """An adapter whose constructor takes some of the shared options, as keywords or as
    one MemoryOptions (the way the framework adapters' constructors do)."""

    logger_name = "anneal_memory.adapters.test"
    memory_options = ("namespace", "compress", "wrap_on_end", "recall_limit")

    def __init__(self, memory: Any, *, options: MemoryOptions | None = None,
                 **keywords: Any) -> None:
        self._init_memory(memory, options, **keywords)


def test_memory_options_carry_the_shared_options_once(store: Store) -> None:
    shared = MemoryOptions(namespace={"user": "ann"}, recall_limit=2,
                           compress=scripted_compress)
    a, b = Narrow(store, options=shared), Narrow(store, options=shared, recall_limit=5)
    assert a._anneal.namespace == {"user": "ann"} and a.session.namespace.user == "ann"
    assert a.base_session.recall_limit == 2
    assert b.base_session.recall_limit == 5  # a keyword overrides the field it names
    assert b._anneal.compress is shared.compress and b._anneal.namespace == {"user": "ann"}
    # keywords alone, as before
    c = Narrow(store, namespace={"user": "bob"}, wrap_on_end=True)
    assert c._anneal.wrap_on_end and c.session.namespace.user == "bob"
    assert set(MEMORY_OPTIONS) >= set(Narrow.memory_options)
    assert options_except("memory_role", "strict") == tuple(
        n for n in MEMORY_OPTIONS if n not in ("memory_role", "strict"))
    with pytest.raises(ValueError, match="not MemoryOptions fields"):
        options_except("memory_rol")


def test_memory_options_are_checked_at_construction(store: Store) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory_role'"):
        Narrow(store, memory_role="system")  # a shared option this adapter does not take
    with pytest.raises(ValidationError, match="options must be a MemoryOptions"):
        Narrow(store, options={"recall_limit": 2})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="wrap_on_end"):
        Narrow(store, options=MemoryOptions(wrap_on_end="yes"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Narrow(store, options=MemoryOptions(namespace={"nobody": "x"}))


# ---------------------------------------------------------------------- embedder=
_PARAPHRASE = {"living": "job", "nurse": "job"}


def test_embedder_with_a_path_opens_a_store_that_embeds(tmp_path: Path) -> None:
    embedder = HashingEmbedder(aliases=_PARAPHRASE)
    adapter = Adapter(tmp_path / "m.db", embedder=embedder, project_name="P")
    store = adapter.base_session.store
    assert store.embedder is not None and store.embedder.model.endswith(embedder.model)
    assert store.project_name == "P"
    ann = adapter.session_for(namespace={"user": "ann"})
    ann.record_observation("I started as a nurse at the county hospital")
    Adapter(store).session_for(namespace={"user": "bob"}).record_observation(
        "bob was a nurse too")
    found = ann.recall("what does she do for a living")  # no word shared: by meaning
    assert [e.content for e in found] == ["I started as a nurse at the county hospital"]
    adapter.close()  # the adapter opened the store: it closes it
    with pytest.raises(Exception):
        store.record("after close", "observation")


def test_embedder_through_memory_options(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    shared = MemoryOptions(embedder=embedder, recall_limit=2)
    adapter = Narrow(tmp_path / "m.db", options=shared)
    assert adapter.base_session.store.embedder is not None
    assert adapter.base_session.recall_limit == 2
    assert "embedder" in MEMORY_OPTIONS and "embedder" in options_except("strict")
    adapter.close()


def test_an_open_store_must_already_have_the_embedder(tmp_path: Path, store: Store) -> None:
    embedder = HashingEmbedder()
    with pytest.raises(EmbedderError, match="has no embedder"):
        Adapter(store, embedder=embedder)
    with Store(tmp_path / "e.db", embedder=embedder) as own:
        # the same object, an Embedder over it, or another instance of the same model id
        for same in (embedder, own.embedder, HashingEmbedder()):
            assert Adapter(own, embedder=same).base_session.store is own
        assert Adapter(MemorySession(own), embedder=embedder).base_session.store is own
        with pytest.raises(EmbedderError, match="embeds with '.*hashing-bow-256'.*"
                                                 "'.*hashing-bow-64'"):
            Adapter(own, embedder=HashingEmbedder(64))
        with pytest.raises(EmbedderError, match="embeds with"):
            Adapter(MemorySession(own.scoped({"user": "x"})),
                    embedder=HashingEmbedder(model="other"))
        with pytest.raises(EmbedderError, match="cannot embed with"):
            Adapter(own, embedder=object())


def test_a_bad_embedder_with_a_path_opens_nothing(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError):
        Adapter(tmp_path / "never.db", embedder=42)
    assert not (tmp_path / "never.db").exists()


# ---------------------------------------------------------------------- anonymous=
def test_anonymous_shared_is_the_default_and_keeps_the_shared_memory(store: Store) -> None:
    adapter = Adapter(store)
    assert adapter.anonymous == "shared" and MemoryOptions().anonymous == "shared"
    assert "anonymous" in MEMORY_OPTIONS
    assert adapter.session_for(None) is adapter.base_session
    assert adapter.run_session(None) is adapter.base_session
    assert adapter.run_session({"who": "ann"}).namespace.user == "ann"


def test_anonymous_refuse_stops_a_run_without_identity(store: Store) -> None:
    adapter = Adapter(store, anonymous="refuse")
    for call in (lambda: adapter.run_session(None), lambda: adapter.session_for({}),
                 lambda: adapter.wrap(compress=scripted_compress)):
        with pytest.raises(IdentityError, match="anonymous='refuse'"):
            call()
    ann = adapter.run_session({"who": "ann"})
    assert ann is not None and ann.namespace.user == "ann"
    # an explicit namespace= or one given to the adapter is an identity
    assert adapter.session_for(namespace={"user": "bob"}).namespace.user == "bob"
    pinned = Adapter(store, anonymous="refuse", namespace={"user": "cy"})
    assert pinned.run_session(None).namespace.user == "cy"
    assert store.recall().episodes == []


def test_anonymous_none_runs_without_memory(store: Store) -> None:
    adapter = Adapter(store, anonymous="none")
    assert adapter.run_session(None) is None
    assert adapter.resolve_session({}) is None
    with pytest.raises(ValidationError, match="anonymous='none'"):
        adapter.session_for(None)
    ann = adapter.run_session({"who": "ann"})
    assert ann is not None and ann.namespace.user == "ann"


def test_anonymous_is_checked_at_construction_and_carried_by_options(tmp_path: Path,
                                                                     store: Store) -> None:
    for bad in ("refused", "", None, "SHARED", ["refuse"]):
        with pytest.raises(ValidationError, match="anonymous must be"):
            Adapter(tmp_path / "never.db", anonymous=bad)
    assert not (tmp_path / "never.db").exists()
    # an adapter whose keywords do not name it still takes it through options=
    narrow = Narrow(store, options=MemoryOptions(anonymous="refuse"))
    with pytest.raises(IdentityError):
        narrow.run_session(None)
    with pytest.raises(TypeError, match="'anonymous'"):
        Narrow(store, anonymous="refuse")
