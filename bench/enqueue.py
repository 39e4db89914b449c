"""Producer enqueue: one sealed message per transaction through the real OutboxWriter."""

from __future__ import annotations

from datetime import timedelta

import attrs
import psycopg

from bench.databases import Database
from bench.harness import Setting
from bench.producers import transactions_per_second
from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import parse_keyring
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.adapters.system.clock import SystemClock
from outbox.adapters.system.ids import Uuid7Ids
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.purposes import Purpose

CODE_LIFETIME = timedelta(minutes=10)
# The bench-only variant without the wake-up: the function's own definition minus its
# pg_notify line, installed in that figure's database only (the function has no switch).
FUNCTION_DEFINITION = "SELECT pg_catalog.pg_get_functiondef('outbox.enqueue_message'::regproc::oid)"
NOTIFY_LINE = "PERFORM pg_catalog.pg_notify('outbox_work', '');"


@attrs.frozen(kw_only=True)
class SealedEnqueue:
    """``total`` transactions from ``producers`` connections, each sealing and enqueuing a code."""

    database: Database
    keyring: str = attrs.field(repr=False)
    total: int
    producers: int
    notify: bool = True

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "driver": "psycopg (async), PostgresOutboxWriter",
            "transactions": self.total,
            "messages_per_transaction": 1,
            "producers": self.producers,
            "purpose": "sign_up (sealed code, own subject)",
            "pg_notify": "yes" if self.notify else "no (bench-only variant of enqueue_message)",
        }

    async def prepare(self) -> None:
        """Without NOTIFY: replace enqueue_message in this database by the same body minus it."""
        if self.notify:
            return
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            row = await (await conn.execute(FUNCTION_DEFINITION)).fetchone()
            definition = str(row[0]) if row else ""
            if NOTIFY_LINE not in definition:
                raise RuntimeError(
                    "enqueue_message no longer has the NOTIFY line this variant drops"
                )
            await conn.execute(definition.replace(NOTIFY_LINE, "").encode())

    async def once(self) -> float:
        """Empty the queue, then enqueue; return transactions per second."""
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            # CASCADE: receipts and delivery states reference messages (0029).
            await conn.execute(
                "TRUNCATE outbox.attempts, outbox.envelopes, outbox.messages CASCADE"
            )
            for table in ("outbox.messages", "outbox.envelopes"):
                await conn.execute(f"VACUUM ANALYZE {table}")
        sealer = EnvelopeSealer(parse_keyring(self.keyring))
        ids = Uuid7Ids()
        clock = SystemClock()

        async def enqueue_one(conn: psycopg.AsyncConnection[object], n: int) -> None:
            async with conn.transaction():
                await PostgresOutboxWriter(conn).enqueue(  # type: ignore[arg-type]
                    sealed_message(n, sealer, ids, clock)
                )

        return await transactions_per_second(
            self.database.conninfo,
            total=self.total,
            concurrency=self.producers,
            transaction=enqueue_one,
        )


def sealed_message(n: int, sealer: EnvelopeSealer, ids: Uuid7Ids, clock: SystemClock) -> Message:
    """The n-th sign-up code message, sealed, as a producer's use case builds it."""
    message_id = ids.new_id()
    now = clock.now()
    return Message.enqueue(
        id=message_id,
        purpose=Purpose.SIGN_UP,
        channel=Channel.EMAIL,
        destination=f"person{n}@example.com",
        subject_id=ids.new_id(),
        template="sign_up",
        params={"expires_in_minutes": "10"},
        sealed_secret=sealer.seal(
            message_id=message_id, purpose=Purpose.SIGN_UP, plaintext=f"{n % 1_000_000:06d}"
        ),
        expires_at=now + CODE_LIFETIME,
        now=now,
    )
