"""``Engine(store, llm=callable).wrap()``: the early one-call wrap, kept for migrating users."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .session import MemorySession, WrapOutcome
from .store import Store


class Engine:
    """Runs a whole wrap with an LLM callable (prompt text in, continuity text out)."""

    def __init__(self, store: Store, llm: Callable[[str], str], *, session_id: str | None = None,
                 crystal_store: Any = None) -> None:
        if not callable(llm):
            raise TypeError("llm must be a callable taking the wrap prompt and returning text")
        self.store = store
        self.llm = llm
        self._session = MemorySession(store, session_id=session_id, crystal_store=crystal_store,
                                      strict=True)

    def wrap(self) -> WrapOutcome:
        """Prepare, compress with the llm, validate and save."""
        return self._session.wrap(self.llm)
