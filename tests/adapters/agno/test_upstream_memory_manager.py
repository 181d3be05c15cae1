"""Agno's own memory-manager tests, restated against our adapter.

From agno-agi/agno ``libs/agno/tests``: ``integration/managers/test_memory_manager.py``
(every case; a scripted Agno model stands in for ``OpenAIChat``),
``unit/memory/test_memory_manager_crud.py`` and ``unit/memory/test_memory_optimization.py``
(their observable outcomes, on real databases instead of ``MagicMock``). Each case runs
twice: on :class:`AnnealMemory` over an anneal store, and on Agno's reference, its own
``MemoryManager`` over ``SqliteDb``. Where ours differs on purpose (``clear()`` of every
user, ``db.get_user_memories()`` of every user) a test below says so and checks both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from agno.db.sqlite import SqliteDb
from agno.memory import MemoryManager, UserMemory
from agno.memory.strategies import MemoryOptimizationStrategy
from agno.memory.strategies.types import MemoryOptimizationStrategyType
from agno.models.message import Message
from agno_scripted import ScriptedModel

from anneal_memory import Store, ValidationError
from anneal_memory.adapters.agno import AnnealMemory, AnnealMemoryDb

SUMMARY = "The user's name is John Doe; he plays basketball and his favourite colour is blue."

#: ``make(model)``: a memory manager over the case's one database (a second call: a new
#: manager instance over the same database, as Agno's persistence cases make)
Make = Callable[..., MemoryManager]


@pytest.fixture(params=["anneal", "agno-sqlite"])
def make(request: pytest.FixtureRequest, tmp_path: Path, mem_store: Store) -> Make:
    if request.param == "anneal":
        return lambda model=None: AnnealMemory(mem_store, model=model)
    db = SqliteDb(db_file=str(tmp_path / "agno.db"))
    return lambda model=None: MemoryManager(model=model, db=db)


def writer(memory: str = "The user's name is John Doe") -> ScriptedModel:
    """A memory model that calls Agno's ``add_memory`` tool once per request (Agno's
    manager hands it its db tools; ours records without asking it)."""
    return ScriptedModel(call_tool=True, tool=("add_memory", {"memory": memory,
                                                              "topics": ["name"]}))


def summarizer() -> ScriptedModel:
    return ScriptedModel(answer=SUMMARY)


def _three(manager: MemoryManager, user_id: str = "test_user") -> None:
    for text, topics in (("The user's name is John Doe", ["name", "user"]),
                         ("The user likes to play basketball", ["sports", "hobbies"]),
                         ("The user's favorite color is blue", ["preferences", "colors"])):
        manager.add_user_memory(UserMemory(memory=text, topics=topics, user_id=user_id,
                                           updated_at=datetime.now()), user_id=user_id)


# ---------------------------------------------- integration/managers/test_memory_manager.py
def test_add_user_memory_with_db(make: Make) -> None:
    manager = make(writer())
    memory_id = manager.add_user_memory(
        memory=UserMemory(user_id="test_user", memory="The user's name is John Doe",
                          topics=["name", "user"], updated_at=datetime.now()),
        user_id="test_user")
    assert memory_id is not None
    got = manager.get_user_memory(user_id="test_user", memory_id=memory_id)
    assert got is not None and got.memory == "The user's name is John Doe"
    again = make(manager.model).get_user_memory(user_id="test_user", memory_id=memory_id)
    assert again is not None and again.memory == "The user's name is John Doe"


def test_create_user_memory_with_db(make: Make) -> None:
    message = "My name is John Doe and I like to play basketball"
    manager = make(writer())
    assert len(manager.create_user_memories(message, user_id="test_user")) > 0
    memories = manager.get_user_memories("test_user")
    assert len(memories) > 0
    assert memories[0].input == message  # the memory keeps the message it came from
    assert "john doe" in memories[0].memory.lower()


def test_create_user_memories_with_db(make: Make) -> None:
    manager = make(writer())
    messages = [Message(role="user", content="My name is John Doe"),
                Message(role="user", content="I like to play basketball")]
    assert len(manager.create_user_memories(messages=messages, user_id="test_user")) > 0
    assert len(manager.get_user_memories(user_id="test_user")) > 0
    assert len(make(manager.model).get_user_memories(user_id="test_user")) > 0


def test_acreate_user_memory_with_db(make: Make) -> None:
    manager = make(writer())
    message = "My name is John Doe and I like to play basketball"
    assert len(asyncio.run(manager.acreate_user_memories(message, user_id="test_user"))) > 0
    assert len(manager.get_user_memories(user_id="test_user")) > 0
    assert len(make(manager.model).get_user_memories(user_id="test_user")) > 0


def test_acreate_user_memories_with_db(make: Make) -> None:
    manager = make(writer())
    messages = [Message(role="user", content="My name is John Doe"),
                Message(role="user", content="I like to play basketball"),
                Message(role="user", content="My favorite color is blue")]
    result = asyncio.run(manager.acreate_user_memories(messages=messages, user_id="test_user"))
    assert len(result) > 0
    assert len(manager.get_user_memories("test_user")) > 0
    assert len(make(manager.model).get_user_memories(user_id="test_user")) > 0


def test_search_user_memories_semantic(make: Make) -> None:
    manager = make(writer())
    _three(manager)
    # "semantic" is no method of Agno's: it answers as "last_n", every memory
    results = manager.search_user_memories(query="sports and hobbies",
                                           retrieval_method="semantic",  # type: ignore[arg-type]
                                           user_id="test_user")
    assert len(results) > 0 and any("basketball" in m.memory for m in results)


def test_memory_persistence_across_instances(make: Make) -> None:
    first = make(writer())
    memory_id = first.add_user_memory(
        memory=UserMemory(memory="The user's name is John Doe", topics=["name", "user"],
                          updated_at=datetime.now()), user_id="test_user")
    got = make(writer()).get_user_memory(user_id="test_user", memory_id=memory_id)
    assert got is not None and got.memory == "The user's name is John Doe"


def test_memory_operations_with_db(make: Make) -> None:
    manager = make(writer())
    memory_id = manager.add_user_memory(
        memory=UserMemory(memory="The user's name is John Doe", topics=["name", "user"],
                          updated_at=datetime.now()), user_id="test_user")
    manager.replace_user_memory(
        memory_id=memory_id, user_id="test_user",
        memory=UserMemory(memory="The user's name is Jane Doe", topics=["name", "user"],
                          updated_at=datetime.now()))
    got = manager.get_user_memory(user_id="test_user", memory_id=memory_id)
    assert got is not None and got.memory == "The user's name is Jane Doe"
    assert [m.memory for m in manager.get_user_memories("test_user")] == [
        "The user's name is Jane Doe"]  # replaced, not added beside
    manager.delete_user_memory(user_id="test_user", memory_id=memory_id)
    assert manager.get_user_memory(user_id="test_user", memory_id=memory_id) is None
    assert make(manager.model).get_user_memory(user_id="test_user", memory_id=memory_id) is None


def _dated(manager: MemoryManager) -> None:
    for day, text in enumerate(("First memory", "Second memory", "Third memory"), start=1):
        manager.add_user_memory(memory=UserMemory(memory=text, topics=["test"],
                                                  updated_at=datetime(2023, 1, day)),
                                user_id="test_user")


def test_search_user_memories_last_n(make: Make) -> None:
    manager = make(writer())
    _dated(manager)
    results = manager.search_user_memories(retrieval_method="last_n", limit=2,
                                           user_id="test_user")
    assert [m.memory for m in results] == ["Second memory", "Third memory"]


def test_search_user_memories_first_n(make: Make) -> None:
    manager = make(writer())
    _dated(manager)
    results = manager.search_user_memories(retrieval_method="first_n", limit=2,
                                           user_id="test_user")
    assert [m.memory for m in results] == ["First memory", "Second memory"]


def test_update_memory_task_with_db(make: Make) -> None:
    manager = make(writer("The user's age is 30"))
    _three(manager)
    assert manager.update_memory_task(task="The user's age is 30", user_id="test_user")
    memories = manager.get_user_memories("test_user")
    assert len(memories) > 0 and any("30" in m.memory for m in memories)
    assert manager.update_memory_task(task="Delete any memories of the user's name",
                                      user_id="test_user")
    memories = manager.get_user_memories("test_user")
    assert len(memories) > 0 and any("John Doe" not in m.memory for m in memories)


def test_aupdate_memory_task_with_db(make: Make) -> None:
    manager = make(writer("The user's occupation is software engineer"))
    _three(manager)
    task = "The user's occupation is software engineer"
    assert asyncio.run(manager.aupdate_memory_task(task=task, user_id="test_user"))
    memories = manager.get_user_memories("test_user")
    assert any("occupation" in m.memory.lower() and "software engineer" in m.memory.lower()
               for m in memories)
    assert asyncio.run(manager.aupdate_memory_task(
        task="Delete any memories of the user's name", user_id="test_user"))
    memories = manager.get_user_memories("test_user")
    assert len(memories) > 0 and any("John Doe" not in m.memory for m in memories)


def test_optimize_memories_with_db(make: Make) -> None:
    manager = make(summarizer())
    _three(manager)
    original_count = len(manager.get_user_memories(user_id="test_user"))
    optimized = manager.optimize_memories(user_id="test_user",
                                          strategy=MemoryOptimizationStrategyType.SUMMARIZE,
                                          apply=True)
    assert len(optimized) > 0 and all(isinstance(m, UserMemory) for m in optimized)
    final = manager.get_user_memories(user_id="test_user")
    assert len(final) == len(optimized) < original_count
    content = " ".join(m.memory.lower() for m in optimized)
    assert "john doe" in content or "basketball" in content or "blue" in content
    assert [m.memory for m in final] == [SUMMARY]  # the summary replaced the three


def test_optimize_memories_with_db_apply_false(make: Make) -> None:
    manager = make(summarizer())
    for text in ("The user's name is John Doe", "The user likes to play basketball"):
        manager.add_user_memory(memory=UserMemory(memory=text, user_id="test_user",
                                                  updated_at=datetime.now()),
                                user_id="test_user")
    original = manager.get_user_memories(user_id="test_user")
    optimized = manager.optimize_memories(user_id="test_user",
                                          strategy=MemoryOptimizationStrategyType.SUMMARIZE,
                                          apply=False)
    assert len(optimized) > 0
    final = manager.get_user_memories(user_id="test_user")
    assert len(final) == len(original) and final == original


def test_optimize_memories_with_db_empty(make: Make) -> None:
    assert make(summarizer()).optimize_memories(user_id="test_user", apply=False) == []


def test_optimize_memories_with_db_default_user_id(make: Make) -> None:
    manager = make(summarizer())
    manager.add_user_memory(UserMemory(memory="Default user memory", topics=["test"],
                                       user_id="default", updated_at=datetime.now()),
                            user_id="default")
    optimized = manager.optimize_memories(strategy=MemoryOptimizationStrategyType.SUMMARIZE,
                                          apply=False)
    assert len(optimized) > 0


def test_optimize_memories_persistence_across_instances(make: Make) -> None:
    first = make(summarizer())
    for text, topic in (("The user's name is John Doe", "name"),
                        ("The user likes basketball", "sports")):
        first.add_user_memory(memory=UserMemory(memory=text, topics=[topic], user_id="test_user",
                                                updated_at=datetime.now()),
                              user_id="test_user")
    optimized = first.optimize_memories(user_id="test_user", apply=True)
    final = make(summarizer()).get_user_memories(user_id="test_user")
    assert len(final) == len(optimized)
    assert final[0].memory_id == optimized[0].memory_id


def test_aoptimize_memories_with_db(make: Make) -> None:
    # unit/memory/test_memory_optimization.py test_aoptimize_memories_success, on a real db
    manager = make(summarizer())
    _three(manager)
    optimized = asyncio.run(manager.aoptimize_memories(user_id="test_user", apply=True))
    assert [m.memory for m in optimized] == [SUMMARY]
    assert [m.memory for m in manager.get_user_memories("test_user")] == [SUMMARY]
    assert asyncio.run(manager.aoptimize_memories(user_id="nobody", apply=True)) == []


# ---------------------------------------------- unit/memory/test_memory_manager_crud.py
def test_add_memory_with_id_keeps_it(make: Make) -> None:
    manager = make()
    memory = UserMemory(memory_id="existing_id", memory="test memory")
    assert manager.add_user_memory(memory, user_id="user1") == "existing_id"
    assert memory.user_id == "user1"
    got = manager.get_user_memory("existing_id", user_id="user1")
    assert got is not None and got.memory == "test memory" and got.memory_id == "existing_id"


def test_add_memory_generates_an_id_and_sets_the_user(make: Make) -> None:
    manager = make()
    memory = UserMemory(memory="test memory")
    result = manager.add_user_memory(memory, user_id="user1")
    assert result is not None and memory.memory_id == result
    default = UserMemory(memory_id="mem1", memory="test")
    manager.add_user_memory(default)
    assert default.user_id == "default"
    assert [m.memory for m in manager.get_user_memories()] == ["test"]


def test_add_memory_sets_updated_at_and_keeps_a_given_one(make: Make) -> None:
    manager = make()
    memory = UserMemory(memory_id="mem1", memory="test")
    manager.add_user_memory(memory)
    assert memory.updated_at is not None and memory.updated_at > 0
    given = UserMemory(memory_id="mem2", memory="test 2", updated_at=42)
    manager.add_user_memory(given)
    assert given.updated_at == 42


def test_replace_memory_keeps_the_id(make: Make) -> None:
    manager = make()
    manager.add_user_memory(UserMemory(memory_id="mem1", memory="original"), user_id="user1")
    created = manager.get_user_memory("mem1", user_id="user1").created_at  # type: ignore[union-attr]
    memory = UserMemory(memory="updated content")
    assert manager.replace_user_memory("mem1", memory, user_id="user1") == "mem1"
    assert memory.memory_id == "mem1" and memory.user_id == "user1"
    assert memory.updated_at is not None
    got = manager.get_user_memory("mem1", user_id="user1")
    assert got is not None and got.memory == "updated content" and got.created_at == created
    other = UserMemory(memory="updated")
    manager.replace_user_memory("mem9", other)
    assert other.user_id == "default" and other.updated_at is not None


def test_delete_memory_of_the_user_only(make: Make) -> None:
    manager = make()
    manager.add_user_memory(UserMemory(memory_id="mem1", memory="user1's"), user_id="user1")
    manager.add_user_memory(UserMemory(memory_id="memd", memory="default's"))
    manager.delete_user_memory("mem1", user_id="user2")  # not theirs: nothing happens
    assert manager.get_user_memory("mem1", user_id="user1") is not None
    manager.delete_user_memory("mem1", user_id="user1")
    assert manager.get_user_memory("mem1", user_id="user1") is None
    manager.delete_user_memory("memd")  # the default user's
    assert manager.get_user_memories() == []


def test_clear_user_memories_of_one_user(make: Make) -> None:
    manager = make()
    for mid, user, text in (("mem1", "user1", "I like cats"), ("mem2", "user1", "I work at Acme"),
                            ("mem3", "user2", "I prefer dark mode")):
        manager.add_user_memory(UserMemory(memory_id=mid, memory=text), user_id=user)
    manager.clear_user_memories(user_id="user1")
    assert manager.get_user_memories(user_id="user1") == []
    assert [m.memory for m in manager.get_user_memories(user_id="user2")] == [
        "I prefer dark mode"]
    manager.clear_user_memories()  # the default user has none: nothing happens
    asyncio.run(manager.aclear_user_memories(user_id="user2"))
    assert manager.get_user_memories(user_id="user2") == []


def test_get_user_memories_and_memory(make: Make) -> None:
    manager = make()
    assert manager.get_user_memories(user_id="user1") == []
    assert manager.get_user_memory("mem1", user_id="user1") is None
    manager.add_user_memory(UserMemory(memory_id="mem1", memory="I like cats"), user_id="user1")
    assert [m.memory for m in manager.get_user_memories(user_id="user1")] == ["I like cats"]
    assert [m.memory for m in asyncio.run(manager.aget_user_memories(user_id="user1"))] == [
        "I like cats"]
    assert manager.get_user_memory("mem1", user_id="user1").memory == "I like cats"  # type: ignore[union-attr]
    assert manager.get_user_memory("nonexistent", user_id="user1") is None
    assert manager.get_user_memory("mem1") is None  # the default user's: not there
    assert manager.read_from_db(user_id="user1") == {
        "user1": manager.get_user_memories(user_id="user1")}


# ---------------------------------------------- unit/memory/test_memory_optimization.py
class _Keep(MemoryOptimizationStrategy):
    """A custom strategy instance: keeps the newest memory only (no model call)."""

    def optimize(self, memories: list[UserMemory], model: Any) -> list[UserMemory]:
        newest = memories[-1]
        return [UserMemory(memory=newest.memory, user_id=newest.user_id, memory_id="opt-1")]

    async def aoptimize(self, memories: list[UserMemory], model: Any) -> list[UserMemory]:
        return self.optimize(memories, model)


def test_optimize_memories_custom_strategy_instance(make: Make) -> None:
    manager = make(summarizer())
    for mid, text in (("m1", "Memory 1"), ("m2", "Memory 2")):
        manager.add_user_memory(UserMemory(memory=text, memory_id=mid), user_id="user-1")
    result = manager.optimize_memories(user_id="user-1", strategy=_Keep(), apply=True)
    assert [(m.memory, m.memory_id) for m in result] == [("Memory 2", "opt-1")]
    assert [(m.memory, m.memory_id) for m in manager.get_user_memories("user-1")] == [
        ("Memory 2", "opt-1")]
    assert manager.model.inputs == []  # type: ignore[union-attr]


def test_optimize_memories_uses_the_managers_model(make: Make) -> None:
    scripted = summarizer()
    manager = make(scripted)
    manager.add_user_memory(UserMemory(memory="Memory 1"), user_id="user-1")
    manager.add_user_memory(UserMemory(memory="Memory 2"), user_id="user-1")
    manager.optimize_memories(user_id="user-1", apply=False)
    assert len(scripted.inputs) == 1
    assert "Memory 1" in scripted.inputs[0] and "Memory 2" in scripted.inputs[0]


# ---------------------------------------------- where ours differs on purpose
def test_clear_of_every_user_is_agnos_and_refused_by_ours(tmp_path: Path,
                                                          mem_store: Store) -> None:
    reference = MemoryManager(db=SqliteDb(db_file=str(tmp_path / "agno.db")))
    ours = AnnealMemory(mem_store)
    for manager in (reference, ours):
        manager.add_user_memory(UserMemory(memory="I like cats"), user_id="user1")
    reference.clear()
    assert reference.get_user_memories(user_id="user1") == []
    with pytest.raises(ValidationError, match="clear_user_memories"):
        ours.clear()
    with pytest.raises(ValidationError):
        ours.db.clear_memories()  # type: ignore[union-attr]
    assert [m.memory for m in ours.get_user_memories(user_id="user1")] == ["I like cats"]


def test_db_without_a_user_is_the_default_users_never_everyones(tmp_path: Path,
                                                                mem_store: Store) -> None:
    reference = SqliteDb(db_file=str(tmp_path / "agno.db"))
    ours = AnnealMemory(mem_store).db
    assert isinstance(ours, AnnealMemoryDb)
    for db in (reference, ours):
        db.upsert_user_memory(UserMemory(memory="ann's", user_id="ann"))
        db.upsert_user_memory(UserMemory(memory="nobody's", user_id="default"))
    assert sorted(m.memory for m in reference.get_user_memories()) == ["ann's", "nobody's"]
    assert [m.memory for m in ours.get_user_memories()] == ["nobody's"]
    with pytest.raises(NotImplementedError, match="memories only"):
        ours.get_sessions()


# ---------------------------------------------- the db itself (unit/memory/test_update_memory_fields.py)
def test_db_keeps_every_field_of_a_memory_as_agnos_sqlite_does(tmp_path: Path,
                                                              mem_store: Store) -> None:
    def round_trip(db: Any) -> dict[str, Any]:
        db.upsert_user_memory(UserMemory(
            memory="Likes tea", memory_id="m-1", topics=["drinks"], user_id="u1",
            input="I like tea", agent_id="agent-1", team_id="team-1", feedback="good"))
        got = db.get_user_memory("m-1", user_id="u1")
        fields = ("memory", "memory_id", "topics", "user_id", "input", "agent_id", "team_id",
                  "feedback")
        seen = {f: getattr(got, f) for f in fields}
        seen["other user"] = db.get_user_memory("m-1", user_id="u2")
        # an update through the db (Agno's update_memory tool): same id, new text
        db.upsert_user_memory(UserMemory(memory="Likes green tea", memory_id="m-1",
                                         user_id="u1", agent_id="agent-1", team_id="team-1"))
        seen["after update"] = [(m.memory_id, m.memory) for m in
                                db.get_user_memories(user_id="u1")]
        db.delete_user_memory("m-1", user_id="u2")  # another user's delete: nothing
        seen["after foreign delete"] = len(db.get_user_memories(user_id="u1"))
        db.delete_user_memories(["m-1"], user_id="u1")
        seen["after delete"] = db.get_user_memories(user_id="u1")
        return seen

    ours = round_trip(AnnealMemory(mem_store).db)
    theirs = round_trip(SqliteDb(db_file=str(tmp_path / "agno.db")))
    assert ours == theirs
    assert theirs["input"] == "I like tea" and theirs["after update"] == [
        ("m-1", "Likes green tea")]


def test_agnos_own_manager_extracting_memories_into_our_db(mem_store: Store) -> None:
    # Agno's MemoryManager (its model-driven create_user_memories, through its add_memory
    # tool) over AnnealMemoryDb: the memory lands in the user's namespace, input kept
    ours = AnnealMemory(mem_store)
    agno_manager = MemoryManager(model=writer(), db=ours.db)
    message = "My name is John Doe and I like to play basketball"
    agno_manager.create_user_memories(message, user_id="test_user")
    found = ours.get_user_memories(user_id="test_user")
    assert [(m.memory, m.input, m.topics) for m in found] == [
        ("The user's name is John Doe", message, ["name"])]
    assert [e.content for e in mem_store.scoped({"user": "test_user"}).recall().episodes] == [
        "The user's name is John Doe"]
    assert ours.get_user_memories(user_id="other") == []
