"""The run plan: every measurement, in its own database, repetitions interleaved across systems."""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable, Collection, Sequence

import attrs
import psycopg
from rich.console import Console

from bench import workload
from bench.backlog import BacklogDrain, drain_in_process
from bench.consumers import ConsumerBacklog, ConsumerCeiling, ConsumerRunner
from bench.databases import Server
from bench.dispatch_drain import DispatchDrain
from bench.enqueue import SealedEnqueue
from bench.events_append import EventAppend, EventShape, PlainEventInsert
from bench.events_ceiling import EventsSqlCeiling
from bench.events_drain import (
    EventsBacklog,
    EventsLaneDrain,
    lane_settings,
    lane_sizing,
    running_events_lane,
)
from bench.harness import Drained, Figure, Results, Setting
from bench.latency import Percentiles, SteadyLatency
from bench.pgqueuer_drain import PgqueuerDrain
from bench.plain_insert import PlainInsert
from bench.processes import ProcessesDrain
from bench.relay import (
    PREFIX,
    STREAM,
    BarePublishLoop,
    RelayDrain,
    nats_server,
    running_relay_lane,
)
from bench.relay_latency import RELAY_LATENCY_RATE, RelayLatency
from bench.sizes import Sizes
from bench.sql_ceiling import SqlCeiling
from bench.worker import WorkerConfig, running_worker
from outbox.adapters.crypto.keyring import generate_key, key_line
from outbox.adapters.postgres.migrator import apply_migrations
from outbox.domain.delivery.priorities import Priority

GROUPS = (
    "drain",
    "enqueue",
    "latency",
    "backlog",
    "events-append",
    "events-drain",
    "consumers",
    "processes",
    "relay",
)
WARM_UP_MESSAGES = 500


@attrs.define
class Samples:
    """Samples collected for one figure while repetitions interleave."""

    key: str
    label: str
    unit: str
    settings: dict[str, Setting]
    values: list[float] = attrs.field(factory=list)

    def cpu(self) -> Samples:
        """The companion figure: this process's CPU microseconds per message."""
        return Samples(
            self.key.replace(".", ".cpu_", 1),
            f"{self.label}: CPU per message",
            "us/msg",
            {"measured": "time.process_time() of the draining process (not PostgreSQL)"},
        )

    def figure(self) -> Figure:
        """The finished figure."""
        return Figure(
            key=self.key,
            label=self.label,
            unit=self.unit,
            samples=tuple(self.values),
            settings=self.settings,
        )


SERVER_POSITION = """
SELECT pg_current_wal_lsn() - '0/0'::pg_lsn, pg_snapshot_xmax(pg_current_snapshot())::text::bigint
"""
SERVER_WIDE = "before the queue is filled and after it is drained (enqueue + claim + record)"


@attrs.define
class Meters:
    """Per path: its rate and client CPU, and around each run, server-wide, the WAL bytes and
    the write transactions (transaction ids assigned) per message."""

    figures: dict[str, Samples]
    admin_conninfo: str
    prefix: str  # the rates' group, "drain." or "events_drain."
    path_prefix: str = ""  # of the paths in the WAL and write transaction figures: "events_"
    cpu: dict[str, Samples] = attrs.field(init=False)
    wal: dict[str, Samples] = attrs.field(init=False)
    xacts: dict[str, Samples] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.cpu = {name: samples.cpu() for name, samples in self.figures.items()}
        self.wal = self._per_message("wal.", "WAL per message", "B/msg", "pg_current_wal_lsn()")
        self.xacts = self._per_message(
            "xacts.", "write transactions per message", "xact/msg", "the next transaction id"
        )

    def _per_message(self, kind: str, what: str, unit: str, read: str) -> dict[str, Samples]:
        return {
            name: Samples(
                f"{kind}{self.path_prefix}{samples.key.removeprefix(self.prefix)}",
                f"{samples.label}: {what}",
                unit,
                {"measured": f"{read} {SERVER_WIDE}, over the messages"},
            )
            for name, samples in self.figures.items()
        }

    async def metered(self, name: str, run: Callable[[], Awaitable[Drained]]) -> None:
        """Run once, reading the server's WAL position and next transaction id around it."""
        wal_before, xid_before = await self._position()
        drained = await run()
        wal_after, xid_after = await self._position()
        self.figures[name].values.append(drained.rate)
        self.cpu[name].values.append(drained.cpu_us)
        self.wal[name].values.append((wal_after - wal_before) / drained.count)
        self.xacts[name].values.append((xid_after - xid_before) / drained.count)

    def add_to(self, results: Results) -> None:
        """Every figure collected."""
        for group in (self.figures, self.cpu, self.wal, self.xacts):
            for samples in group.values():
                results.add(samples.figure())

    async def _position(self) -> tuple[int, int]:
        """The server's WAL position in bytes and its next transaction id: the runs are one
        at a time, so the difference around one is its own (and a little of autovacuum's)."""
        async with await psycopg.AsyncConnection.connect(
            self.admin_conninfo, autocommit=True
        ) as conn:
            row = await (await conn.execute(SERVER_POSITION)).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


@attrs.frozen(kw_only=True)
class Plan:
    """Runs the chosen groups against ``server`` with ``sizes`` and collects every figure."""

    server: Server
    sizes: Sizes
    console: Console
    groups: Sequence[str] = GROUPS

    async def run(self) -> Results:
        """Measure, then compute every check from this run's medians."""
        results = Results()
        keyring = key_line(generate_key("bench"))
        config = WorkerConfig(batch_size=self.sizes.batch_size, concurrency=self.sizes.concurrency)
        if "drain" in self.groups:
            await self._drains(results, keyring, config)
        if "enqueue" in self.groups:
            await self._enqueues(results, keyring)
        if "latency" in self.groups:
            await self._latency(results, keyring, config)
        if "backlog" in self.groups:
            await self._backlog(results, keyring, config)
        if "events-append" in self.groups:
            await self._events_append(results)
        if "events-drain" in self.groups:
            await self._events_drain(results)
        if "consumers" in self.groups:
            await self._consumers(results)
        if "processes" in self.groups:
            await self._processes(results, keyring, config)
        if "relay" in self.groups:
            await self._relay(results)
        _checks(results)
        return results

    async def _drains(self, results: Results, keyring: str, config: WorkerConfig) -> None:
        sizes = self.sizes
        async with (
            self.server.fresh_database("pgqueuer") as pgq_db,
            self.server.fresh_database("ceiling") as ceiling_db,
            self.server.fresh_database("dispatch") as dispatch_db,
        ):
            await apply_migrations(ceiling_db.conninfo)
            await apply_migrations(dispatch_db.conninfo)
            peer = PgqueuerDrain(
                database=pgq_db, jobs=sizes.drain_messages, batch_size=sizes.batch_size
            )
            await peer.install()
            ceiling = SqlCeiling(
                database=ceiling_db, batch_size=sizes.batch_size, lanes=config.lanes
            )
            plain = DispatchDrain(
                database=dispatch_db,
                keyring=keyring,
                messages=sizes.drain_messages,
                kind="notification",
                config=config,
            )
            sealed = attrs.evolve(plain, kind="sealed_code")
            figures = {
                "pgqueuer": Samples(
                    "drain.pgqueuer", "pgqueuer no-op drain", "msg/s", peer.settings()
                ),
                "ceiling": Samples(
                    "drain.sql_ceiling",
                    "SQL-only ceiling (claim + record)",
                    "msg/s",
                    {**ceiling.settings(), "messages": sizes.drain_messages},
                ),
                "plain": Samples(
                    "drain.dispatch_plain",
                    "Dispatch drain, plain notifications",
                    "msg/s",
                    plain.settings(),
                ),
                "sealed": Samples(
                    "drain.dispatch_sealed",
                    "Dispatch drain, sealed codes + templates",
                    "msg/s",
                    sealed.settings(),
                ),
            }
            meters = Meters(
                figures=figures,
                admin_conninfo=self.server.admin_conninfo,
                prefix="drain.",
            )
            metered = meters.metered

            warm = min(WARM_UP_MESSAGES, sizes.drain_messages)
            async with running_worker(dispatch_db.conninfo, keyring, config) as worker:
                self.console.log("warming up the four drains")
                await attrs.evolve(peer, jobs=warm).once()
                await workload.load(
                    ceiling_db.conninfo, [workload.notification(n) for n in range(warm)]
                )
                await ceiling.once()
                await attrs.evolve(plain, messages=warm).once(worker)
                await attrs.evolve(sealed, messages=warm).once(worker)
                for repetition in range(sizes.repetitions):
                    self.console.log(f"drains, repetition {repetition + 1}/{sizes.repetitions}")
                    await metered("pgqueuer", peer.once)

                    async def ceiling_once() -> Drained:
                        await workload.empty(ceiling_db.conninfo)
                        await workload.load(
                            ceiling_db.conninfo,
                            [workload.notification(n) for n in range(sizes.drain_messages)],
                        )
                        return await ceiling.once()

                    await metered("ceiling", ceiling_once)
                    await metered("plain", lambda: plain.once(worker))
                    await metered("sealed", lambda: sealed.once(worker))
            meters.add_to(results)

    async def _processes(self, results: Results, keyring: str, config: WorkerConfig) -> None:
        """1 and 2 worker processes, each on its own database, beside pgqueuer, interleaved."""
        sizes = self.sizes
        kinds = {"notification": "plain notifications", "sealed_code": "sealed codes"}
        async with (
            self.server.fresh_database("pgqueuer_processes") as pgq_db,
            self.server.fresh_database("processes_1") as one_db,
            self.server.fresh_database("processes_2") as two_db,
        ):
            for database in (one_db, two_db):
                await apply_migrations(database.conninfo)
            peer = PgqueuerDrain(
                database=pgq_db, jobs=sizes.drain_messages, batch_size=sizes.batch_size
            )
            await peer.install()
            drains = [
                ProcessesDrain(
                    database=database,
                    keyring=keyring,
                    messages=sizes.drain_messages,
                    config=config,
                    processes=n,
                )
                for n, database in ((1, one_db), (2, two_db))
            ]
            figures = {
                "pgqueuer": Samples(
                    "processes.pgqueuer", "pgqueuer no-op drain", "msg/s", peer.settings()
                ),
                **{
                    f"{kind}_{drain.processes}": Samples(
                        f"processes.{kind}_{drain.processes}",
                        f"{drain.processes} worker process{'es' if drain.processes > 1 else ''},"
                        f" {label}",
                        "msg/s",
                        drain.settings(kind),
                    )
                    for kind, label in kinds.items()
                    for drain in drains
                },
            }
            await attrs.evolve(peer, jobs=min(WARM_UP_MESSAGES, sizes.drain_messages)).once()
            async with drains[0].running(), drains[1].running():
                for repetition in range(sizes.repetitions):
                    self.console.log(f"processes, repetition {repetition + 1}/{sizes.repetitions}")
                    figures["pgqueuer"].values.append((await peer.once()).rate)
                    for kind in kinds:
                        for drain in drains:
                            figures[f"{kind}_{drain.processes}"].values.append(
                                await drain.once(kind)
                            )
            for samples in figures.values():
                results.add(samples.figure())

    async def _enqueues(self, results: Results, keyring: str) -> None:
        sizes = self.sizes
        async with (
            self.server.fresh_database("insert") as insert_db,
            self.server.fresh_database("enqueue") as enqueue_db,
            self.server.fresh_database("enqueue_nonotify") as silent_db,
        ):
            for database in (insert_db, enqueue_db, silent_db):
                await apply_migrations(database.conninfo)
            plain = PlainInsert(
                database=insert_db, total=sizes.enqueue_transactions, producers=sizes.producers
            )
            await plain.prepare()
            sealed = SealedEnqueue(
                database=enqueue_db,
                keyring=keyring,
                total=sizes.enqueue_transactions,
                producers=sizes.producers,
            )
            silent = attrs.evolve(sealed, database=silent_db, notify=False)
            await silent.prepare()
            figures = {
                "plain": Samples(
                    "enqueue.plain_insert",
                    "Plain one-row INSERT transactions",
                    "tx/s",
                    plain.settings(),
                ),
                "sealed": Samples(
                    "enqueue.sealed",
                    "Sealed enqueue (enqueue_message, NOTIFY)",
                    "tx/s",
                    sealed.settings(),
                ),
                "silent": Samples(
                    "enqueue.sealed_no_notify",
                    "Sealed enqueue without NOTIFY (bench variant)",
                    "tx/s",
                    silent.settings(),
                ),
            }
            runs: dict[str, Callable[[], object]] = {
                "plain": plain.once,
                "sealed": sealed.once,
                "silent": silent.once,
            }
            for repetition in range(sizes.repetitions):
                self.console.log(f"enqueue, repetition {repetition + 1}/{sizes.repetitions}")
                for name, samples in figures.items():
                    samples.values.append(await runs[name]())  # type: ignore[misc]
            for samples in figures.values():
                results.add(samples.figure())

    async def _latency(self, results: Results, keyring: str, config: WorkerConfig) -> None:
        sizes = self.sizes
        async with self.server.fresh_database("latency") as database:
            await apply_migrations(database.conninfo)
            latency = SteadyLatency(
                database=database,
                keyring=keyring,
                rate=sizes.latency_rate,
                seconds=sizes.latency_seconds,
                config=config,
            )
            await latency.prepare()
            flooded = attrs.evolve(latency, flood=sizes.latency_flood)
            in_line = attrs.evolve(flooded, code_priority=Priority.NORMAL)
            unreserved = attrs.evolve(flooded, config=attrs.evolve(config, reserved_slot=False))
            events_flooded = attrs.evolve(
                latency,
                events_flood=sizes.latency_flood,
                event_appenders=sizes.producers,
                event_shape=self._event_shape(),
            )
            # ``outboxctl worker --lane-processes``: each lane, and the reserved slot, apart.
            events_apart = attrs.evolve(events_flooded, lanes_apart=True)
            flood_apart = attrs.evolve(flooded, lanes_apart=True)
            runs: list[Percentiles] = []
            apart_runs: list[Percentiles] = []
            flood_apart_runs: list[Percentiles] = []
            flood_runs: list[Percentiles] = []
            in_line_runs: list[Percentiles] = []
            unreserved_runs: list[Percentiles] = []
            events_runs: list[Percentiles] = []
            for repetition in range(sizes.repetitions):
                self.console.log(f"latency, repetition {repetition + 1}/{sizes.repetitions}")
                runs.append(await latency.once())
                self.console.log(
                    f"latency under a flood, repetition {repetition + 1}/{sizes.repetitions}"
                )
                flood_runs.append(await flooded.once())
                self.console.log(
                    f"latency under a flood, codes in line, repetition {repetition + 1}"
                )
                in_line_runs.append(await in_line.once())
                self.console.log(
                    f"latency under a flood, no reserved slot, repetition {repetition + 1}"
                )
                unreserved_runs.append(await unreserved.once())
                self.console.log(f"latency under a flood, lanes apart, repetition {repetition + 1}")
                flood_apart_runs.append(await flood_apart.once())
                self.console.log(
                    f"latency under a tenant events flood, repetition {repetition + 1}"
                )
                events_runs.append(await events_flooded.once())
                self.console.log(
                    "latency under a tenant events flood, lanes in processes of their own,"
                    f" repetition {repetition + 1}"
                )
                apart_runs.append(await events_apart.once())
        settings = {
            **latency.settings(),
            "messages_per_repetition": runs[0].messages,
            "offered_rate_median": round(statistics.median(r.offered_rate for r in runs), 1),
        }
        flood_settings = {
            **flooded.settings(),
            "messages_per_repetition": flood_runs[0].messages,
            "offered_rate_median": round(statistics.median(r.offered_rate for r in flood_runs), 1),
            # Above 0, the worker was still draining the flood when the last code arrived.
            "flood_left_at_last_code_min": min(r.flood_left for r in flood_runs),
        }
        events_settings = {
            **events_flooded.settings(),
            "messages_per_repetition": events_runs[0].messages,
            "offered_rate_median": round(statistics.median(r.offered_rate for r in events_runs), 1),
            # Above 0, the events lane still had work when the last code arrived: saturated.
            "events_left_at_last_code_min": min(r.events_left for r in events_runs),
        }
        apart_settings = {
            **events_apart.settings(),
            "messages_per_repetition": apart_runs[0].messages,
            "offered_rate_median": round(statistics.median(r.offered_rate for r in apart_runs), 1),
            "events_left_at_last_code_min": min(r.events_left for r in apart_runs),
        }
        results.add(
            Figure(
                key="latency.offered_rate",
                label=f"Rate the paced producer achieved (target {sizes.latency_rate}/s)",
                unit="msg/s",
                samples=tuple(r.offered_rate for r in runs),
                settings=settings,
            )
        )
        for name in ("p50", "p95", "p99"):
            results.add(
                Figure(
                    key=f"latency.{name}",
                    label=f"Enqueue-to-provider latency {name} at {sizes.latency_rate}/s",
                    unit="ms",
                    samples=tuple(getattr(r, name) for r in runs),
                    settings=settings,
                )
            )
            results.add(
                Figure(
                    key=f"latency.flood_{name}",
                    label=(
                        f"Code latency {name} at {sizes.latency_rate}/s under a flood of "
                        f"{sizes.latency_flood:,} notifications"
                    ),
                    unit="ms",
                    samples=tuple(getattr(r, name) for r in flood_runs),
                    settings=flood_settings,
                )
            )
            results.add(
                Figure(
                    key=f"latency.events_flood_{name}",
                    label=(
                        f"Code latency {name} at {sizes.latency_rate}/s, events lane saturated "
                        f"({sizes.latency_flood:,} queued, {sizes.producers} appenders)"
                    ),
                    unit="ms",
                    samples=tuple(getattr(r, name) for r in events_runs),
                    settings=events_settings,
                )
            )
            results.add(
                Figure(
                    key=f"latency.flood_apart_{name}",
                    label=(
                        f"Code latency {name} at {sizes.latency_rate}/s under the same flood,"
                        " the reserved slot in a process of its own (--lane-processes)"
                    ),
                    unit="ms",
                    samples=tuple(getattr(r, name) for r in flood_apart_runs),
                    settings={**flood_settings, **flood_apart.settings()},
                )
            )
            results.add(
                Figure(
                    key=f"latency.events_apart_{name}",
                    label=(
                        f"Code latency {name} at {sizes.latency_rate}/s, events lane saturated,"
                        " each lane and the reserved slot in a process of its own"
                        " (--lane-processes)"
                    ),
                    unit="ms",
                    samples=tuple(getattr(r, name) for r in apart_runs),
                    settings=apart_settings,
                )
            )
        for key, label, samples, settings in (
            ("events_flood", "events lane saturated", events_runs, events_settings),
            ("events_apart", "events lane saturated, lanes apart", apart_runs, apart_settings),
        ):
            results.add(
                Figure(
                    key=f"latency.{key}_offered_rate",
                    label=(
                        f"Rate the paced producer achieved, {label} (target {sizes.latency_rate}/s)"
                    ),
                    unit="msg/s",
                    samples=tuple(r.offered_rate for r in samples),
                    settings=settings,
                )
            )
        results.add(
            Figure(
                key="latency.flood_in_line_p99",
                label=(
                    "Code latency p99 under the same flood with codes at normal priority "
                    "(no priority: the comparison)"
                ),
                unit="ms",
                samples=tuple(r.p99 for r in in_line_runs),
                settings={**flood_settings, **in_line.settings()},
            )
        )
        results.add(
            Figure(
                key="latency.flood_unreserved_p99",
                label=(
                    "Code latency p99 under the same flood without the reserved slot "
                    "(codes wait for a batch in flight: the comparison)"
                ),
                unit="ms",
                samples=tuple(r.p99 for r in unreserved_runs),
                settings={**flood_settings, **unreserved.settings()},
            )
        )
        results.add(
            Figure(
                key="latency.flood_left",
                label="Flood notifications still queued when the last code was committed",
                unit="msgs",
                samples=tuple(float(r.flood_left) for r in flood_runs),
                settings=flood_settings,
            )
        )
        results.add(
            Figure(
                key="latency.events_left",
                label="Tenant events still queued when the last code was committed",
                unit="events",
                samples=tuple(float(r.events_left) for r in events_runs),
                settings=events_settings,
            )
        )
        results.add(
            Figure(
                key="latency.events_appended",
                label="Tenant events appended while the codes were enqueued",
                unit="events",
                samples=tuple(float(r.events_appended) for r in events_runs),
                settings=events_settings,
            )
        )

    async def _backlog(self, results: Results, keyring: str, config: WorkerConfig) -> None:
        sizes = self.sizes
        async with (
            self.server.fresh_database("backlog_small") as small_db,
            self.server.fresh_database("backlog_large") as large_db,
        ):
            await apply_migrations(small_db.conninfo)
            await apply_migrations(large_db.conninfo)
            small = BacklogDrain(
                database=small_db,
                pending=sizes.backlog_small,
                drained=sizes.backlog_drained,
                config=config,
            )
            large = BacklogDrain(
                database=large_db,
                pending=sizes.backlog_large,
                drained=sizes.backlog_drained,
                config=config,
            )
            self.console.log(f"bulk-loading {sizes.backlog_large:,} pending messages")
            await large.load()
            figures = {
                "small": Samples(
                    "backlog.small",
                    f"Drain with {sizes.backlog_small:,} pending",
                    "msg/s",
                    small.settings(),
                ),
                "large": Samples(
                    "backlog.large",
                    f"Drain with {sizes.backlog_large:,} pending",
                    "msg/s",
                    large.settings(),
                ),
            }
            cpu = {name: samples.cpu() for name, samples in figures.items()}
            async with (
                running_worker(small_db.conninfo, keyring, config) as small_worker,
                running_worker(large_db.conninfo, keyring, config) as large_worker,
            ):
                for repetition in range(sizes.repetitions):
                    self.console.log(f"backlog, repetition {repetition + 1}/{sizes.repetitions}")
                    for name, timed in (
                        ("small", await small.once(small_worker, reload=True)),
                        ("large", await large.once(large_worker, reload=False)),
                    ):
                        figures[name].values.append(timed.rate)
                        cpu[name].values.append(timed.cpu_us)
            for samples in [*figures.values(), *cpu.values()]:
                results.add(samples.figure())
            pending = await large.top_up()
            self.console.log(f"draining all {pending:,} pending in a worker process")
            drained = await drain_in_process(large_db, keyring, config)
        if drained.published != pending:
            raise RuntimeError(f"the worker process published {drained.published} of {pending}")
        settings: dict[str, Setting] = {
            "pending_at_start": pending,
            "published": drained.published,
            "measured": "VmHWM of the worker process (RUSAGE_CHILDREN ru_maxrss agrees)",
            # the largest child this run waited for, initdb and latency workers included
            "children_maxrss_mb": round(drained.children_maxrss_mb, 1),
            **config.settings(),
        }
        results.add(
            Figure(
                key="memory.worker_peak_rss",
                label=f"Worker peak RSS draining {pending:,}",
                unit="MB",
                samples=(drained.peak_rss_mb,),
                settings=settings,
            )
        )
        results.add(
            Figure(
                key="backlog.full_drain_process",
                label=f"Worker process draining all {pending:,}",
                unit="msg/s",
                samples=(drained.published / drained.seconds,),
                settings=settings,
            )
        )

    def _event_shape(self) -> EventShape:
        return EventShape(
            organizations=self.sizes.event_organizations, aggregates=self.sizes.event_aggregates
        )

    async def _events_append(self, results: Results) -> None:
        sizes = self.sizes
        async with (
            self.server.fresh_database("events_insert") as insert_db,
            self.server.fresh_database("events_append") as append_db,
            self.server.fresh_database("events_append_nonotify") as silent_db,
        ):
            for database in (insert_db, append_db, silent_db):
                await apply_migrations(database.conninfo)
            shape = self._event_shape()
            plain = PlainEventInsert(
                database=insert_db,
                total=sizes.enqueue_transactions,
                producers=sizes.producers,
                shape=shape,
            )
            append = EventAppend(
                database=append_db,
                total=sizes.enqueue_transactions,
                producers=sizes.producers,
                shape=shape,
            )
            silent = attrs.evolve(append, database=silent_db, notify=False)
            for prepared in (plain, append, silent):
                await prepared.prepare()
            figures = {
                "plain": Samples(
                    "events_append.plain_insert",
                    "Plain one-row INSERT of an event row",
                    "tx/s",
                    plain.settings(),
                ),
                "append": Samples(
                    "events_append.append",
                    "Tenant event append (append_domain_event, NOTIFY)",
                    "tx/s",
                    append.settings(),
                ),
                "silent": Samples(
                    "events_append.append_no_notify",
                    "Tenant event append without NOTIFY (bench variant)",
                    "tx/s",
                    silent.settings(),
                ),
            }
            runs: dict[str, Callable[[], Awaitable[float]]] = {
                "plain": plain.once,
                "append": append.once,
                "silent": silent.once,
            }
            for repetition in range(sizes.repetitions):
                self.console.log(f"events append, repetition {repetition + 1}/{sizes.repetitions}")
                for name, samples in figures.items():
                    samples.values.append(await runs[name]())
            for samples in figures.values():
                results.add(samples.figure())

    async def _events_drain(self, results: Results) -> None:
        sizes = self.sizes
        count = sizes.drain_messages
        async with (
            self.server.fresh_database("events_pgqueuer") as pgq_db,
            self.server.fresh_database("events_ceiling") as ceiling_db,
            self.server.fresh_database("events_lane") as lane_db,
            self.server.fresh_database("events_bare") as bare_db,
        ):
            backlogs = []
            for database in (ceiling_db, lane_db, bare_db):
                await apply_migrations(database.conninfo)
                backlog = EventsBacklog(
                    database=database,
                    events=count,
                    organizations=sizes.event_organizations,
                    aggregates=sizes.event_aggregates,
                    subscribed=database is not bare_db,
                )
                await backlog.prepare()
                backlogs.append(backlog)
            ceiling_backlog, lane_backlog, bare_backlog = backlogs
            sizing = lane_sizing(lane_settings(lane_db.conninfo))
            peer = PgqueuerDrain(database=pgq_db, jobs=count, batch_size=sizing.batch_size)
            await peer.install()
            ceiling = EventsSqlCeiling(
                database=ceiling_db, batch_size=sizing.batch_size, lanes=sizing.parallel_batches
            )
            bare = attrs.evolve(ceiling, database=bare_db)
            lane = EventsLaneDrain(backlog=lane_backlog, sizing=sizing)
            figures = {
                "pgqueuer": Samples(
                    "events_drain.pgqueuer",
                    "pgqueuer no-op drain (same number of jobs)",
                    "msg/s",
                    peer.settings(),
                ),
                "ceiling": Samples(
                    "events_drain.sql_ceiling",
                    "Events SQL-only ceiling (claim + record)",
                    "events/s",
                    {**ceiling.settings(), **ceiling_backlog.settings()},
                ),
                "lane": Samples(
                    "events_drain.lane",
                    "Events lane publishing a backlog (fan-out to 1 consumer)",
                    "events/s",
                    lane.settings(),
                ),
                "bare": Samples(
                    "events_drain.sql_ceiling_no_consumer",
                    "Events SQL-only ceiling, no consumer subscribed (no fan-out)",
                    "events/s",
                    {**bare.settings(), **bare_backlog.settings()},
                ),
            }
            meters = Meters(
                figures=figures,
                admin_conninfo=self.server.admin_conninfo,
                prefix="events_drain.",
                path_prefix="events_",
            )
            metered = meters.metered

            async def ceiling_once(events: int, *, fan_out: bool = True) -> Drained:
                backlog, drain = (ceiling_backlog, ceiling) if fan_out else (bare_backlog, bare)
                await backlog.load(events)
                drained = await drain.once()
                await backlog.check(events)
                return drained

            warm = min(WARM_UP_MESSAGES, count)
            async with running_events_lane(lane_db.conninfo) as events_lane:
                self.console.log("warming up the three events drains")
                await attrs.evolve(peer, jobs=warm).once()
                await ceiling_once(warm)
                await lane.once(events_lane, warm)
                await ceiling_once(warm, fan_out=False)
                for repetition in range(sizes.repetitions):
                    self.console.log(f"events drain, repetition {repetition + 1}")
                    await metered("pgqueuer", peer.once)
                    await metered("ceiling", lambda: ceiling_once(count))
                    await metered("lane", lambda: lane.once(events_lane))
                    await metered("bare", lambda: ceiling_once(count, fan_out=False))
            meters.add_to(results)

    async def _consumers(self, results: Results) -> None:
        sizes = self.sizes
        async with (
            self.server.fresh_database("consumer_ceiling") as ceiling_db,
            self.server.fresh_database("consumer_runner") as runner_db,
        ):
            backlogs = []
            for database in (ceiling_db, runner_db):
                await apply_migrations(database.conninfo)
                backlog = ConsumerBacklog(
                    database=database,
                    deliveries=sizes.consumer_deliveries,
                    organizations=sizes.event_organizations,
                    aggregates=sizes.event_aggregates,
                )
                await backlog.prepare()
                backlogs.append(backlog)
            ceiling = ConsumerCeiling(backlog=backlogs[0])
            runner = ConsumerRunner(backlog=backlogs[1])
            figures = {
                "ceiling": Samples(
                    "consumers.sql_ceiling",
                    "Consumer SQL-only ceiling (claim + INSERT + record)",
                    "deliveries/s",
                    ceiling.settings(),
                ),
                "runner": Samples(
                    "consumers.runner",
                    "Consumer runner, one effect row per delivery",
                    "deliveries/s",
                    runner.settings(),
                ),
            }
            meters = Meters(
                figures=figures,
                admin_conninfo=self.server.admin_conninfo,
                prefix="consumers.",
                path_prefix="consumers_",
            )
            runs: dict[str, Callable[[], Awaitable[Drained]]] = {
                "ceiling": ceiling.once,
                "runner": runner.once,
            }
            for repetition in range(sizes.repetitions):
                self.console.log(f"consumers, repetition {repetition + 1}/{sizes.repetitions}")
                for name in figures:
                    await meters.metered(name, runs[name])
            meters.add_to(results)

    async def _relay(self, results: Results) -> None:
        sizes = self.sizes
        count = sizes.drain_messages
        with nats_server() as url:
            async with self.server.fresh_database("relay") as database:
                await apply_migrations(database.conninfo)
                backlog = EventsBacklog(
                    database=database,
                    events=count,
                    organizations=sizes.event_organizations,
                    aggregates=sizes.event_aggregates,
                    subscribed=False,
                )
                await backlog.prepare()
                async with running_relay_lane(database.conninfo, url) as lane:
                    relay = RelayDrain(backlog=backlog, url=url, sizing=lane.sizing)
                    bare = BarePublishLoop(
                        url=url,
                        events=count,
                        organizations=sizes.event_organizations,
                        aggregates=sizes.event_aggregates,
                    )
                    figures = {
                        "relay": Samples(
                            "relay.lane",
                            "Relay: events lane to JetStream (PubAck before record)",
                            "events/s",
                            relay.settings(),
                        ),
                        "bare": Samples(
                            "relay.bare_publish",
                            "Bare nats-py publish_async loop, same events, same server",
                            "events/s",
                            bare.settings(),
                        ),
                    }
                    cpu = {name: samples.cpu() for name, samples in figures.items()}
                    warm = min(WARM_UP_MESSAGES, count)
                    self.console.log("warming up the relay and the bare publish loop")
                    await relay.once(lane, warm)
                    await bare.once(warm)
                    for repetition in range(sizes.repetitions):
                        self.console.log(f"relay, repetition {repetition + 1}")
                        for name, drained in (
                            ("relay", await relay.once(lane)),
                            ("bare", await bare.once()),
                        ):
                            figures[name].values.append(drained.rate)
                            cpu[name].values.append(drained.cpu_us)
                    paced = RelayLatency(
                        database=database,
                        url=url,
                        stream=STREAM,
                        prefix=PREFIX,
                        rate=min(sizes.latency_rate, RELAY_LATENCY_RATE),
                        seconds=sizes.latency_seconds,
                        organizations=sizes.event_organizations,
                        aggregates=sizes.event_aggregates,
                    )
                    runs, relay_parts = [], []
                    for repetition in range(sizes.repetitions):
                        self.console.log(f"relay end to end, repetition {repetition + 1}")
                        end_to_end, relay_part = await paced.once(lane)
                        runs.append(end_to_end)
                        relay_parts.append(relay_part)
                for samples in [*figures.values(), *cpu.values()]:
                    results.add(samples.figure())
        paced_settings = {
            **paced.settings(),
            "events_per_repetition": runs[0].messages,
            "offered_rate_median": round(statistics.median(r.offered_rate for r in runs), 1),
        }
        for name in ("p50", "p95", "p99"):
            results.add(
                Figure(
                    key=f"relay.end_to_end_{name}",
                    label=(
                        f"Append to inbox transaction {name} through JetStream at "
                        f"{min(sizes.latency_rate, RELAY_LATENCY_RATE)}/s"
                    ),
                    unit="ms",
                    samples=tuple(getattr(r, name) for r in runs),
                    settings=paced_settings,
                )
            )
            results.add(
                Figure(
                    key=f"relay.append_to_puback_{name}",
                    label=f"Of which append to recorded published (PubAck) {name}",
                    unit="ms",
                    samples=tuple(getattr(r, name) for r in relay_parts),
                    settings=paced_settings,
                )
            )
        results.ratio(
            "relay_vs_bare_publish",
            "Relay / bare nats-py publish loop (target: at least 0.5)",
            "relay.lane",
            "relay.bare_publish",
            at_least=0.5,
        )


def _wal_checks(results: Results) -> None:
    """For information (issue 31): the WAL and the write transactions each path costs per
    delivered message, beside pgqueuer's for the same number of jobs."""
    have = results.figures.keys()
    for path, peer in (
        ("dispatch_plain", "pgqueuer"),
        ("dispatch_sealed", "pgqueuer"),
        ("sql_ceiling", "pgqueuer"),
        ("events_lane", "events_pgqueuer"),
        ("events_sql_ceiling", "events_pgqueuer"),
        ("consumers_runner", "pgqueuer"),
        ("consumers_sql_ceiling", "pgqueuer"),
    ):
        for kind, what in (("wal", "WAL"), ("xacts", "Write transactions")):
            if {f"{kind}.{path}", f"{kind}.{peer}"} <= have:
                results.ratio(
                    f"{kind}_{path}_vs_pgqueuer",
                    f"{what} per message: {path.replace('_', ' ')} / pgqueuer",
                    f"{kind}.{path}",
                    f"{kind}.{peer}",
                    at_least=None,
                )


def _checks(results: Results) -> None:
    have = results.figures.keys()
    _wal_checks(results)
    if {"drain.dispatch_plain", "drain.pgqueuer"} <= have:
        results.ratio(
            "dispatch_plain_vs_pgqueuer",
            "Dispatch (plain) / pgqueuer",
            "drain.dispatch_plain",
            "drain.pgqueuer",
            at_least=1.5,
        )
        results.ratio(
            "dispatch_sealed_vs_pgqueuer",
            "Dispatch (sealed + templates) / pgqueuer",
            "drain.dispatch_sealed",
            "drain.pgqueuer",
            at_least=1.0,
        )
        results.ratio(
            "dispatch_plain_vs_ceiling",
            "Dispatch (plain) / SQL-only ceiling",
            "drain.dispatch_plain",
            "drain.sql_ceiling",
            at_least=0.6,
        )
        results.ratio(
            "dispatch_sealed_vs_ceiling",
            "Dispatch (sealed + templates) / SQL-only ceiling",
            "drain.dispatch_sealed",
            "drain.sql_ceiling",
            at_least=0.5,
        )
        results.ratio(
            "ceiling_vs_pgqueuer",
            "SQL-only ceiling / pgqueuer",
            "drain.sql_ceiling",
            "drain.pgqueuer",
            at_least=None,
        )
        results.ratio(
            "cpu_pgqueuer_vs_plain",
            "Client CPU per message: pgqueuer / dispatch (plain)",
            "drain.cpu_pgqueuer",
            "drain.cpu_dispatch_plain",
            at_least=None,
        )
        results.ratio(
            "cpu_pgqueuer_vs_sealed",
            "Client CPU per message: pgqueuer / dispatch (sealed)",
            "drain.cpu_pgqueuer",
            "drain.cpu_dispatch_sealed",
            at_least=None,
        )
    if "processes.notification_2" in have:
        for kind, label in (("notification", "plain"), ("sealed_code", "sealed")):
            results.ratio(
                f"processes_{label}_2_vs_1",
                f"2 worker processes / 1 ({label})",
                f"processes.{kind}_2",
                f"processes.{kind}_1",
                at_least=None,
            )
            for n in (1, 2):
                results.ratio(
                    f"processes_{label}_{n}_vs_pgqueuer",
                    f"{n} worker process{'es' if n > 1 else ''} ({label}) / pgqueuer",
                    f"processes.{kind}_{n}",
                    "processes.pgqueuer",
                    at_least=None,
                )
    if "enqueue.sealed" in have:
        results.ratio(
            "enqueue_vs_insert",
            "Sealed enqueue / plain INSERT",
            "enqueue.sealed",
            "enqueue.plain_insert",
            at_least=0.8,
        )
        results.ratio(
            "notify_cost",
            "Sealed enqueue with NOTIFY / without",
            "enqueue.sealed",
            "enqueue.sealed_no_notify",
            at_least=None,
        )
    _latency_checks(results, have)
    if "backlog.large" in have:
        results.ratio(
            "backlog_large_vs_small",
            "Drain with large backlog / small backlog",
            "backlog.large",
            "backlog.small",
            at_least=0.8,
        )
        results.limit("worker_peak_rss", "Worker peak RSS", "memory.worker_peak_rss", at_most=150.0)
    if "events_append.append" in have:
        results.ratio(
            "events_append_vs_insert",
            "Tenant event append / plain INSERT",
            "events_append.append",
            "events_append.plain_insert",
            at_least=0.7,
        )
        results.ratio(
            "events_append_notify_cost",
            "Tenant event append with NOTIFY / without",
            "events_append.append",
            "events_append.append_no_notify",
            at_least=None,
        )
    if "events_drain.lane" in have:
        results.ratio(
            "events_lane_vs_pgqueuer",
            "Events lane / pgqueuer",
            "events_drain.lane",
            "events_drain.pgqueuer",
            at_least=1.0,
        )
        results.ratio(
            "events_lane_vs_ceiling",
            "Events lane / its SQL-only ceiling",
            "events_drain.lane",
            "events_drain.sql_ceiling",
            at_least=None,
        )
        results.ratio(
            "events_fan_out_cost",
            "Events ceiling with one consumer's fan-out / without",
            "events_drain.sql_ceiling",
            "events_drain.sql_ceiling_no_consumer",
            at_least=None,
        )
    if "consumers.runner" in have:
        _consumer_checks(results, have)


def _latency_checks(results: Results, have: Collection[str]) -> None:
    """The codes' latency bounds: idle, under a flood, beside a saturated events lane."""
    if "latency.p99" in have:
        results.limit("latency_p99", "Enqueue-to-provider p99", "latency.p99", at_most=25.0)
    if "latency.flood_p99" in have:
        # The bound for codes while other traffic floods the same worker.
        results.limit(
            "latency_flood_p99",
            "Code p99 under a notification flood",
            "latency.flood_p99",
            at_most=50.0,
        )
        results.ratio(
            "latency_flood_reserved_vs_not",
            "Code p99 under a notification flood, reserved slot / without it",
            "latency.flood_p99",
            "latency.flood_unreserved_p99",
            at_least=None,
        )
    if "latency.events_flood_p99" in have:
        results.limit(
            "latency_events_flood_p99",
            "Code p99 with the events lane saturated",
            "latency.events_flood_p99",
            at_most=50.0,
        )
        results.ratio(
            "latency_events_flood_vs_idle",
            "Code p99, events lane saturated / idle",
            "latency.events_flood_p99",
            "latency.p99",
            at_least=None,
        )
    if "latency.flood_apart_p99" in have:
        results.limit(
            "latency_flood_apart_p99",
            "Code p99 under a notification flood, reserved slot in a process of its own",
            "latency.flood_apart_p99",
            at_most=50.0,
        )
        results.ratio(
            "latency_flood_apart_vs_together",
            "Code p99 under a notification flood: slot apart / beside the batches",
            "latency.flood_apart_p99",
            "latency.flood_p99",
            at_least=None,
        )
    if "latency.events_apart_p99" in have:
        results.limit(
            "latency_events_apart_p99",
            "Code p99 with the events lane saturated, lanes in processes of their own",
            "latency.events_apart_p99",
            at_most=50.0,
        )
        results.ratio(
            "latency_events_apart_vs_together",
            "Code p99, events lane saturated: lanes apart / on one loop",
            "latency.events_apart_p99",
            "latency.events_flood_p99",
            at_least=None,
        )


def _consumer_checks(results: Results, have: Collection[str]) -> None:
    """The consumer runner against its ceiling and, when the drains ran, pgqueuer's."""
    results.ratio(
        "consumer_vs_ceiling",
        "Consumer runner / its SQL-only ceiling",
        "consumers.runner",
        "consumers.sql_ceiling",
        at_least=0.5,
    )
    if "drain.pgqueuer" in have:
        results.ratio(
            "consumer_vs_pgqueuer",
            "Consumer runner / pgqueuer no-op drain",
            "consumers.runner",
            "drain.pgqueuer",
            at_least=0.5,
        )
