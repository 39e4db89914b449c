"""What one events claim and one record read, index by index, clean and under a held horizon.

``python -m bench.events_hold_walks [--dead 20000] [--organizations 8] [--aggregates 64]``

Twice, each in a fresh database with one consumer subscribed: append ``--dead`` events over
the organizations and aggregates, publish them all (claim and record, batches of 100) and
deliver them to the consumer (claim and complete, batches of 50) — the second time while
another session holds the xmin horizon, so every version they leave stays — then append 200
more, claim and record one batch, and claim and complete one batch of the consumer's; then
publish the rest and make one full claim and, once its window has passed, one recent claim
(0058), both finding nothing.
Printed: the entries each index returned to those statements and the buffers each table
and index gave them (PostgreSQL's own counters for
the calling transaction, so no clock is involved), and how long each took. It shows which
statements walk the dead versions a hold keeps.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

import psycopg
import typer
from rich.console import Console
from rich.table import Table

from bench import events_workload
from bench.consumers import BATCH_SIZE, completions
from bench.consumers import CLAIM as CONSUMER_CLAIM
from bench.consumers import RECORD as CONSUMER_RECORD
from bench.databases import database_server
from bench.events_ceiling import CLAIM, RECORD, published
from outbox.adapters.postgres.claim_window import CLAIM_WINDOW
from outbox.adapters.postgres.migrator import apply_migrations

# Per table and index of the events schema, what the calling transaction has done with it so
# far: the entries its index scans returned, and the buffers it read (a unique index's check
# of a new entry, and the heap visits behind every entry, show only in the buffers).
COUNTERS = """
SELECT c.oid::regclass::text, c.relkind = 'i',
       pg_catalog.pg_stat_get_xact_tuples_returned(c.oid),
       pg_catalog.pg_stat_get_xact_blocks_fetched(c.oid)
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = 'events' AND c.relkind IN ('r', 'i')
"""
LIVE = "SELECT count(*) FROM events.outbox_records WHERE state IN ('pending', 'leased')"
STATEMENTS = (
    "claim", "record", "consumer claim", "consumer record", "empty claim", "empty recent claim"
)  # fmt: skip
RECENT_CLAIM = "SELECT record_id FROM events.claim_outbox_batch(%s, %s, %s, %s)"
Connection = psycopg.AsyncConnection[tuple[Any, ...]]


async def _counters(conn: Connection) -> dict[str, tuple[int, int]]:
    """Per relation: (index entries returned, or 0 for a table; buffers read)."""
    rows = await (await conn.execute(COUNTERS)).fetchall()
    return {
        name: (int(returned) if index else 0, int(blocks)) for name, index, returned, blocks in rows
    }


async def _read(
    conn: Connection, query: str, params: Any
) -> tuple[list[tuple[Any, ...]], float, dict[str, tuple[int, int]]]:
    """Run ``query`` in its own transaction; its rows, milliseconds, and per relation the
    entries and buffers it read."""
    before = await _counters(conn)
    started = time.perf_counter()
    result = await (await conn.execute(query.encode(), params)).fetchall()
    took = (time.perf_counter() - started) * 1000
    after = await _counters(conn)
    await conn.commit()
    read = {
        name: (after[name][0] - before[name][0], after[name][1] - before[name][1]) for name in after
    }
    return result, took, {name: pair for name, pair in read.items() if any(pair)}


async def _publish_all(conn: Connection) -> None:
    while True:
        claimed = await (await conn.execute(CLAIM, ("walks", 100, 60))).fetchall()
        await conn.commit()
        if claimed:
            await conn.execute(RECORD.encode(), published(claimed))
            await conn.commit()
            continue
        row = await (await conn.execute(LIVE)).fetchone()
        await conn.commit()
        if not row or not row[0]:
            return


async def _consume_all(conn: Connection) -> None:
    while claimed := await (
        await conn.execute(CONSUMER_CLAIM, (events_workload.CONSUMER, "walks", BATCH_SIZE, 60))
    ).fetchall():
        await conn.execute(CONSUMER_RECORD, completions(claimed))
        await conn.commit()


async def one(conninfo: str, *, held: bool, dead: int, shape: tuple[int, int]) -> dict[str, Any]:
    """One database's figures: the claim's and the record's entries per index, and times."""
    await apply_migrations(conninfo)
    await events_workload.onboard(conninfo)
    await events_workload.subscribe_consumer(conninfo)
    organizations, aggregates = shape
    async with (
        await psycopg.AsyncConnection.connect(conninfo) as conn,
        await psycopg.AsyncConnection.connect(
            events_workload.producer_conninfo(conninfo)
        ) as consumer,
        await psycopg.AsyncConnection.connect(conninfo) as holder,
    ):
        if held:
            await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")
        await events_workload.bulk_load(
            conninfo, dead, organizations=organizations, aggregates=aggregates, batch="1"
        )
        await _publish_all(conn)
        await _consume_all(consumer)
        await events_workload.bulk_load(
            conninfo, 200, organizations=organizations, aggregates=aggregates, batch="2"
        )
        claimed, claim_ms, claim_read = await _read(conn, CLAIM, ("walks", 100, 60))
        _, record_ms, record_read = await _read(conn, RECORD, published(claimed))
        delivered, consumer_claim_ms, consumer_claim_read = await _read(
            consumer, CONSUMER_CLAIM, (events_workload.CONSUMER, "walks", BATCH_SIZE, 60)
        )
        _, consumer_record_ms, consumer_record_read = await _read(
            consumer, CONSUMER_RECORD, completions(delivered)
        )
        await _publish_all(conn)
        _, empty_ms, empty_read = await _read(conn, CLAIM, ("walks", 100, 60))
        # The worker's recent claim (0058), once the heads' last versions lie below its window.
        await asyncio.sleep(CLAIM_WINDOW.total_seconds() + 0.5)
        _, recent_ms, recent_read = await _read(
            conn, RECENT_CLAIM, ("walks", 100, 60, CLAIM_WINDOW.total_seconds())
        )
        await holder.rollback()
    return {
        "claim_ms": claim_ms,
        "claim": claim_read,
        "record_ms": record_ms,
        "record": record_read,
        "consumer claim_ms": consumer_claim_ms,
        "consumer claim": consumer_claim_read,
        "consumer record_ms": consumer_record_ms,
        "consumer record": consumer_record_read,
        "empty claim_ms": empty_ms,
        "empty claim": empty_read,
        "empty recent claim_ms": recent_ms,
        "empty recent claim": recent_read,
    }


app = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)


@app.command()
def main(
    dead: Annotated[int, typer.Option(min=1, help="Events published before the probe.")] = 20000,
    organizations: Annotated[int, typer.Option(min=1)] = 8,
    aggregates: Annotated[int, typer.Option(min=1)] = 64,
) -> None:
    """Probe clean, then held; print the entries each index returned."""
    console = Console()

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        runs = []
        with database_server() as server:
            for held in (False, True):
                async with server.fresh_database(f"walks_{'held' if held else 'clean'}") as db:
                    runs.append(
                        await one(
                            db.conninfo, held=held, dead=dead, shape=(organizations, aggregates)
                        )
                    )
        return runs[0], runs[1]

    clean, held = asyncio.run(both())
    table = Table(
        title=f"Index entries and buffers read after {dead:,} events published, clean / held"
    )
    for heading in (
        "statement", "table or index", "entries clean", "entries held", "buffers clean",
        "buffers held",
    ):  # fmt: skip
        table.add_column(
            heading, justify="left" if "index" in heading or heading == "statement" else "right"
        )
    for statement in STATEMENTS:
        for name in sorted(set(clean[statement]) | set(held[statement])):
            a, b = clean[statement].get(name, (0, 0)), held[statement].get(name, (0, 0))
            table.add_row(statement, name, f"{a[0]:,}", f"{b[0]:,}", f"{a[1]:,}", f"{b[1]:,}")
        table.add_row(
            statement,
            "(milliseconds)",
            f"{clean[f'{statement}_ms']:.1f}",
            f"{held[f'{statement}_ms']:.1f}",
            "",
            "",
        )
    console.print(table)


if __name__ == "__main__":
    app()
