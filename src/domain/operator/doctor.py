"""What ``outboxctl doctor`` concludes from the database's own readings.

The outbox lives in the application's database, beside its long reports, backups and
migrations. A transaction held open pins the xmin horizon: no dead row can be vacuumed, and
every claim walks more dead versions. These rules turn the readings (sessions, autovacuum,
the hot tables, each lane's oldest due item, the consumers, the relay, replication slots)
into findings, each with a plain sentence of what to do.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import timedelta

import attrs

MIB = 1024 * 1024


class Severity(enum.StrEnum):
    """How soon someone should act."""

    WARNING = "warning"  # soon: it will get worse
    CRITICAL = "critical"  # now: deliveries are late or storage grows without bound


@attrs.frozen(kw_only=True)
class HorizonHolder:
    """Something that keeps the xmin horizon back: a session's open transaction, a prepared
    transaction, or a replication slot."""

    kind: str  # "session", "prepared transaction", "replication slot"
    name: str  # the pid and login, the prepared transaction's gid, or the slot's name
    state: str  # "idle in transaction", "active", … ("" for the others)
    age: timedelta  # how long its transaction (or the slot's xmin) has held


@attrs.frozen(kw_only=True)
class TableReading:
    """One hot table: its live and dead rows, its size, whether autovacuum may visit it."""

    name: str
    live_rows: int
    dead_rows: int
    size_bytes: int
    autovacuum_enabled: bool = True
    last_vacuum_age: timedelta | None = None  # since the last (auto)vacuum; None: never


@attrs.frozen(kw_only=True)
class LaneReading:
    """A worker lane's due work: how many items are due and the age of the oldest."""

    lane: str
    due: int
    oldest_due_age: timedelta | None


@attrs.frozen(kw_only=True)
class ConsumerReading:
    """A consumer of tenant events and how far behind it is."""

    consumer: str
    active: bool
    events_behind: int
    oldest_undelivered_age: timedelta | None


@attrs.frozen(kw_only=True)
class RelayReading:
    """The relay's progress: when it last published and what waits for it."""

    last_published_age: timedelta | None  # None: nothing was ever published
    due: int
    oldest_due_age: timedelta | None


@attrs.frozen(kw_only=True)
class SlotReading:
    """A replication slot and the WAL it keeps."""

    name: str
    active: bool
    retained_bytes: int


@attrs.frozen(kw_only=True)
class Readings:
    """Everything the doctor reads, in one transaction of the database operator."""

    autovacuum: bool
    holders: Sequence[HorizonHolder] = ()
    tables: Sequence[TableReading] = ()
    lanes: Sequence[LaneReading] = ()
    consumers: Sequence[ConsumerReading] = ()
    relay: RelayReading | None = None
    slots: Sequence[SlotReading] = ()


@attrs.frozen(kw_only=True)
class Thresholds:
    """When a reading becomes a finding."""

    horizon: timedelta = timedelta(minutes=5)
    dead_rows: int = 10_000  # and more dead than live rows
    lane_due: timedelta = timedelta(minutes=1)
    consumer_lag: timedelta = timedelta(minutes=10)
    relay_stall: timedelta = timedelta(minutes=5)
    slot_bytes: int = 1024 * MIB


@attrs.frozen(kw_only=True)
class Finding:
    """One thing wrong, what shows it, and what to do."""

    check: str  # horizon, autovacuum, bloat, lane, consumer, relay, replication_slot
    severity: Severity
    subject: str
    figure: str
    advice: str


def _age(value: timedelta | None) -> str:
    if value is None:
        return "never"
    seconds = int(value.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _horizon(readings: Readings, limits: Thresholds) -> list[Finding]:
    advice = {
        "session": "end that transaction (the application's, or pg_terminate_backend(pid));"
        " set idle_in_transaction_session_timeout so it cannot happen again",
        "prepared transaction": "COMMIT PREPARED or ROLLBACK PREPARED it",
        "replication slot": "start its consumer, or drop the slot if nothing uses it",
    }
    return [
        Finding(
            check="horizon",
            severity=Severity.CRITICAL if held.age >= limits.horizon * 6 else Severity.WARNING,
            subject=f"{held.kind} {held.name}" + (f" ({held.state})" if held.state else ""),
            figure=f"holding the xmin horizon for {_age(held.age)}",
            advice=f"no dead row anywhere in the database can be vacuumed meanwhile: "
            f"{advice.get(held.kind, 'end it')}",
        )
        for held in readings.holders
        if held.age >= limits.horizon
    ]


def _autovacuum(readings: Readings) -> list[Finding]:
    found = []
    if not readings.autovacuum:
        found.append(
            Finding(
                check="autovacuum",
                severity=Severity.CRITICAL,
                subject="the server",
                figure="autovacuum = off",
                advice="turn autovacuum on (ALTER SYSTEM SET autovacuum = on; SELECT"
                " pg_reload_conf()): the hot tables' dead rows are never reclaimed",
            )
        )
    found.extend(
        Finding(
            check="autovacuum",
            severity=Severity.CRITICAL,
            subject=table.name,
            figure="autovacuum_enabled = false",
            advice=f"ALTER TABLE {table.name} RESET (autovacuum_enabled)",
        )
        for table in readings.tables
        if not table.autovacuum_enabled
    )
    return found


def _bloat(readings: Readings, limits: Thresholds) -> list[Finding]:
    return [
        Finding(
            check="bloat",
            severity=Severity.WARNING,
            subject=table.name,
            figure=f"{table.dead_rows} dead rows beside {table.live_rows} live,"
            f" {table.size_bytes // MIB} MiB; last vacuum {_age(table.last_vacuum_age)} ago",
            advice="autovacuum cannot keep up or is blocked: look for a held horizon first,"
            f" then VACUUM {table.name} and lower its autovacuum_vacuum_scale_factor",
        )
        for table in readings.tables
        if table.dead_rows >= limits.dead_rows and table.dead_rows > table.live_rows
    ]


def _lanes(readings: Readings, limits: Thresholds) -> list[Finding]:
    return [
        Finding(
            check="lane",
            severity=Severity.CRITICAL if lane.lane == "security" else Severity.WARNING,
            subject=f"the {lane.lane} lane",
            figure=f"{lane.due} due, the oldest for {_age(lane.oldest_due_age)}",
            advice=f"no worker keeps up with it: check that a worker runs --lanes {lane.lane}"
            " (its /readyz), its provider or broker, and its pool size",
        )
        for lane in readings.lanes
        if lane.oldest_due_age is not None and lane.oldest_due_age >= limits.lane_due
    ]


def _consumers(readings: Readings, limits: Thresholds) -> list[Finding]:
    found = []
    for consumer in readings.consumers:
        age = consumer.oldest_undelivered_age
        if age is None or age < limits.consumer_lag:
            continue
        why = (
            "it is paused: outboxctl consumers resume " + consumer.consumer
            if not consumer.active
            else "no process runs it, or its handler fails: check the consumers lane and"
            " outboxctl consumers dead-letters " + consumer.consumer
        )
        found.append(
            Finding(
                check="consumer",
                severity=Severity.WARNING,
                subject=f"consumer {consumer.consumer}",
                figure=f"{consumer.events_behind} events behind, the oldest for {_age(age)}",
                advice=why,
            )
        )
    return found


def _relay(readings: Readings, limits: Thresholds) -> list[Finding]:
    relay = readings.relay
    if relay is None or relay.oldest_due_age is None or relay.oldest_due_age < limits.relay_stall:
        return []
    last = relay.last_published_age
    if last is not None and last < limits.relay_stall:
        return []  # it publishes; a backlog alone is the events lane's finding
    return [
        Finding(
            check="relay",
            severity=Severity.CRITICAL,
            subject="the relay (events lane)",
            figure=f"{relay.due} events due, the oldest for {_age(relay.oldest_due_age)};"
            f" last publication {_age(last)} ago",
            advice="nothing publishes: check that a worker runs --lanes events, that the broker"
            " is up (relay.target_suspended in its log, outbox_relay_target_suspended) and"
            " that its stream exists (outboxctl nats ensure-stream)",
        )
    ]


def _slots(readings: Readings, limits: Thresholds) -> list[Finding]:
    return [
        Finding(
            check="replication_slot",
            severity=Severity.CRITICAL
            if slot.retained_bytes >= limits.slot_bytes * 10
            else Severity.WARNING,
            subject=f"replication slot {slot.name}",
            figure=f"{'active' if slot.active else 'inactive'}, keeping"
            f" {slot.retained_bytes // MIB} MiB of WAL",
            advice="start its consumer, or SELECT pg_drop_replication_slot(...) if nothing"
            " uses it: the WAL it keeps fills the disk",
        )
        for slot in readings.slots
        if slot.retained_bytes >= limits.slot_bytes or not slot.active
    ]


def diagnose(readings: Readings, limits: Thresholds | None = None) -> tuple[Finding, ...]:
    """Every finding, the most urgent first."""
    limits = limits or Thresholds()
    found = [
        *_horizon(readings, limits),
        *_autovacuum(readings),
        *_bloat(readings, limits),
        *_lanes(readings, limits),
        *_consumers(readings, limits),
        *_relay(readings, limits),
        *_slots(readings, limits),
    ]
    return tuple(sorted(found, key=lambda f: f.severity is not Severity.CRITICAL))
