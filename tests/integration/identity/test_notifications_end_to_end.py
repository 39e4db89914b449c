"""A notification intent from a domain event is delivered once, in the recipient's locale,
honouring consent: real sign-ups append identity.account_verified through the
real app; the worker's consumers lane runs identity.account_notifications, whose snapshots
enqueue the welcomes; the worker sends them to an SMTP server; a replay sends nothing more;
an opted-out account gets nothing and its snapshot says why."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from outbox.adapters.crypto.keyring import key_line
from outbox.entrypoints.bootstrap.worker_process import run_worker
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.settings.tree import load_settings
from tests.integration.identity.api import Api
from tests.integration.providers.smtp_stand_in import SmtpStandIn
from tests.integration.worker.conftest import SEAL_KEY
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

ALICE = "alice@example.com"
BOB = "bob@example.com"
CONSUMER = "identity.account_notifications"


def _settings(database_url: str, tmp_path: Path, smtp: SmtpStandIn, lanes: str) -> Any:
    return load_settings(
        {
            "OUTBOX_ENV": "development",
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_API_DB_ROLE": "identity_service",  # the identity module's consumers' role
            "OUTBOX_SEAL_KEYS": key_line(SEAL_KEY),
            "OUTBOX_DATA_DIR": str(tmp_path / "data"),
            "OUTBOX_WORKER_LANES": lanes,
            "OUTBOX_CHANNEL_EMAIL": "smtp",
            "OUTBOX_SMTP_HOST": "127.0.0.1",
            "OUTBOX_SMTP_PORT": str(smtp.port),
            "OUTBOX_SMTP_SECURITY": "plain",
            "OUTBOX_SMTP_FROM": "Outbox <no-reply@outbox.test>",
        },
        providers=True,
    )


async def _outboxctl(database_url: str, tmp_path: Path, *command: str) -> Any:
    return json.loads(await _outboxctl_text(database_url, tmp_path, *command))


async def _outboxctl_text(database_url: str, tmp_path: Path, *command: str) -> str:
    result = await asyncio.to_thread(
        run_outboxctl,
        *command,
        variables={
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_DATA_DIR": str(tmp_path / "cli"),
            "OUTBOX_LOG_LEVEL": "warning",
        },
    )
    assert ExitCode.OK == result.returncode, result.stderr
    return result.stdout


async def _identity_id(api: Api, identifier: str) -> str:
    [(identity_id,)] = await api.rows(
        "SELECT identity_id FROM identity.login_identifiers WHERE value = %s", identifier
    )
    return str(identity_id)


async def test_a_notification_intent_from_a_domain_event_is_delivered_once_in_the_recipient_s_locale_honouring_consent(  # noqa: E501
    api: Api, tmp_path: Path, smtp: SmtpStandIn
) -> None:
    await api.signed_up(ALICE)  # each sign-up appends (and publishes) identity.account_verified
    await api.signed_up(BOB)
    alice, bob = await _identity_id(api, ALICE), await _identity_id(api, BOB)
    await api.execute(
        "SET ROLE identity_service;"  # the identity module's own function
        f" SELECT identity.set_preferred_locale('{alice}', 'es-MX')"
    )
    opted = await _outboxctl(
        api.database_url,
        tmp_path,
        "notifications",
        "consent",
        "opt-out",
        bob,
        "account.welcome",
        "--json",
    )
    assert 2 == opted["optedOut"]  # email and sms, the category's channels

    consumed = await run_worker(
        _settings(api.database_url, tmp_path, smtp, "consumers"), drain=True
    )
    sent = await run_worker(_settings(api.database_url, tmp_path, smtp, "security"), drain=True)

    assert (2, 2) == (consumed["consumers"].claimed, consumed["consumers"].completed)
    assert 1 == sent["security"].published  # type: ignore[attr-defined]
    [welcome] = smtp.accepted
    assert [ALICE] == welcome.rcpt_tos
    assert "Bienvenido: tu cuenta está lista" == welcome.message["Subject"]
    body = welcome.message.get_body(("plain",))
    assert body is not None
    assert "¡Bienvenido! Tu cuenta está lista" in body.get_content()

    [(bob_intent,)] = await api.rows(
        "SELECT id FROM notifications.intents WHERE recipient_id = %s::uuid", bob
    )
    shown = await _outboxctl(
        api.database_url, tmp_path, "notifications", "show", str(bob_intent), "--json"
    )
    assert ("account.welcome", bob, "event") == (
        shown["category"],
        shown["recipientId"],
        shown["source"],
    )
    assert [("email", "b***@example.com", "suppressed_by_consent", None, "en")] == [
        (d["channel"], d["destination"], d["decision"], d["messageId"], d["locale"])
        for d in shown["deliveries"]
    ]
    table = await _outboxctl_text(
        api.database_url, tmp_path, "notifications", "show", str(bob_intent)
    )
    assert "suppressed_by_consent" in table
    assert "b***@example.com" in table
    assert BOB not in table
    listed = await _outboxctl_text(
        api.database_url, tmp_path, "notifications", "consent", "list", bob
    )
    assert ["email", "sms"] == [w for w in listed.split() if w in ("email", "sms")]

    replayed = await _outboxctl(
        api.database_url, tmp_path, "consumers", "replay", CONSUMER, "--from", "1", "--json"
    )
    again = await run_worker(_settings(api.database_url, tmp_path, smtp, "consumers"), drain=True)
    resent = await run_worker(_settings(api.database_url, tmp_path, smtp, "security"), drain=True)

    assert 2 == replayed["deliveries"]
    assert (2, 2) == (again["consumers"].claimed, again["consumers"].completed)
    assert 0 == resent["security"].claimed
    assert [welcome] == smtp.accepted
    assert [(2, 2, 1)] == await api.rows(
        "SELECT (SELECT count(*) FROM notifications.intents),"
        " (SELECT count(*) FROM notifications.snapshots),"
        " (SELECT count(*) FROM outbox.messages WHERE purpose = 'notification')"
    )
    [(alice_delivery,)] = await api.rows(
        "SELECT s.id FROM notifications.snapshots AS s JOIN notifications.intents AS i"
        " ON i.id = s.intent_id WHERE i.recipient_id = %s::uuid",
        alice,
    )
    shown = await _outboxctl(
        api.database_url, tmp_path, "notifications", "show", str(alice_delivery), "--json"
    )
    assert [("email", "a***@example.com", "send", "es", "published")] == [
        (d["channel"], d["destination"], d["decision"], d["locale"], d["messageState"])
        for d in shown["deliveries"]
    ]
