"""Framework adapters. Each subpackage is installed with its own extra, e.g.
``pip install 'anneal-memory[langgraph]'``, and imported as
``anneal_memory.adapters.<framework>``.

The helpers here are the glue every adapter's constructor and hooks share on top of the
core session (:meth:`MemorySession.ensure`, :func:`guard_hook`); they hold no memory logic.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, guard_hook


def open_session(memory: Any, logger_name: str, **options: Any) -> MemorySession:
    """``MemorySession.ensure`` for an adapter's constructor: options left at None are the
    session's defaults, and a session made here logs on the adapter's logger."""
    return MemorySession.ensure(memory, logger=logger_name, **options)


def attach_memory(owner: Any, memory: Any, logger_name: str, *,
                  compress: Callable[[str], Any] | None = None, wrap_on_end: bool = False,
                  **options: Any) -> MemorySession:
    """The part of every adapter's constructor that is the same: validate ``compress``,
    open the session (``open_session``) and set ``owner.session``, ``owner.compress`` and
    ``owner.wrap_on_end``."""
    owner.compress = MemorySession.check_compress(compress)
    owner.session = open_session(memory, logger_name, **options)
    owner.wrap_on_end = bool(wrap_on_end)
    return owner.session


def check_memory_role(role: str) -> str:
    """Validate a ``memory_role`` option at construction: the injected memory message
    is a user or a system message, never an assistant one."""
    if role not in ("user", "system"):
        raise ValidationError(f"memory_role must be 'user' or 'system', not {role!r}")
    return role


def hook_guard(logger_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The core :func:`guard_hook` for a method of an object with a ``session``: a failure
    is logged and the run goes on, unless that session is ``strict``."""
    swallow = guard_hook(logger_name)

    def decorate(method: Callable[..., Any]) -> Callable[..., Any]:
        guarded = swallow(method)
        if inspect.iscoroutinefunction(method):
            @functools.wraps(method)
            async def arun(self: Any, *args: Any, **kwargs: Any) -> Any:
                return await (method if _strict(self) else guarded)(self, *args, **kwargs)
            return arun

        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            return (method if _strict(self) else guarded)(self, *args, **kwargs)
        return run
    return decorate


def _strict(owner: Any) -> bool:
    return bool(getattr(getattr(owner, "session", None), "strict", False))
