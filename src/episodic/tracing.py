"""OpenTelemetry traces: where one request spent its time, across processes.

With the ``[otel]`` extra installed and the standard ``OTEL_*`` variables saying where to
send spans (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
``OTEL_TRACES_EXPORTER``), a server (``create_app``) and each of its recall processes
export their spans over OTLP: one per HTTP request, with children for the recall, its
stages, each call to the embedding model, each database statement and the hop to a recall
process (whose spans continue the request's trace: the context travels with the call).
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` and the
exporter's and batch processor's own variables are read by the SDK as usual.

Off (no such variable, ``OTEL_SDK_DISABLED=true``, or no extra), nothing of the SDK is
imported, and what the code calls on its hot paths (``span``, ``ACTIVE``) is a global
check: a shared do-nothing context manager is handed back, no span is made."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from episodic.errors import InvalidInput

log = logging.getLogger("episodic.tracing")

# Read on the hot paths (a database statement, a recall stage): True once spans are made.
ACTIVE = False
SERVICE_NAME = "episodic"
PROTOCOLS = ("http/protobuf", "grpc")
# A statement's text in a span: enough to tell statements apart, not a whole bulk insert.
MAX_STATEMENT_CHARS = 1000

_NULL: AbstractContextManager[None] = nullcontext()
_tracer: Any = None
_provider: Any = None
_lock = threading.Lock()
_started = False

T = TypeVar("T")


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces: an OTLP endpoint or a traces
    exporter named, and the SDK not disabled."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = [e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",")]
    if "none" in exporters:
        return False
    named = any(exporters)
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    return named or bool(endpoint)


def protocol(environ: Mapping[str, str] | None = None) -> str:
    """The OTLP transport: ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, else
    ``OTEL_EXPORTER_OTLP_PROTOCOL``, else ``http/protobuf`` (the specification's
    default); another value is an error naming the variable."""
    env = os.environ if environ is None else environ
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(name, "").strip().lower()
        if value:
            if value not in PROTOCOLS:
                raise InvalidInput(name, f"'{value}': use one of {', '.join(PROTOCOLS)}")
            return value
    return PROTOCOLS[0]


def start_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Turn traces on in this process when the ``OTEL_*`` variables ask for them (once a
    process; later calls answer the first's outcome). Without the ``[otel]`` extra, a
    warning naming the install command, and traces stay off. Returns whether on."""
    global _started
    with _lock:
        if _started:
            return ACTIVE
        _started = True
        env = os.environ if environ is None else environ
        if not wanted(env):
            return ACTIVE  # on only if a provider was handed over (``use``)
        try:
            from opentelemetry.sdk.trace import TracerProvider
        except ImportError:
            from episodic.extras import DISTRIBUTION

            log.warning(
                "OTEL_* variables ask for traces, but the [otel] extra is not installed: "
                "pip install '%s[otel]'; no traces are sent",
                DISTRIBUTION,
            )
            return False
        provider = TracerProvider(resource=_resource())
        for processor in _processors(env):
            provider.add_span_processor(processor)
        _use(provider)
        return True


def use(provider: Any) -> None:
    """Make spans with ``provider`` (an SDK ``TracerProvider``) from now on: for a program
    that embeds episodic and has its own, and for tests. ``None`` turns traces off."""
    with _lock:
        _use(provider)


def _use(provider: Any) -> None:
    global ACTIVE, _tracer, _provider
    _provider = provider
    if provider is None:
        _tracer, ACTIVE = None, False
        return
    _tracer = provider.get_tracer("episodic")
    ACTIVE = True


def flush() -> None:
    """Send the spans still buffered (a process about to end; a test about to look)."""
    if _provider is not None:
        _provider.force_flush()


def _resource() -> Any:
    from opentelemetry.sdk.resources import Resource

    found = Resource.create()
    name = str(found.attributes.get("service.name", ""))
    if not name or name.startswith("unknown_service"):
        found = found.merge(Resource({"service.name": SERVICE_NAME}))
    return found.merge(Resource({"process.pid": os.getpid()}))


def _processors(env: Mapping[str, str]) -> list[Any]:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    names = [e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    found: list[Any] = []
    for name in [n for n in names if n] or ["otlp"]:
        if name == "otlp":
            found.append(BatchSpanProcessor(_otlp_exporter(env)))
        elif name == "console":
            found.append(BatchSpanProcessor(ConsoleSpanExporter()))
        else:
            raise InvalidInput("OTEL_TRACES_EXPORTER", f"'{name}': use otlp, console or none")
    return found


def _otlp_exporter(env: Mapping[str, str]) -> Any:
    if protocol(env) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as OverGrpc,
        )

        return OverGrpc()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as OverHttp,
    )

    return OverHttp()


# -- what the code calls --------------------------------------------------------------
def span(name: str, attributes: Mapping[str, Any] | None = None) -> AbstractContextManager[Any]:
    """A child of the current span for the block (the span, or None when off)."""
    if not ACTIVE:
        return _NULL
    return _tracer.start_as_current_span(name, attributes=attributes)  # type: ignore[no-any-return]


def begin(name: str, attributes: Mapping[str, Any] | None = None) -> Any:
    """A span made current until ``end``: for a stage that is not one block of code.
    Should the code between raise, the enclosing ``span``'s end restores the context
    (a context variable's reset undoes every later set), and this span goes unsent."""
    if not ACTIVE:
        return None
    from opentelemetry import context, trace

    made = _tracer.start_span(name, attributes=attributes)
    return made, context.attach(trace.set_span_in_context(made))


def end(handle: Any) -> None:
    """End a span ``begin`` made (None: nothing)."""
    if handle is None:
        return
    from opentelemetry import context

    made, token = handle
    context.detach(token)
    made.end()


def statement(system: str, sql: str) -> AbstractContextManager[Any]:
    """A database statement's span: its first word as the name (``SELECT``), the
    statement's text (parameters never: they hold users' data). Callers check
    ``ACTIVE`` first, so that an off process pays one global read per statement."""
    if not ACTIVE:
        return _NULL
    text = sql.strip()
    operation = text.split(None, 1)[0].upper() if text else "SQL"
    return span(
        f"{operation} {system}",
        {"db.system": system, "db.statement": text[:MAX_STATEMENT_CHARS]},
    )


def carrier() -> dict[str, str] | None:
    """The current trace context as headers (W3C ``traceparent``), for a call to another
    process; None when off."""
    if not ACTIVE:
        return None
    from opentelemetry.propagate import inject

    found: dict[str, str] = {}
    inject(found)
    return found


@contextmanager
def attached(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Continue the trace ``headers`` carry (from ``carrier``, or an HTTP request's) for
    the block; nothing when off or when they carry none."""
    if not ACTIVE or not headers:
        yield
        return
    from opentelemetry import context
    from opentelemetry.propagate import extract

    token = context.attach(extract(dict(headers)))
    try:
        yield
    finally:
        context.detach(token)


def in_context(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` run in a copy of the caller's context, for a thread pool of ours (whose
    threads would otherwise start a trace of their own); ``fn`` itself when off."""
    if not ACTIVE:
        return fn
    import contextvars

    ctx = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> T:
        return ctx.run(fn, *args, **kwargs)

    return run


def server_span(method: str, headers: Mapping[str, str]) -> AbstractContextManager[Any]:
    """An HTTP request's span, continuing the caller's trace if its headers carry one;
    named for its route once known (``finish_server_span``)."""
    if not ACTIVE:
        return _NULL
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    return _tracer.start_as_current_span(  # type: ignore[no-any-return]
        method,
        context=extract(dict(headers)),
        kind=SpanKind.SERVER,
        attributes={"http.request.method": method},
    )


def finish_server_span(found: Any, route: str | None, status: int, request_id: str) -> None:
    """Name the request's span for its route template and record its status."""
    if found is None:
        return
    method = found.attributes.get("http.request.method", "") if found.attributes else ""
    found.update_name(f"{method} {route}" if route else str(method))
    if route:
        found.set_attribute("http.route", route)
    found.set_attribute("http.response.status_code", status)
    found.set_attribute("episodic.request_id", request_id)
    if status >= 500:
        from opentelemetry.trace import Status, StatusCode

        found.set_status(Status(StatusCode.ERROR))
