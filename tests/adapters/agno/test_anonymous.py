"""The anonymous policy (``anonymous=``) through Agno's real agent loop: a run with no
user (``user_id`` None, ``""``, which Agno turns into None before any hook, or Agno's
``"default"``) uses the shared memory, is refused before the model, or runs without
memory."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agno.agent import Agent
from agno.memory import UserMemory
from agno.run.base import RunStatus
from agno_scripted import ScriptedModel

from anneal_memory import Store, ValidationError
from anneal_memory.adapters import MemoryOptions
from anneal_memory.adapters.agno import AgnoIdentityError, AnnealMemory
from anneal_memory.errors import IdentityError

SECRET = "The vault code is Orchid-5521"


def _agent(memory: AnnealMemory, model: ScriptedModel, *, asynchronous: bool = False,
           **options: Any) -> Agent:
    pre, post = ((memory.apre_hook, memory.apost_hook) if asynchronous
                 else (memory.pre_hook, memory.post_hook))
    return Agent(model=model, memory_manager=memory, pre_hooks=[pre], post_hooks=[post],
                 telemetry=False, **options)


def _all(store: Store) -> list[str]:
    return [e.content for e in store.recall(limit=1000).episodes]


@pytest.mark.parametrize("user_id", [None, "", "default"])
def test_shared_is_the_default_a_run_without_user_uses_the_shared_memory(
        mem_store: Store, user_id: str | None) -> None:
    mem_store.record(SECRET, "observation")
    memory = AnnealMemory(mem_store)
    assert memory.anonymous == "shared"
    scripted = ScriptedModel()
    out = _agent(memory, scripted).run("What is the vault code?", user_id=user_id)
    assert out.status == RunStatus.completed
    assert "Orchid-5521" in scripted.inputs[0]
    assert "What is the vault code?" in _all(mem_store)


@pytest.mark.parametrize("user_id", [None, "", "default"])
def test_refuse_stops_a_run_without_user_before_the_model(mem_store: Store,
                                                          user_id: str | None) -> None:
    mem_store.record(SECRET, "observation")
    memory = AnnealMemory(mem_store, anonymous="refuse")
    scripted = ScriptedModel()
    out = _agent(memory, scripted, update_memory_on_run=True).run(
        "What is the vault code?", user_id=user_id)
    assert out.status == RunStatus.error
    assert "anonymous='refuse'" in str(out.content) and "Agno's user_id" in str(out.content)
    assert scripted.inputs == [] and _all(mem_store) == [SECRET]
    # a run with its user goes on, on that user's memory only
    scripted = ScriptedModel()
    out = _agent(memory, scripted).run("What is the vault code?", user_id="ann")
    assert out.status == RunStatus.completed and "Orchid" not in scripted.inputs[0]
    assert sorted(_all(mem_store.scoped({"user": "ann"}))) == ["Done: noted.",
                                                        "What is the vault code?"]


def test_refuse_under_arun_and_for_a_team(mem_store: Store) -> None:
    from agno.team import Team

    memory = AnnealMemory(mem_store, options=MemoryOptions(anonymous="refuse"))
    scripted = ScriptedModel()
    out = asyncio.run(_agent(memory, scripted, asynchronous=True).arun("Hello"))
    assert out.status == RunStatus.error and scripted.inputs == []
    member = Agent(model=ScriptedModel(), id="helper", name="helper", telemetry=False)
    refused = ScriptedModel()
    team = Team(members=[member], model=refused, memory_manager=memory,
                pre_hooks=[memory.pre_hook], post_hooks=[memory.post_hook], telemetry=False)
    assert team.run("Hello").status == RunStatus.error and refused.inputs == []
    assert _all(mem_store) == []


def test_refuse_outside_a_run_refuses_the_memory_manager_calls(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, anonymous="refuse")
    with pytest.raises(IdentityError, match="anonymous='refuse'"):
        memory.add_user_memory(UserMemory(memory=SECRET))
    with pytest.raises(IdentityError):
        memory.get_user_memories()
    with pytest.raises(IdentityError):
        memory.db.upsert_user_memory(UserMemory(memory=SECRET))  # type: ignore[union-attr]
    assert _all(mem_store) == []
    memory.add_user_memory(UserMemory(memory=SECRET), user_id="ann")
    assert [m.memory for m in memory.get_user_memories("ann")] == [SECRET]


def test_an_agno_identity_error_is_an_identity_error() -> None:
    assert issubclass(AgnoIdentityError, IdentityError)


def test_none_runs_without_memory(mem_store: Store) -> None:
    mem_store.record(SECRET, "observation")
    memory = AnnealMemory(mem_store, anonymous="none", wrap_on_end=True)
    scripted = ScriptedModel()
    out = _agent(memory, scripted, update_memory_on_run=True).run("What is the vault code?")
    assert out.status == RunStatus.completed and out.content == "Done: noted."
    assert "Orchid" not in scripted.inputs[0]  # nothing recalled
    assert _all(mem_store) == [SECRET]  # nothing recorded, no wrap
    assert mem_store.status().total_wraps == 0
    # outside a run: no memory to read or write, and no error
    assert memory.get_user_memories() == []
    assert memory.add_user_memory(UserMemory(memory="x")) is None
    assert memory.search_user_memories("vault", retrieval_method="agentic") == []
    assert _all(mem_store) == [SECRET]
    # a user's run has its memory
    scripted = ScriptedModel()
    _agent(memory, scripted).run("My vault code is Tulip-1", user_id="ann")
    assert "My vault code is Tulip-1" in _all(mem_store.scoped({"user": "ann"}))


def test_a_typo_is_refused_at_construction(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="anonymous must be"):
        AnnealMemory(mem_store, anonymous="refused")
