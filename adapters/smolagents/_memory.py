"""Maps smolagents' run and step callbacks onto a :class:`MemorySession`.

smolagents has no before-run hook and no memory service; what it has is:

- ``agent.run``, the one path every caller takes (``GradioUI``, a manager calling a
  managed agent, your own code). :meth:`AnnealMemory.attach` hooks it on the agent
  instance: before each run the memory block (continuity + recall for the task, a
  labelled data section) is added after the agent's own ``instructions`` for that run's
  system prompt only, and the task is recorded as the user's request. The agent's
  ``instructions`` are read fresh every run and put back as they were right after the
  system prompt is built, so your own changes to them always hold.
- ``step_callbacks``, called after each finalized step: tool / code results of an
  ``ActionStep`` (``trust="tool"``), the plan of a ``PlanningStep`` (decision) and the
  ``FinalAnswerStep`` output (outcome). smolagents does not catch callback errors, so
  every callback here logs its own failures (unless the session is ``strict``).
- The end of the run: with ``wrap_on_end`` the run wraps through the agent's own model;
  otherwise call :meth:`AnnealMemory.wrap` when the conversation is over.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smolagents.memory import ActionStep, FinalAnswerStep, PlanningStep
from smolagents.models import ChatMessage, MessageRole, Model

from anneal_memory import Store
from anneal_memory.adapters import MemoryAdapter, hook_guard, label_memory, options_except
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.smolagents"
_safe = hook_guard(LOGGER_NAME)

#: prompt -> continuity markdown
Compress = Callable[[str], str]

# Tools whose "output" is the answer itself; the FinalAnswerStep records it as the outcome.
_ANSWER_TOOLS = frozenset({"final_answer"})
# The attribute of a hooked agent that holds its original ``run``.
_ORIGINAL_RUN = "_anneal_memory_run"


@dataclass(frozen=True)
class RunContext:
    """What a ``namespace=`` callable receives for one run."""

    agent: Any
    task: str
    additional_args: dict[str, Any] = field(default_factory=dict)


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


class AnnealMemory(MemoryAdapter):
    """Anneal memory for smolagents agents.

    ``memory`` is a :class:`~anneal_memory.Store` or a store path (a session is made for
    it; :meth:`close` closes a store it opened) or a ready
    :class:`~anneal_memory.session.MemorySession` (then the session options go to it).
    ``namespace``: whose memory this is (``{"user": "alice"}``, a ``MemoryNamespace``, or
    a callable receiving a :class:`RunContext` per run); smolagents carries no user
    identity of its own, so without it the whole store is one memory. ``wrap_on_end``
    (default ``False``): when true, every run wraps at its end; otherwise call
    :meth:`wrap` yourself when the conversation ends. ``compress`` defaults to the
    agent's own model.
    """

    framework = "smolagents"
    extra = "smolagents"
    logger_name = LOGGER_NAME
    #: the system prompt is the one channel smolagents offers before a run's first call
    default_memory_role = "system"

    memory_options = options_except("memory_role", "project_name")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 record_user_input: bool = True, record_tools: bool = True,
                 record_plans: bool = True, record_outcome: bool = True,
                 options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        self._init_memory(memory, options, **keywords)
        self.record_user_input = record_user_input
        self.record_tools = record_tools
        self.record_plans = record_plans
        self.record_outcome = record_outcome
        # agent -> the session of its current (or last) run
        self._runs: weakref.WeakKeyDictionary[Any, MemorySession] = weakref.WeakKeyDictionary()
        self._last_agent: Any = None

    # --- wiring -----------------------------------------------------------------------
    @property
    def step_callbacks(self) -> dict[type, list[Callable[..., None]]]:
        """The ``step_callbacks`` dict for the agent's constructor. Prefer
        :meth:`attach`: callbacks alone see a run only after its first model call, so an
        agent wired only through them gets recall from its second run on."""
        return {
            ActionStep: [self.on_action_step],
            PlanningStep: [self.on_planning_step],
            FinalAnswerStep: [self.on_final_answer_step],
        }

    def attach(self, agent: Any) -> Any:
        """Wire memory into ``agent`` (once; returns it): the step callbacks, and a hook on
        the agent's own ``run`` so every run (``agent.run``, a manager calling it as a
        managed agent, ``GradioUI``) gets recall and records its request."""
        if not self._has_callbacks(agent):
            for step_cls, callbacks in self.step_callbacks.items():
                for callback in callbacks:
                    agent.step_callbacks.register(step_cls, callback)
        self._hook_run(agent)
        return agent

    def _has_callbacks(self, agent: Any) -> bool:
        registered = getattr(agent.step_callbacks, "_callbacks", {})
        return any(
            getattr(cb, "__self__", None) is self for cbs in registered.values() for cb in cbs
        )

    def _hook_run(self, agent: Any) -> None:
        hooked = agent.__dict__.get(_ORIGINAL_RUN)
        if hooked is not None:
            if hooked[0] is not self:
                raise ValidationError("this agent is already attached to another AnnealMemory: "
                                      "one memory per agent (several may share a store)")
            return
        original = agent.run
        agent.__dict__[_ORIGINAL_RUN] = (self, original)

        @functools.wraps(original)
        def run(task: str, *args: Any, **kwargs: Any) -> Any:
            return self._run(agent, original, task, *args, **kwargs)

        agent.run = run

    # --- one run ------------------------------------------------------------------------
    def _run(self, agent: Any, original: Callable[..., Any], task: str, *args: Any,
             **kwargs: Any) -> Any:
        stream = bool(kwargs.get("stream", args[0] if args else False))
        additional = kwargs.get("additional_args") if len(args) < 4 else args[3]
        self._last_agent = agent
        session = self._begin(agent, task, additional)
        block = self._memory_block(session, task) if session is not None else ""
        if session is not None and self.record_user_input:
            self._record_task(session, task)
        own = agent.instructions
        if block:
            agent.instructions = "\n\n".join(p for p in (own, label_memory(block)) if p)
        try:
            result = original(task, *args, **kwargs)
        finally:
            # run() renders the system prompt before it returns (or starts the stream):
            # the agent's own instructions are back for whatever comes next
            if block:
                agent.instructions = own
        if stream:
            return self._stream(agent, result)
        self._record_answer(agent, getattr(result, "output", result))
        self._end(agent)
        return result

    @_safe
    def _begin(self, agent: Any, task: str, additional: Any) -> MemorySession:
        context = RunContext(agent=agent, task=task, additional_args=dict(additional or {}))
        session = self.session_for(context)
        self._runs[agent] = session
        return session

    def _stream(self, agent: Any, steps: Iterator[Any]) -> Iterator[Any]:
        for step in steps:
            if isinstance(step, FinalAnswerStep):
                self._record_answer(agent, step.output)
            yield step
        self._end(agent)

    @_safe
    def _end(self, agent: Any) -> None:
        session = self._runs.get(agent)
        if session is not None:
            self.end_run(session, agent)

    def prepare(self, agent: Any, task: str) -> str:
        """The memory block for ``task`` in ``agent``'s namespace, without running it (what a
        hooked ``run`` adds to the system prompt). Nothing is recorded."""
        session = self._begin(agent, task, None)
        return self._memory_block(session, task) if session is not None else ""

    @_safe
    def _memory_block(self, session: MemorySession, task: str) -> str:
        return session.memory_block(task)

    @_safe
    def _record_task(self, session: MemorySession, task: str) -> None:
        session.record_user_input(task)

    def run(self, agent: Any, task: str, **run_kwargs: Any) -> Any:
        """``attach(agent)`` then ``agent.run(task, **run_kwargs)``; the same as calling
        ``agent.run`` on an attached agent."""
        self.attach(agent)
        return agent.run(task, **run_kwargs)

    def session_of(self, agent: Any = None) -> MemorySession:
        """The session of ``agent``'s current (or last) run; the fixed namespace's (or the
        store's) session when the agent has not run."""
        agent = agent if agent is not None else self._last_agent
        found = self._runs.get(agent) if agent is not None else None
        if found is not None:
            return found
        return self.session_for(None)

    def _callback_session(self, agent: Any) -> MemorySession | None:
        if agent is None:
            return self.session_of(None)
        if _ORIGINAL_RUN not in agent.__dict__:
            # wired through step_callbacks only: hook the run for the next ones, and take
            # this run's request from the agent (its recall was too late for this run)
            self._hook_run(agent)
            session = self._begin(agent, str(getattr(agent, "task", "") or ""), None)
            if session is not None and self.record_user_input and getattr(agent, "task", None):
                self._record_task(session, str(agent.task))
            return session
        return self._runs.get(agent) or self.session_of(agent)

    @_safe
    def _record_answer(self, agent: Any, output: Any) -> None:
        # The FinalAnswerStep callback does this on smolagents >= 1.21; older releases never
        # pass that step to callbacks. The session's de-duplication keeps one either way.
        session = self._callback_session(agent)
        if self.record_outcome and output is not None and session is not None:
            session.record_outcome(str(output))

    # --- step callbacks (smolagents does not catch their errors) ---------------------------
    @_safe
    def on_action_step(self, step: ActionStep, agent: Any = None) -> None:
        """Record the tool / code results of one action step with ``trust="tool"``; a
        final-answer step that carries its answer records it too (older smolagents pass no
        ``FinalAnswerStep`` to callbacks; the session's de-duplication keeps one)."""
        if getattr(step, "is_final_answer", False):
            self._record_answer(agent, getattr(step, "action_output", None))
        if not self.record_tools:
            return
        calls = [c for c in (step.tool_calls or []) if c.name not in _ANSWER_TOOLS]
        output = step.observations
        session = self._callback_session(agent)
        if not calls or not output or session is None:
            return
        name = ",".join(dict.fromkeys(c.name for c in calls))
        arguments = {c.name: c.arguments for c in calls}
        session.record_tool_output(name, str(output), arguments=arguments,
                                   metadata={"step": step.step_number})

    @_safe
    def on_planning_step(self, step: PlanningStep, agent: Any = None) -> None:
        """Record the plan as a decision."""
        session = self._callback_session(agent)
        if self.record_plans and session is not None:
            session.record_decision(getattr(step, "plan", "") or "")

    def on_final_answer_step(self, step: FinalAnswerStep, agent: Any = None) -> None:
        """Record the final answer as the outcome."""
        self._record_answer(agent, getattr(step, "output", None))

    # --- session end -----------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Compress | None:
        """The model of ``context`` (an agent) or of the last agent run."""
        agent = context if context is not None else self._last_agent
        model = getattr(agent, "model", None)
        return model_compressor(model) if model is not None else None

    def wrap(self, agent: Any = None, *, compress: Compress | None = None,
             namespace: Any = None) -> WrapOutcome:
        """Compress the episodes of ``agent``'s namespace (default: the last agent run;
        ``namespace=`` names another) since its last wrap into its continuity.

        Uses ``compress``, else the one given at construction, else the model of ``agent``
        (or of the last agent run). A failed or refused wrap keeps every episode for the
        next wrap; the outcome is also kept on that session's ``last_wrap``.
        """
        agent = agent if agent is not None else self._last_agent
        session = (self.session_for(None, namespace=namespace) if namespace is not None
                   else self.session_of(agent))
        return session.wrap_first(self.compressor(compress, agent))
