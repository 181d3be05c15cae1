"""The shared adapter contract, on the SDK's real ``query()`` loop over the scripted CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cas_scripted import LOOKUP, arun, run, scripted_compressor

from anneal_memory import Store
from anneal_memory.adapters.claude_agent_sdk import AnnealMemory, project_namespace

from contract import AdapterContract, RunTrace


class TestClaudeAgentSDKContract(AdapterContract):
    @pytest.fixture(autouse=True)
    def _cwd(self, tmp_path: Path) -> None:
        self.cwd = tmp_path

    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def _cwd_of(self, user: str | None) -> Path:
        # a user works in their own project: the SDK's identity the adapter takes by default
        if user is None:
            return self.cwd
        path = self.cwd / f"project-of-{user}"
        path.mkdir(exist_ok=True)
        return path

    def _memory(self, store: Store, wrap: bool) -> AnnealMemory:
        return self.shared((id(store), wrap), lambda: AnnealMemory(
            store, compress=scripted_compressor() if wrap else None))

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        memory = self._memory(store, wrap) if user else AnnealMemory(
            store, compress=scripted_compressor() if wrap else None)
        steps = ([LOOKUP] if call_tool else []) + ["Done: noted for the garden."]
        result = run(memory, user_input, steps, cwd=self._cwd_of(user))
        return RunTrace(output=result.output, model_inputs=result.model_inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        result = await arun(self._memory(store, wrap), user_input,
                            ["Done: noted for the garden."], cwd=self._cwd_of(user))
        return RunTrace(output=result.output, model_inputs=result.model_inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def refused(memory: AnnealMemory, **where: Any) -> None:
            # a hook cannot raise into the app: the prompt is blocked, the error kept
            result = run(memory, "What is my code?", ["Done: noted."], **where)
            assert result.model_inputs == [], "the model ran for a refused session"
            assert "anneal-memory refused" in result.output, result.output
            raise memory.identity_refusals[-1]

        return {
            "the hook input's session_id": lambda uid: refused(
                AnnealMemory(store), cwd=self.cwd, session_id=uid),
            "the hook input's cwd": lambda uid: refused(AnnealMemory(store), cwd=uid),
            "the namespace callable's result": lambda uid: refused(
                AnnealMemory(store, namespace=lambda hook_input: {"user": uid}), cwd=self.cwd),
        }

    def memory_of(self, store: Store, user: str) -> Any:
        return store.scoped(project_namespace(str(self._cwd_of(user))))

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
