"""The behaviour every framework adapter is held to.

Each adapter's tests subclass :class:`AdapterContract` (in
``tests/adapters/<fw>/test_contract.py``) and implement :meth:`run`, which drives the
framework's REAL agent loop with its own scripted/test model. The base class then checks
what a user cares about: episodes land with the right type and trust, recalled memory
reaches the model on the next run, the session end saves a continuity, and a broken
store inside a hook never stops the run. Through :meth:`build` it also checks that every
adapter takes a Store, a store path or a MemorySession the same way.

Many users: with ``user=`` the run is that user's (the adapter's test maps the user to the
framework's own identity where it has one: ADK's ``user_id``, a LangGraph run context, an
OpenAI Agents session, a Pydantic AI ``deps``...). Two users interleaved through the real
loop each recall their own fact and never see the other's text in any model input; two
concurrent async runs of different users both wrap, each in its own memory.

No identity means no memory, never everyone's: each adapter names every identity source
it reads (:meth:`AdapterContract.identity_runs`: the run's context, config, metadata, a
scope path, a session id, what a namespace callable returns), and each empty, whitespace
and invisible form of an id (:data:`BAD_IDENTITIES`) through each source must be refused
with an ``IdentityError`` naming that source, with nothing written and no recall run.

Every contract test also checks that recall reached the model through the adapter: a
harness that calls the session's recall itself (``session.memory_block`` in a test's own
loop) fails the test, because a retriever returning nothing would then pass it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from anneal_memory import Store
from anneal_memory.adapters import MemoryOptions
from anneal_memory.errors import EmbedderError, IdentityError, ValidationError
from anneal_memory.governance.namespace import coerce_namespace
from anneal_memory.session import MemorySession
from anneal_memory.testing import HashingEmbedder

T = TypeVar("T")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TESTS = Path(__file__).resolve().parent
_SESSION_FILE = inspect.getsourcefile(MemorySession)

#: The session's recall paths: what reaches a model as memory.
RECALL_METHODS = ("start", "context_for", "recall", "recall_items", "memory_block",
                  "astart", "acontext_for", "arecall", "arecall_items", "amemory_block")

#: Code run before an example to turn the core session's recall off (every recall path of
#: MemorySession answers nothing). An adapter whose recall goes another way passes its own.
RECALL_OFF = """
from anneal_memory.session import MemorySession
MemorySession.start = lambda self, *a, **k: ""
MemorySession.context_for = lambda self, *a, **k: ""
MemorySession.memory_block = lambda self, *a, **k: ""
MemorySession.recall = lambda self, *a, **k: []
MemorySession.recall_items = lambda self, *a, **k: []
"""

#: Ids that name nobody or impersonate someone: empty, whitespace, invisible only (zero-width
#: space, ZWNJ+ZWJ, word joiner, BOM, soft hyphen), and "a" with a zero-width space.
BAD_IDENTITIES = ("", " ", "\t \n", "\u200b", "\u200c\u200d", "\u2060", "\ufeff", "\u00ad",
                  "a\u200b")

_RUNNER = """
import runpy, sys
exec(sys.argv[1])
path = sys.argv[2]
sys.argv = [path, *sys.argv[3:]]
runpy.run_path(path, run_name="__main__")
"""


def _run_example(framework: str, db: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _RUNNER, prelude,
                           str(EXAMPLES / framework / "example.py"), str(db)],
                          capture_output=True, text=True, timeout=300)


def _missing(out: str, markers: tuple[str | re.Pattern[str], ...],
             line: tuple[str, str] | None) -> list[str]:
    missing = [getattr(m, "pattern", m) for m in markers
               if not (m.search(out) if isinstance(m, re.Pattern) else m in out)]
    if line is not None:
        label, text = line
        shown = [x for x in out.splitlines() if label in x]
        if not (shown and text in shown[-1]):
            missing.append(f"{label} ... {text}")
    return [str(m) for m in missing]


def run_example_and_check(framework: str, tmp_path: Path, *markers: str | re.Pattern[str],
                          line: tuple[str, str] | None = None,
                          recall_off: str | None = RECALL_OFF) -> str:
    """Run ``examples/<framework>/example.py`` offline on a fresh store and check its report.

    Each marker must appear in the output (a string as text, a compiled pattern by
    ``search``); ``line=(label, text)``: the last line holding ``label`` also holds ``text``.
    Then the example runs again on another fresh store with the adapter's recall turned
    off (``recall_off``: code run first, by default :data:`RECALL_OFF`): it must fail or
    miss a marker, so the markers prove memory reached the model through the adapter
    (not through the framework's own history or a printed line). Returns the output.
    """
    done = _run_example(framework, tmp_path / "memory.db")
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    missing = _missing(out, markers, line)
    assert not missing, f"{missing!r} not in the example's output:\n{out}"
    if recall_off is not None:
        off = _run_example(framework, tmp_path / "recall-off.db", recall_off)
        assert off.returncode != 0 or _missing(off.stdout, markers, line), (
            "the example shows the same with the adapter's recall turned off: its markers do "
            f"not prove memory reached the model:\n{off.stdout}")
    return out


GUIDES = EXAMPLES.parent / "docs" / "integrations"


def guide_blocks(framework: str) -> list[str]:
    """The Python blocks of ``docs/integrations/<framework>.md``, in order."""
    text = (GUIDES / f"{framework}.md").read_text("utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def run_guide_blocks(framework: str, tmp_path: Path) -> None:
    """Run every Python block of the guide as written, each in its own process, in order,
    in one fresh folder (a block may use a file an earlier one made)."""
    blocks = guide_blocks(framework)
    assert blocks, f"the {framework} guide has no Python block"
    for number, code in enumerate(blocks, 1):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, (f"block {number} of docs/integrations/{framework}.md "
                                      f"failed:\n{code}\n{done.stderr[-3000:]}")


@dataclasses.dataclass
class RunTrace:
    """What one run of the framework's agent loop produced."""

    output: str
    #: every piece of text the scripted model received, across all its calls
    model_inputs: list[str]


class AdapterContract:
    """Subclass and implement :meth:`run` and :meth:`build` (and :meth:`arun`,
    :meth:`memory_of` where the defaults do not fit)."""

    # --- to implement -------------------------------------------------------------
    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        """Run the framework's real agent loop once, with the adapter wired in.

        ``call_tool``: the scripted model first calls a tool (any tool of the test's
        own), whose output contains the word ``toolresult``. ``wrap``: the run ends with
        the adapter's wrap, using the framework's own (scripted) model as compressor;
        the scripted model answers a wrap prompt with
        ``anneal_memory.testing.scripted_compress(prompt)``.

        ``user``: the run is this user's, told to the adapter the way an app serving many
        users would: through the framework's own identity where it has one, else through
        ``namespace=`` (a callable of the run context). Runs with a user should share one
        adapter per ``(store, wrap)`` (:meth:`shared`), as one server serves every user.
        """
        raise NotImplementedError

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        """One run on the framework's async path (default: :meth:`run` in a worker
        thread, for frameworks that have no async loop)."""
        return await asyncio.to_thread(self.run, store, user_input, wrap=wrap, user=user)

    def memory_of(self, store: Store, user: str) -> Any:
        """The memory (a namespace view of ``store``) that runs with ``user`` use."""
        return store.scoped({"user": user})

    def shared(self, key: Any, make: Callable[[], T]) -> T:
        """One object per ``key`` for the whole test (pytest makes a new test instance
        per test, so nothing is shared between tests)."""
        cache: dict[Any, Any] = self.__dict__.setdefault("_shared_objects", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def build(self, memory: Any, **options: Any) -> Any:
        """Construct the adapter's main object over ``memory`` (a Store, a store path or a
        MemorySession) with ``options`` (session options such as ``recall_limit``, and
        ``compress``). The object exposes the core session as ``.session``."""
        raise NotImplementedError

    def identity_runs(self, store: Store) -> dict[str, Callable[[str], Any]]:
        """Every identity source the adapter reads besides ``namespace=``: the text its
        refusal names the source by, to a function running the framework's real loop once
        on ``store`` with that source carrying the given id (e.g. LangGraph's
        ``runtime.context`` user_id, CrewAI's ``/user/<id>`` scope path). Every adapter
        has at least the namespace callable (``"the namespace callable's result"``)."""
        raise NotImplementedError

    # --- fixtures -------------------------------------------------------------------
    @pytest.fixture
    def store(self, tmp_path: Path):
        s = Store(tmp_path / "memory.db", project_name="ContractTest")
        yield s
        s.close()

    @pytest.fixture(autouse=True)
    def _recall_through_the_adapter(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        """Fail a test whose harness (code under tests/) calls the session's recall
        itself: memory must reach the model through the adapter."""
        calls: list[str] = []
        for name in RECALL_METHODS:
            monkeypatch.setattr(MemorySession, name, _spy(getattr(MemorySession, name), name,
                                                          calls))
        yield
        assert not calls, ("the test's own code called the session's recall (memory must "
                           f"reach the model through the adapter): {calls}")

    # --- the contract ---------------------------------------------------------------
    def test_records_user_input_and_final_answer(self, store: Store) -> None:
        trace = self.run(store, "Please plan the quarterly garden irrigation schedule")
        episodes = store.recall(limit=1000).episodes
        contents = " ".join(e.content for e in episodes)
        assert "irrigation" in contents, "the user's request was not recorded"
        assert any(e.type.value == "outcome" for e in episodes), "no outcome episode"
        assert trace.output

    def test_tool_output_recorded_with_tool_trust(self, store: Store) -> None:
        self.run(store, "Look up the pump pressure", call_tool=True)
        tool_eps = [e for e in store.recall(limit=1000).episodes if e.trust == "tool"]
        assert tool_eps, "tool output was not recorded with trust='tool'"
        assert any("toolresult" in e.content for e in tool_eps)

    def test_second_run_receives_recalled_memory(self, store: Store) -> None:
        self.run(store, "Remember that the greenhouse heater model is Zephyrion 4000")
        trace = self.run(store, "Which greenhouse heater model do we have?")
        joined = "\n".join(trace.model_inputs)
        assert "Zephyrion" in joined, "recalled memory did not reach the model's input"

    def test_wrap_saves_continuity(self, store: Store) -> None:
        assert store.load_continuity() is None
        self.run(store, "Decide to water the tomatoes at dawn", wrap=True)
        text = store.load_continuity()
        assert text is not None and "## State" in text
        assert store.status().total_wraps == 1

    def test_broken_store_does_not_stop_the_run(self, tmp_path: Path) -> None:
        broken = Store(tmp_path / "broken.db", project_name="Broken")
        broken.close()  # every memory call now fails inside the hooks
        trace = self.run(broken, "Keep going even if memory fails")
        assert trace.output

    def test_memory_is_a_store_a_path_or_a_session(self, store: Store, tmp_path: Path) -> None:
        assert self.build(store).session.store is store
        mine = MemorySession(store)
        assert self.build(mine).session is mine
        owned = self.build(tmp_path / "owned.db", recall_limit=2).session
        try:
            assert owned.owns_store and owned.recall_limit == 2
            assert owned.log.name.startswith("anneal_memory.adapters."), owned.log.name
        finally:
            owned.close()

    def test_two_users_interleaved_never_see_each_other(self, store: Store) -> None:
        alice1 = self.run(store, "Remember that my locker code is Quasar-1711", user="alice")
        bob1 = self.run(store, "Remember that my locker code is Nebulon-2298", user="bob",
                        wrap=True)
        alice2 = self.run(store, "What is my locker code?", user="alice")
        bob2 = self.run(store, "What is my locker code?", user="bob")
        assert "Quasar" in _joined(alice2), "alice's own fact was not recalled in her run 2"
        assert "Nebulon" in _joined(bob2), "bob's own fact was not recalled in his run 2"
        for trace in (alice1, alice2):
            assert "Nebulon" not in _joined(trace), "bob's text reached alice's model"
        for trace in (bob1, bob2):
            assert "Quasar" not in _joined(trace), "alice's text reached bob's model"
        bob = self.memory_of(store, "bob")
        assert bob.status().total_wraps == 1 and "Nebulon" in (bob.load_continuity() or "")
        alice = self.memory_of(store, "alice")
        assert alice.status().total_wraps == 0 and alice.load_continuity() is None
        mine = " ".join(e.content for e in alice.recall(limit=1000).episodes)
        assert "Quasar" in mine and "Nebulon" not in mine

    def test_concurrent_async_runs_of_two_users_both_wrap(self, store: Store) -> None:
        async def both() -> list[RunTrace]:
            return list(await asyncio.gather(
                self.arun(store, "Decide to prune the roses in March", user="carol", wrap=True),
                self.arun(store, "Decide to repot the ferns in May", user="dave", wrap=True)))

        carol_run, dave_run = asyncio.run(both())
        for user, own, other, trace in (("carol", "roses", "ferns", carol_run),
                                        ("dave", "ferns", "roses", dave_run)):
            view = self.memory_of(store, user)
            text = view.load_continuity()
            assert text is not None and own in text, f"{user}'s run did not wrap their memory"
            assert other not in text, f"{user}'s continuity holds the other user's text"
            assert view.status().total_wraps == 1
            assert other not in _joined(trace), f"the other user's text reached {user}'s model"

    def test_empty_or_invisible_identity_is_refused_by_every_source(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        recalls: list[str] = []
        for name in RECALL_METHODS:
            monkeypatch.setattr(MemorySession, name, _counting(getattr(MemorySession, name),
                                                               name, recalls))
        probe = Store(tmp_path / "probe.db", project_name="ContractTest")
        sources = list(self.identity_runs(probe))
        probe.close()
        assert "the namespace callable's result" in sources, sources
        for number, source in enumerate(sources):
            for bad in BAD_IDENTITIES:
                store = Store(tmp_path / f"identity-{number}-{len(recalls)}-{ord(bad[:1] or 'x')}"
                              f"-{len(bad)}.db", project_name="ContractTest")
                try:
                    store.record("the shared root note Vermilion", "observation")
                    store.scoped({"user": "alice"}).record("alice's note Cerulean", "observation")
                    before = _episode_count(store)
                    run = self.identity_runs(store)[source]
                    recalls.clear()
                    with pytest.raises(IdentityError) as refused:
                        run(bad)
                    assert source in str(refused.value), (
                        f"the refusal of {bad!r} does not name its source {source!r}: "
                        f"{refused.value}")
                    assert _episode_count(store) == before, (
                        f"{bad!r} through {source}: the run wrote to memory")
                    assert not recalls, f"{bad!r} through {source}: the run recalled {recalls}"
                finally:
                    store.close()

    def test_empty_or_invisible_namespace_option_is_refused(self, store: Store) -> None:
        for bad in BAD_IDENTITIES:
            with pytest.raises(IdentityError, match="namespace="):
                self.build(store, namespace={"user": bad})
        assert _episode_count(store) == 0

    def test_session_is_the_adapters_own_memory(self, store: Store) -> None:
        fixed = self.build(store, namespace={"user": "alice"})
        assert fixed.session.store.namespace == coerce_namespace({"user": "alice"},
                                                                 partial=True)
        per_run = self.build(store, namespace=lambda context: {"user": "alice"})
        with pytest.raises(ValidationError, match=r"session_for\("):
            per_run.session  # noqa: B018

    def test_bad_memory_or_options_raise_at_construction(self, store: Store) -> None:
        with pytest.raises(ValidationError):
            self.build(42)
        with pytest.raises(ValidationError, match="MemorySession"):  # options go to the session
            self.build(MemorySession(store), recall_limit=2)
        with pytest.raises(ValidationError, match="compress"):
            self.build(store, compress="not callable")

    #: the constructor takes the shared options as one ``options=MemoryOptions(...)`` too
    takes_options = True

    def test_shared_options_as_one_object(self, store: Store) -> None:
        """``options=MemoryOptions(...)`` carries the shared options, a keyword overrides
        the field it names, and anything but a MemoryOptions (or a bad field) is refused
        at construction."""
        if not self.takes_options:
            pytest.skip("this adapter takes the shared options as keywords only")
        shared = MemoryOptions(namespace={"user": "alice"}, recall_limit=3)
        alice = self.build(store, options=shared).session
        assert alice.store.namespace == coerce_namespace({"user": "alice"}, partial=True)
        assert alice.recall_limit == 3
        bob = self.build(store, options=shared, namespace={"user": "bob"}).session
        assert bob.store.namespace == coerce_namespace({"user": "bob"}, partial=True)
        assert bob.recall_limit == 3
        with pytest.raises(ValidationError, match="MemoryOptions"):
            self.build(store, options={"namespace": {"user": "alice"}})
        with pytest.raises(IdentityError, match="namespace="):
            self.build(store, options=MemoryOptions(namespace={"user": " "}))
        with pytest.raises(ValidationError, match="compress"):
            self.build(store, options=MemoryOptions(compress="not callable"))
        assert _episode_count(store) == 0

    # --- recall by meaning (docs/semantic.md) --------------------------------------------
    #: the adapter's keyword for the store's embedder (LlamaIndex: ``embed_model``)
    embedder_option = "embedder"

    def test_a_store_with_an_embedder_recalls_by_meaning(self, tmp_path: Path) -> None:
        """A run recalls what shares no word with its request when the store embeds (and
        the same runs over a store without an embedder do not: the control)."""
        seen = {}
        for name, embedder in (("plain", None), ("embedding", HashingEmbedder(aliases=JOBS))):
            with Store(tmp_path / f"{name}.db", embedder=embedder) as store:
                self.run(store, NURSE)
                seen[name] = "\n".join(self.run(store, LIVING).model_inputs)
        assert "county hospital" in seen["embedding"], "meaning did not reach the model"
        assert "county hospital" not in seen["plain"], "the control recalled it without vectors"

    def test_the_embedder_option(self, store: Store, tmp_path: Path) -> None:
        """``embedder=`` with a path: the Store opened embeds with it; with an open Store
        that does not embed with it: EmbedderError, never ignored."""
        embedder = HashingEmbedder()
        owned = self.build(tmp_path / "owned.db", **{self.embedder_option: embedder}).session
        try:
            assert owned.owns_store and owned.store.embedder is not None
        finally:
            owned.close()
        with pytest.raises(EmbedderError, match="has no embedder"):
            self.build(store, **{self.embedder_option: embedder})
        with Store(tmp_path / "own.db", embedder=embedder) as own:
            assert self.build(own, **{self.embedder_option: embedder}).session.store is own
            with pytest.raises(EmbedderError, match="embeds with"):
                self.build(own, **{self.embedder_option: HashingEmbedder(64)})


#: a memory and a request that share no content word ("living" and "nurse" are one word
#: to the test embedder)
JOBS = {"living": "job", "nurse": "job"}
NURSE = "Remember that I started as a nurse at the county hospital"
LIVING = "What does she do for a living?"


def _episode_count(store: Store) -> int:
    """Episodes in every namespace of ``store`` (the root's recall sees them all)."""
    return len(store.recall(limit=100_000).episodes)


def _counting(method: Any, name: str, calls: list[str]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return method(*args, **kwargs)
    return counted


def _joined(trace: RunTrace) -> str:
    return "\n".join(trace.model_inputs)


def _spy(method: Any, name: str, calls: list[str]) -> Any:
    def spy(*args: Any, **kwargs: Any) -> Any:
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename == _SESSION_FILE
                                     or frame.f_code is spy.__code__):
            frame = frame.f_back  # the session calling its own methods
        if frame is not None:
            where = Path(frame.f_code.co_filename).resolve()
            if where.is_relative_to(TESTS):
                calls.append(f"{name} from {where.name}:{frame.f_lineno}")
        return method(*args, **kwargs)
    return spy
