"""The outbox under a held xmin horizon: the same steady load, once clean and once while another
session holds the horizon (``REPEATABLE READ``, one read, then idle in transaction).

``python -m bench.held_horizon [--seconds 150] [--hold-from 20] [--hold-until 130]
[--rate 300] [--event-rate 100] [--out bench-results/held-horizon.json]
[--chart docs/held-horizon.svg]``

One producer commits sealed sign-up codes one per transaction at ``--rate`` per second for
``--seconds``; beside it, for as long, a producer process appends tenant events one per
transaction at ``--event-rate`` per second (``events.append_domain_event`` as the bench
module's producer role, over 8 organizations and 64 aggregates; 0 turns them off), with one
consumer (``bench.effects``, a no-op handler) subscribed. A real worker (its own process, the
security, events and consumers lanes) delivers the codes to the no-op provider, publishes
the events and delivers each to the consumer. Every ``--sample`` seconds the run reads each
hot table's dead rows and size (with indexes) and the WAL position. In the held run a session
opens ``REPEATABLE READ`` at ``--hold-from``, reads once (a catalogue table, so it locks
nothing of ours), stays idle in transaction and ends at ``--hold-until``; the run then watches
until the dead rows of every hot table that gained some in the hold fall back (vacuum
reclaimed them) or ``--reclaim-wait`` passes.

Printed side by side: the codes' throughput, end-to-end p50/p99 (commit → provider), claim
p99 (the worker's own ``outbox_claim_seconds``, and the events lane's
``outbox_event_claim_seconds``), the claims each lane made per delivered code or event and
the consumer's per delivered event, with the server's milliseconds per claim of each (counted
by the server: the run's database sets ``track_functions``); the events' deliveries
per second, end-to-end p50/p99 (``appended_at`` → the consumer delivery's ``completed_at``,
read from the database once the load settled), lost events and per-aggregate order
violations (a delivery completed before one of an earlier event of its aggregate); peak dead
rows and size per table, WAL bytes per delivered code or event, and how long after the hold
ended each table's dead rows were reclaimed; the load average before and after. Then the
targets of SPEC §24, each computed from the two runs: held throughput of the codes and of
the events at least 0.9x the clean run's, claim p99 of each lane at most 2x, nothing lost,
no order broken, every hot table's dead rows reclaimed within five minutes of the hold's end
(also under ``checks`` in the JSON). A code or an event never delivered, or an event
delivered before an earlier one of its aggregate, fails the run. Run it alone on the
machine.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import statistics
import tempfile
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import attrs
import psycopg
import typer
from psycopg import sql
from rich.console import Console
from rich.table import Table

from bench import events_workload, workload
from bench.databases import Database, database_server
from bench.events_append import EventShape
from bench.harness import Check, Direction
from bench.latency import SETTLE_TIMEOUT, SteadyLatency
from bench.report import checks_table
from bench.worker import WorkerConfig
from bench.worker_process import CLAIMS_SUFFIX, CONSUMERS, EVENTS, start_serving
from outbox.adapters.crypto.keyring import generate_key, key_line
from outbox.adapters.postgres.migrator import apply_migrations

HOT = (
    "outbox.messages",
    "outbox.attempts",
    "outbox.envelopes",
    "events.outbox_records",
    "events.consumer_deliveries",  # events.domain_events is only inserted into: no dead rows
)
SAMPLE = """
SELECT s.schemaname || '.' || s.relname, s.n_dead_tup, pg_total_relation_size(s.relid)
FROM pg_stat_user_tables AS s
WHERE s.schemaname || '.' || s.relname = ANY(%s)
"""
WAL = "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"
# The claims each lane made (the worker's sessions count their calls: track_functions).
CLAIM_FUNCTIONS = {
    "codes": ("outbox.claim_messages", "outbox.claim_urgent_messages"),
    "events": ("events.claim_outbox_batch",),
    "consumers": ("events.claim_consumer_deliveries",),
}
# And the server's time in them (ms, including any wait for a core), for the time per call.
CLAIM_CALLS = """
SELECT s.schemaname || '.' || s.funcname, s.calls, s.total_time FROM pg_stat_user_functions AS s
WHERE s.schemaname || '.' || s.funcname = ANY(%s)
"""
EVENT_SHAPE = EventShape(organizations=8, aggregates=64)
EVENT_APPENDERS = 4  # connections of the events producer, taking turns at its schedule
EVENTS_LIVE = """
SELECT (SELECT count(*) FROM events.outbox_records WHERE state IN ('pending', 'leased'))
     + (SELECT count(*) FROM events.consumer_deliveries
        WHERE state IN ('waiting', 'pending', 'leased'))
"""
# Every appended event, when the consumer's delivery of it completed (NULL: never), and
# whether an earlier event of its aggregate completed later (the order broken).
EVENT_DELIVERIES = """
SELECT e.appended_at, d.completed_at,
       coalesce(d.completed_at < max(d.completed_at) OVER (
           PARTITION BY e.organization_id, e.aggregate_type, e.aggregate_id
           ORDER BY e.append_sequence
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
       ), false)
FROM events.domain_events AS e
LEFT JOIN events.consumer_deliveries AS d
    ON d.domain_event_id = e.id AND d.state = 'completed'
"""


@attrs.frozen(kw_only=True)
class Sample:
    """One reading: seconds since the load started, dead rows and bytes per table, WAL."""

    at: float
    dead: dict[str, int]
    size: dict[str, int]
    wal: int


@attrs.frozen(kw_only=True)
class EventFigures:
    """The tenant events' figures, read from the database once the load settled."""

    appended: int
    delivered: int  # deliveries to the consumer completed
    throughput: float  # delivered / s, from the first append to the last completion
    p50_ms: float  # appended_at → the consumer delivery's completed_at
    p99_ms: float
    lost: int  # appended, never delivered within the settle time (the run fails)
    order_violations: int  # completed before an earlier event of its aggregate (the run fails)
    # By 10-s window of appended_at from the first append: when the lane fell behind, if it did.
    p99_by_window: tuple[tuple[float, float], ...]  # (window start s, p99 ms)


def p99_by_window(points: Iterable[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """(window start s, p99 ms) of (seconds from the start, latency ms) points, by 10-s
    window; a window of fewer than ten points is left out."""
    windows: dict[int, list[float]] = {}
    for at, latency in points:
        windows.setdefault(int(at // 10), []).append(latency)
    return tuple(
        (window * 10.0, statistics.quantiles(values, n=100, method="inclusive")[98])
        for window, values in sorted(windows.items())
        if len(values) >= 10
    )


def event_figures(rows: list[tuple[datetime, datetime | None, bool]]) -> EventFigures:
    """The figures of ``EVENT_DELIVERIES``'s rows; raises when an event was lost."""
    done = [(appended, completed) for appended, completed, _ in rows if completed is not None]
    lost = len(rows) - len(done)
    if lost:
        raise RuntimeError(f"{lost} of {len(rows)} appended events never reached the consumer")
    overtaken = sum(1 for *_, early in rows if early)
    if overtaken:
        raise RuntimeError(f"{overtaken} deliveries overtook an earlier event of their aggregate")
    if not done:
        raise RuntimeError("no tenant event was appended")
    latencies = sorted(
        (completed - appended).total_seconds() * 1000 for appended, completed in done
    )
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    first = min(a for a, _ in done)
    span = max(c for _, c in done) - first
    return EventFigures(
        appended=len(rows),
        delivered=len(done),
        throughput=len(done) / max(span.total_seconds(), 1e-9),
        p50_ms=cuts[49],
        p99_ms=cuts[98],
        lost=lost,
        order_violations=overtaken,
        p99_by_window=p99_by_window(
            ((a - first).total_seconds(), (c - a).total_seconds() * 1000) for a, c in done
        ),
    )


@attrs.frozen(kw_only=True)
class HorizonRun:
    """One run's figures, and its samples for the chart."""

    held: bool
    committed: int  # codes the producer committed
    delivered: int  # of those, how many reached the provider (the rest: lost)
    seconds: float
    throughput: float
    p50_ms: float
    p99_ms: float
    claim_p99_ms: float
    event_claim_p99_ms: float | None  # the events lane's claims (None: no tenant events)
    wal_bytes_per_message: float
    peak_dead: dict[str, int]
    peak_size: dict[str, int]
    # Seconds after the hold ended until the last hot table's dead rows were reclaimed; None:
    # a clean run, or a table not reclaimed within the wait (each table's in the next field).
    reclaimed_after: float | None
    reclaimed_by_table: dict[str, float | None]
    samples: tuple[Sample, ...]
    p99_by_window: tuple[tuple[float, float], ...]  # (window start s, p99 ms)
    events: EventFigures | None  # None: no tenant events (--event-rate 0)
    claims_per_code: float  # the security lane's claims (both slots) per delivered code
    claims_per_event: float | None  # the events lane's claims per delivered event
    consumer_claims_per_event: float | None  # the consumer's claims per delivered event
    # By lane (codes, events, consumers): the server's milliseconds per claim, waits included.
    server_ms_per_claim: dict[str, float]


@attrs.frozen(kw_only=True)
class HeldHorizon:
    """One run of the steady load, clean or with the horizon held from ``hold[0]`` to
    ``hold[1]`` seconds into it."""

    database: Database
    keyring: str = attrs.field(repr=False)
    rate: int
    seconds: float
    hold: tuple[float, float] | None
    event_rate: int = 0  # tenant events appended per second beside the codes; 0: none
    sample_every: float = 5.0
    reclaim_wait: float = 120.0
    config: WorkerConfig = attrs.field(factory=WorkerConfig)

    async def run(self) -> HorizonRun:
        """Start the worker, load, sample, hold; the figures."""
        await self._prepare()
        steady = SteadyLatency(
            database=self.database,
            keyring=self.keyring,
            rate=self.rate,
            seconds=self.seconds,
            config=self.config,
            event_appenders=EVENT_APPENDERS if self.event_rate else 0,
            event_rate=self.event_rate,
            event_shape=EVENT_SHAPE,
        )
        samples: list[Sample] = []
        with tempfile.TemporaryDirectory(prefix="outbox-horizon-") as scratch:
            out = Path(scratch) / "received.json"
            worker = await self._worker(out)
            try:
                started = time.perf_counter()
                sampler = asyncio.create_task(self._sample(samples, started))
                holder = asyncio.create_task(self._hold(started))
                committed, _, _ = await steady._produce()
                await steady._settle()
                load_end = time.perf_counter() - started
                events = await self._events()
                hold_end = await holder
                reclaimed = await self._reclaimed(samples, hold_end)
                sampler.cancel()
                await asyncio.gather(sampler, return_exceptions=True)
            finally:
                if worker.returncode is None:
                    worker.send_signal(signal.SIGTERM)
                await worker.wait()
            received = json.loads(out.read_text())
            claims = json.loads(out.with_suffix(CLAIMS_SUFFIX).read_text())
        calls = await self._claim_calls()
        return self._figures(
            committed, received, claims, calls, samples, load_end, reclaimed, events
        )

    async def _claim_calls(self) -> dict[str, tuple[int, float]]:
        """How many claims each lane made and the server's milliseconds in them, once the
        worker has exited (its counts flushed)."""
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            names = [name for names in CLAIM_FUNCTIONS.values() for name in names]
            rows = await (await conn.execute(CLAIM_CALLS, (names,))).fetchall()
        calls = {name: (int(count), float(ms)) for name, count, ms in rows}
        return {
            lane: (
                sum(calls.get(name, (0, 0.0))[0] for name in names),
                sum(calls.get(name, (0, 0.0))[1] for name in names),
            )
            for lane, names in CLAIM_FUNCTIONS.items()
        }

    async def _prepare(self) -> None:
        """Empty the queues; with events, onboard the bench module and subscribe its consumer."""
        await workload.empty(self.database.conninfo)
        await events_workload.empty(self.database.conninfo)
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:  # the worker's sessions, opened after this, count their claims
            await conn.execute(
                sql.SQL("ALTER DATABASE {} SET track_functions = 'pl'").format(
                    sql.Identifier(self.database.name)
                )
            )
        if self.event_rate:
            await events_workload.onboard(self.database.conninfo)
            await events_workload.subscribe_consumer(self.database.conninfo)

    async def _events(self) -> EventFigures | None:
        """Once every event is published and delivered (or the settle time passed), their
        figures from the database; None without events."""
        if not self.event_rate:
            return None
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            deadline = time.monotonic() + SETTLE_TIMEOUT
            while time.monotonic() < deadline:
                row = await (await conn.execute(EVENTS_LIVE)).fetchone()
                if row is None or int(row[0]) == 0:
                    break
                await asyncio.sleep(0.1)
            rows = await (await conn.execute(EVENT_DELIVERIES)).fetchall()
        return event_figures(rows)

    async def _worker(self, out: Path) -> asyncio.subprocess.Process:
        return await start_serving(
            self.database.conninfo,
            out,
            self.config,
            self.keyring,
            EVENTS,
            *([CONSUMERS] if self.event_rate else []),
            *self.config.process_flags(),
        )

    async def _sample(self, samples: list[Sample], started: float) -> None:
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            while True:
                rows = await (await conn.execute(SAMPLE, (list(HOT),))).fetchall()
                [(wal,)] = await (await conn.execute(WAL)).fetchall()
                samples.append(
                    Sample(
                        at=time.perf_counter() - started,
                        dead={name: int(dead) for name, dead, _ in rows},
                        size={name: int(size) for name, _, size in rows},
                        wal=int(wal),
                    )
                )
                await asyncio.sleep(self.sample_every)

    async def _hold(self, started: float) -> float | None:
        """Hold the horizon from ``hold[0]`` to ``hold[1]``; when it ended (None: clean)."""
        if self.hold is None:
            return None
        begin, end = self.hold
        await asyncio.sleep(max(0.0, started + begin - time.perf_counter()))
        async with await psycopg.AsyncConnection.connect(self.database.conninfo) as holder:
            await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # the snapshot
            await asyncio.sleep(max(0.0, started + end - time.perf_counter()))
            await holder.rollback()
        return time.perf_counter() - started

    async def _reclaimed(
        self, samples: list[Sample], hold_end: float | None
    ) -> dict[str, float | None]:
        """Seconds after the hold ended until each hot table whose dead rows rose in the hold
        had them fall back within a tenth of that rise (vacuum ran); None for a table that did
        not within the wait, and nothing for a clean run.

        The rise is above what the load kept before the hold: a load that goes on after the
        hold keeps some dead rows of its own."""
        if hold_end is None:
            return {}
        deadline = time.perf_counter() + self.reclaim_wait
        begin = self.hold[0] if self.hold else 0.0
        rises: dict[str, tuple[int, int]] = {}
        for name in HOT:
            before = [s.dead.get(name, 0) for s in samples if s.at <= begin]
            base = before[-1] if before else 0
            peak = max((s.dead.get(name, 0) for s in samples if s.at <= hold_end), default=0)
            if peak > base:
                rises[name] = (base, peak)
        found: dict[str, float] = {}
        while True:
            after = [s for s in samples if s.at > hold_end]
            for name, (base, peak) in rises.items():
                if (
                    name not in found
                    and after
                    and after[-1].dead.get(name, 0) < (base + (peak - base) / 10)
                ):
                    found[name] = after[-1].at - hold_end
            if set(found) == set(rises) or time.perf_counter() >= deadline:
                return {name: found.get(name) for name in rises}
            await asyncio.sleep(self.sample_every)

    def _figures(  # noqa: PLR0917 - one run's pieces
        self,
        committed: dict[str, float],
        received: dict[str, float],
        claims: dict[str, list[float]],
        calls: dict[str, tuple[int, float]],
        samples: list[Sample],
        load_end: float,
        reclaimed: dict[str, float | None],
        events: EventFigures | None,
    ) -> HorizonRun:
        lost = [key for key in committed if key not in received]
        if lost:
            raise RuntimeError(f"{len(lost)} committed codes never reached the provider")
        latencies = {key: (received[key] - at) * 1000 for key, at in committed.items()}
        ordered = sorted(latencies.values())
        cuts = statistics.quantiles(ordered, n=100, method="inclusive")
        claim_cuts = statistics.quantiles(sorted(claims["codes"]), n=100, method="inclusive")
        event_claims = sorted(claims.get("events", ()))
        event_claim_p99 = (
            statistics.quantiles(event_claims, n=100, method="inclusive")[98] * 1000
            if len(event_claims) > 1
            else None
        )
        first = min(committed.values())
        p99s = p99_by_window((at - first, latencies[key]) for key, at in committed.items())
        during = [s for s in samples if s.at <= load_end + self.sample_every]
        wal = (during[-1].wal - during[0].wal) if len(during) > 1 else 0
        # The WAL is the whole server's: shared by every code and event delivered.
        items = len(received) + (events.delivered if events else 0)
        delivered = sum(1 for key in committed if key in received)
        return HorizonRun(
            held=self.hold is not None,
            committed=len(committed),
            delivered=delivered,
            seconds=load_end,
            throughput=len(received) / load_end,
            p50_ms=cuts[49],
            p99_ms=cuts[98],
            claim_p99_ms=claim_cuts[98] * 1000,
            event_claim_p99_ms=event_claim_p99,
            wal_bytes_per_message=wal / max(1, items),
            peak_dead={t: max(s.dead.get(t, 0) for s in samples) for t in HOT},
            peak_size={t: max(s.size.get(t, 0) for s in samples) for t in HOT},
            reclaimed_after=(
                None
                if not reclaimed or None in reclaimed.values()
                else max(after for after in reclaimed.values() if after is not None)
            ),
            reclaimed_by_table=reclaimed,
            samples=tuple(samples),
            p99_by_window=p99s,
            events=events,
            claims_per_code=calls["codes"][0] / max(1, delivered),
            claims_per_event=calls["events"][0] / max(1, events.delivered) if events else None,
            consumer_claims_per_event=(
                calls["consumers"][0] / max(1, events.delivered) if events else None
            ),
            server_ms_per_claim={lane: ms / count for lane, (count, ms) in calls.items() if count},
        )


def _table(clean: HorizonRun, held: HorizonRun, hold: tuple[float, float]) -> Table:
    table = Table(title=f"Held horizon ({hold[0]:.0f}-{hold[1]:.0f} s) against a clean run")
    for heading in ("figure", "clean", "horizon held", "held / clean"):
        table.add_column(heading, justify="right" if heading != "figure" else "left")

    def row(label: str, a: float, b: float, digits: int = 1) -> None:
        ratio = f"{b / a:.2f}x" if a else "-"
        table.add_row(label, f"{a:,.{digits}f}", f"{b:,.{digits}f}", ratio)

    row("delivered / s", clean.throughput, held.throughput)
    row("end-to-end p50 (ms)", clean.p50_ms, held.p50_ms)
    row("end-to-end p99 (ms)", clean.p99_ms, held.p99_ms)
    row("claim p99 (ms)", clean.claim_p99_ms, held.claim_p99_ms, 2)
    row("claims / code", clean.claims_per_code, held.claims_per_code, 2)
    for lane, label in (("codes", "codes"), ("events", "events"), ("consumers", "consumer")):
        if lane in clean.server_ms_per_claim and lane in held.server_ms_per_claim:
            row(
                f"{label} claim, server ms / call",
                clean.server_ms_per_claim[lane],
                held.server_ms_per_claim[lane],
                2,
            )
    if clean.events is not None and held.events is not None:
        row("events delivered / s", clean.events.throughput, held.events.throughput)
        row("events end-to-end p50 (ms)", clean.events.p50_ms, held.events.p50_ms)
        row("events end-to-end p99 (ms)", clean.events.p99_ms, held.events.p99_ms)
        if clean.event_claim_p99_ms is not None and held.event_claim_p99_ms is not None:
            row("events claim p99 (ms)", clean.event_claim_p99_ms, held.event_claim_p99_ms, 2)
        if clean.claims_per_event is not None and held.claims_per_event is not None:
            row("claims / event", clean.claims_per_event, held.claims_per_event, 2)
        if (
            clean.consumer_claims_per_event is not None
            and held.consumer_claims_per_event is not None
        ):
            row(
                "consumer claims / event",
                clean.consumer_claims_per_event,
                held.consumer_claims_per_event,
                2,
            )
        row("events lost", clean.events.lost, held.events.lost, 0)
        row(
            "events order violations",
            clean.events.order_violations,
            held.events.order_violations,
            0,
        )
    row("WAL bytes / code or event", clean.wal_bytes_per_message, held.wal_bytes_per_message, 0)
    for name in HOT:
        row(f"{name} peak dead rows", clean.peak_dead[name], held.peak_dead[name], 0)
        row(
            f"{name} peak size (MB)",
            clean.peak_size[name] / 1e6,
            held.peak_size[name] / 1e6,
            1,
        )
    for name, after in held.reclaimed_by_table.items():
        reclaimed = "not within the wait" if after is None else f"{after:.0f} s after the hold"
        table.add_row(f"{name} dead rows reclaimed", "-", reclaimed, "")
    return table


RECLAIM_TARGET = 300.0  # seconds after the hold: "reclaimed within minutes" (issue 31)


def checks(clean: HorizonRun, held: HorizonRun) -> list[Check]:
    """The held-horizon targets, each computed from the two runs of this invocation."""

    def ratio(
        key: str, label: str, runs: tuple[float, float], target: float, direction: Direction
    ) -> Check:
        a, b = runs
        return Check(
            key=key,
            label=label,
            value=b / a if a else math.inf,
            target=target,
            direction=direction,
            unit="x",
            numerator=f"held.{key}",
            denominator=f"clean.{key}",
        )

    def limit(key: str, label: str, value: float, target: float, unit: str) -> Check:
        return Check(
            key=key,
            label=label,
            value=value,
            target=target,
            direction="at_most",
            unit=unit,
            numerator=f"held.{key}",
        )

    found = [
        ratio(
            "throughput",
            "codes delivered / s, held / clean",
            (clean.throughput, held.throughput),
            0.9,
            "at_least",
        )
    ]
    if clean.events is not None and held.events is not None:
        found.append(
            ratio(
                "events.throughput",
                "events delivered / s, held / clean",
                (clean.events.throughput, held.events.throughput),
                0.9,
                "at_least",
            )
        )
    found.append(
        ratio(
            "claim_p99_ms",
            "code claim p99, held / clean",
            (clean.claim_p99_ms, held.claim_p99_ms),
            2.0,
            "at_most",
        )
    )
    if clean.event_claim_p99_ms is not None and held.event_claim_p99_ms is not None:
        found.append(
            ratio(
                "event_claim_p99_ms",
                "events claim p99, held / clean",
                (clean.event_claim_p99_ms, held.event_claim_p99_ms),
                2.0,
                "at_most",
            )
        )
    found.append(limit("lost", "codes lost", held.committed - held.delivered, 0, "codes"))
    if held.events is not None:
        found += [
            limit("events.lost", "events lost", held.events.lost, 0, "events"),
            limit(
                "events.order_violations",
                "events order violations",
                held.events.order_violations,
                0,
                "events",
            ),
        ]
    found.append(
        limit(
            "reclaimed_after",
            "dead rows of every hot table reclaimed after the hold",
            math.inf if held.reclaimed_after is None else held.reclaimed_after,
            RECLAIM_TARGET,
            "s",
        )
    )
    return found


def chart(clean: HorizonRun, held: HorizonRun, hold: tuple[float, float], path: Path) -> None:
    """An SVG of outbox.messages' dead rows and the end-to-end p99 over time, both runs."""
    width, height, left, bottom, top = 760, 360, 70, 40, 30
    plot_w, plot_h = width - left - 70, height - bottom - top
    horizon = max(max((s.at for s in run.samples), default=1.0) for run in (clean, held))
    peak_dead = max(1, *(s.dead.get(HOT[0], 0) for s in held.samples + clean.samples))
    peak_p99 = max(1.0, *(p for _, p in held.p99_by_window + clean.p99_by_window))

    def x(t: float) -> float:
        return left + plot_w * t / horizon

    def y(value: float, peak: float) -> float:
        return top + plot_h - plot_h * value / peak

    def path_of(points: list[tuple[float, float]]) -> str:
        return " ".join(
            f"{'M' if i == 0 else 'L'}{px:.1f},{py:.1f}" for i, (px, py) in enumerate(points)
        )

    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"'
            ' font-family="sans-serif" font-size="11" role="img" aria-labelledby="t d">'
        ),
        '<title id="t">Dead rows of outbox.messages and end-to-end p99, clean and held</title>',
        (
            '<desc id="d">Two runs of the same steady load; in the held one a session holds the'
            " xmin horizon during the shaded interval.</desc>"
        ),
        (
            f'<rect x="{x(hold[0]):.1f}" y="{top}" width="{x(hold[1]) - x(hold[0]):.1f}"'
            f' height="{plot_h}" fill="#f3e8c8"/>'
        ),
        (
            f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}"'
            ' stroke="#333"/>'
        ),
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>',
        (
            f'<line x1="{left + plot_w}" y1="{top}" x2="{left + plot_w}" y2="{top + plot_h}"'
            ' stroke="#333"/>'
        ),
    ]
    for i in range(6):
        t = horizon * i / 5
        parts.append(
            f'<text x="{x(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{t:.0f} s</text>'
        )
        dead = peak_dead * i / 5
        parts.append(
            f'<text x="{left - 6}" y="{y(dead, peak_dead) + 4:.1f}" text-anchor="end">'
            f"{dead:,.0f}</text>"
        )
        p99 = peak_p99 * i / 5
        parts.append(
            f'<text x="{left + plot_w + 6}" y="{y(p99, peak_p99) + 4:.1f}">{p99:.0f} ms</text>'
        )
    parts.append(
        f'<text x="{left}" y="{top - 10}">dead rows (outbox.messages)</text>'
        f'<text x="{left + plot_w}" y="{top - 10}" text-anchor="end">end-to-end p99</text>'
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">'
        "seconds since the load started (shaded: horizon held)</text>"
    )
    styles = {
        (False, "dead"): ("#3366cc", ""),
        (True, "dead"): ("#cc3333", ""),
        (False, "p99"): ("#3366cc", ' stroke-dasharray="5,3"'),
        (True, "p99"): ("#cc3333", ' stroke-dasharray="5,3"'),
    }
    for run in (clean, held):
        dead_points = [(x(s.at), y(s.dead.get(HOT[0], 0), peak_dead)) for s in run.samples]
        p99_points = [(x(t + 5), y(p, peak_p99)) for t, p in run.p99_by_window]
        for kind, points in (("dead", dead_points), ("p99", p99_points)):
            colour, dash = styles[(run.held, kind)]
            parts.append(
                f'<path d="{path_of(points)}" fill="none" stroke="{colour}"'
                f' stroke-width="2"{dash}/>'
            )
    legend = [
        ("#3366cc", "", "clean: dead rows"),
        ("#cc3333", "", "held: dead rows"),
        ("#3366cc", ' stroke-dasharray="5,3"', "clean: p99"),
        ("#cc3333", ' stroke-dasharray="5,3"', "held: p99"),
    ]
    for i, (colour, dash, label) in enumerate(legend):
        lx = left + 10 + i * 150
        parts.append(
            f'<line x1="{lx}" y1="{top + 10}" x2="{lx + 20}" y2="{top + 10}" stroke="{colour}"'
            f' stroke-width="2"{dash}/><text x="{lx + 25}" y="{top + 14}">{label}</text>'
        )
    parts.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts) + "\n")


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _json(run: HorizonRun) -> dict[str, Any]:
    return attrs.asdict(run, recurse=True)


app = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)


@app.command()
def main(  # noqa: PLR0917 - one per option
    seconds: Annotated[float, typer.Option(min=10, help="How long the load runs.")] = 150,
    hold_from: Annotated[float, typer.Option(help="When the holder opens its snapshot.")] = 20,
    hold_until: Annotated[float, typer.Option(help="When the holder ends it.")] = 130,
    rate: Annotated[int, typer.Option(min=1, help="Codes offered per second.")] = 300,
    event_rate: Annotated[
        int, typer.Option(min=0, help="Tenant events appended per second (0: none).")
    ] = 100,
    sample: Annotated[float, typer.Option(min=0.5, help="Seconds between readings.")] = 5,
    reclaim_wait: Annotated[
        float, typer.Option(help="How long to watch for the dead rows to be reclaimed.")
    ] = 120,
    out: Annotated[Path, typer.Option()] = Path("bench-results/held-horizon.json"),
    chart_path: Annotated[Path | None, typer.Option("--chart")] = None,
) -> None:
    """Run the clean and the held run; print them side by side."""
    console = Console()
    load_before = os.getloadavg()
    keyring = key_line(generate_key("bench"))
    hold = (hold_from, hold_until)

    async def both() -> tuple[HorizonRun, HorizonRun, str]:
        results = []
        with database_server() as server:
            for held in (False, True):
                async with server.fresh_database(
                    f"horizon_{'held' if held else 'clean'}"
                ) as database:
                    await apply_migrations(database.conninfo)
                    console.print(
                        f"{'held' if held else 'clean'} run: {seconds:.0f} s at {rate} codes/s,"
                        f" {event_rate} events/s"
                    )
                    results.append(
                        await HeldHorizon(
                            database=database,
                            keyring=keyring,
                            rate=rate,
                            seconds=seconds,
                            hold=hold if held else None,
                            event_rate=event_rate,
                            sample_every=sample,
                            reclaim_wait=reclaim_wait,
                        ).run()
                    )
            version = server.version()
        return results[0], results[1], version

    clean, held, version = asyncio.run(both())
    load_after = os.getloadavg()
    console.print(_table(clean, held, hold))
    targets = checks(clean, held)
    console.print(checks_table(targets, "Targets, from the two runs above"))
    console.print(
        f"PostgreSQL {version}; load average before {load_before[0]:.2f},"
        f" after {load_after[0]:.2f} (1 min)"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "postgres": version,
                "load_average_before": load_before,
                "load_average_after": load_after,
                "rate": rate,
                "event_rate": event_rate,
                "event_shape": attrs.asdict(EVENT_SHAPE),
                "seconds": seconds,
                "hold": hold,
                "clean": _json(clean),
                "held": _json(held),
                # A value never reached (not reclaimed within the wait) is null, not Infinity.
                "checks": {
                    check.key: {**check.as_json(), "value": _finite(check.value)}
                    for check in targets
                },
            },
            indent=1,
        )
    )
    if chart_path is not None:
        chart(clean, held, hold, chart_path)
        console.print(f"chart written to {chart_path}")


if __name__ == "__main__":
    app()
