"""A CAMEL ``WorkforceCallback`` that records a Workforce's task events as episodes."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from camel.societies.workforce.workforce_callback import WorkforceCallback

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.camel"
# A failure is logged and the workforce goes on.
_safe = hook_guard(LOGGER_NAME)


class AnnealWorkforceCallback(WorkforceCallback):
    """Records a Workforce run: root tasks as requests, completed tasks as outcomes, failures
    as tensions, decompositions and reassignments as decisions. With ``compress`` and
    ``wrap_on_end`` (default False) it wraps when all tasks are completed; otherwise call
    :meth:`wrap`. Worker lifecycle and log lines are not recorded. ``store`` is a path
    (opened and owned: :meth:`close` closes it), a Store, or a ready MemorySession (share the
    agents' one, ``AnnealWorkforceCallback(memory.session)``; the session options then go to it).
    """

    def __init__(
        self,
        store: Store | MemorySession | str | os.PathLike[str],
        *,
        compress: Callable[[str], str] | None = None,
        wrap_on_end: bool = False,
        project_name: str | None = None,
        session_id: str | None = None,
        max_content_chars: int | None = None,
        strict: bool | None = None,
    ) -> None:
        if wrap_on_end and compress is None:
            raise ValidationError("wrap_on_end=True needs compress=<callable prompt -> text> (for "
                                  "example AnnealAgentMemory(...).wrap's model, or your own)")
        attach_memory(self, store, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      project_name=project_name, session_id=session_id,
                      max_content_chars=max_content_chars, strict=strict)

    @property
    def store(self) -> Store:
        return self.session.store

    # --- recorded events ------------------------------------------------------------------
    @_safe
    def log_task_created(self, event: Any) -> None:
        if event.parent_task_id is None:  # subtasks are the workforce's own plan
            self.session.record_user_input(event.description, metadata={"task_id": event.task_id})

    @_safe
    def log_task_decomposed(self, event: Any) -> None:
        self.session.record_decision(
            f"split task {event.parent_task_id} into {', '.join(event.subtask_ids)}")

    @_safe
    def log_task_updated(self, event: Any) -> None:
        self.session.record_decision(
            f"task {event.task_id} {event.update_type}: {event.old_value} -> {event.new_value}")

    @_safe
    def log_task_completed(self, event: Any) -> None:
        if event.result_summary:
            self.session.record_outcome(event.result_summary, metadata={
                "task_id": event.task_id, "worker_id": event.worker_id})

    @_safe
    def log_task_failed(self, event: Any) -> None:
        self.session.record(f"task {event.task_id} failed: {event.error_message}", "tension",
                            metadata={"task_id": event.task_id, "worker_id": event.worker_id})

    @_safe
    def log_all_tasks_completed(self, event: Any) -> None:
        if self.wrap_on_end:
            self.wrap()

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
    def wrap(self, compress: Callable[[str], str] | None = None) -> WrapOutcome:
        """Compress the recorded events into the continuity (never loses episodes; without
        ``compress`` here or at construction the outcome is ``failed``). The outcome is also
        kept on ``session.last_wrap``."""
        return self.session.wrap_first(compress, self.compress)

    def close(self) -> None:
        """Close the store if this callback opened it."""
        self.session.close()
