"""SES receipts through SNS, from the outside: a verified notification advances the message;
every forged, replayed, wrong-topic, wrong-host or unsigned body is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from outbox.adapters.webhooks.sns import CERTIFICATE_FETCHES_PER_MINUTE
from tests.integration.receipts.receipt_sql import publish
from tests.integration.receipts.sns_world import CERT_PATH, ses_event

pytestmark = pytest.mark.integration

SES_ID = "0100018c-ses-message-id"


async def _published(database_url: str, destination: str = "gone@example.com") -> Any:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        return await publish(conn, destination, "ses", SES_ID)


async def _rows(database_url: str, query: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        cursor = await conn.execute(query)  # type: ignore[arg-type]
        return await cursor.fetchall()


async def _post(webhooks, fields: dict[str, Any] | bytes):
    body = fields if isinstance(fields, bytes) else json.dumps(fields).encode()
    return await webhooks.client.post(
        "/webhooks/ses",
        content=body,
        headers={"content-type": "text/plain; charset=UTF-8"},
    )


@pytest.mark.parametrize("version", ["1", "2"])
async def test_a_signed_permanent_bounce_bounces_the_message_and_suppresses_its_address(
    webhooks, sns, database_url, version
):
    _, signer, _ = sns
    message_id = await _published(database_url)
    fields = signer.message(
        message=ses_event("Bounce", SES_ID, bounceType="Permanent", bounceSubType="General"),
        version=version,
    )

    answer = await _post(webhooks, fields)

    assert 200 == answer.status_code, answer.text
    assert {"received": 1, "duplicates": 0, "unmatched": 0} == answer.json()
    assert "no-store" in answer.headers["cache-control"]
    assert [("bounced",)] == await _rows(
        database_url, f"SELECT state FROM outbox.delivery_states WHERE message_id = '{message_id}'"
    )
    assert [("g***@example.com", "hard_bounce")] == await _rows(
        database_url, "SELECT destination_masked, cause FROM outbox.suppressions"
    )
    (raw,) = (await _rows(database_url, "SELECT raw::text FROM outbox.receipts"))[0]
    assert "gone@example.com" not in raw
    assert "sender@example.com" not in raw
    assert "493817" not in raw  # the mail's headers are not kept


@pytest.mark.parametrize(
    "case",
    [
        ("Delivery", {"processingTimeMillis": 5}, "delivered"),
        ("Complaint", {"complaintFeedbackType": "abuse"}, "complained"),
        ("Reject", {"reason": "Bad content"}, "failed"),
        ("Bounce", {"bounceType": "Transient", "bounceSubType": "MailboxFull"}, None),
    ],
    ids=["delivery", "complaint", "reject", "transient bounce"],
)
async def test_each_ses_notification_moves_the_state_it_names(webhooks, sns, database_url, case):
    kind, part, state = case
    _, signer, _ = sns
    await _published(database_url)
    answer = await _post(webhooks, signer.message(message=ses_event(kind, SES_ID, **part)))

    assert 200 == answer.status_code, answer.text
    states = await _rows(database_url, "SELECT state FROM outbox.delivery_states")
    assert ([(state,)] if state else []) == states


async def test_the_same_message_id_twice_is_kept_once(webhooks, sns, database_url):
    _, signer, _ = sns
    await _published(database_url)
    fields = signer.message(message=ses_event("Delivery", SES_ID))

    first = await _post(webhooks, fields)
    again = await _post(webhooks, fields)

    assert (200, 200) == (first.status_code, again.status_code)
    assert {"received": 1, "duplicates": 1, "unmatched": 0} == again.json()
    assert [(1,)] == await _rows(database_url, "SELECT count(*) FROM outbox.receipts")


async def test_a_notification_about_a_message_we_never_sent_is_kept_and_ignored(
    webhooks, sns, database_url
):
    _, signer, _ = sns
    answer = await _post(
        webhooks, signer.message(message=ses_event("Bounce", "unknown-id", bounceType="Permanent"))
    )
    assert {"received": 1, "duplicates": 0, "unmatched": 1} == answer.json()
    assert [(None,)] == await _rows(database_url, "SELECT message_id FROM outbox.receipts")
    assert [(0,)] == await _rows(database_url, "SELECT count(*) FROM outbox.suppressions")


# What each forgery is refused for: the check that caught it.
REASONS = {
    "tampered message": "sns_signature_invalid",
    "unsigned": "sns_unsigned",
    "empty signature": "sns_unsigned",
    "garbage signature": "sns_signature_invalid",
    "unknown signature version": "sns_signature_version",
    "signature version swapped": "sns_signature_invalid",
    "topic swapped after signing": "sns_topic_not_pinned",
    "validly signed, topic not pinned": "sns_topic_not_pinned",
    "timestamp too old": "sns_timestamp_stale",
    "timestamp in the future": "sns_timestamp_stale",
    "certificate from another host": "sns_certificate_host",
    "certificate host suffix trick": "sns_certificate_host",
    "certificate over plain http": "sns_certificate_host",
    "certificate url with credentials": "sns_certificate_host",
    "certificate not a pem": "sns_certificate_host",
    "not json": "body_not_json",
    "json but not an object": "body_not_json",
    "unknown type": "sns_type_unknown",
}


def _forgeries(signer, stand_in) -> dict[str, dict[str, Any] | bytes]:
    bounce = ses_event("Bounce", SES_ID, bounceType="Permanent")
    tampered = signer.message(message=ses_event("Delivery", SES_ID))
    tampered["Message"] = bounce
    unsigned = signer.message(message=bounce)
    del unsigned["Signature"]
    empty_signature = {**signer.message(message=bounce), "Signature": ""}
    garbage_signature = {**signer.message(message=bounce), "Signature": "bm90IGEgc2lnbmF0dXJl"}
    wrong_version = signer.message(message=bounce)
    wrong_version["SignatureVersion"] = "3"
    downgraded = signer.message(message=bounce, version="2")
    downgraded["SignatureVersion"] = "1"
    retopic = signer.message(message=bounce)
    retopic["TopicArn"] = "arn:aws:sns:eu-west-1:999999999999:someone-else"
    port = stand_in.base.rsplit(":", 1)[1]
    return {
        "tampered message": tampered,
        "unsigned": unsigned,
        "empty signature": empty_signature,
        "garbage signature": garbage_signature,
        "unknown signature version": wrong_version,
        "signature version swapped": downgraded,
        "topic swapped after signing": retopic,
        "validly signed, topic not pinned": signer.message(
            message=bounce, topic="arn:aws:sns:eu-west-1:999999999999:someone-else"
        ),
        "timestamp too old": signer.message(
            message=bounce, timestamp=datetime.now(UTC) - timedelta(hours=2)
        ),
        "timestamp in the future": signer.message(
            message=bounce, timestamp=datetime.now(UTC) + timedelta(hours=2)
        ),
        "certificate from another host": signer.message(
            message=bounce, cert_url=f"https://127.0.0.2:{port}{CERT_PATH}"
        ),
        "certificate host suffix trick": signer.message(
            message=bounce, cert_url=f"https://localhost.evil.example:{port}{CERT_PATH}"
        ),
        "certificate over plain http": signer.message(
            message=bounce, cert_url=f"http://localhost:{port}{CERT_PATH}"
        ),
        "certificate url with credentials": signer.message(
            message=bounce, cert_url=f"https://user:pw@localhost:{port}{CERT_PATH}"
        ),
        "certificate not a pem": signer.message(
            message=bounce, cert_url=f"https://localhost:{port}/cert"
        ),
        "not json": b"Type=Notification&Message=hello",
        "json but not an object": b"[1, 2]",
        "unknown type": {**signer.message(message=bounce), "Type": "Surprise"},
    }


async def test_every_forged_variant_is_refused_and_changes_nothing(webhooks, sns, database_url):
    stand_in, signer, _ = sns
    await _published(database_url)
    forgeries = _forgeries(signer, stand_in)

    answers = {name: await _post(webhooks, body) for name, body in forgeries.items()}

    assert dict.fromkeys(forgeries, 403) == {n: a.status_code for n, a in answers.items()}
    assert REASONS == {name: answer.json()["detail"] for name, answer in answers.items()}
    for answer in answers.values():
        assert "urn:outbox:problem:webhook-rejected" == answer.json()["type"]
    assert [(0, 0, 0)] == await _rows(
        database_url,
        "SELECT (SELECT count(*) FROM outbox.receipts), (SELECT count(*) FROM"
        " outbox.delivery_states), (SELECT count(*) FROM outbox.suppressions)",
    )
    # No certificate was ever fetched from anywhere but the pinned host's .pem path.
    assert set(stand_in.requests) <= {CERT_PATH}


async def test_a_verified_subscription_is_confirmed_on_the_pinned_host_only(webhooks, sns):
    stand_in, signer, _ = sns
    port = stand_in.base.rsplit(":", 1)[1]
    good = signer.message(
        "SubscriptionConfirmation", subscribe_url=f"{stand_in.base}/confirm?token=abc"
    )
    elsewhere = signer.message(
        "SubscriptionConfirmation", subscribe_url=f"https://127.0.0.2:{port}/confirm?token=x"
    )
    forged = {**good, "SubscribeURL": f"{stand_in.base}/confirm?token=forged"}

    answers = [await _post(webhooks, body) for body in (elsewhere, forged, good)]

    assert [403, 403, 200] == [answer.status_code for answer in answers]
    assert ["/confirm?token=abc"] == [path for path in stand_in.requests if path != CERT_PATH]


async def test_a_refusal_is_counted_by_its_reason(webhooks, sns):
    _, signer, _ = sns
    forged = signer.message(message="{}")
    forged["Message"] = "changed"
    await _post(webhooks, forged)
    value = webhooks.registry.get_sample_value(
        "outbox_receipts_rejected_total",
        {"provider": "ses", "reason": "sns_signature_invalid"},
    )
    assert 1.0 == value


async def test_forgeries_cannot_make_the_webhook_fetch_certificates(webhooks, sns):
    """The attack (issue 28, low): forty requests with a bad signature, each naming another
    certificate on the pinned host, made forty outbound fetches before the topic or the
    timestamp was looked at. Now a foreign topic or a stale timestamp fetches nothing, and a
    bad signature on a pinned topic fetches a few new certificates a minute at the most."""
    stand_in, signer, _ = sns
    garbage = "bm90IGEgc2lnbmF0dXJl"

    def forged(n: int, **changes: Any) -> dict[str, Any]:
        cert_url = f"{stand_in.base}/SimpleNotificationService-{n}.pem"
        return {**signer.message(cert_url=cert_url, **changes), "Signature": garbage}

    foreign = [
        await _post(webhooks, forged(n, topic="arn:aws:sns:eu-west-1:999999999999:other"))
        for n in range(20)
    ]
    stale = [
        await _post(webhooks, forged(n, timestamp=datetime.now(UTC) - timedelta(hours=2)))
        for n in range(20, 40)
    ]
    fetched_before_pinned = len(stand_in.requests)
    pinned = [await _post(webhooks, forged(n)) for n in range(40, 80)]

    assert {403} == {answer.status_code for answer in foreign + stale + pinned}
    assert 0 == fetched_before_pinned
    assert len(stand_in.requests) <= CERTIFICATE_FETCHES_PER_MINUTE


@pytest.mark.parametrize("path", ["/webhooks/ses", "/webhooks/brevo", "/webhooks/wasender"])
async def test_deep_json_from_anyone_is_a_400_not_a_500(webhooks, path):
    """The attack (issue 28, low): deeply nested JSON, without any credential, was a 500 and
    an error line on the webhook listener."""
    deep = b"[" * 50_000 + b"]" * 50_000

    answer = await webhooks.client.post(
        path, content=deep, headers={"content-type": "application/json"}
    )

    assert 400 == answer.status_code
