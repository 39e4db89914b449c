"""Creating or checking the relay's JetStream stream (``outboxctl nats ensure-stream``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import attrs
import nats.js.errors
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig


@attrs.frozen(kw_only=True)
class StreamSpec:
    """What the relay's stream should be."""

    name: str
    subjects: tuple[str, ...]
    retention: str = "limits"  # limits, interest or workqueue
    storage: str = "file"  # file or memory
    replicas: int = 1
    duplicate_window: timedelta = timedelta(minutes=2)
    max_age: timedelta | None = None  # None: no age limit


@attrs.frozen(kw_only=True)
class Difference:
    """One setting of the existing stream that is not what the spec asks for."""

    setting: str
    expected: str
    actual: str


@attrs.frozen(kw_only=True)
class StreamReport:
    """What ``ensure_stream`` found and did: created, matching, updated or differing."""

    name: str
    action: str  # created, matches, updated, differs
    differences: Sequence[Difference] = ()
    messages: int = 0


def _config(spec: StreamSpec) -> StreamConfig:
    return StreamConfig(
        name=spec.name,
        subjects=list(spec.subjects),
        retention=RetentionPolicy(spec.retention),
        storage=StorageType(spec.storage),
        num_replicas=spec.replicas,
        duplicate_window=spec.duplicate_window.total_seconds(),
        max_age=spec.max_age.total_seconds() if spec.max_age else 0,
    )


def differences(spec: StreamSpec, actual: StreamConfig) -> list[Difference]:
    """How ``actual`` differs from ``spec``, setting by setting."""
    wanted = _config(spec)
    pairs = {
        "subjects": (sorted(wanted.subjects or []), sorted(actual.subjects or [])),
        "retention": (_value(wanted.retention), _value(actual.retention)),
        "storage": (_value(wanted.storage), _value(actual.storage)),
        "replicas": (wanted.num_replicas, actual.num_replicas or 1),
        "duplicate_window_seconds": (
            round(wanted.duplicate_window, 3),
            round(actual.duplicate_window or 0, 3),
        ),
        "max_age_seconds": (round(wanted.max_age or 0, 3), round(actual.max_age or 0, 3)),
    }
    return [
        Difference(setting=name, expected=str(expected), actual=str(got))
        for name, (expected, got) in pairs.items()
        if expected != got
    ]


def _value(member: object) -> str:
    return str(getattr(member, "value", member))


async def ensure_stream(
    jetstream: JetStreamContext, spec: StreamSpec, *, update: bool = False
) -> StreamReport:
    """Create the stream when it is missing; otherwise compare it (and, with ``update``, fix it).

    Raises nats.errors.Error subclasses when the server cannot be asked, and
    nats.js.errors.APIError when it refuses (such as a change of storage, which JetStream
    does not allow in place).
    """
    try:
        info = await jetstream.stream_info(spec.name)
    except nats.js.errors.NotFoundError:
        created = await jetstream.add_stream(_config(spec))
        return StreamReport(name=spec.name, action="created", messages=created.state.messages)
    found = differences(spec, info.config)
    if not found:
        return StreamReport(name=spec.name, action="matches", messages=info.state.messages)
    if not update:
        return StreamReport(
            name=spec.name, action="differs", differences=found, messages=info.state.messages
        )
    updated = await jetstream.update_stream(_config(spec))
    return StreamReport(
        name=spec.name, action="updated", differences=found, messages=updated.state.messages
    )
