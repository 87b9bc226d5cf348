"""OpenTelemetry spans for a request, its search stages, store calls and LLM calls (optional).

Without OpenTelemetry's SDK every span is the API's no-op (and without the API, a null context):
nothing is recorded or sent. `memvec serve` exports spans with OTLP over HTTP when the standard
variables name an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the
others, such as OTEL_SERVICE_NAME or OTEL_EXPORTER_OTLP_HEADERS, are read by the SDK) and the
`traces` extra is installed (`pip install 'memvec[traces]'`). An application that embeds memvec and
sets up its own tracer provider gets memvec's spans in its traces."""

from __future__ import annotations

import logging
import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - the API comes with memvec's dependencies today
    _trace = None  # type: ignore[assignment]

log = logging.getLogger("memvec.tracing")
_tracer = _trace.get_tracer("memvec") if _trace is not None else None  # follows the provider set later


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span around the block (the current one's child), or nothing without OpenTelemetry."""
    if _tracer is None:
        return nullcontext()
    return _tracer.start_as_current_span(name, attributes=attributes)


def request_span(name: str, carrier: dict[str, str], **attributes: Any) -> AbstractContextManager[Any]:
    """A server span for an HTTP request, the child of the caller's span when its headers
    (`carrier`: traceparent, tracestate) carry one (W3C trace context)."""
    if _trace is None or _tracer is None:
        return nullcontext()
    from opentelemetry import propagate

    return _tracer.start_as_current_span(
        name, context=propagate.extract(carrier), kind=_trace.SpanKind.SERVER, attributes=attributes
    )


def export_from_environment() -> bool:
    """Set up OTLP export when the environment names an endpoint; returns whether it did."""
    if _trace is None or not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "an OTLP endpoint is set but OpenTelemetry's SDK is not installed: no traces are "
            "exported (pip install 'memvec[traces]')"
        )
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "memvec")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    _trace.set_tracer_provider(provider)
    log.info(
        "exporting traces with OTLP to %s",
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"],
    )
    return True
