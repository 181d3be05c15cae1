"""Maps smolagents' run and step callbacks onto a :class:`MemorySession`.

smolagents has no before-run hook and no memory service; what it has is:

- ``agent.instructions``, re-rendered into the system prompt at the start of every
  ``run()``. :meth:`AnnealMemory.prepare` puts the memory block (continuity + recall for the
  task) there, after the agent's own instructions, and records the task as user input.
- ``step_callbacks``, called after each finalized step. :attr:`AnnealMemory.step_callbacks`
  records tool / code results of an ``ActionStep`` (``trust="tool"``), the plan of a
  ``PlanningStep`` (decision) and the ``FinalAnswerStep`` output (outcome). smolagents does
  not catch callback errors, so every callback here logs its own failures (unless the
  session is ``strict``).
- The end of the run: :meth:`AnnealMemory.run` wraps when ``wrap_on_end`` is set;
  otherwise call :meth:`AnnealMemory.wrap` when the conversation is over.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from smolagents.memory import ActionStep, FinalAnswerStep, PlanningStep
from smolagents.models import ChatMessage, MessageRole, Model

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, hook_guard
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.smolagents"
_safe = hook_guard(LOGGER_NAME)

#: prompt -> continuity markdown
Compress = Callable[[str], str]

# Tools whose "output" is the answer itself; the FinalAnswerStep records it as the outcome.
_ANSWER_TOOLS = frozenset({"final_answer"})


def _message_text(message: ChatMessage) -> str:
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
    )


def model_compressor(model: Model) -> Compress:
    """A compressor that sends the wrap prompt to a smolagents ``Model`` as one user message.

    It calls ``model.generate`` directly, outside any agent run, so no step callback sees
    the wrap as a step of the conversation.
    """

    def compress(prompt: str) -> str:
        message = ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": prompt}])
        return _message_text(model.generate([message]))

    return compress


class AnnealMemory:
    """Anneal memory for smolagents agents.

    ``memory`` is a :class:`~anneal_memory.Store` or a store path (a session is made for
    it; ``memory.session.close()`` closes a store it opened) or a ready
    :class:`~anneal_memory.session.MemorySession` (then the session options go to it).
    ``wrap_on_end`` (default ``False``): when true, :meth:`run` wraps after every run;
    otherwise call :meth:`wrap` yourself when the conversation ends. ``compress`` defaults
    to the agent's own model.
    """

    def __init__(
        self,
        memory: Store | MemorySession | str | os.PathLike[str],
        *,
        wrap_on_end: bool = False,
        compress: Compress | None = None,
        record_user_input: bool = True,
        record_tools: bool = True,
        record_plans: bool = True,
        record_outcome: bool = True,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
        session_id: str | None = None,
        crystal_store: Any = None,
        strict: bool | None = None,
    ) -> None:
        attach_memory(self, memory, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      session_id=session_id, crystal_store=crystal_store,
                      recall_limit=recall_limit, max_content_chars=max_content_chars,
                      strict=strict)
        self.record_user_input = record_user_input
        self.record_tools = record_tools
        self.record_plans = record_plans
        self.record_outcome = record_outcome
        # id(agent) -> the agent's own instructions, before any memory block was added
        self._base_instructions: dict[int, str | None] = {}
        self._attached: set[int] = set()
        self._last_agent: Any = None

    # --- wiring -----------------------------------------------------------------------
    @property
    def step_callbacks(self) -> dict[type, list[Callable[..., None]]]:
        """The ``step_callbacks`` dict to pass to the agent's constructor."""
        return {
            ActionStep: [self.on_action_step],
            PlanningStep: [self.on_planning_step],
            FinalAnswerStep: [self.on_final_answer_step],
        }

    def attach(self, agent: Any) -> Any:
        """Register the step callbacks on an existing agent (once per agent); returns it."""
        if id(agent) in self._attached or self._has_callbacks(agent):
            self._attached.add(id(agent))
            return agent
        for step_cls, callbacks in self.step_callbacks.items():
            for callback in callbacks:
                agent.step_callbacks.register(step_cls, callback)
        self._attached.add(id(agent))
        return agent

    def _has_callbacks(self, agent: Any) -> bool:
        registered = getattr(agent.step_callbacks, "_callbacks", {})
        return any(
            getattr(cb, "__self__", None) is self for cbs in registered.values() for cb in cbs
        )

    # --- before the run -----------------------------------------------------------------
    def prepare(self, agent: Any, task: str) -> str:
        """Put continuity + recall for ``task`` into ``agent.instructions``; record the task.

        The block is computed before the task is recorded, so the request is not recalled
        back to itself. Returns the memory block ("" when memory has nothing or failed).
        """
        self._last_agent = agent
        key = id(agent)
        if key not in self._base_instructions:
            self._base_instructions[key] = agent.instructions
        base = self._base_instructions[key]
        block = self._memory_block(task) or ""
        parts = [p for p in (base, block) if p]
        agent.instructions = "\n\n".join(parts) if parts else base
        if self.record_user_input:
            self._record_task(task)
        return block

    @_safe
    def _memory_block(self, task: str) -> str:
        return self.session.memory_block(task)

    @_safe
    def _record_task(self, task: str) -> None:
        self.session.record_user_input(task)

    def run(self, agent: Any, task: str, **run_kwargs: Any) -> Any:
        """``prepare`` + ``agent.run(task, **run_kwargs)`` (+ wrap when ``wrap_on_end``).

        With ``stream=True`` the returned generator yields the agent's steps and wraps once
        it is exhausted.
        """
        self.attach(agent)
        self.prepare(agent, task)
        if run_kwargs.get("stream"):
            return self._stream(agent, agent.run(task, **run_kwargs))
        result = agent.run(task, **run_kwargs)
        self._record_answer(getattr(result, "output", result))
        if self.wrap_on_end:
            self.wrap(agent)
        return result

    def _stream(self, agent: Any, steps: Iterator[Any]) -> Iterator[Any]:
        for step in steps:
            if isinstance(step, FinalAnswerStep):
                self._record_answer(step.output)
            yield step
        if self.wrap_on_end:
            self.wrap(agent)

    @_safe
    def _record_answer(self, output: Any) -> None:
        # The FinalAnswerStep callback does this on smolagents >= 1.21; older releases never
        # pass that step to callbacks. The session's de-duplication keeps one either way.
        if self.record_outcome and output is not None:
            self.session.record_outcome(str(output))

    # --- step callbacks (smolagents does not catch their errors) ---------------------------
    @_safe
    def on_action_step(self, step: ActionStep, agent: Any = None) -> None:
        """Record the tool / code results of one action step with ``trust="tool"``; a
        final-answer step that carries its answer records it too (older smolagents pass no
        ``FinalAnswerStep`` to callbacks; the session's de-duplication keeps one)."""
        if getattr(step, "is_final_answer", False):
            self._record_answer(getattr(step, "action_output", None))
        if not self.record_tools:
            return
        calls = [c for c in (step.tool_calls or []) if c.name not in _ANSWER_TOOLS]
        output = step.observations
        if not calls or not output:
            return
        name = ",".join(dict.fromkeys(c.name for c in calls))
        arguments = {c.name: c.arguments for c in calls}
        self.session.record_tool_output(
            name, str(output), arguments=arguments, metadata={"step": step.step_number},
        )

    @_safe
    def on_planning_step(self, step: PlanningStep, agent: Any = None) -> None:
        """Record the plan as a decision."""
        if self.record_plans:
            self.session.record_decision(getattr(step, "plan", "") or "")

    def on_final_answer_step(self, step: FinalAnswerStep, agent: Any = None) -> None:
        """Record the final answer as the outcome."""
        self._record_answer(getattr(step, "output", None))

    # --- session end -----------------------------------------------------------------------
    def wrap(self, agent: Any = None, *, compress: Compress | None = None) -> WrapOutcome:
        """Compress the episodes since the last wrap into the continuity.

        Uses ``compress``, else the one given at construction, else the model of ``agent``
        (or of the last agent this memory prepared). A failed or refused wrap keeps every
        episode for the next wrap; the outcome is also kept on ``session.last_wrap``.
        """
        model = getattr(agent if agent is not None else self._last_agent, "model", None)
        return self.session.wrap_first(compress, self.compress,
                                       model_compressor(model) if model is not None else None)
