"""Telemetry that keeps what it was told, for assertions."""

from __future__ import annotations

import attrs

Field = str | int | float | bool | None


@attrs.frozen
class Event:
    """One reported event."""

    name: str
    level: str
    fields: dict[str, Field]


@attrs.define
class RecordingTelemetry:
    """Keeps every event, counter increment and observation in lists."""

    events: list[Event] = attrs.field(factory=list)
    counts: list[tuple[str, float, dict[str, str]]] = attrs.field(factory=list)
    observations: list[tuple[str, float, dict[str, str]]] = attrs.field(factory=list)
    forgotten: list[str] = attrs.field(factory=list)

    def event(self, name: str, /, *, level: str = "info", **fields: Field) -> None:
        """Keep the event."""
        self.events.append(Event(name, level, dict(fields)))

    def count(self, name: str, /, value: float = 1, **labels: str) -> None:
        """Keep the increment."""
        self.counts.append((name, value, dict(labels)))

    def observe(self, name: str, /, value: float, **labels: str) -> None:
        """Keep the observation."""
        self.observations.append((name, value, dict(labels)))

    def forget(self, name: str, /) -> None:
        """Keep the gauge's name; its earlier observations stay in ``observations``."""
        self.forgotten.append(name)

    def named(self, name: str) -> list[Event]:
        """Every event called ``name``, in order."""
        return [event for event in self.events if event.name == name]
