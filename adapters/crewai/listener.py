"""``AnnealEventListener``: records a crew's task and tool events as episodes.

CrewAI's event bus runs handlers on a thread pool, after the fact: they can record but never
change a prompt (recall goes through :class:`AnnealCrewMemory`). Call
``crewai_event_bus.flush()`` before reading what they recorded, or before a wrap (the
memory's ``after_kickoff`` does).

- ``TaskStartedEvent``: the task's description (the request the crew works on), as user input.
- ``ToolUsageFinishedEvent``: the tool's output, ``trust="tool"``.
- ``TaskCompletedEvent``: the task's output, as an outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crewai.events import (
    BaseEventListener,
    TaskCompletedEvent,
    TaskStartedEvent,
    ToolUsageFinishedEvent,
)

from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, guard_hook

# A handler must never raise into the bus: log and go on.
_safe = guard_hook("anneal_memory.adapters.crewai")


class AnnealEventListener(BaseEventListener):
    """Registers on CrewAI's global event bus when created; :meth:`close` unregisters.

    ``session`` is the :class:`MemorySession` to record into (use the memory's,
    ``AnnealEventListener(memory.session)``, so that both share de-duplication).
    """

    def __init__(self, session: MemorySession, *, record_tasks: bool = True,
                 record_tools: bool = True, record_outcomes: bool = True) -> None:
        if not isinstance(session, MemorySession):
            raise ValidationError(
                f"AnnealEventListener needs a MemorySession, got {type(session).__name__}: "
                "pass AnnealCrewMemory(...).session or MemorySession(store)")
        self.session = session
        self.record_tasks = record_tasks
        self.record_tools = record_tools
        self.record_outcomes = record_outcomes
        self._handlers: list[tuple[type[Any], Callable[..., None]]] = []
        super().__init__()

    def setup_listeners(self, crewai_event_bus: Any) -> None:
        def on_task_started(source: Any, event: TaskStartedEvent) -> None:
            description = getattr(event.task, "description", None)
            if self.record_tasks and description:
                self.session.record_user_input(str(description))

        def on_tool_finished(source: Any, event: ToolUsageFinishedEvent) -> None:
            if self.record_tools:
                self.session.record_tool_output(event.tool_name, str(event.output),
                                                arguments=_as_dict(event.tool_args))

        def on_task_completed(source: Any, event: TaskCompletedEvent) -> None:
            if self.record_outcomes and event.output is not None:
                self.session.record_outcome(str(event.output.raw))

        for event_type, handler in ((TaskStartedEvent, on_task_started),
                                    (ToolUsageFinishedEvent, on_tool_finished),
                                    (TaskCompletedEvent, on_task_completed)):
            guarded = _safe(handler)
            crewai_event_bus.on(event_type)(guarded)
            self._handlers.append((event_type, guarded))

    def close(self) -> None:
        """Unregister every handler from the event bus."""
        from crewai.events import crewai_event_bus

        for event_type, handler in self._handlers:
            crewai_event_bus.off(event_type, handler)
        self._handlers.clear()


def _as_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None
