"""Logs, Prometheus metrics and OpenTelemetry spans: imported by every layer, importing none."""
