"""A CAMEL ``WorkforceCallback`` that records a Workforce's task events as episodes.

The callback is called from inside the Workforce (``for cb in self._callbacks: ...``), so
it notes that Workforce: its coordinator's model writes the continuity at the wrap unless
``compress`` is given, as the other adapters default to the framework's own model.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from camel.societies.workforce.workforce_callback import WorkforceCallback

from anneal_memory import Store
from anneal_memory.adapters import MemoryAdapter, hook_guard, options_except
from anneal_memory.session import MemorySession, WrapOutcome

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

from ._memory import LOGGER_NAME, model_compressor

# A failure is logged and the workforce goes on.
_safe = hook_guard(LOGGER_NAME)


def _calling_workforce() -> Any:
    """The Workforce whose method is calling this callback (None if it is not one)."""
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if owner is not None and hasattr(owner, "_callbacks") and hasattr(owner, "coordinator_agent"):
            return owner
        frame = frame.f_back
    return None


class AnnealWorkforceCallback(MemoryAdapter, WorkforceCallback):
    """Records a Workforce run: root tasks as requests, completed tasks as outcomes, failures
    as tensions, decompositions and reassignments as decisions. With ``wrap_on_end``
    (default False) it wraps when all tasks are completed, through ``compress`` or else the
    workforce's coordinator model; otherwise call :meth:`wrap`. Worker lifecycle and log
    lines are not recorded. ``namespace``: whose memory (a mapping, a ``MemoryNamespace``,
    or a callable receiving the Workforce); a workforce carries no user identity, so without
    it the memory is the store's. ``store`` is a path (opened and owned: :meth:`close` closes
    it), a Store, or a ready MemorySession (share the agents' one,
    ``AnnealWorkforceCallback(memory.session)``; the session options then go to it).
    """

    framework = "camel"
    extra = "camel"
    logger_name = LOGGER_NAME

    memory_options = options_except("memory_role", "recall_limit", "crystal_store")

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 options: MemoryOptions | None = None, **memory: Unpack[MemoryKwargs]) -> None:
        self._init_memory(store, options, **memory)
        self.workforce: Any = None

    @property
    def store(self) -> Store:
        return self.base_session.store

    def _now(self) -> MemorySession:
        """The session of the event being logged (noting the calling Workforce)."""
        found = _calling_workforce()
        if found is not None:
            self.workforce = found
        return self.session_for(self.workforce)

    def session_of(self) -> MemorySession:
        """The session of the workforce this callback saw last."""
        return self.session_for(self.workforce)

    # --- recorded events ------------------------------------------------------------------
    @_safe
    def log_task_created(self, event: Any) -> None:
        session = self._now()
        if event.parent_task_id is None:  # subtasks are the workforce's own plan
            session.record_user_input(event.description, metadata={"task_id": event.task_id})

    @_safe
    def log_task_decomposed(self, event: Any) -> None:
        self._now().record_decision(
            f"split task {event.parent_task_id} into {', '.join(event.subtask_ids)}")

    @_safe
    def log_task_updated(self, event: Any) -> None:
        self._now().record_decision(
            f"task {event.task_id} {event.update_type}: {event.old_value} -> {event.new_value}")

    @_safe
    def log_task_completed(self, event: Any) -> None:
        session = self._now()
        if event.result_summary:
            session.record_outcome(event.result_summary, metadata={
                "task_id": event.task_id, "worker_id": event.worker_id})

    @_safe
    def log_task_failed(self, event: Any) -> None:
        self._now().record(f"task {event.task_id} failed: {event.error_message}", "tension",
                           metadata={"task_id": event.task_id, "worker_id": event.worker_id})

    @_safe
    def log_all_tasks_completed(self, event: Any) -> None:
        self.end_run(self._now())

    # --- not recorded: bookkeeping, not memory ----------------------------------------------
    def log_message(self, event: Any) -> None:
        return None

    def log_task_assigned(self, event: Any) -> None:
        return None

    def log_task_started(self, event: Any) -> None:
        return None

    def log_worker_created(self, event: Any) -> None:
        return None

    def log_worker_deleted(self, event: Any) -> None:
        return None

    # --- the wrap ---------------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Callable[[str], str] | None:
        """The coordinator agent's model of the workforce this callback saw."""
        coordinator = getattr(self.workforce, "coordinator_agent", None)
        model = getattr(coordinator, "model_backend", None)
        return model_compressor(model) if model is not None else None

    def wrap(self, compress: Callable[[str], str] | None = None, *, namespace: Any = None
             ) -> WrapOutcome:
        """Compress the recorded events into the continuity (never loses episodes; without
        a compressor the outcome is ``failed``). The outcome is also kept on the session's
        ``last_wrap``."""
        session = self.session_for(self.workforce, namespace=namespace)
        return session.wrap_first(self.compressor(compress))
