"""``python -m bench.recovery_paths``: the password-recovery transaction, known vs unknown.

Prints the median and 90th percentile time of the server-side recovery transaction (the
lookup, the open call and the COMMIT, exactly the statements the API sends, on one
connection acting as ``identity_service``) for an identifier that is an account and for
one that is not, and their ratio. The two paths make the same round trips, so a
difference is the server's work. Interleaved, so both meet the same noise. A figure to
read, never a pass/fail.

The database is an embedded PostgreSQL unless OUTBOX_DATABASE_URL names a server (a
superuser URL; a database is created there and dropped afterwards).
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer
from psycopg import AsyncConnection

from bench.databases import database_server
from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.crypto.keyring import Keyring, SealKey
from outbox.adapters.postgres.identity_store import FIND_RECOVERY_TARGET, OPEN_RECOVERY
from outbox.adapters.postgres.migrator import apply_migrations
from outbox.adapters.postgres.pool import connection_options
from outbox.domain.purposes import Purpose

KNOWN = "known@example.com"
UNKNOWN = "unknown@example.com"
SEALER = EnvelopeSealer(Keyring((SealKey("bench", bytes(range(32))),)))

app = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)


async def _account(conninfo: str) -> None:
    """A verified account on KNOWN, written as the database operator would."""
    now = datetime.now(UTC)
    identity_id = uuid.uuid4()
    async with await AsyncConnection.connect(conninfo, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO identity.identities (id, created_at) VALUES (%s, %s)", (identity_id, now)
        )
        await conn.execute(
            "INSERT INTO identity.login_identifiers (value, channel, identity_id, created_at,"
            " verified_at) VALUES (%s, 'email', %s, %s, %s)",
            (KNOWN, identity_id, now, now),
        )


async def _recovery(conn: AsyncConnection, identifier: str, code_hash: str) -> float:
    """One recovery transaction as the API runs it; its duration in seconds."""
    now = datetime.now(UTC)
    message_id = uuid.uuid4()
    sealed = SEALER.seal(message_id=message_id, purpose=Purpose.PASSWORD_RECOVERY, plaintext="1")
    started = time.perf_counter()
    async with conn.transaction():
        row = await (await conn.execute(FIND_RECOVERY_TARGET, (identifier,))).fetchone()
        assert row is not None
        identity_id, open_challenge = row[0], row[1]
        # As the use case does: an open challenge is resent (same id), else a new one.
        challenge_id = open_challenge if open_challenge is not None else uuid.uuid4()
        await conn.execute(
            OPEN_RECOVERY,
            (
                identity_id,
                challenge_id,
                identifier,
                "email",
                code_hash,
                0,
                now,
                now + timedelta(minutes=10),
                message_id,
                "password_recovery",
                "{}",
                "en",
                sealed,
            ),
        )
    return time.perf_counter() - started


async def measure(conninfo: str, iterations: int) -> dict[str, list[float]]:
    """Seconds per recovery transaction, for KNOWN and UNKNOWN, after a warm-up."""
    await apply_migrations(conninfo)
    await _account(conninfo)
    code_hash = Argon2idHasher(Argon2Parameters.cheapest()).hash("123456")
    times: dict[str, list[float]] = {"known": [], "unknown": []}
    async with await AsyncConnection.connect(
        conninfo, **connection_options(prepared_statements=True)
    ) as conn:
        await conn.execute("SET ROLE identity_service")
        for _ in range(min(50, iterations)):
            await _recovery(conn, KNOWN, code_hash)
            await _recovery(conn, UNKNOWN, code_hash)
        for _ in range(iterations):
            times["known"].append(await _recovery(conn, KNOWN, code_hash))
            times["unknown"].append(await _recovery(conn, UNKNOWN, code_hash))
    return times


async def _run(iterations: int) -> dict[str, list[float]]:
    with database_server() as server:
        async with server.fresh_database("recovery") as database:
            return await measure(database.conninfo, iterations)


def report(times: dict[str, list[float]]) -> str:
    """The printed table: median and p90 per path in milliseconds, and the median ratio."""
    lines = [f"{'path':<10}{'median ms':>12}{'p90 ms':>10}{'runs':>8}"]
    medians = {}
    for path, samples in times.items():
        medians[path] = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1] if len(samples) > 1 else samples[0]
        lines.append(f"{path:<10}{medians[path] * 1000:>12.3f}{p90 * 1000:>10.3f}{len(samples):>8}")
    lines.append(f"known / unknown median ratio: {medians['known'] / medians['unknown']:.3f}")
    return "\n".join(lines)


@app.command()
def main(
    iterations: Annotated[int, typer.Option(min=2, help="Transactions per path.")] = 2000,
) -> None:
    """Time the recovery transaction for a known and an unknown identifier."""
    typer.echo(report(asyncio.run(_run(iterations))))


if __name__ == "__main__":
    app()
