"""Framework adapters. Each subpackage is installed with its own extra, e.g.
``pip install 'anneal-memory[langgraph]'``, and imported as
``anneal_memory.adapters.<framework>``.

The two helpers here are the glue every adapter's constructor and hooks share on top of
the core session (:meth:`MemorySession.ensure`, :func:`guard_hook`); they hold no memory
logic.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from typing import Any

from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, guard_hook


def open_session(memory: Any, logger_name: str, **options: Any) -> MemorySession:
    """``MemorySession.ensure(memory, **options)`` for an adapter's constructor.

    Options left at None are the session's defaults, so a user's own MemorySession can be
    passed with no options; a session made here logs on the adapter's logger.
    """
    given = {k: v for k, v in options.items() if v is not None}
    if "project_name" in given and not isinstance(memory, (str, os.PathLike)):
        raise ValidationError("project_name names a store opened from a path: pass a path, or "
                              "give the project name to the Store you pass")
    session = MemorySession.ensure(memory, **given)
    if session is not memory:
        session.log = logging.getLogger(logger_name)
    return session


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
