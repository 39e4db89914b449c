"""Recording a notification cannot be turned into an open mail relay (issue 28, finding 2).

The attack: a login holding only ``notifications_producer`` (the API role is a member) called
``notifications.take_snapshot`` with a destination, mask, template, variables and recipient id
of its choosing: "Your account is locked… https://evil.example/verify" went to an arbitrary
address with the ``notification`` template, a made-up recipient skipped the opt-out, the
snapshot recorded another masked address, and variables named ``api_token`` were stored. Now
the category decides the template and the variable names, the destination must be a verified
identifier of a recipient that exists, the mask is the destination's own, and the recipient's
consent is checked.
"""

from __future__ import annotations

from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg.types.json import Jsonb

pytestmark = pytest.mark.integration

NOTIFIER = "notifications_producer"
TAKE = (
    "SELECT decision FROM notifications.take_snapshot(%s, %s, 'account.welcome', %s, 'staff',"
    " %s, %s, %s, %s, %s, 'en', %s)"
)
VICTIM = "victim@example.com"
PHISH = {"first_name": "Your account is locked. Verify at https://evil.example/verify"}


async def _account(connect_as, email: str = "owner@example.com") -> UUID:
    identity = uuid4()
    async with connect_as() as conn:
        await conn.execute(
            "INSERT INTO identity.identities (id, created_at) VALUES (%s, now())", (identity,)
        )
        await conn.execute(
            "INSERT INTO identity.login_identifiers (value, channel, identity_id, created_at,"
            " verified_at) VALUES (%s, 'email', %s, now(), now())",
            (email, identity),
        )
    return identity


async def _take(
    connect_as,
    recipient: UUID,
    *,
    destination: str,
    masked: str,
    template: str = "account_welcome",
    variables: dict[str, str] | None = None,
) -> str:
    async with connect_as(NOTIFIER) as conn:
        cursor = await conn.execute(
            TAKE,
            (
                uuid4(),
                f"staff:{uuid4()}",
                recipient,
                uuid4(),
                "email",
                destination,
                masked,
                template,
                Jsonb(variables or {}),
            ),
        )
        row = await cursor.fetchone()
    assert row is not None
    return str(row[0])


async def _sent_to(connect_as, destination: str) -> int:
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.messages WHERE destination = %s", (destination,)
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize(
    ("template", "variables"),
    [("notification", PHISH), ("account_welcome", {})],
    ids=["another-template", "the-categorys-template"],
)
async def test_nobody_sends_to_an_address_the_recipient_does_not_have(
    connect_as, template, variables
):
    owner = await _account(connect_as)

    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"p_destination|p_template"):
        await _take(
            connect_as,
            owner,
            destination=VICTIM,
            masked="o***@example.com",
            template=template,
            variables=variables,
        )

    assert 0 == await _sent_to(connect_as, VICTIM)


async def test_a_made_up_recipient_gets_nothing(connect_as):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_recipient_id"):
        await _take(connect_as, uuid4(), destination=VICTIM, masked="v***@example.com")

    assert 0 == await _sent_to(connect_as, VICTIM)


async def test_the_template_is_the_categorys(connect_as):
    owner = await _account(connect_as)

    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_template"):
        await _take(
            connect_as,
            owner,
            destination="owner@example.com",
            masked="o***@example.com",
            template="notification",
        )


async def test_the_mask_is_the_destinations_own(connect_as):
    owner = await _account(connect_as)

    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_masked_destination"):
        await _take(
            connect_as, owner, destination="owner@example.com", masked="s***@elsewhere.example"
        )


@pytest.mark.parametrize(
    "variables",
    [
        {"api_token": "x"},
        {"reset_password_url": "https://evil.example/reset"},
        PHISH,
        {"first_name": "see www.evil.example"},
    ],
    ids=["api-token", "reset-url", "a-link-in-a-name", "a-host-in-a-name"],
)
async def test_only_the_categorys_variables_without_links_are_stored(connect_as, variables):
    owner = await _account(connect_as)

    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_variables"):
        await _take(
            connect_as,
            owner,
            destination="owner@example.com",
            masked="o***@example.com",
            variables=variables,
        )

    assert 0 == await _sent_to(connect_as, "owner@example.com")


async def test_the_recipients_consent_is_checked_and_their_own_address_is_sent_to(connect_as):
    owner = await _account(connect_as)
    quiet = await _account(connect_as, "quiet@example.com")
    async with connect_as(NOTIFIER) as conn:
        await conn.execute(
            "SELECT notifications.opt_out(%s, 'account.welcome', ARRAY['email'])", (quiet,)
        )

    sent = await _take(
        connect_as,
        owner,
        destination="owner@example.com",
        masked="o***@example.com",
        variables={"first_name": "Ana María"},
    )
    suppressed = await _take(
        connect_as, quiet, destination="quiet@example.com", masked="q***@example.com"
    )

    assert ("send", "suppressed_by_consent") == (sent, suppressed)
    assert (1, 0) == (
        await _sent_to(connect_as, "owner@example.com"),
        await _sent_to(connect_as, "quiet@example.com"),
    )
