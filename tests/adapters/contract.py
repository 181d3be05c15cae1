"""The behaviour every framework adapter is held to.

Each adapter's tests subclass :class:`AdapterContract` (in
``tests/adapters/<fw>/test_contract.py``) and implement :meth:`run`, which drives the
framework's REAL agent loop with its own scripted/test model. The base class then checks
what a user cares about: episodes land with the right type and trust, recalled memory
reaches the model on the next run, the session end saves a continuity, and a broken
store inside a hook never stops the run. Through :meth:`build` it also checks that every
adapter takes a Store, a store path or a MemorySession the same way.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import Store
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example_and_check(framework: str, tmp_path: Path, *markers: str | re.Pattern[str],
                          line: tuple[str, str] | None = None) -> str:
    """Run ``examples/<framework>/example.py`` offline on a fresh store and check its report.

    Each marker must appear in the output (a string as text, a compiled pattern by
    ``search``); ``line=(label, text)``: the last line holding ``label`` also holds ``text``.
    Returns the output.
    """
    done = subprocess.run([sys.executable, str(EXAMPLES / framework / "example.py"),
                           str(tmp_path / "memory.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for marker in markers:
        found = marker.search(out) if isinstance(marker, re.Pattern) else marker in out
        assert found, f"{getattr(marker, 'pattern', marker)!r} not in the example's output:\n{out}"
    if line is not None:
        label, text = line
        shown = [x for x in out.splitlines() if label in x]
        assert shown and text in shown[-1], out
    return out


@dataclasses.dataclass
class RunTrace:
    """What one run of the framework's agent loop produced."""

    output: str
    #: every piece of text the scripted model received, across all its calls
    model_inputs: list[str]


class AdapterContract:
    """Subclass and implement :meth:`run`."""

    # --- to implement -------------------------------------------------------------
    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        """Run the framework's real agent loop once, with the adapter wired in.

        ``call_tool``: the scripted model first calls a tool (any tool of the test's
        own), whose output contains the word ``toolresult``. ``wrap``: the run ends with
        the adapter's wrap, using the framework's own (scripted) model as compressor;
        the scripted model answers a wrap prompt with
        ``anneal_memory.testing.scripted_compress(prompt)``.
        """
        raise NotImplementedError

    def build(self, memory: Any, **options: Any) -> Any:
        """Construct the adapter's main object over ``memory`` (a Store, a store path or a
        MemorySession) with ``options`` (session options such as ``recall_limit``, and
        ``compress``). The object exposes the core session as ``.session``."""
        raise NotImplementedError

    # --- fixtures -------------------------------------------------------------------
    @pytest.fixture
    def store(self, tmp_path: Path):
        s = Store(tmp_path / "memory.db", project_name="ContractTest")
        yield s
        s.close()

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

    def test_bad_memory_or_options_raise_at_construction(self, store: Store) -> None:
        with pytest.raises(ValidationError):
            self.build(42)
        with pytest.raises(ValidationError, match="MemorySession"):  # options go to the session
            self.build(MemorySession(store), recall_limit=2)
        with pytest.raises(ValidationError, match="compress"):
            self.build(store, compress="not callable")
