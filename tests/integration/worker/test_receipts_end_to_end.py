"""Receipts end to end, every piece a real process or server: ``outboxctl worker`` sends
through SES (moto), SNS posts a signed Permanent bounce to ``outboxctl serve``'s webhook
listener, the next code to that address is dead-lettered ``suppressed`` without reaching
SES, ``outboxctl suppressions lift`` lifts it, and the next one is sent."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.ses.models import ses_backends

from outbox.adapters.providers.ses.provider import ses_client
from tests.integration.providers.network import free_port
from tests.integration.receipts.sns_world import TOPIC, Signer, SnsStandIn, ses_event, sns_world
from tests.integration.worker.conftest import Enqueue
from tests.outboxctl import outboxctl_environment

pytestmark = pytest.mark.integration

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))
REGION = "us-east-1"
GONE = "gone@example.com"
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}


@pytest.fixture
def moto_url() -> Iterator[str]:
    """moto's SES on a loopback port, with the sender's domain verified."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    admin = ses_client(
        region=REGION,
        timeout=5,
        max_connections=1,
        endpoint_url=url,
        access_key_id=AWS["AWS_ACCESS_KEY_ID"],
        secret_access_key=AWS["AWS_SECRET_ACCESS_KEY"],
    )
    admin.create_email_identity(EmailIdentity="outbox.test")
    admin.close()
    yield url
    server.stop()


def _sent_to(address: str) -> int:
    """How many messages SES (moto) accepted for ``address``."""
    sent = ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages
    return sum(1 for m in sent if address in (m.destinations or {}).get("ToAddresses", []))


async def _rows(database_url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        return await (await conn.execute(query, params)).fetchall()  # type: ignore[arg-type]


def _drain(env: dict[str, str]) -> None:
    result = subprocess.run(
        [OUTBOXCTL, "worker", "--drain"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == result.returncode, result.stderr[-2000:]


async def _wait_for_webhooks(url: str, within: float = 30) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient() as client:
        while True:
            try:
                await client.post(url, content=b"{}")
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    pytest.fail("the webhook listener never answered")
                await asyncio.sleep(0.1)
            else:
                return


async def test_a_bounce_suppresses_the_next_code_until_lifted(
    database_url: str,
    worker_env: dict[str, str],
    enqueue: Enqueue,
    moto_url: str,
    tmp_path: Path,
) -> None:
    with sns_world(tmp_path) as (stand_in, signer, ca_file):
        await _run(database_url, worker_env, enqueue, moto_url, stand_in, signer, ca_file)


async def _run(  # noqa: PLR0917 - one scenario, its parts passed down
    database_url: str,
    worker_env: dict[str, str],
    enqueue: Enqueue,
    moto_url: str,
    stand_in: SnsStandIn,
    signer: Signer,
    ca_file: Path,
) -> None:
    webhook_port = free_port()
    env = {
        **outboxctl_environment({}),
        **worker_env,
        **AWS,
        "OUTBOX_CHANNEL_EMAIL": "ses",
        "OUTBOX_SES_FROM": "Outbox <no-reply@outbox.test>",
        "OUTBOX_SES_REGION": REGION,
        "OUTBOX_SES_ENDPOINT_URL": moto_url,
        "OUTBOX_API_DB_ROLE": "identity_service",
        "OUTBOX_HTTP_PORT": str(free_port()),
        "OUTBOX_ADMIN_PORT": str(free_port()),
        "OUTBOX_WEBHOOK_PORT": str(webhook_port),
        "OUTBOX_SNS_TOPIC_ARNS": TOPIC,
        "OUTBOX_SNS_CERT_HOST": "localhost",
        "OUTBOX_SNS_CA_FILE": str(ca_file),
    }
    serve = subprocess.Popen(  # noqa: ASYNC220 - a long-lived server beside the test
        [OUTBOXCTL, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    webhook = f"http://127.0.0.1:{webhook_port}/webhooks/ses"
    try:
        await _wait_for_webhooks(webhook)

        # 1. Sent through SES, which names it by its MessageId.
        [first] = await enqueue(1, destination=GONE)
        await asyncio.to_thread(_drain, env)
        [(ses_id,)] = await _rows(
            database_url,
            "SELECT provider_message_id FROM outbox.attempts WHERE message_id = %s"
            " AND outcome = 'published' AND provider = 'ses'",
            first,
        )
        assert 1 == _sent_to(GONE)

        # 2. SES bounces it, through SNS, to the webhook listener.
        bounce = signer.message(
            message=ses_event("Bounce", ses_id, bounceType="Permanent", bounceSubType="General")
        )
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                webhook,
                content=json.dumps(bounce).encode(),
                headers={"content-type": "text/plain; charset=UTF-8"},
            )
        assert 200 == answer.status_code, answer.text
        assert [("bounced",)] == await _rows(
            database_url, "SELECT state FROM outbox.delivery_states WHERE message_id = %s", first
        )

        # 3. The next code to that address is dead-lettered, and SES never hears of it.
        [second] = await enqueue(1, destination=GONE)
        await asyncio.to_thread(_drain, env)
        assert [("dead_lettered", "suppressed")] == await _rows(
            database_url,
            "SELECT state, dead_letter_reason FROM outbox.messages WHERE id = %s",
            second,
        )
        assert 1 == _sent_to(GONE)

        # 4. Lifted by the database operator; the next one is sent.
        lifted = await asyncio.to_thread(
            subprocess.run,
            [OUTBOXCTL, "suppressions", "lift", GONE, "--reason", "mailbox restored"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert 0 == lifted.returncode, lifted.stderr[-2000:]
        [third] = await enqueue(1, destination=GONE)
        await asyncio.to_thread(_drain, env)
        assert [("published",)] == await _rows(
            database_url, "SELECT state FROM outbox.messages WHERE id = %s", third
        )
        assert 2 == _sent_to(GONE)
        assert stand_in.requests  # the certificate came from the pinned stand-in
    finally:
        serve.terminate()
        _, stderr = await asyncio.to_thread(serve.communicate, timeout=30)
    assert 0 == serve.returncode, stderr.decode()[-2000:]
