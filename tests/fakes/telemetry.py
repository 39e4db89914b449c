"""Telemetry that keeps what it was told, for assertions: the public double's."""

from outbox.testing import Event, RecordingTelemetry

__all__ = ["Event", "RecordingTelemetry"]
