"""Providers built from OUTBOX_* variables deliver to their loopback stand-ins."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from moto.core import DEFAULT_ACCOUNT_ID
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.ses.models import ses_backends

from outbox.adapters.providers.ses.provider import ses_client
from outbox.domain.channels import Channel
from outbox.entrypoints.bootstrap.providers import build_providers, close_providers
from outbox.entrypoints.settings.tree import load_settings
from tests.fakes.clock import FixedClock
from tests.fakes.deliveries import EMAIL, PHONE, email_delivery, phone_delivery
from tests.integration.providers.http_stand_in import HttpStandIn
from tests.integration.providers.impersonations import BREVO_KEY, WASENDER_KEY, Brevo, Wasender
from tests.integration.providers.smtp_stand_in import PASSWORD, USERNAME, Behaviour, SmtpStandIn


@pytest.fixture
def brevo_server() -> Iterator[HttpStandIn]:
    """A local server playing Brevo."""
    server = HttpStandIn(Brevo())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def wasender_server() -> Iterator[HttpStandIn]:
    """A local server playing WasenderAPI."""
    server = HttpStandIn(Wasender())
    server.start()
    yield server
    server.stop()


async def test_smtp_brevo_sms_and_wasender_from_configuration_deliver(
    *,
    clock: FixedClock,
    ca: trustme.CA,
    server_tls: ssl.SSLContext,
    brevo_server: HttpStandIn,
    wasender_server: HttpStandIn,
    tmp_path: Path,
) -> None:
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    smtp = SmtpStandIn(Behaviour(), starttls=server_tls)
    smtp.start()
    settings = load_settings(
        {
            "OUTBOX_CHANNEL_EMAIL": "smtp",
            "OUTBOX_SMTP_HOST": "127.0.0.1",
            "OUTBOX_SMTP_PORT": str(smtp.port),
            "OUTBOX_SMTP_USERNAME": USERNAME,
            "OUTBOX_SMTP_PASSWORD": PASSWORD,
            "OUTBOX_SMTP_FROM": "Example <no-reply@example.org>",
            "OUTBOX_SMTP_CA_FILE": str(ca_file),
            "OUTBOX_CHANNEL_SMS": "brevo",
            "OUTBOX_BREVO_API_KEY": BREVO_KEY,
            "OUTBOX_BREVO_SMS_SENDER": "Example",
            "OUTBOX_BREVO_BASE_URL": f"{brevo_server.url}/v3",
            "OUTBOX_CHANNEL_WHATSAPP": "wasender",
            "OUTBOX_WASENDER_API_KEY": WASENDER_KEY,
            "OUTBOX_WASENDER_BASE_URL": f"{wasender_server.url}/api",
            "OUTBOX_PROVIDER_TIMEOUT_SECONDS": "2",
        },
        providers=True,
    )
    providers = build_providers(settings, clock=clock)
    try:
        await providers[Channel.EMAIL].send(email_delivery())
        await providers[Channel.SMS].send(phone_delivery(Channel.SMS))
        await providers[Channel.WHATSAPP].send(phone_delivery(Channel.WHATSAPP))
    finally:
        await close_providers(providers)
        smtp.stop()

    assert [EMAIL] == smtp.accepted[0].rcpt_tos
    assert "/v3/transactionalSMS/send" == brevo_server.received[0].path
    assert PHONE == wasender_server.received[0].body["to"]


async def test_ses_from_configuration_sends_through_moto(clock: FixedClock) -> None:
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    environ = {
        "OUTBOX_CHANNEL_EMAIL": "ses",
        "OUTBOX_SES_FROM": "Example <no-reply@example.net>",
        "OUTBOX_SES_REGION": "us-east-1",
        "OUTBOX_SES_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
    admin = ses_client(
        region="us-east-1",
        timeout=5,
        max_connections=1,
        endpoint_url=environ["OUTBOX_SES_ENDPOINT_URL"],
        access_key_id=environ["AWS_ACCESS_KEY_ID"],
        secret_access_key=environ["AWS_SECRET_ACCESS_KEY"],
    )
    admin.create_email_identity(EmailIdentity="example.net")
    providers = build_providers(load_settings(environ, providers=True), clock=clock)
    try:
        provider_id = await providers[Channel.EMAIL].send(email_delivery())
    finally:
        await close_providers(providers)
        admin.close()
        moto.stop()

    # The backends are the process's: other tests of this process may have sent through moto.
    sent_messages = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    [sent] = [message for message in sent_messages if message.id == provider_id]
    assert {"ToAddresses": [EMAIL]} == sent.destinations
