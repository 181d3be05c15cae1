"""The shared adapter contract, on the SDK's real ``query()`` loop over the scripted CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cas_scripted import LOOKUP, run, scripted_compressor

from anneal_memory import Store
from anneal_memory.adapters.claude_agent_sdk import AnnealMemory, project_namespace

from contract import AdapterContract, RunTrace


class TestClaudeAgentSDKContract(AdapterContract):
    @pytest.fixture(autouse=True)
    def _cwd(self, tmp_path: Path) -> None:
        self.cwd = tmp_path

    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        memory = AnnealMemory(store, compress=scripted_compressor() if wrap else None)
        steps = ([LOOKUP] if call_tool else []) + ["Done: noted for the garden."]
        result = run(memory, user_input, steps, cwd=self.cwd)
        return RunTrace(output=result.output, model_inputs=result.model_inputs)

    def test_wrap_saves_continuity(self, store: Store) -> None:
        # the contract's check, in the memory the default identity picks: the project of
        # the SDK session's cwd (a namespace view of the same database)
        view = store.scoped(project_namespace(str(self.cwd)))
        assert view.load_continuity() is None
        self.run(store, "Decide to water the tomatoes at dawn", wrap=True)
        text = view.load_continuity()
        assert text is not None and "## State" in text
        assert view.status().total_wraps == 1
        assert store.load_continuity() is None  # not in the store's unscoped memory
