"""The Agent Framework adapter on the framework's real loop (``Agent.run``): where memory
goes in the model's input, what is recorded, the wrap, failures, and the history provider
against the framework's own ``InMemoryHistoryProvider`` (its reference)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import warnings
from pathlib import Path
from typing import Any

import agent_framework
import pytest
from agent_framework import Agent, AgentSession, InMemoryHistoryProvider, Message
from maf_scripted import ScriptedClient, lookup

from anneal_memory import Store
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.agent_framework import (
    COLLECTION,
    LOGGER_NAME,
    AnnealContextProvider,
    AnnealHistoryProvider,
    RunContext,
)

ALICE = {"user": "alice"}


def agent_with(providers: list[Any], client: ScriptedClient, **options: Any) -> Agent:
    return Agent(client, "You are a test agent.", tools=[lookup], context_providers=providers,
                 **options)


def run(agent: Agent, text: str, session: AgentSession | None = None, user: str = "alice",
        **kwargs: Any) -> Any:
    return asyncio.run(agent.run(text, session=session, options={"user": user}, **kwargs))


def shape(messages: list[Message]) -> list[tuple[str, tuple[str, ...], str]]:
    """What a message is, as the model sees it: role, content types, text."""
    return [(str(m.role), tuple(c.type for c in m.contents), m.text or "") for m in messages]


def test_memory_is_one_labelled_user_message_before_the_history(mem_store: Store) -> None:
    memory = AnnealContextProvider(mem_store)
    session = AgentSession(session_id="s1")
    run(agent_with([memory, memory.history_provider()], ScriptedClient()),
        "Remember that the heater is a Zephyrion 4000", session)
    client = ScriptedClient()
    run(agent_with([memory, memory.history_provider()], client), "Which heater?", session)
    first, *history, last = client.messages[0]
    assert str(first.role) == "user" and first.text.startswith(MEMORY_LABEL)
    assert "Zephyrion" in first.text
    assert [m.text for m in history] == ["Remember that the heater is a Zephyrion 4000",
                                         "Done: noted."]
    assert last.text == "Which heater?"
    # never the agent's instructions (system authority): they are the agent's own only
    assert client.inputs[0].splitlines()[0] == "You are a test agent."
    assert "Zephyrion" not in client.inputs[0].split(first.text)[0]


def test_memory_role_system(mem_store: Store) -> None:
    mem_store.scoped(ALICE).record("The heater is a Zephyrion 4000", "observation")
    client = ScriptedClient()
    run(agent_with([AnnealContextProvider(mem_store, memory_role="system")], client),
        "Which heater?")
    assert str(client.messages[0][0].role) == "system"
    assert MEMORY_LABEL in client.messages[0][0].text


def test_episodes_carry_type_trust_and_the_session(mem_store: Store) -> None:
    memory = AnnealContextProvider(mem_store)
    run(agent_with([memory], ScriptedClient(call_tool=True)), "Look up the pump pressure",
        AgentSession(session_id="s-7"))
    episodes = {e.type.value + "/" + e.trust: e
                for e in mem_store.scoped(ALICE).recall(limit=100).episodes}
    assert set(episodes) == {"context/agent", "observation/tool", "outcome/agent"}
    tool = episodes["observation/tool"]
    assert "toolresult" in tool.content and tool.metadata["tool"] == "lookup"
    assert "pump pressure" in tool.metadata["arguments"]
    assert all(e.metadata.get("maf_session_id") == "s-7" for e in episodes.values())
    assert mem_store.recall(limit=100).episodes == mem_store.scoped(ALICE).recall(
        limit=100).episodes  # nothing outside alice's memory


def test_record_options(mem_store: Store) -> None:
    memory = AnnealContextProvider(mem_store, record_tools=False, record_outcome=False)
    run(agent_with([memory], ScriptedClient(call_tool=True)), "Look up the pump pressure")
    kinds = [e.type.value for e in mem_store.scoped(ALICE).recall(limit=100).episodes]
    assert kinds == ["context"]


def test_streaming_run_records_and_recalls(mem_store: Store) -> None:
    mem_store.scoped(ALICE).record("The heater is a Zephyrion 4000", "observation")
    memory = AnnealContextProvider(mem_store)
    client = ScriptedClient(answer="It is the Zephyrion.")

    async def streamed() -> str:
        stream = agent_with([memory], client).run("Which heater?", stream=True,
                                                  options={"user": "alice"})
        async for _ in stream:
            pass
        return (await stream.get_final_response()).text

    assert asyncio.run(streamed()) == "It is the Zephyrion."
    assert "Zephyrion 4000" in client.inputs[0]
    outcomes = [e.content for e in mem_store.scoped(ALICE).recall(limit=100).episodes
                if e.type.value == "outcome"]
    assert outcomes == ["It is the Zephyrion."]


def test_wrap_on_end_and_explicit_wrap_use_the_agents_client(mem_store: Store) -> None:
    memory = AnnealContextProvider(mem_store, wrap_on_end=True)
    run(agent_with([memory], ScriptedClient()), "Decide to water at dawn")
    assert mem_store.scoped(ALICE).status().total_wraps == 1
    later = AnnealContextProvider(mem_store)
    run(agent_with([later], ScriptedClient()), "Decide to prune in March", user="bob")
    bob = mem_store.scoped({"user": "bob"})
    assert bob.load_continuity() is None
    outcome = asyncio.run(later.awrap(context=RunContext(options={"user": "bob"})))
    assert outcome.saved, outcome.message
    assert "prune" in (bob.load_continuity() or "")
    assert mem_store.scoped(ALICE).status().total_wraps == 1


def test_failing_compress_keeps_episodes(mem_store: Store) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("model down")

    memory = AnnealContextProvider(mem_store, compress=broken, wrap_on_end=True)
    out = run(agent_with([memory], ScriptedClient()), "Decide to water at dawn")
    assert out.text == "Done: noted."
    alice = mem_store.scoped(ALICE)
    assert alice.load_continuity() is None and len(alice.recall(limit=100).episodes) == 2


def test_broken_store_is_logged_and_the_run_goes_on(tmp_path: Path, caplog: Any) -> None:
    store = Store(tmp_path / "broken.db")
    memory = AnnealContextProvider(store)
    history = memory.history_provider()
    store.close()
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        out = run(agent_with([memory, history], ScriptedClient(call_tool=True)), "Keep going",
                  AgentSession(session_id="s1"))
    assert out.text == "Done: noted."
    assert any(r.name.startswith(LOGGER_NAME) for r in caplog.records), caplog.records


def test_fixed_namespace_and_a_callable_of_the_session(mem_store: Store) -> None:
    fixed = AnnealContextProvider(mem_store, namespace={"user": "carol"})
    run(agent_with([fixed], ScriptedClient()), "Carol's note Amaranth", user="mallory")
    assert "Amaranth" in " ".join(
        e.content for e in mem_store.scoped({"user": "carol"}).recall(limit=100).episodes)
    by_session = AnnealContextProvider(mem_store, namespace=lambda r: {"user": r.session_id})
    run(agent_with([by_session], ScriptedClient()), "Dave's note Celadon",
        AgentSession(session_id="dave"))
    assert "Celadon" in " ".join(
        e.content for e in mem_store.scoped({"user": "dave"}).recall(limit=100).episodes)


# ---------------------------------------------------------------------- the history
def two_runs(providers: list[Any]) -> tuple[list[list[Message]], AgentSession]:
    """One tool run and one text run on one session; what the model received per call."""
    session = AgentSession(session_id="conv-1")
    first, second = ScriptedClient(call_tool=True), ScriptedClient(answer="42 psi.")
    run(agent_with(providers, first), "Look up the pump pressure", session)
    run(agent_with(providers, second), "And what was it?", session)
    return first.messages + second.messages, session


def test_history_behaves_as_the_frameworks_in_memory_history(mem_store: Store) -> None:
    reference, ref_session = two_runs([InMemoryHistoryProvider()])
    ours, session = two_runs([AnnealHistoryProvider(mem_store)])
    assert [shape(m) for m in ours] == [shape(m) for m in reference]
    assert len(ours[-1]) == 5  # four messages of the first run, then the new input
    stored = asyncio.run(AnnealHistoryProvider(mem_store).get_messages(
        "conv-1", namespace=ALICE))
    assert shape(stored) == shape(ref_session.state["in_memory"]["messages"])
    assert "in_memory" not in session.state  # the agent added no history of its own


def measure(limit: float) -> float:
    """Measure against a limit."""
    return limit * 2


def nan_runs(providers: list[Any], value: float) -> tuple[list[str], AgentSession]:
    """A tool run whose call carries ``value`` and whose answer holds it in its
    properties, then a second run; the second model call's messages as JSON text
    (NaN written as ``NaN``: comparable), without the provider's attribution and the
    call ids the framework draws per run."""
    session = AgentSession(session_id="conv-nan")
    first = ScriptedClient(call_tool=True, tool=("measure", {"limit": value}),
                           properties={"score": value})
    second = ScriptedClient()
    for client, text in ((first, "Measure it"), (second, "And?")):
        agent = Agent(client, "You are a test agent.", tools=[measure],
                      context_providers=providers)
        asyncio.run(agent.run(text, session=session, options={"user": "alice"}))
    seen = []
    for message in second.messages[0]:
        if (message.text or "").startswith(MEMORY_LABEL):
            continue  # our memory's message: not history
        data = message.to_dict()
        data.get("additional_properties", {}).pop("_attribution", None)
        for content in data["contents"]:
            content.pop("id", None)  # the framework draws a fresh one per call
        seen.append(json.dumps(data, sort_keys=True))
    return seen, session


def reference_history(tmp_path: Path) -> Any:
    """The framework's file history provider where this release has it, else its
    in-memory one (1.0.0)."""
    file_provider = getattr(agent_framework, "FileHistoryProvider", None)
    if file_provider is None:
        return InMemoryHistoryProvider()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return file_provider(tmp_path / "reference")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_non_finite_values_round_trip_through_the_real_loop(mem_store: Store, tmp_path: Path,
                                                            value: float) -> None:
    """A tool call and an answer holding NaN / an infinity are stored, reloaded into the
    next run and given to the model exactly as the framework's own file provider does
    (save_messages used to refuse: "Out of range float values are not JSON compliant");
    the session still serialises; the memory records the run."""
    reference, _ = nan_runs([reference_history(tmp_path)], value)
    memory = AnnealContextProvider(mem_store)
    ours, session = nan_runs([memory, memory.history_provider()], value)
    assert ours == reference
    assert len(ours) == 5 and "Measure it" in ours[0] and "And?" in ours[-1]
    stored = asyncio.run(memory.history_provider().get_messages("conv-nan", namespace=ALICE))
    args = stored[1].contents[0].arguments
    restored = args["limit"] if isinstance(args, dict) else json.loads(args)["limit"]
    assert math.isnan(restored) if math.isnan(value) else restored == value
    score = stored[3].additional_properties["score"]
    assert math.isnan(score) if math.isnan(value) else score == value
    again = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))
    assert again.session_id == "conv-nan"
    kinds = {e.type.value + "/" + e.trust for e in mem_store.scoped(ALICE).recall(limit=100).episodes}
    assert {"observation/tool", "outcome/agent"} <= kinds


def test_history_lives_in_the_database(tmp_path: Path) -> None:
    with Store(tmp_path / "memory.db") as store:
        _, session = two_runs([AnnealHistoryProvider(store)])
        saved = session.to_dict()
    with Store(tmp_path / "memory.db") as store:  # a new process, the same database
        client = ScriptedClient()
        run(agent_with([AnnealHistoryProvider(store)], client), "Anything else?",
            AgentSession.from_dict(saved))
        assert [m.text for m in client.messages[0] if m.text][:2] == [
            "Look up the pump pressure", "Done: noted."]
        items = store.scoped(ALICE).items(COLLECTION).list()
        assert len(items) == 8 and {i.metadata["session_id"] for i in items} == {"conv-1"}
        assert store.items(COLLECTION).list() == []  # nothing outside alice's namespace


def test_one_session_id_two_users_two_histories(mem_store: Store) -> None:
    history = AnnealHistoryProvider(mem_store)
    run(agent_with([history], ScriptedClient()), "Alice's secret Quasar",
        AgentSession(session_id="s1"))
    client = ScriptedClient()
    run(agent_with([history], client), "What did I say?", AgentSession(session_id="s1"),
        user="bob")
    assert "Quasar" not in "\n".join(client.inputs)
    assert len(client.messages[0]) == 1


def test_history_per_model_call_persistence(mem_store: Store) -> None:
    """``require_per_service_call_history_persistence``: the framework drives the history
    provider once per model call, with contexts that carry no run options; the run's user
    is still the one the context provider resolved."""
    memory = AnnealContextProvider(mem_store)
    agent = agent_with([memory, memory.history_provider()], ScriptedClient(call_tool=True),
                       require_per_service_call_history_persistence=True)
    run(agent, "Look up the pump pressure", AgentSession(session_id="s1"))
    items = mem_store.scoped(ALICE).items(COLLECTION).list()
    assert [i.metadata["role"] for i in items] == ["user", "assistant", "tool", "assistant"]
    assert mem_store.items(COLLECTION).list() == []


def test_history_max_messages_clear_and_direct_calls(mem_store: Store) -> None:
    history = AnnealHistoryProvider(mem_store, max_messages=3)
    messages = [Message(role="user", contents=[f"m{i}"]) for i in range(5)]
    asyncio.run(history.save_messages("s1", messages, namespace=ALICE))
    loaded = asyncio.run(history.get_messages("s1", namespace=ALICE))
    assert [m.text for m in loaded] == ["m2", "m3", "m4"]
    assert asyncio.run(history.get_messages("s1", namespace={"user": "bob"})) == []
    assert asyncio.run(history.clear("s1", namespace=ALICE)) == 3
    assert asyncio.run(history.get_messages("s1", namespace=ALICE)) == []


def test_a_failing_namespace_callable_writes_nothing_and_the_run_goes_on(
        mem_store: Store, caplog: Any) -> None:
    memory = AnnealContextProvider(mem_store, namespace=lambda run: {"user": run.options["uid"]})
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        out = run(agent_with([memory, memory.history_provider()], ScriptedClient()),
                  "Alice's note Vermilion", AgentSession(session_id="s1"))
    assert out.text == "Done: noted."
    assert mem_store.recall(limit=100).episodes == []
    assert mem_store.items(COLLECTION).list() == []
    assert any("no memory for this run" in r.getMessage() for r in caplog.records)


def test_missing_framework_names_the_extra() -> None:
    import subprocess
    import sys

    code = ("import sys; sys.modules['agent_framework'] = None\n"
            "from anneal_memory.errors import MissingExtraError\n"
            "try:\n    import anneal_memory.adapters.agent_framework\n"
            "except MissingExtraError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert "pip install 'anneal-memory[agent-framework]'" in done.stdout, done.stderr


@pytest.mark.parametrize("user", [None, "", "\u200b", "default"],
                         ids=["none", "empty", "invisible", "reserved"])
def test_a_callable_naming_no_user_never_reaches_the_shared_memory(
        mem_store: Store, caplog: Any, user: Any) -> None:
    """``{"tenant": t, "user": run.user}`` for a run with no user (issue 52): refused by the
    identity rule, so nothing is written and the tenant's shared memory is not read."""
    mem_store.scoped({"tenant": "acme"}).record("the tenant's shared secret Vermilion", "observation")
    memory = AnnealContextProvider(mem_store, namespace=lambda run: {"tenant": "acme",
                                                                      "user": user})
    client = ScriptedClient()
    from anneal_memory.errors import IdentityError

    with pytest.raises(IdentityError, match="user"):
        run(agent_with([memory], client), "What is the secret?", AgentSession(session_id="s1"))
    assert [e.content for e in mem_store.recall(limit=100).episodes] == [
        "the tenant's shared secret Vermilion"]
    assert not any("Vermilion" in text for text in client.inputs)
