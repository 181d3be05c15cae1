"""For frameworks whose loop is async: the contract's sync ``run`` and async ``arun`` both
go through one coroutine, ``_run``."""

from __future__ import annotations

import asyncio

from anneal_memory import Store

from contract import AdapterContract, RunTrace


class AsyncLoopContract(AdapterContract):
    """Implement ``async _run(store, user_input, *, wrap, call_tool, user)``."""

    async def _run(self, store: Store, user_input: str, *, wrap: bool = False,
                   call_tool: bool = False, user: str | None = None) -> RunTrace:
        raise NotImplementedError

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        return asyncio.run(self._run(store, user_input, wrap=wrap, call_tool=call_tool,
                                     user=user))

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        return await self._run(store, user_input, wrap=wrap, user=user)
