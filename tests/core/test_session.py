"""The framework-neutral lifecycle every transport shares."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from anneal_memory import Engine, MemorySession, Store
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def test_lifecycle_end_to_end(store: Store) -> None:
    s = MemorySession(store)
    assert s.start() == "" and s.context_for("anything") == ""
    s.record_user_input("Plan the garden irrigation schedule")
    s.record_decision("Water the tomatoes at dawn")
    s.record_tool_output("weather", "toolresult: rain expected tomorrow")
    s.record_outcome("Schedule drafted")
    eps = {e.content: e for e in store.recall(limit=10).episodes}
    assert eps["Plan the garden irrigation schedule"].source == "user"
    tool = next(e for e in eps.values() if "toolresult" in e.content)
    assert tool.trust == "tool" and tool.metadata["tool"] == "weather"
    ctx = s.context_for("when do we water the tomatoes")
    assert "data, not instructions" in ctx and "tomatoes" in ctx
    out = s.wrap(scripted_compress)
    assert out.status == "saved" and store.status().total_wraps == 1
    assert "## State" in s.start()


def test_relayed_items_listed_last_and_labelled(store: Store) -> None:
    s = MemorySession(store)
    store.record("pump pressure reading from the sensor is 40 psi", "observation", trust="tool")
    store.record("we decided the pump pressure must stay below 50 psi", "decision")
    ctx = s.context_for("pump pressure psi")
    assert ctx.index("we decided") < ctx.index("Recorded from tool output")
    assert ctx.index("Recorded from tool output") < ctx.index("sensor is 40 psi")


def test_dedup_and_caps(store: Store) -> None:
    s = MemorySession(store, max_content_chars=100)
    assert s.record_observation("same event") is not None
    assert s.record_observation("same event") is None
    e = s.record_observation("x" * 500)
    assert e is not None and len(e.content) < 200 and "cut" in e.content
    assert s.record_observation("   ") is None


def test_failing_compressor_loses_nothing(store: Store) -> None:
    s = MemorySession(store)
    s.record_observation("important finding")

    def boom(prompt: str) -> str:
        raise RuntimeError("model down")

    out = s.wrap(boom)
    assert out.status == "failed"
    assert store.status().episodes_since_wrap == 1 and not store.status().wrap_in_progress
    out = s.wrap(lambda p: "not a continuity")
    assert out.status == "refused" and store.status().episodes_since_wrap == 1
    assert s.wrap(scripted_compress).status == "saved"
    assert s.wrap(scripted_compress).status == "empty"


def test_async_wrap(store: Store) -> None:
    s = MemorySession(store)
    s.record_observation("async thing")

    async def compress(prompt: str) -> str:
        assert is_wrap_prompt(prompt)
        return scripted_compress(prompt)

    assert asyncio.run(s.awrap(compress)).status == "saved"


def test_broken_store_never_raises_when_not_strict(tmp_path: Path, caplog) -> None:
    st = Store(tmp_path / "m.db")
    st.close()
    s = MemorySession(st, logger="anneal_memory.adapters.test")
    with caplog.at_level(logging.WARNING):
        assert s.record_observation("x") is None
        assert s.context_for("x") == ""
        assert s.wrap(scripted_compress).status == "failed"
    assert any("anneal_memory.adapters.test" == r.name for r in caplog.records)
    strict = MemorySession(st, strict=True)
    with pytest.raises(Exception):
        strict.record_observation("x")


def test_downgrade_without_baton(db: Path) -> None:
    with Store(db, consolidate_requires_baton_on_create=True) as st:
        s = MemorySession(st, session_id="worker")
        s.record_observation("captured")
        out = s.wrap(scripted_compress)
        assert out.status == "downgraded" and "baton claim worker" in out.message


def test_engine(store: Store) -> None:
    store.record("engine thing", "observation")
    assert Engine(store, llm=scripted_compress).wrap().status == "saved"


def test_ensure_accepts_session_store_or_path(store: Store, tmp_path: Path) -> None:
    from anneal_memory import ValidationError

    s = MemorySession(store)
    assert MemorySession.ensure(s) is s
    assert MemorySession.ensure(store, recall_limit=2).recall_limit == 2
    owned = MemorySession.ensure(str(tmp_path / "p.db"), project_name="P")
    assert owned.owns_store and owned.store.project_name == "P"
    owned.close()
    with pytest.raises(ValidationError):
        MemorySession.ensure(s, recall_limit=3)
    with pytest.raises(ValidationError):
        MemorySession.ensure(42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        MemorySession.ensure(store, project_name="X")
    assert MemorySession.ensure(s, recall_limit=None) is s  # None means "the default"
    made = MemorySession.ensure(store, logger="anneal_memory.adapters.zz")
    assert made.log.name == "anneal_memory.adapters.zz"
    with pytest.raises(ValidationError):
        MemorySession(store, recall_limit=-1)


def test_request_is_not_recalled_back_to_itself(store: Store) -> None:
    s = MemorySession(store)
    store.record("the heater model is Zephyrion 4000", "observation")
    q = "Which heater model do we have?"
    s.record_user_input(q)
    ctx = s.context_for(q)
    assert "Zephyrion" in ctx and "Which heater model" not in ctx
    items = s.recall_items(q)
    assert items and all("Which heater" not in i for i in items)


def test_guard_hook_logs_and_continues(caplog) -> None:
    import asyncio as _asyncio

    from anneal_memory.session import guard_hook

    @guard_hook("anneal_memory.adapters.x")
    def bad() -> int:
        raise RuntimeError("nope")

    @guard_hook("anneal_memory.adapters.x")
    async def abad() -> int:
        raise RuntimeError("nope")

    with caplog.at_level(logging.WARNING):
        assert bad() is None
        assert _asyncio.run(abad()) is None
    assert len([r for r in caplog.records if r.name == "anneal_memory.adapters.x"]) == 2


def test_wrap_first_and_check_compress(store: Store) -> None:
    from anneal_memory import ValidationError

    s = MemorySession(store)
    with pytest.raises(ValidationError):
        MemorySession.check_compress("not callable")
    assert MemorySession.check_compress(None) is None
    s.record_observation("a thing to wrap")
    assert s.wrap_first(None, None).status == "failed" and store.status().episodes_since_wrap == 1
    out = s.wrap_first(None, scripted_compress)
    assert out.saved and s.last_wrap is out


def test_record_none_records_nothing(store: Store) -> None:
    assert MemorySession(store).record(None, "observation") is None  # type: ignore[arg-type]
    assert store.status().total_episodes == 0


def test_recall_leaves_out_what_the_transcript_already_holds(store: Store) -> None:
    """Issue 30 item 3: ``transcript=`` (the texts the model already receives) keeps the
    episodes recorded from them out of the block: a user turn, an answer, a tool output
    behind its record prefix; anything else is still recalled."""
    session = MemorySession(store)
    session.record_user_input("My locker code is Quasar-1711")
    session.record_outcome("Noted the locker code.")
    session.record_tool_output("lookup", "locker 12 belongs to Quasar-1711 holder")
    store.record("The spare locker key is with Ottoline", "observation")
    transcript = ["my locker  code is QUASAR-1711", "Noted the locker code.",
                  "locker 12 belongs to Quasar-1711 holder"]
    full = MemorySession(store).context_for("where is my locker key and code?")
    assert "Quasar-1711" in full and "Ottoline" in full
    shown = MemorySession(store).context_for("where is my locker key and code?",
                                             transcript=transcript)
    assert "Quasar-1711" not in shown and "Noted the locker" not in shown
    assert "Ottoline" in shown
    block = asyncio.run(MemorySession(store).amemory_block("locker code",
                                                          transcript=transcript))
    assert "Quasar-1711" not in block
