"""The framework's own history provider tests, restated against ``AnnealHistoryProvider``.

Source: microsoft/agent-framework, python/packages/core/tests/core/test_sessions.py
(``TestHistoryProviderBase``, ``TestInMemoryHistoryProvider``, ``TestFileHistoryProvider``
and ``TestAgentSession``'s non-finite case). Each case runs on our provider and, side by
side, on the framework's reference providers: ``InMemoryHistoryProvider`` (the default,
history in ``session.state``) and ``FileHistoryProvider`` (JSON Lines on disk; it first
ships in agent-framework-core 1.x after 1.0.0, so at the floor the in-memory provider is
the only reference there is). What a case checks is what the upstream test checks; where
the reference keeps its records differently (a file, the session's state, our item
collection) the records are read through :func:`records`.

Deliberate difference, tested in test_contract.py: an empty session id is refused by ours
(the identity rule) where the file provider writes it to ``default.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import agent_framework
import pytest
from agent_framework import (
    AgentResponse,
    AgentSession,
    Content,
    InMemoryHistoryProvider,
    Message,
    SessionContext,
)

from anneal_memory import Store
from anneal_memory.adapters.agent_framework import COLLECTION, AnnealHistoryProvider

FileHistoryProvider = getattr(agent_framework, "FileHistoryProvider", None)

#: the providers each case runs on: ours, then the framework's references it has
KINDS = ["anneal", "in_memory"] + (["file"] if FileHistoryProvider is not None else [])
NON_FINITE = [float("nan"), float("inf"), float("-inf")]


@dataclass
class Side:
    """One provider kind, with what its storage needs: a store, a folder, a state."""

    kind: str
    tmp: Path
    store: Store
    state: dict[str, Any] = field(default_factory=dict)

    def make(self, **flags: Any) -> Any:
        if self.kind == "anneal":
            return AnnealHistoryProvider(self.store, **flags)
        if self.kind == "in_memory":
            return InMemoryHistoryProvider(**flags)
        assert FileHistoryProvider is not None
        import warnings

        with warnings.catch_warnings():  # "experimental": the warning is the framework's
            warnings.simplefilter("ignore")
            return FileHistoryProvider(self.tmp / "history", **flags)

    async def save(self, provider: Any, session_id: str | None, messages: list[Message]) -> None:
        await provider.save_messages(session_id, messages, state=self.state)

    async def load(self, provider: Any, session_id: str | None) -> list[Message]:
        return list(await provider.get_messages(session_id, state=self.state))


@pytest.fixture(params=KINDS)
def side(request: pytest.FixtureRequest, tmp_path: Path, mem_store: Store) -> Side:
    return Side(request.param, tmp_path, mem_store)


def state_of(session: AgentSession, provider: Any) -> dict[str, Any]:
    state: dict[str, Any] = session.state.setdefault(provider.source_id, {})
    return state


async def before(provider: Any, session: AgentSession, ctx: SessionContext) -> None:
    await provider.before_run(agent=None, session=session, context=ctx,
                              state=state_of(session, provider))


async def after(provider: Any, session: AgentSession, ctx: SessionContext,
                response: list[Message]) -> None:
    ctx._response = AgentResponse(messages=response)
    await provider.after_run(agent=None, session=session, context=ctx,
                             state=state_of(session, provider))


def records(side: Side, provider: Any, session: AgentSession) -> list[dict[str, Any]]:
    """The stored payloads of ``session``'s history, as each provider keeps them."""
    if side.kind == "anneal":
        return [item.value if isinstance(item.value, dict) else json.loads(item.value)
                for item in side.store.items(COLLECTION).list()
                if item.metadata["session_id"] == session.session_id]
    if side.kind == "in_memory":
        return [m.to_dict() for m in state_of(session, provider).get("messages", [])]
    path = provider._session_file_path(session.session_id)
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def same_float(restored: Any, value: float) -> bool:
    return math.isnan(restored) if math.isnan(value) else restored == value


# ---------------------------------------------------------------------- TestHistoryProviderBase
def test_default_flags(side: Side) -> None:
    provider = side.make()
    assert provider.load_messages is True
    assert provider.store_outputs is True
    assert provider.store_inputs is True
    assert provider.store_context_messages is False
    assert provider.store_context_from is None


def test_custom_flags(side: Side) -> None:
    provider = side.make(source_id="audit", load_messages=False, store_inputs=False,
                         store_context_messages=True, store_context_from={"rag"})
    assert provider.source_id == "audit"
    assert provider.load_messages is False
    assert provider.store_inputs is False
    assert provider.store_context_messages is True
    assert provider.store_context_from == {"rag"}


def test_before_run_loads_messages(side: Side) -> None:
    async def go() -> None:
        provider = side.make()
        session = AgentSession(session_id="s1")
        side.state = state_of(session, provider)
        await side.save(provider, "s1", [Message(role="user", contents=["history"])])
        ctx = SessionContext(session_id="s1", input_messages=[])
        await before(provider, session, ctx)
        assert len(ctx.context_messages[provider.source_id]) == 1
        assert ctx.context_messages[provider.source_id][0].text == "history"

    asyncio.run(go())


def stored_after_one_run(side: Side, **flags: Any) -> list[str]:
    """One run's after_run with input "hello", context from two sources and answer "hi";
    the texts the provider then holds for the session."""
    async def go() -> list[str]:
        provider = side.make(**flags)
        session = AgentSession(session_id="s1")
        side.state = state_of(session, provider)
        ctx = SessionContext(session_id="s1",
                             input_messages=[Message(role="user", contents=["hello"])])
        ctx.extend_messages("rag", [Message(role="system", contents=["rag-context"])])
        ctx.extend_messages("other", [Message(role="system", contents=["other-context"])])
        await after(provider, session, ctx, [Message(role="assistant", contents=["hi"])])
        return [m.text for m in await side.load(provider, "s1")]

    return asyncio.run(go())


def test_after_run_stores_inputs_and_responses(side: Side) -> None:
    assert stored_after_one_run(side) == ["hello", "hi"]


def test_after_run_skips_inputs_when_disabled(side: Side) -> None:
    assert stored_after_one_run(side, store_inputs=False) == ["hi"]


def test_after_run_skips_responses_when_disabled(side: Side) -> None:
    assert stored_after_one_run(side, store_outputs=False) == ["hello"]


def test_after_run_stores_context_messages(side: Side) -> None:
    texts = stored_after_one_run(side, load_messages=False, store_context_messages=True)
    assert {"rag-context", "other-context", "hello", "hi"} <= set(texts)


def test_after_run_stores_context_from_specific_sources(side: Side) -> None:
    texts = stored_after_one_run(side, load_messages=False, store_context_messages=True,
                                 store_context_from={"rag"})
    assert "rag-context" in texts and "other-context" not in texts


def test_after_run_stores_coalesced_code_interpreter_chunks(side: Side) -> None:
    from agent_framework import AgentResponseUpdate

    chunks = [AgentResponseUpdate(role="assistant", contents=[
        Content.from_code_interpreter_tool_result(call_id="ci_123", outputs=[])])] + [
        AgentResponseUpdate(contents=[Content.from_code_interpreter_tool_call(
            call_id="ci_123", inputs=[Content.from_text(text=text)],
            additional_properties={"sequence_number": n})])
        for n, text in enumerate(["import", " pandas", "import pandas as pd"], start=1)]

    async def go() -> list[Message]:
        provider = side.make(store_inputs=False)
        session = AgentSession(session_id="s1")
        side.state = state_of(session, provider)
        ctx = SessionContext(session_id="s1",
                             input_messages=[Message(role="user", contents=["make a sheet"])])
        ctx._response = AgentResponse.from_updates(chunks)
        await provider.after_run(agent=None, session=session, context=ctx,
                                 state=state_of(session, provider))
        return await side.load(provider, "s1")

    stored = asyncio.run(go())
    # the chunks as this release coalesces them (1.0.0 keeps every chunk, 1.13's tests
    # expect the last chunk's text, 1.26 joins them): the response's one message,
    # stored as the release made it
    assert len(stored) == 1
    assert stored[0].to_dict() == AgentResponse.from_updates(chunks).messages[0].to_dict()
    calls = [c for c in stored[0].contents if c.type == "code_interpreter_tool_call"]
    assert calls and calls[-1].inputs is not None
    assert calls[-1].inputs[-1].text.endswith("import pandas as pd")


# ---------------------------------------------------------------------- in-memory / file
def test_empty_history_returns_no_messages(side: Side) -> None:
    async def go() -> None:
        provider = side.make()
        session = AgentSession(session_id="s1")
        ctx = SessionContext(session_id="s1", input_messages=[])
        await before(provider, session, ctx)
        assert ctx.context_messages.get(provider.source_id, []) == []
        assert await side.load(provider, "missing") == []

    asyncio.run(go())


def two_runs(side: Side, provider: Any, session: AgentSession) -> list[Message]:
    """Run 1 ("hello" -> "hi there"), then run 2's before_run; what run 2 loaded."""
    async def go() -> list[Message]:
        ctx1 = SessionContext(session_id=session.session_id,
                              input_messages=[Message(role="user", contents=["hello"])])
        await before(provider, session, ctx1)
        await after(provider, session, ctx1, [Message(role="assistant", contents=["hi there"])])
        ctx2 = SessionContext(session_id=session.session_id,
                              input_messages=[Message(role="user", contents=["again"])])
        await before(provider, session, ctx2)
        return list(ctx2.context_messages.get(provider.source_id, []))

    return asyncio.run(go())


def test_stores_and_loads_messages(side: Side) -> None:
    provider = side.make()
    session = AgentSession(session_id="s1")
    loaded = two_runs(side, provider, session)
    assert [m.text for m in loaded] == ["hello", "hi there"]
    payloads = records(side, provider, session)
    assert len(payloads) == 2
    assert all(p["type"] == "message" for p in payloads)
    assert all("session_id" not in p for p in payloads)


def test_session_state_is_serializable_and_restores_the_history(side: Side) -> None:
    provider = side.make()
    session = AgentSession(session_id="s1")
    two_runs(side, provider, session)
    text = json.dumps(session.to_dict())  # what an app keeps between requests
    restored = AgentSession.from_dict(json.loads(text))

    async def go() -> list[Message]:
        ctx = SessionContext(session_id=restored.session_id, input_messages=[])
        await before(provider, restored, ctx)
        return list(ctx.context_messages.get(provider.source_id, []))

    assert [m.text for m in asyncio.run(go())] == ["hello", "hi there"]


def test_source_id_attribution(side: Side) -> None:
    provider = side.make(source_id="custom-source")
    assert provider.source_id == "custom-source"
    session = AgentSession(session_id="s1")
    loaded = two_runs(side, provider, session)
    assert all(m.additional_properties["_attribution"]["source_id"] == "custom-source"
               for m in loaded)


@pytest.mark.parametrize("value", NON_FINITE, ids=["nan", "inf", "-inf"])
def test_preserves_non_finite_json_values(side: Side, value: float) -> None:
    async def go() -> list[Message]:
        provider = side.make()
        message = Message(role="user", contents=["hello"], additional_properties={"value": value})
        await side.save(provider, "non-finite", [message])
        return await side.load(provider, "non-finite")

    loaded = asyncio.run(go())
    assert loaded[0].text == "hello"
    assert same_float(loaded[0].additional_properties["value"], value)


@pytest.mark.parametrize("value", NON_FINITE, ids=["nan", "inf", "-inf"])
def test_non_finite_history_survives_the_sessions_own_round_trip(side: Side,
                                                                 value: float) -> None:
    """The session's state with such a value (``AgentSession.to_dict()``, as
    ``TestAgentSession`` checks it) and the history beside it both come back."""
    provider = side.make()
    session = AgentSession(session_id="float")
    session.state["value"] = value

    async def go(current: AgentSession) -> list[Message]:
        ctx = SessionContext(session_id="float", input_messages=[])
        await before(provider, current, ctx)
        return list(ctx.context_messages.get(provider.source_id, []))

    async def first_run() -> None:
        ctx = SessionContext(session_id="float", input_messages=[Message(
            role="user", contents=["how far?"], additional_properties={"limit": value})])
        await before(provider, session, ctx)
        await after(provider, session, ctx, [Message(role="assistant", contents=[
            Content.from_function_call("c1", "measure", arguments={"x": value})])])

    asyncio.run(first_run())
    restored = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))
    assert same_float(restored.state["value"], value)
    loaded = asyncio.run(go(restored))
    assert same_float(loaded[0].additional_properties["limit"], value)
    assert same_float(loaded[1].contents[0].arguments["x"], value)


def test_messages_round_trip_exactly_in_order(side: Side) -> None:
    """Ids, authors, properties and every content kind come back as saved, in order,
    over several saves (the framework adds no timestamp of its own; nor do we)."""
    def batch(n: int) -> list[Message]:
        return [
            Message(role="user", contents=[f"q{n}"], message_id=f"u-{n}", author_name="ann",
                    additional_properties={"created_at": f"2026-01-0{n}T00:00:00Z"}),
            Message(role="assistant", message_id=f"a-{n}", contents=[
                Content.from_function_call(f"c{n}", "lookup", arguments={"q": n})]),
            Message(role="tool", contents=[Content.from_function_result(f"c{n}", result="42")]),
            Message(role="assistant", contents=[Content.from_text(f"answer {n}"), Content.from_uri(
                "https://example.invalid/p.png", media_type="image/png")]),
        ]

    saved = [batch(n) for n in (1, 2, 3)]

    async def go() -> list[Message]:
        provider = side.make()
        for messages in saved:
            await side.save(provider, "s1", messages)
        return await side.load(provider, "s1")

    loaded = asyncio.run(go())
    assert [m.to_dict() for m in loaded] == [m.to_dict() for b in saved for m in b]


def test_unsafe_session_id_is_its_own_history(side: Side) -> None:
    async def go() -> tuple[list[Message], list[Message]]:
        provider = side.make()
        await side.save(provider, "../unsafe/session", [Message(role="user", contents=["hello"])])
        return (await side.load(provider, "../unsafe/session"),
                await side.load(provider, "unsafe") if side.kind != "in_memory" else [])

    mine, other = asyncio.run(go())
    assert [m.text for m in mine] == ["hello"] and other == []
    if side.kind == "anneal":
        assert [i.metadata["session_id"] for i in side.store.items(COLLECTION).list()] == [
            "../unsafe/session"]


def test_none_session_id_uses_the_default_history(side: Side) -> None:
    async def go() -> tuple[list[Message], list[Message]]:
        provider = side.make()
        await side.save(provider, None, [Message(role="user", contents=["hello"])])
        return await side.load(provider, None), await side.load(provider, "default")

    by_none, by_name = asyncio.run(go())
    assert [m.text for m in by_none] == ["hello"]
    assert [m.text for m in by_name] == ["hello"]  # the file provider's default.jsonl


def test_skip_excluded_omits_excluded_messages(side: Side) -> None:
    async def go() -> tuple[list[Message], list[Message]]:
        skipping, keeping = side.make(skip_excluded=True), side.make()
        await side.save(skipping, "skip-excluded", [
            Message(role="user", contents=["keep"]),
            Message(role="assistant", contents=["skip"], additional_properties={"_excluded": True}),
        ])
        return (await side.load(skipping, "skip-excluded"),
                await side.load(keeping, "skip-excluded"))

    skipped, kept = asyncio.run(go())
    assert [m.text for m in skipped] == ["keep"]
    assert [m.text for m in kept] == ["keep", "skip"]  # stored all the same


def test_concurrent_saves_to_one_session_do_not_interleave(side: Side) -> None:
    """Two saves of three messages each, from two threads at once: each save's messages
    stay together and in order (the file provider locks its file; ours is one
    transaction)."""
    provider = side.make()
    lock = threading.Barrier(2)

    def save(tag: str) -> None:
        lock.wait()
        asyncio.run(side.save(provider, "shared", [
            Message(role="user", contents=[f"{tag}{n}"]) for n in range(3)]))

    threads = [threading.Thread(target=save, args=(tag,)) for tag in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = [m.text for m in asyncio.run(side.load(provider, "shared"))]
    assert sorted(texts) == ["a0", "a1", "a2", "b0", "b1", "b2"]
    assert texts in (["a0", "a1", "a2", "b0", "b1", "b2"], ["b0", "b1", "b2", "a0", "a1", "a2"])


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "in_memory"])
def test_a_record_that_is_not_a_message_is_refused(kind: str, tmp_path: Path,
                                                    mem_store: Store) -> None:
    """A stored record that is no message payload raises a ``ValueError`` (ours: a
    ``ValidationError``, one) naming it; nothing is half-loaded."""
    side = Side(kind, tmp_path, mem_store)
    provider = side.make()
    asyncio.run(side.save(provider, "broken", [Message(role="user", contents=["fine"])]))
    if kind == "anneal":
        mem_store.items(COLLECTION).put("broken/99999999999999999999-bad", [1, 2, 3],
                                        metadata={"session_id": "broken", "role": "user"})
    else:
        with provider._session_file_path("broken").open("a", encoding="utf-8") as fh:
            fh.write("[1, 2, 3]\n")
    with pytest.raises(ValueError, match="not .*(mapping|message)|did not deserialize"):
        asyncio.run(side.load(provider, "broken"))
