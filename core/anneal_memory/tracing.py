"""OpenTelemetry spans and metrics for memory operations, named by the GenAI memory
conventions (``search_memory``, ``update_memory``, ``delete_memory``), so a framework's
trace shows what was recalled, recorded and wrapped, and how long it took.

Optional: with ``opentelemetry-api`` installed (``anneal-memory[otel]``) and an SDK
configured by the application, every public operation is a span under the caller's
current span, with child spans for the phases where time goes. Without the package, or
with no SDK configured, each operation costs one function call and a check.

What a span carries leaks nothing: the store id, the backend, counts, the namespace as
the audit trail's salted hash. Content and query text only when the standard switch
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is on.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, Union

from .types import Episode, ScoredEpisode

F = TypeVar("F", bound=Callable[..., Any])

#: what a span attribute may hold: OpenTelemetry's ``AttributeValue``
AttributeValue = Union[str, bool, int, float, Sequence[str], Sequence[bool], Sequence[int],
                       Sequence[float]]


class OtelSpan(Protocol):
    """The part of an OpenTelemetry span this module uses."""

    def set_attribute(self, key: str, value: AttributeValue) -> None: ...

    def set_status(self, status: object) -> None: ...


class Tracer(Protocol):
    """The part of an OpenTelemetry tracer this module uses."""

    def start_as_current_span(self, name: str, *, kind: object = ...,
                              attributes: Mapping[str, AttributeValue] | None = ...,
                              record_exception: bool = ...,
                              set_status_on_exception: bool = ...
                              ) -> AbstractContextManager[OtelSpan]: ...


class HoldsStore(Protocol):
    """What ``traced(of=...)`` is handed when the store is not the first argument (a
    session)."""

    @property
    def store(self) -> object: ...


#: the instrumentation scope's name
SCOPE = "anneal_memory"
#: ``gen_ai.provider.name`` of every span
PROVIDER = "anneal-memory"
#: the environment switch that lets spans carry content and query text
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

SEARCH, UPDATE, DELETE = "search_memory", "update_memory", "delete_memory"

_api: Any = None  # None: not looked for yet; False: not installed; else (trace, metrics)
_tracers: dict[int, tuple[object, Tracer]] = {}
_instruments: dict[int, dict[str, Any]] = {}


def _load() -> Any:
    global _api
    if _api is None:
        try:
            from opentelemetry import metrics, trace
        except ImportError:
            _api = False
        else:
            _api = (trace, metrics)
    return _api


def _configured(provider: Any) -> bool:
    """Whether ``provider`` is an SDK's (the API's own proxies and no-ops record nothing)."""
    name = type(provider).__name__
    return not (name.startswith(("NoOp", "_NoOp", "Proxy", "_Proxy", "_DefaultProxy")))


def tracer() -> Tracer | None:
    """The tracer of the application's configured provider, or None (nothing to trace to)."""
    api = _api if _api is not None else _load()
    if api is False:
        return None
    provider = api[0].get_tracer_provider()
    if not _configured(provider):
        return None
    found = _tracers.get(id(provider))
    if found is None or found[0] is not provider:
        from ._version import __version__

        found = _tracers[id(provider)] = (provider, provider.get_tracer(SCOPE, __version__))
    return found[1]


def _meters() -> dict[str, Any] | None:
    """The instruments on the application's configured meter provider, or None."""
    api = _api if _api is not None else _load()
    if api is False:
        return None
    provider = api[1].get_meter_provider()
    if not _configured(provider):
        return None
    found = _instruments.get(id(provider))
    if found is None or found["provider"] is not provider:
        from ._version import __version__

        meter = provider.get_meter(SCOPE, __version__)
        found = _instruments[id(provider)] = {
            "provider": provider,
            "duration": meter.create_histogram(
                "anneal_memory.operation.duration", unit="s",
                description="Duration of a memory operation"),
            "results": meter.create_histogram(
                "anneal_memory.recall.results", unit="{episode}",
                description="Episodes a recall returned"),
            "recorded": meter.create_counter(
                "anneal_memory.episodes.recorded", unit="{episode}",
                description="Episodes written"),
            "wraps": meter.create_counter(
                "anneal_memory.wraps", unit="{wrap}",
                description="Wraps saved or refused"),
            "verdicts": meter.create_counter(
                "anneal_memory.immune.verdicts", unit="{pattern}",
                description="The immune system's verdicts on pattern lines at a save"),
        }
    return found


#: the standard variables that ask a process for exporters
EXPORTER_ENV = ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER")


def configure_from_env() -> bool:
    """For the CLI and the servers: set up the SDK from the standard ``OTEL_*`` environment
    (``OTEL_TRACES_EXPORTER=otlp``, ``OTEL_EXPORTER_OTLP_ENDPOINT``, ...) when an exporter is
    asked for, the SDK is installed and the process has no provider yet; an exporter left
    unset is ``none``. True when it configured one."""
    asked = [n for n in EXPORTER_ENV if os.environ.get(n, "").strip().lower() not in ("", "none")]
    if not asked or os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    api = _load()
    if api is False or _configured(api[0].get_tracer_provider()):
        return False
    try:
        from opentelemetry.sdk._configuration import _OTelSDKConfigurator
    except ImportError:
        return False
    for name in EXPORTER_ENV:
        os.environ.setdefault(name, "none")
    try:
        _OTelSDKConfigurator().configure()
    except Exception as exc:  # a tracing setup problem never stops the command
        import sys

        print(f"anneal-memory: tracing not set up from {', '.join(asked)}: {exc}",
              file=sys.stderr)
        return False
    return True


def capture_content() -> bool:
    """Whether spans may carry content and query text (the standard opt-in switch)."""
    value = os.environ.get(CAPTURE_ENV, "").strip().lower()
    return value in ("1", "true", "yes", "on", "span_only", "span_and_event")


def _backend(store: object) -> str:
    return "postgresql" if getattr(store, "dsn", None) else "sqlite"


def _scope_attributes(store: Any) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {"gen_ai.provider.name": PROVIDER,
                             "anneal_memory.backend": _backend(store)}
    store_id = getattr(store, "store_id", None) or ""
    if store_id:
        attrs["gen_ai.memory.store.id"] = store_id
    name = getattr(store, "project_name", None)
    if name:
        attrs["gen_ai.memory.store.name"] = name
    ns = getattr(store, "namespace", None)
    if ns is not None:
        try:  # the audit trail's salted hash: the same value its entries carry
            attrs["anneal_memory.namespace"] = str(store.audit_trail.hash_label(ns.key))
        except Exception:
            attrs["anneal_memory.namespace"] = "unavailable"
    return attrs


class _NoSpan:
    """What an operation gets when nothing is traced: every call a no-op."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, key: str, value: AttributeValue) -> None:
        return None


NO_SPAN = _NoSpan()


class _Span:
    """One span of a memory operation or of one of its phases."""

    __slots__ = ("_cm", "_span", "_op", "_what", "_store", "_start", "_attrs", "_kind")

    def __init__(self, tracer_: Tracer, op: str, what: str, store: object,
                 attrs: Mapping[str, AttributeValue], client: bool) -> None:
        self._op, self._what, self._store, self._attrs = op, what, store, attrs
        name = getattr(store, "project_name", None) or PROVIDER
        kind = _load()[0].SpanKind.CLIENT if client else _load()[0].SpanKind.INTERNAL
        self._kind = client
        self._cm = tracer_.start_as_current_span(
            f"{op} {name}" if client else f"{what}", kind=kind, attributes=attrs,
            record_exception=False, set_status_on_exception=False)
        self._span: OtelSpan | None = None
        self._start = 0.0

    def __enter__(self) -> _Span:
        self._span = self._cm.__enter__()
        self._start = time.perf_counter()
        return self

    def set(self, key: str, value: AttributeValue) -> None:
        """One attribute on the span (and, for a few, on the operation's metrics)."""
        assert self._span is not None, "set() inside the span's with-block"
        self._span.set_attribute(key, value)

    def __exit__(self, etype: Any, exc: Any, tb: Any) -> None:
        error = None
        assert self._span is not None
        if exc is not None:
            error = type(exc).__name__
            self._span.set_attribute("error.type", error)
            from opentelemetry.trace import Status, StatusCode

            self._span.set_status(Status(StatusCode.ERROR, error))
        if self._kind:
            meters = _meters()
            if meters is not None:
                labels = {"gen_ai.operation.name": self._op, "anneal_memory.operation": self._what,
                          "anneal_memory.backend": _backend(self._store)}
                if error:
                    labels["error.type"] = error
                meters["duration"].record(time.perf_counter() - self._start, labels)
            if error and self._what == "wrap.save":
                count_wrap(self._store, "refused")
        self._cm.__exit__(etype, exc, tb)


def span(op: str, what: str, store: object, **attrs: AttributeValue | None) -> _Span | _NoSpan:
    """A span for operation ``what`` (``gen_ai.operation.name`` ``op``) on ``store``."""
    t = tracer()
    if t is None:
        return NO_SPAN
    base = _scope_attributes(store)
    base["gen_ai.operation.name"] = op
    base["anneal_memory.operation"] = what
    base.update({k: v for k, v in attrs.items() if v is not None})
    return _Span(t, op, what, store, base, client=True)


@contextlib.contextmanager
def server_request(scope: Mapping[str, object]) -> Iterator[_Span | None]:
    """A ``SERVER`` span for one HTTP request of the team server (an ASGI ``scope``),
    continuing the caller's trace from its W3C ``traceparent`` / ``tracestate`` headers;
    the memory operations the request causes are its children. None when not tracing."""
    t = tracer()
    if t is None:
        yield None
        return
    from opentelemetry import context, propagate, trace

    carrier: dict[str, str] = {}
    headers = scope.get("headers")
    for pair in headers if isinstance(headers, (list, tuple)) else ():
        raw_name, raw_value = pair  # ASGI: (name, value) byte strings
        if not isinstance(raw_name, bytes) or not isinstance(raw_value, bytes):
            continue
        name = raw_name.decode("latin-1").lower()
        if name in ("traceparent", "tracestate") and name not in carrier:
            carrier[name] = raw_value.decode("latin-1")
    parent = propagate.extract(carrier)
    method = str(scope.get("method") or "")
    attrs = {"http.request.method": method, "url.path": str(scope.get("path") or ""),
             "gen_ai.provider.name": PROVIDER}
    token = context.attach(parent)
    try:
        with t.start_as_current_span(f"{method} {scope.get('path') or ''}".strip(),
                                     kind=trace.SpanKind.SERVER, attributes=attrs) as span:
            holder = _Span.__new__(_Span)
            holder._span = span
            yield holder
    finally:
        context.detach(token)


def phase(name: str) -> Callable[[F], F]:
    """Decorate a function whose time is one phase of an operation: a child span named
    ``name`` when a trace is recording, the plain call otherwise."""
    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            t = tracer()
            if t is None:
                return fn(*args, **kwargs)
            with _Span(t, "", name, None, {"anneal_memory.phase": name}, client=False):
                return fn(*args, **kwargs)
        return run  # type: ignore[return-value]
    return deco


def traced(op: str, what: str, *, query: str | None = None, record_id: str | None = None,
           result: Callable[[_Span, object], None] | None = None,
           of: Callable[[HoldsStore], object] | None = None) -> Callable[[F], F]:
    """Decorate a public operation whose first argument is the store (a method, or a
    function taking it first; ``of`` finds the store in another first argument, such as
    a session): one span per call, named by the GenAI memory conventions. ``query``: the
    parameter holding the query text (sent only when content capture is on);
    ``record_id``: the parameter holding the one episode id it acts on; ``result(span,
    value)`` adds what the result tells (ids, counts, verdicts)."""
    def deco(fn: F) -> F:
        import inspect

        names = list(inspect.signature(fn).parameters)

        def argument(name: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if name is None:
                return None
            if name in kwargs:
                return kwargs[name]
            i = names.index(name) if name in names else 0
            return args[i - 1] if 0 < i <= len(args) else None

        @functools.wraps(fn)
        def run(first: Any, *args: Any, **kwargs: Any) -> Any:
            t = tracer()
            if t is None:
                return fn(first, *args, **kwargs)
            attrs: dict[str, Any] = {}
            text = argument(query, args, kwargs)
            if isinstance(text, str) and capture_content():
                attrs["gen_ai.memory.query.text"] = text
            eid = argument(record_id, args, kwargs)
            if isinstance(eid, str):
                attrs["gen_ai.memory.record.id"] = eid
            store = of(first) if of is not None else first
            with span(op, what, store, **attrs) as sp:
                out = fn(first, *args, **kwargs)
                if result is not None and isinstance(sp, _Span):
                    result(sp, out)
                return out
        return run  # type: ignore[return-value]
    return deco


# ---------------------------------------------------------------------- what results tell
def _records_json(episodes: Sequence[Episode | ScoredEpisode]) -> str:
    return json.dumps([{"id": e.id, "type": str(getattr(e.type, "value", e.type)),
                        "content": e.content} for e in episodes], ensure_ascii=False)


def recorded(sp: _Span, out: object) -> None:
    """An episode or a list of them was written."""
    episodes = [e for e in (out if isinstance(out, list) else [out]) if isinstance(e, Episode)]
    if len(episodes) == 1:
        sp.set("gen_ai.memory.record.id", episodes[0].id)
    sp.set("anneal_memory.episodes", len(episodes))
    if capture_content():
        sp.set("gen_ai.memory.records", _records_json(episodes))
    meters = _meters()
    if meters is not None:
        meters["recorded"].add(len(episodes), {"anneal_memory.backend": _backend(sp._store)})


def found(sp: _Span, out: object) -> None:
    """A recall's result: how many episodes (their content only with capture on)."""
    episodes = list(getattr(out, "episodes", []) or [])
    sp.set("anneal_memory.results", len(episodes))
    total = getattr(out, "total_matching", None)
    if isinstance(total, int):
        sp.set("anneal_memory.total_matching", total)
    if capture_content():
        sp.set("gen_ai.memory.records", _records_json(episodes))
    meters = _meters()
    if meters is not None:
        meters["results"].record(len(episodes), {"anneal_memory.backend": _backend(sp._store)})


def erased(sp: _Span, out: object) -> None:
    """What a delete, erase or prune removed (a bool, a count or an ErasureReport)."""
    if isinstance(out, bool):
        sp.set("anneal_memory.deleted", int(out))
    elif isinstance(out, int):
        sp.set("anneal_memory.deleted", out)
    else:
        sp.set("anneal_memory.deleted", len(getattr(out, "episodes", []) or []))


def imported(sp: _Span, out: object) -> None:
    """An import's count."""
    if isinstance(out, dict) and isinstance(out.get("imported"), int):
        sp.set("anneal_memory.episodes", out["imported"])


def prepared(sp: _Span, out: object) -> None:
    """A prepared wrap: its status and how many episodes it holds."""
    if isinstance(out, dict):
        sp.set("anneal_memory.wrap.status", str(out.get("status")))
        sp.set("anneal_memory.episodes", int(out.get("episode_count") or 0))


def saved(sp: _Span, out: object) -> None:
    """A saved wrap: the immune system's verdicts, as attributes and metrics."""
    if not isinstance(out, dict):
        return
    verdicts = {"validated": int(out.get("graduations_validated") or 0),
                "demoted": int(out.get("graduations_demoted") or 0),
                "level_capped": len(out.get("level_capped") or []),
                "uncorroborated": len(out.get("uncorroborated") or [])}
    for name, n in verdicts.items():
        sp.set(f"anneal_memory.immune.{name}", n)
    sp.set("anneal_memory.episodes", int(out.get("episodes_compressed") or 0))
    count_wrap(sp._store, "saved")
    meters = _meters()
    if meters is not None:
        backend = {"anneal_memory.backend": _backend(sp._store)}
        for name, n in verdicts.items():
            if n:
                meters["verdicts"].add(n, {**backend, "anneal_memory.verdict": name})


def count_wrap(store: object, status: str) -> None:
    """One wrap saved or refused (the ``anneal_memory.wraps`` counter)."""
    meters = _meters()
    if meters is not None:
        meters["wraps"].add(1, {"anneal_memory.backend": _backend(store),
                                "anneal_memory.wrap.status": status})
