"""The worker's lanes: which outboxes one worker process dispatches, and how hard.

A lane is one outbox's loop with its own claim size, sends in flight, batches in flight,
database pool and wake-up listener, so a flood in one lane never holds up another's work.
Adding a lane is one entry in ``LANES`` here (its variables and defaults) and one in the
worker's composition root (``entrypoints/bootstrap/lanes.py``, what it runs).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from outbox.entrypoints.settings.reader import PREFIX, EnvironmentReader

SECURITY = "security"
EVENTS = "events"
CONSUMERS = "consumers"


RESERVED_SLOT_VARIABLE = "WORKER_RESERVED_SLOT"


class ReservedSlot(enum.StrEnum):
    """Where the security lane's reserved slot (high priority only) runs:
    ``OUTBOX_WORKER_RESERVED_SLOT``."""

    BESIDE = "beside"  # in this process, beside the lane's batches (the default)
    ELSEWHERE = "elsewhere"  # not here: this process runs the batches, another the slot
    ONLY = "only"  # here alone: this process claims high priority and nothing else


@attrs.frozen(kw_only=True)
class LaneSettings:
    """How one lane claims and sends."""

    batch_size: int  # rows claimed per batch
    concurrency: int  # sends (or publications) in flight per batch
    parallel_batches: int  # batches in flight at once, so database round trips overlap sending


@attrs.frozen(kw_only=True)
class _LaneVariables:
    """``OUTBOX_<prefix>_BATCH_SIZE``, ``…_CONCURRENCY``, ``…_PARALLEL_BATCHES`` and defaults."""

    prefix: str
    defaults: LaneSettings


# In the order a worker starts them. The security lane keeps the worker's historical names.
LANES: Mapping[str, _LaneVariables] = {
    SECURITY: _LaneVariables(
        prefix="WORKER",
        defaults=LaneSettings(batch_size=100, concurrency=32, parallel_batches=2),
    ),
    # Four batches in flight: one batch's claim and record round trips overlap the others'
    # publishing (the relay measured 0.16x of a bare publish loop with one, docs/benchmarks.md).
    EVENTS: _LaneVariables(
        prefix="EVENTS",
        defaults=LaneSettings(batch_size=100, concurrency=4, parallel_batches=4),
    ),
    # The consumers of tenant events this package ships: a batch per consumer, cut into
    # ``concurrency`` groups that run at once, each one transaction (docs/consumers.md).
    CONSUMERS: _LaneVariables(
        prefix="CONSUMERS",
        defaults=LaneSettings(batch_size=50, concurrency=4, parallel_batches=1),
    ),
}
LANES_VARIABLE = "WORKER_LANES"
PARALLEL_BATCHES = "PARALLEL_BATCHES"


def parse_lanes(value: str) -> tuple[str, ...]:
    """A comma-separated lane list, deduplicated, in ``LANES`` order.

    Raises ValueError naming the unknown lane and the known ones.
    """
    names = {part.strip().lower() for part in value.split(",")}
    names.discard("")
    unknown = sorted(names - LANES.keys())
    if unknown or not names:
        got = f"unknown lane {', '.join(map(repr, unknown))}" if unknown else "no lane"
        raise ValueError(f"{got}; expected a comma-separated list of {', '.join(LANES)}")
    return tuple(name for name in LANES if name in names)


@attrs.frozen(kw_only=True)
class LaneChoice:
    """The lanes a worker runs, every lane's sizing, and what an operator should hear."""

    lanes: tuple[str, ...]
    sizing: Mapping[str, LaneSettings]
    warnings: tuple[str, ...] = ()


def read_lanes(read: EnvironmentReader) -> LaneChoice:
    """``OUTBOX_WORKER_LANES`` (default: every lane) and each lane's sizing variables.

    ``OUTBOX_WORKER_LANES`` once meant the security lane's batches in flight; a whole number
    there is still read that way (as ``OUTBOX_WORKER_PARALLEL_BATCHES``), with a warning, and
    refused when ``OUTBOX_WORKER_PARALLEL_BATCHES`` is set as well.
    """
    lanes: tuple[str, ...] = tuple(LANES)
    legacy: int | None = None
    warnings: list[str] = []
    raw = read.raw(LANES_VARIABLE)
    security_parallel = f"{LANES[SECURITY].prefix}_{PARALLEL_BATCHES}"
    if raw is not None and raw.isdigit():
        if read.raw(security_parallel) is not None:
            read.refuse(
                LANES_VARIABLE,
                f"a number here is the old spelling of {PREFIX}{security_parallel}, which is"
                f" set too; list lanes instead (e.g. {','.join(LANES)}) or unset it",
                None,
            )
        else:
            legacy = read.integer(LANES_VARIABLE, 1)
            warnings.append(
                f"{PREFIX}{LANES_VARIABLE}={raw} is read as {PREFIX}{security_parallel}={raw}"
                f" (deprecated: {PREFIX}{LANES_VARIABLE} now lists lanes, e.g."
                f" {','.join(LANES)}); rename it"
            )
    elif raw is not None:
        try:
            lanes = parse_lanes(raw)
        except ValueError as error:
            read.refuse(LANES_VARIABLE, str(error), None)
    sizing = {name: _read_sizing(read, variables) for name, variables in LANES.items()}
    if legacy is not None:
        sizing[SECURITY] = attrs.evolve(sizing[SECURITY], parallel_batches=legacy)
    return LaneChoice(lanes=lanes, sizing=sizing, warnings=tuple(warnings))


def _read_sizing(read: EnvironmentReader, variables: _LaneVariables) -> LaneSettings:
    prefix, defaults = variables.prefix, variables.defaults
    return LaneSettings(
        batch_size=read.integer(f"{prefix}_BATCH_SIZE", defaults.batch_size),
        concurrency=read.integer(f"{prefix}_CONCURRENCY", defaults.concurrency),
        parallel_batches=read.integer(f"{prefix}_{PARALLEL_BATCHES}", defaults.parallel_batches),
    )
