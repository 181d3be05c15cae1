"""``AnnealEventListener``: records a crew's tool results (and, if asked, task events).

CrewAI's event bus runs handlers on a thread pool, after the fact: they can record but never
change a prompt, and their order against the agent loop is not fixed. So the request and
the result of each task are recorded by :class:`AnnealCrewMemory` itself, in the loop's own
thread; the listener adds what the memory cannot see, the tools' output (``trust="tool"``),
into the memory of the scope the tool's crew works in. ``record_tasks`` /
``record_outcomes`` (off by default) also record task starts and results, for crews whose
memory is not an :class:`AnnealCrewMemory`. Call ``crewai_event_bus.flush()`` before reading
what it recorded, or before a wrap (the memory's ``after_kickoff`` does).
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

from ._scope import scope_of_agent

# A handler must never raise into the bus: log and go on.
_safe = guard_hook("anneal_memory.adapters.crewai")


class AnnealEventListener(BaseEventListener):
    """Registers on CrewAI's global event bus when created; :meth:`close` unregisters.

    ``memory`` is the :class:`AnnealCrewMemory` (each event goes to the memory of its
    crew's scope) or a :class:`MemorySession` (every event goes to it).
    """

    def __init__(self, memory: Any, *, record_tasks: bool = False,
                 record_tools: bool = True, record_outcomes: bool = False) -> None:
        from ._memory import AnnealCrewMemory

        if isinstance(memory, AnnealCrewMemory):
            self._session_of: Callable[[Any], MemorySession] = \
                lambda agent: memory.session_for(scope_of_agent(agent) or memory._last_scope)
            self.session = memory.base_session
        elif isinstance(memory, MemorySession):
            self._session_of = lambda agent: memory
            self.session = memory
        else:
            raise ValidationError(
                f"AnnealEventListener needs an AnnealCrewMemory or a MemorySession, got "
                f"{type(memory).__name__}")
        self.record_tasks = record_tasks
        self.record_tools = record_tools
        self.record_outcomes = record_outcomes
        self._handlers: list[tuple[type[Any], Callable[..., None]]] = []
        super().__init__()

    def setup_listeners(self, crewai_event_bus: Any) -> None:
        def on_task_started(source: Any, event: TaskStartedEvent) -> None:
            description = getattr(event.task, "description", None)
            if self.record_tasks and description:
                self._session_of(getattr(event.task, "agent", None)).record_user_input(
                    str(description))

        def on_tool_finished(source: Any, event: ToolUsageFinishedEvent) -> None:
            if self.record_tools:
                agent = getattr(event, "from_agent", None) or getattr(event, "agent", None)
                self._session_of(agent).record_tool_output(
                    event.tool_name, str(event.output), arguments=_as_dict(event.tool_args))

        def on_task_completed(source: Any, event: TaskCompletedEvent) -> None:
            if self.record_outcomes and event.output is not None:
                self._session_of(getattr(event.task, "agent", None)).record_outcome(
                    str(event.output.raw))

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
