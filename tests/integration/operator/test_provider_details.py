"""What an SMTP server answered reaches the attempt history sanitised, end to end: a real
aiosmtpd server refuses, the worker records through PostgreSQL, ``outboxctl messages show``
reads it back."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from outbox.adapters.providers.smtp.provider import SmtpProvider, SmtpSecurity
from outbox.domain.channels import Channel
from tests.integration.operator.staff_world import StaffWorld
from tests.integration.providers.smtp_stand_in import Behaviour, SmtpStandIn

pytestmark = pytest.mark.integration

ADDRESS = "dana.scully@example.com"


@pytest.fixture
def smtp() -> Iterator[SmtpStandIn]:
    """An SMTP server that refuses every recipient, naming it."""
    server = SmtpStandIn(
        Behaviour(rcpt_reply=f"550 5.1.1 <{ADDRESS}>: Recipient address rejected: no mailbox")
    )
    server.start()
    yield server
    server.stop()


async def test_an_smtp_refusal_keeps_its_enhanced_code_and_reason_in_the_history(
    world: StaffWorld, smtp: SmtpStandIn
):
    provider = SmtpProvider(
        host="127.0.0.1",
        port=smtp.port,
        sender="Example <no-reply@example.org>",
        clock=world.api.clock,
        timeout=2.0,
        security=SmtpSecurity.PLAIN,
    )
    dispatch = attrs.evolve(world.api.dispatch, providers={Channel.EMAIL: provider})
    await world.api.rows(
        "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email', %s, NULL,"
        " 'notification', '{\"body\": \"hello\"}')",
        ADDRESS,
    )
    [(message_id,)] = await world.api.rows("SELECT id::text FROM outbox.messages")

    assert 1 == (await dispatch()).claimed
    shown = await world.cli_json("messages", "show", message_id)
    table = await world.cli("messages", "show", message_id)

    [attempt] = shown["attempts"]
    assert ("dead_letter", "REJECTED", "550", "smtp") == (
        attempt["outcome"],
        attempt["failureClass"],
        attempt["code"],
        attempt["provider"],
    )
    assert "5.1.1 [address]: Recipient address rejected: no mailbox" == attempt["detail"]
    assert "5.1.1 [address]: Recipient" in table.stdout
    assert ADDRESS not in table.stdout + str(shown)
    [(stored,)] = await world.api.rows("SELECT detail FROM outbox.attempts")
    assert attempt["detail"] == stored
