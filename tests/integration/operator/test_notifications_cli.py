"""``outboxctl notifications request``: a staff intent run in-process, as the
database operator: snapshots taken once per key, consent applied, bad input refused."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode

pytestmark = pytest.mark.integration

ALICE = "alice@example.com"


def _json(result: Any) -> Any:
    assert ExitCode.OK == result.returncode, result.stderr
    return json.loads(result.stdout)


async def _account(connect_as, identifier: str, locale: str | None = None) -> str:
    identity_id = uuid.uuid4()
    async with connect_as("identity_service") as conn:
        await conn.execute("SELECT identity.add_identity(%s, now())", (identity_id,))
        await conn.execute(
            "SELECT identity.save_login_identifier(%s, 'email', %s, now(), now())",
            (identifier, identity_id),
        )
        if locale is not None:
            await conn.execute(
                "SELECT identity.set_preferred_locale(%s, %s)", (identity_id, locale)
            )
    return str(identity_id)


async def test_a_staff_request_is_taken_once_per_key_in_the_recipient_s_locale(
    connect_as, cli
) -> None:
    alice = await _account(connect_as, ALICE, "es")

    [first] = _json(
        cli(
            "notifications",
            "request",
            alice,
            "account.welcome",
            "--key",
            "k1",
            "--var",
            "first_name=Alice",
            "--json",
        )
    )["items"]
    [again] = _json(
        cli("notifications", "request", alice, "account.welcome", "--key", "k1", "--json")
    )["items"]

    assert (True, False, first["id"]) == (first["created"], again["created"], again["id"])
    assert ("email", "send", first["id"]) == (
        first["channel"],
        first["decision"],
        first["messageId"],
    )
    shown = _json(cli("notifications", "show", first["intentId"], "--json"))
    assert ("staff", "staff:k1") == (shown["source"], shown["intentKey"])
    [delivery] = shown["deliveries"]
    assert ("es", {"first_name": "Alice"}, "pending") == (
        delivery["locale"],
        delivery["variables"],
        delivery["messageState"],
    )
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT purpose, template, locale, destination FROM outbox.messages WHERE id = %s",
            (first["id"],),
        )
        assert ("notification", "account_welcome", "es", ALICE) == await cursor.fetchone()


async def test_consent_applies_to_staff_requests_too(connect_as, cli) -> None:
    alice = await _account(connect_as, ALICE)
    assert (
        1
        == _json(
            cli(
                "notifications",
                "consent",
                "opt-out",
                alice,
                "account.welcome",
                "--channel",
                "email",
                "--json",
            )
        )["optedOut"]
    )

    [taken] = _json(
        cli("notifications", "request", alice, "account.welcome", "--key", "k2", "--json")
    )["items"]

    assert ("suppressed_by_consent", None) == (taken["decision"], taken["messageId"])


@pytest.mark.parametrize(
    ("arguments", "code", "says"),
    [
        (["account.welcome", "--key", "k", "--var", "reset_token=x"], ExitCode.USAGE, "secret"),
        (["account.welcome", "--key", "k", "--var", "novalue"], ExitCode.USAGE, "NAME=VALUE"),
        (["account.welcome", "--key", "has space"], ExitCode.USAGE, "key"),
        (["shop.order_shipped", "--key", "k"], ExitCode.NOT_FOUND, "no category"),
    ],
)
async def test_bad_requests_are_refused_and_write_nothing(
    connect_as, cli, arguments: list[str], code: ExitCode, says: str
) -> None:
    alice = await _account(connect_as, ALICE)

    refused = cli("notifications", "request", alice, *arguments)

    assert code == refused.returncode
    assert says in refused.stderr
    async with connect_as() as conn:
        cursor = await conn.execute("SELECT count(*) FROM notifications.intents")
        assert (0,) == await cursor.fetchone()


def test_an_unknown_recipient_is_not_found(cli) -> None:
    refused = cli("notifications", "request", str(uuid.uuid4()), "account.welcome", "--key", "k")
    assert ExitCode.NOT_FOUND == refused.returncode
    assert "no recipient" in refused.stderr
