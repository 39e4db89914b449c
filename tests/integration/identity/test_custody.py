"""What the identity schema keeps and who may reach it: never the worker."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import errors

from tests.integration.identity.api import PASSWORD, Api, token_of

pytestmark = pytest.mark.integration

TEXT_COLUMNS = """
SELECT format('%%I.%%I', table_schema, table_name), column_name
FROM information_schema.columns
WHERE table_schema IN ('identity', 'outbox') AND data_type IN ('text', 'jsonb', 'ARRAY')
"""


async def _every_stored_text(api: Api) -> str:
    stored = []
    for table, column in await api.rows(TEXT_COLUMNS):
        stored += [str(row[0]) for row in await api.rows(f"SELECT {column}::text FROM {table}")]  # type: ignore[misc]
    return "\n".join(stored)


async def test_no_table_holds_a_code_a_token_or_a_password(api: Api) -> None:
    token = await api.signed_up("alice@example.com")
    secrets: list[str] = [token, PASSWORD]
    await api.post("/step-ups", token=token)
    step_up = await api.deliver_one()
    elevated = await api.post(
        "/step-ups/confirmations", {"code": step_up.content.text}, token=token
    )
    secrets += [step_up.content.text, elevated.json()["elevationToken"]]
    organization = (await api.post("/organizations", {"name": "Acme"}, token=token)).json()["id"]
    await api.post(
        f"/organizations/{organization}/invitations", {"email": "g@example.com"}, token=token
    )
    await api.post("/magic-links", {"email": "alice@example.com"})
    links = await api.deliver()
    secrets += [token_of(d) for d in links]
    await api.post("/password-recoveries", {"identifier": "alice@example.com"})
    secrets.append(await api.sealed_code())

    stored = await _every_stored_text(api)

    assert 2 == len(links)
    words = set(re.findall(r"[A-Za-z0-9]+", stored))  # a 6-digit code may sit inside a digest
    assert [] == [s for s in secrets if (s in words if len(s) <= 12 else s in stored)]


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM identity.find_account('alice@example.com')",
        "SELECT identity.hit_rate_limit(repeat('a', 64), now(), now() + interval '1 minute')",
        "SELECT * FROM identity.password_credentials",
        "SELECT * FROM identity.challenges",
    ],
)
async def test_the_worker_role_reaches_nothing_of_identity(api: Api, statement: str) -> None:
    async with await psycopg.AsyncConnection.connect(api.database_url, autocommit=True) as conn:
        await conn.execute("SET ROLE outbox_worker")
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute(statement)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM identity.password_credentials",
        "SELECT * FROM identity.sessions",
        "UPDATE identity.challenges SET failed_attempts = 0",
        "DELETE FROM identity.rate_limit_counters",
    ],
)
async def test_the_api_role_uses_functions_never_tables(api: Api, statement: str) -> None:
    async with await psycopg.AsyncConnection.connect(api.database_url, autocommit=True) as conn:
        await conn.execute("SET ROLE identity_service")
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute(statement)  # type: ignore[arg-type]


async def test_an_invitation_accepted_before_its_message_left_is_never_sent(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    guest = await api.signed_up("guest@example.com")
    organization = (await api.post("/organizations", {"name": "Acme"}, token=founder)).json()["id"]
    await api.post(
        f"/organizations/{organization}/invitations", {"email": "guest@example.com"}, token=founder
    )

    accepted = await api.post(
        "/invitations/acceptances", {"token": await api.sealed_code()}, token=guest
    )

    assert 201 == accepted.status_code
    [(state, reason, _, has_envelope)] = await api.messages("invitation")
    assert ("dead_lettered", "challenge_consumed", False) == (state, reason, has_envelope)
    assert [] == await api.deliver()


async def test_an_invitation_that_expired_unsent_is_dead_lettered_at_claim(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    organization = (await api.post("/organizations", {"name": "Acme"}, token=founder)).json()["id"]
    invite = api.services.invite_member
    object.__setattr__(
        invite,
        "invitation_limits",
        type(invite.invitation_limits)(lifetime=timedelta(seconds=1)),
    )
    api.clock.current = datetime.now(UTC)
    await api.post(
        f"/organizations/{organization}/invitations", {"email": "g@example.com"}, token=founder
    )
    api.clock.advance(timedelta(seconds=2))
    await _wait_past(api, seconds=1.2)

    assert [] == await api.deliver()
    [(state, reason, _, has_envelope)] = await api.messages("invitation")
    assert ("dead_lettered", "invitation_expired", False) == (state, reason, has_envelope)


async def _wait_past(api: Api, seconds: float) -> Any:
    """Let the database clock pass the message's expiry."""
    await api.rows("SELECT pg_sleep(%s)", seconds)
