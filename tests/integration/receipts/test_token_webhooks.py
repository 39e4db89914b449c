"""Brevo and Wasender receipts from the outside: the credential checked in constant time,
each event mapped, nothing believed without it."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import psycopg
import pytest

from tests.integration.receipts.conftest import BREVO_TOKEN, WASENDER_SECRET
from tests.integration.receipts.receipt_sql import publish

pytestmark = pytest.mark.integration

BREVO_ID = "<202612011700.12345@smtp-relay.mailin.fr>"


async def _rows(database_url: str, query: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        cursor = await conn.execute(query)  # type: ignore[arg-type]
        return await cursor.fetchall()


async def _published(database_url: str, provider: str, provider_id: str) -> Any:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        return await publish(conn, "gone@example.com", provider, provider_id)


def _brevo(event: str, **extra: Any) -> bytes:
    return json.dumps(
        {
            "event": event,
            "email": "gone@example.com",
            "id": 1,
            "message-id": BREVO_ID,
            "ts_event": int(time.time()),
            "subject": "Your code is 493817",
            **extra,
        }
    ).encode()


def _basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"outbox:{password}".encode()).decode()


@pytest.mark.parametrize(
    "authorization", [f"Bearer {BREVO_TOKEN}", _basic(BREVO_TOKEN)], ids=["bearer", "basic"]
)
async def test_a_brevo_hard_bounce_with_its_credential_bounces_and_suppresses(
    webhooks, database_url, authorization
):
    await _published(database_url, "brevo", BREVO_ID)
    answer = await webhooks.client.post(
        "/webhooks/brevo",
        content=_brevo("hard_bounce", reason="unknown user"),
        headers={"content-type": "application/json", "authorization": authorization},
    )
    assert 200 == answer.status_code, answer.text
    assert [("bounced",)] == await _rows(database_url, "SELECT state FROM outbox.delivery_states")
    assert [(1,)] == await _rows(database_url, "SELECT count(*) FROM outbox.suppressions")
    (raw,) = (await _rows(database_url, "SELECT raw::text FROM outbox.receipts"))[0]
    assert "gone@example.com" not in raw
    assert "493817" not in raw


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", f"Bearer {BREVO_TOKEN}x", _basic("wrong"), "Basic !!!", BREVO_TOKEN],
    ids=["none", "wrong bearer", "longer bearer", "wrong basic", "garbled basic", "bare token"],
)
async def test_brevo_without_its_credential_is_refused(webhooks, database_url, authorization):
    await _published(database_url, "brevo", BREVO_ID)
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    answer = await webhooks.client.post(
        "/webhooks/brevo", content=_brevo("hard_bounce"), headers=headers
    )
    assert (403, "credentials") == (answer.status_code, answer.json()["detail"])
    assert [(0,)] == await _rows(database_url, "SELECT count(*) FROM outbox.receipts")


def _wasender(status: int, message_id: str = "34874643876") -> bytes:
    return json.dumps(
        {
            "event": "messages.update",
            "sessionId": "the-session-api-key",
            "data": {
                "update": {"status": status},
                "key": {
                    "remoteJid": "34612345678@s.whatsapp.net",
                    "id": message_id,
                    "fromMe": True,
                },
            },
            "timestamp": int(time.time() * 1000),
        }
    ).encode()


async def test_wasender_statuses_with_the_secret_move_the_state_forward_only(
    webhooks, database_url
):
    await _published(database_url, "wasender", "34874643876")
    headers = {"content-type": "application/json", "x-webhook-signature": WASENDER_SECRET}
    answers = [
        await webhooks.client.post("/webhooks/wasender", content=_wasender(s), headers=headers)
        for s in (2, 4, 3, 0, 3)
    ]
    assert [200] * 5 == [answer.status_code for answer in answers]
    assert [("failed",)] == await _rows(database_url, "SELECT state FROM outbox.delivery_states")
    (raws,) = await _rows(database_url, "SELECT string_agg(raw::text, ' ') FROM outbox.receipts")
    assert "34612345678" not in raws[0]
    assert "the-session-api-key" not in raws[0]


@pytest.mark.parametrize("secret", [None, "", "wrong", WASENDER_SECRET + "x"])
async def test_wasender_without_its_secret_is_refused(webhooks, database_url, secret):
    headers = {"content-type": "application/json"}
    if secret is not None:
        headers["x-webhook-signature"] = secret
    answer = await webhooks.client.post("/webhooks/wasender", content=_wasender(0), headers=headers)
    assert (403, "credentials") == (answer.status_code, answer.json()["detail"])
    assert [(0,)] == await _rows(database_url, "SELECT count(*) FROM outbox.receipts")


async def test_a_body_over_the_limit_is_refused_before_it_is_read(webhooks):
    answer = await webhooks.client.post(
        "/webhooks/brevo",
        content=b"[" + b"1," * 100_000 + b"1]",
        headers={"content-type": "application/json", "authorization": f"Bearer {BREVO_TOKEN}"},
    )
    assert 413 == answer.status_code


async def test_the_webhook_listener_serves_only_webhook_routes(webhooks):
    for path in ("/metrics", "/healthz", "/schema", "/platform-admin/security-outbox/backlog"):
        assert 404 == (await webhooks.client.get(path)).status_code


async def test_addresses_in_any_script_spacing_or_key_are_masked_and_kept(webhooks, database_url):
    """The attack (issue 28, low): a receipt kept internationalised addresses and spaced
    phone numbers unmasked (and the console showed them), and an address used as a JSON key
    made the receipt a 500, which the provider retried for ever."""
    await _published(database_url, "brevo", BREVO_ID)
    body = _brevo(
        "hard_bounce",
        reason="user пользователь@пример.рф unknown, call +34 612 34 56 78",
        tags={"victim@example.com": "x"},
    )

    answer = await webhooks.client.post(
        "/webhooks/brevo",
        content=body,
        headers={"content-type": "application/json", "authorization": f"Bearer {BREVO_TOKEN}"},
    )

    assert 200 == answer.status_code, answer.text
    (raw,) = (await _rows(database_url, "SELECT raw::text FROM outbox.receipts"))[0]
    [(detail,)] = await _rows(database_url, "SELECT detail FROM outbox.receipts")
    for kept in (raw, detail):
        assert "пользователь" not in kept
        assert "612 34 56 78" not in kept
    assert "victim@example.com" not in raw
