"""AnnealMiddleware behaviour specific to create_agent: ephemeral injection, async, wrap."""

from __future__ import annotations

import asyncio
import logging

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_scripted import read_gauge, scripted

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealMiddleware
from anneal_memory.testing import scripted_compress

ASK = {"messages": [{"role": "user", "content": "What pressure does the pump gauge show?"}]}


def _seed(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline last spring", "observation")


def test_memory_reaches_model_but_not_saved_state(store: Store) -> None:
    _seed(store)
    model = scripted("It reads 42 psi.", call_tool=True)
    agent = create_agent(model, tools=[read_gauge], system_prompt="You are the garden agent.",
                         middleware=[AnnealMiddleware(store)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke(ASK, config)
    # every model call saw the agent's own system prompt and the recalled episode
    assert len(model.seen) == 2
    assert all("You are the garden agent." in s and "Ottoline" in s for s in model.seen)
    saved = agent.get_state(config).values["messages"]
    assert not any(isinstance(m, SystemMessage) for m in saved)
    assert not any("Ottoline" in m.text for m in saved)


def test_records_types_trust_and_steps(store: Store) -> None:
    agent = create_agent(scripted("It reads 42 psi.", call_tool=True), tools=[read_gauge],
                         middleware=[AnnealMiddleware(store)])
    agent.invoke(ASK)
    episodes = store.recall(limit=100).episodes
    by_type = {(e.type.value, e.trust) for e in episodes}
    assert ("context", "agent") in by_type          # the request
    assert ("observation", "tool") in by_type       # the gauge reading
    assert ("outcome", "agent") in by_type          # the answer
    assert any("Checking the gauge first." == e.content for e in episodes)  # model step
    tool_ep = next(e for e in episodes if e.trust == "tool")
    assert "42 psi" in tool_ep.content


def test_options_turn_recording_off(store: Store) -> None:
    memory = AnnealMiddleware(store, record_tools=False, record_steps=False)
    agent = create_agent(scripted("ok", call_tool=True), tools=[read_gauge], middleware=[memory])
    agent.invoke(ASK)
    assert not [e for e in store.recall(limit=100).episodes if e.trust == "tool"]
    assert not [e for e in store.recall(limit=100).episodes if e.content == "Checking the gauge first."]


def test_async_run_injects_records_and_wraps(store: Store) -> None:
    _seed(store)
    model = scripted("It reads 42 psi.", call_tool=True)
    memory = AnnealMiddleware(store, wrap_on_end=True)
    agent = create_agent(model, tools=[read_gauge], middleware=[memory])
    result = asyncio.run(agent.ainvoke(ASK))
    assert result["messages"][-1].text == "It reads 42 psi."
    assert "Ottoline" in model.seen[0]
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status == "saved"
    assert "## State" in (store.load_continuity() or "")
    # the wrap prompt went to the agent's own model, and its reply is not in the thread
    assert not any(isinstance(m, AIMessage) and "## State" in m.text for m in result["messages"])


def test_explicit_wrap_uses_agent_model_and_next_run_sees_continuity(store: Store) -> None:
    memory = AnnealMiddleware(store)
    model = scripted("Noted.")
    create_agent(model, tools=[], middleware=[memory]).invoke(
        {"messages": [{"role": "user", "content": "We decided to mulch the beds in May"}]})
    assert store.load_continuity() is None  # wrap_on_end defaults to False
    outcome = memory.wrap()
    assert outcome.status == "saved"
    nxt = scripted("Sure.")
    create_agent(nxt, tools=[], middleware=[AnnealMiddleware(store)]).invoke(
        {"messages": [{"role": "user", "content": "hello again"}]})
    assert "## State" in nxt.seen[0]


def test_failing_compress_keeps_episodes(store: Store) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    memory = AnnealMiddleware(store, wrap_on_end=True, compress=broken)
    create_agent(scripted("Noted."), tools=[], middleware=[memory]).invoke(ASK)
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status == "failed"
    assert store.load_continuity() is None
    assert store.status().episodes_since_wrap >= 2
    assert memory.wrap(compress=scripted_compress).status == "saved"


def test_broken_store_logs_and_run_goes_on(tmp_path, caplog) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.langgraph"):
        agent = create_agent(scripted("Still fine.", call_tool=True), tools=[read_gauge],
                             middleware=[AnnealMiddleware(broken, wrap_on_end=True)])
        out = asyncio.run(agent.ainvoke(ASK))
    assert out["messages"][-1].text == "Still fine."
    assert any(r.name == "anneal_memory.adapters.langgraph" for r in caplog.records)



# ---------------------------------------------------------------------- many users
from dataclasses import dataclass  # noqa: E402

import pytest  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402

from anneal_memory.adapters import MEMORY_LABEL  # noqa: E402
from anneal_memory.adapters.langgraph import AnnealStore  # noqa: E402


@dataclass
class Ctx:
    user_id: str


def _ask(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


class Seen(type(scripted("x"))):  # the scripted model, keeping the messages themselves
    calls: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        type(self).calls.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_memory_is_a_labelled_user_message_before_the_request(store: Store) -> None:
    _seed(store)
    Seen.calls = []
    model = Seen(messages=iter([AIMessage(content="ok")]))
    create_agent(model, tools=[], system_prompt="Rules.",
                 middleware=[AnnealMiddleware(store)]).invoke(ASK)
    messages = Seen.calls[0]
    assert messages[0].type == "system" and "Ottoline" not in messages[0].text
    memory, request = messages[-2:]
    assert isinstance(memory, HumanMessage) and memory.text.startswith(MEMORY_LABEL)
    assert "Ottoline" in memory.text and request.text == ASK["messages"][0]["content"]


def test_memory_role_system_appends_to_the_system_message(store: Store) -> None:
    _seed(store)
    Seen.calls = []
    model = Seen(messages=iter([AIMessage(content="ok")]))
    create_agent(model, tools=[], system_prompt="Rules.",
                 middleware=[AnnealMiddleware(store, memory_role="system")]).invoke(ASK)
    messages = Seen.calls[0]
    assert messages[0].text.startswith("Rules.") and "Ottoline" in messages[0].text
    assert [m.type for m in messages[1:]] == ["human"]


def _two_users(make_agent, invoke) -> tuple[list[str], list[str]]:
    first = scripted("Noted.")
    invoke(make_agent(first), "My shed padlock code is 5150", "ann")
    bob = scripted("I cannot say.")
    invoke(make_agent(bob), "What is my shed padlock code?", "ben")
    ann = scripted("It is 5150.")
    invoke(make_agent(ann), "What is my shed padlock code?", "ann")
    return bob.seen, ann.seen


def test_identity_from_the_runtime_context(store: Store) -> None:
    memory = AnnealMiddleware(store)
    bob, ann = _two_users(
        lambda m: create_agent(m, tools=[], middleware=[memory], context_schema=Ctx),
        lambda agent, text, user: agent.invoke(_ask(text), context=Ctx(user_id=user)))
    assert "5150" not in "\n".join(bob) and "padlock code is 5150" in "\n".join(ann)
    assert not store.scoped({"user": "ben"}).recall(keyword="5150").episodes


def test_identity_from_the_configurable(store: Store) -> None:
    memory = AnnealMiddleware(store)
    bob, ann = _two_users(
        lambda m: create_agent(m, tools=[], middleware=[memory]),
        lambda agent, text, user: agent.invoke(
            _ask(text), {"configurable": {"user_id": user, "thread_id": f"t-{user}"}}))
    assert "5150" not in "\n".join(bob) and "padlock code is 5150" in "\n".join(ann)
    episode = store.scoped({"user": "ann"}).recall(keyword="5150").episodes[0]
    assert episode.metadata["thread_id"] == "t-ann"


def test_identity_from_a_namespace_tuple_and_a_callable(store: Store) -> None:
    by_tuple = AnnealMiddleware(store, namespace=("tenants", "{org}", "users", "{user_id}"))
    agent = create_agent(scripted("ok"), tools=[], middleware=[by_tuple])
    agent.invoke(_ask("Our hedge is privet"), {"configurable": {"org": "acme", "user_id": "cy"}})
    assert store.scoped({"tenant": "acme", "user": "cy"}).recall(keyword="privet").episodes
    by_callable = AnnealMiddleware(store, namespace=lambda runtime: {
        "user": runtime.context.user_id, "agent": "gardener"})
    agent = create_agent(scripted("ok"), tools=[], middleware=[by_callable], context_schema=Ctx)
    agent.invoke(_ask("Our lawn is fescue"), context=Ctx(user_id="di"))
    assert store.scoped({"user": "di", "agent": "gardener"}).recall(keyword="fescue").episodes


def test_a_run_without_its_template_value_gets_no_memory(store: Store, caplog) -> None:
    memory = AnnealMiddleware(store, namespace=("users", "{user_id}"))
    model = scripted("ok")
    with caplog.at_level(logging.WARNING):
        out = create_agent(model, tools=[], middleware=[memory]).invoke(_ask("Prune the yew"))
    assert out["messages"][-1].text == "ok"
    assert store.recall(limit=10).episodes == []  # nobody's memory, not everyone's
    assert "user_id" in caplog.text


def test_store_items_are_not_recalled_into_another_users_run(store: Store) -> None:
    lg = AnnealStore(store)
    lg.put(("users", "ann", "notes"), "alarm", {"text": "the alarm code is 4455"})
    memory = AnnealMiddleware(store)
    model = scripted("I cannot say.")
    create_agent(model, tools=[], middleware=[memory], store=lg, context_schema=Ctx).invoke(
        _ask("What is the alarm code?"), context=Ctx(user_id="ben"))
    assert "4455" not in "\n".join(model.seen)


def test_explicit_wrap_names_the_memory(store: Store) -> None:
    memory = AnnealMiddleware(store)
    create_agent(scripted("Noted."), tools=[], middleware=[memory], context_schema=Ctx).invoke(
        _ask("Decide to net the brassicas"), context=Ctx(user_id="ed"))
    assert memory.wrap(namespace={"user": "ed"}).saved
    assert "brassicas" in store.scoped({"user": "ed"}).load_continuity()
    assert store.load_continuity() is None
    outcome = asyncio.run(memory.awrap(namespace={"user": "ed"}))
    assert outcome.status == "empty"


def test_bad_options_raise_at_construction(store: Store) -> None:
    from anneal_memory.errors import ValidationError

    with pytest.raises(ValidationError, match="memory_role"):
        AnnealMiddleware(store, memory_role="assistant")
    with pytest.raises(ValidationError, match="namespace"):
        AnnealMiddleware(store, namespace=42)


def test_embedder_option_recalls_by_meaning_per_user(tmp_path) -> None:
    """``embedder=`` (a shared MemoryOptions field) with a store path: the run's memory
    block holds what shares no word with the request, and only the run's user's."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from anneal_memory.adapters import MemoryOptions
    from anneal_memory.errors import EmbedderError
    from anneal_memory.testing import HashingEmbedder

    shared = MemoryOptions(embedder=HashingEmbedder(aliases={"living": "job", "nurse": "job"}))
    memory = AnnealMiddleware(tmp_path / "m.db", options=shared)
    store = memory.base_session.store
    store.scoped({"user": "ann"}).record("I started as a nurse at the county hospital",
                                         "observation")
    store.scoped({"user": "ben"}).record("ben was a nurse once", "observation")
    model = scripted("A nurse.")
    create_agent(model, tools=[], middleware=[memory]).invoke(
        _ask("what does she do for a living"), {"configurable": {"user_id": "ann"}})
    seen = "\n".join(model.seen)
    assert "county hospital" in seen and "ben was" not in seen
    memory.close()
    # LangChain's own fake embeddings plug in unchanged; an open Store must already have it
    fake = DeterministicFakeEmbedding(size=16)
    with Store(tmp_path / "own.db", embedder=fake) as own:
        assert AnnealMiddleware(own, embedder=fake).base_session.store.embedder.dims in (None, 16)
        with pytest.raises(EmbedderError, match="embeds with"):
            AnnealMiddleware(own, embedder=DeterministicFakeEmbedding(size=8))
    with Store(tmp_path / "plain.db") as plain, pytest.raises(EmbedderError):
        AnnealMiddleware(plain, embedder=fake)


@pytest.mark.parametrize("user", [None, "", "\u200b", "default"],
                         ids=["none", "empty", "invisible", "reserved"])
def test_a_callable_naming_no_user_never_reaches_the_shared_memory(store: Store,
                                                                    user: object) -> None:
    """``{"tenant": t, "user": ctx.user_id}`` for a run with no user (issue 52): never the
    tenant's shared memory (refused, or the run gets no memory), and nothing written."""
    store.scoped({"tenant": "acme"}).record("the tenant's code is Vermilion", "observation")
    memory = AnnealMiddleware(store, namespace=lambda runtime: {"tenant": "acme", "user": user})
    model = scripted("ok")
    agent = create_agent(model, tools=[], middleware=[memory], context_schema=Ctx)
    try:
        agent.invoke(_ask("What is the code?"), context=Ctx(user_id="ignored"))
    except Exception as exc:  # refused outright: the identity rule's error
        assert "IdentityError" in repr(exc) or "user" in str(exc), exc
    assert not any("Vermilion" in s for s in model.seen)
    assert [e.content for e in store.recall(limit=100).episodes] == [
        "the tenant's code is Vermilion"]
