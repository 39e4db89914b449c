"""The identity module as an events producer, through the real app and PostgreSQL:
each account change appends its event in the change's own transaction, as identity_service,
for the platform organization, with nothing secret in it."""

from __future__ import annotations

import json
from uuid import UUID

import psycopg
import pytest

from tests.integration.identity.api import PASSWORD, Api

pytestmark = pytest.mark.integration

ALICE = "alice@example.com"
PHONE = "+34612345678"
NEW_PASSWORD = "a new long password"
PLATFORM = UUID(int=0)
EVENTS = """
SELECT e.organization_id, e.event_type_code, e.contract_version, e.producer_module_code,
       e.aggregate_type, e.aggregate_id, e.idempotency_key, e.payload,
       (SELECT count(*) FROM events.outbox_records AS r WHERE r.domain_event_id = e.id)
FROM events.domain_events AS e ORDER BY e.append_sequence
"""


async def _identity_id(api: Api, identifier: str) -> str:
    [(identity_id,)] = await api.rows(
        "SELECT identity_id FROM identity.login_identifiers WHERE value = %s", identifier
    )
    return str(identity_id)


async def _events(api: Api) -> list[tuple[object, ...]]:
    return await api.rows(EVENTS)


async def test_every_account_change_appends_its_event_for_the_platform_organization(
    api: Api,
) -> None:
    token = await api.signed_up(ALICE)
    await api.add_sign_in_method(token, PHONE)
    code = (await api.deliver_one()).content.text
    added = await api.post(
        "/sign-in-methods/confirmations", {"identifier": PHONE, "code": code}, token=token
    )
    assert 204 == added.status_code, added.text
    await api.deliver()  # the notices of the change
    await api.post("/password-recoveries", {"identifier": ALICE})
    recovery = (await api.deliver_one()).content.text
    reset = await api.post(
        "/password-recoveries/confirmations",
        {"identifier": ALICE, "code": recovery, "newPassword": NEW_PASSWORD},
    )
    assert 204 == reset.status_code, reset.text
    owner = await api.sign_in(ALICE, NEW_PASSWORD)
    revoked = await api.client.delete("/sessions", headers={"Authorization": f"Bearer {owner}"})
    assert 204 == revoked.status_code

    rows = await _events(api)

    identity_id = await _identity_id(api, ALICE)
    assert [
        "identity.account_verified",
        "identity.sign_in_method_added",
        "identity.password_reset",
        "identity.sessions_revoked",
    ] == [row[1] for row in rows]
    for (
        organization,
        _,
        version,
        module,
        aggregate_type,
        aggregate_id,
        key,
        payload,
        records,
    ) in rows:
        assert (PLATFORM, 1, "identity") == (organization, version, module)
        assert ("identity", identity_id, 1) == (aggregate_type, aggregate_id, records)
        assert identity_id == payload["identity_id"]
        text = json.dumps(payload) + str(key)
        for secret in (ALICE, PHONE, PASSWORD, NEW_PASSWORD, code, recovery, token, owner):
            assert secret not in text
    assert "+34***78" == rows[1][7]["identifier"]
    assert [f"{row[7]['change']}:" for row in rows] == [str(row[6])[:-36] for row in rows]


async def test_a_refused_append_leaves_the_change_undone(api: Api) -> None:
    """Retiring the type refuses its appends: revoking every session then fails as a whole,
    and every session still works."""
    token = await api.signed_up(ALICE)
    await api.execute(
        "SET ROLE outbox_owner; SELECT events.retire_event_type('identity.sessions_revoked')"
    )

    failed = await api.client.delete("/sessions", headers={"Authorization": f"Bearer {token}"})

    assert 500 <= failed.status_code
    assert 201 == (await api.post("/step-ups", token=token)).status_code
    assert ["identity.account_verified"] == [row[1] for row in await _events(api)]


@pytest.mark.parametrize("role", ["outbox_producer", "outbox_worker", "outbox_runtime"])
async def test_no_other_job_role_may_append_identity_events(api: Api, role: str) -> None:
    async with await psycopg.AsyncConnection.connect(api.database_url, autocommit=True) as conn:
        await conn.execute(f"SET ROLE {role}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute(
                "SELECT events.append_domain_event(%s, 'identity.account_verified', 1,"
                " 'identity', 'x', 'k', '{}'::jsonb, now())",
                (PLATFORM,),
            )


async def test_the_shipped_consumer_enqueues_each_event_s_notices_once(api: Api) -> None:
    """Published, the event is delivered to identity.security_notices, whose notices commit
    with the delivery's completion: delivering again sends nothing more."""
    token = await api.signed_up(ALICE)  # its account_verified notice is delivered there
    revoked = await api.client.delete("/sessions", headers={"Authorization": f"Bearer {token}"})
    assert 204 == revoked.status_code

    [notice] = await api.deliver()

    assert (ALICE, "security_notice") == (notice.destination, notice.content.subject)
    assert "change=sessions_revoked" in notice.content.text
    assert [] == await api.deliver()
    assert [("identity.security_notices", "completed", 2)] == await api.rows(
        "SELECT c.code, d.state, count(*) FROM events.consumer_deliveries AS d"
        " JOIN events.consumers AS c ON c.id = d.consumer_id"
        " WHERE c.code = 'identity.security_notices' GROUP BY c.code, d.state"
    )
    assert [(2,)] == await api.rows(
        "SELECT count(*) FROM outbox.messages WHERE purpose = 'security_notice'"
    )
