"""The MIME message the SMTP provider builds."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage

import pytest

from outbox.adapters.providers.smtp.mime import build_message, sender_address
from outbox.application.delivery.ports import Delivery, RenderedMessage
from outbox.domain.channels import Channel
from tests.fakes.clock import EPOCH
from tests.fakes.deliveries import MESSAGE_ID, email_delivery


def _parse(raw: bytes) -> EmailMessage:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


def test_the_message_is_seven_bit_clean_even_with_non_ascii_text() -> None:
    delivery = Delivery(
        message_id=MESSAGE_ID,
        channel=Channel.EMAIL,
        destination="bob@example.com",
        content=RenderedMessage(subject="Código de verificación", text="Tu código: 493817 ✓"),
    )

    raw = build_message(
        delivery=delivery, sender="no-reply@example.org", domain="example.org", now=EPOCH
    )

    assert raw.isascii()
    message = _parse(raw)
    assert "Código de verificación" == message["Subject"]
    assert "Tu código: 493817 ✓\n" == message.get_content().replace("\r\n", "\n")


def test_the_message_id_is_derived_from_the_outbox_id() -> None:
    raw = build_message(
        delivery=email_delivery(),
        sender="no-reply@example.org",
        domain="mail.example.org",
        now=EPOCH,
    )

    assert f"<{MESSAGE_ID}@mail.example.org>" == _parse(raw)["Message-ID"]


def test_a_subject_with_a_line_break_cannot_inject_headers() -> None:
    delivery = Delivery(
        message_id=MESSAGE_ID,
        channel=Channel.EMAIL,
        destination="bob@example.com",
        content=RenderedMessage(subject="Hi\r\nBcc: eve@example.com", text="x"),
    )

    with pytest.raises(ValueError, match="linefeed"):
        build_message(
            delivery=delivery, sender="no-reply@example.org", domain="example.org", now=EPOCH
        )


@pytest.mark.parametrize("sender", ["Example <no-reply@example.org>", "no-reply@example.org"])
def test_the_envelope_sender_is_the_address_of_the_from_value(sender: str) -> None:
    address = sender_address(sender)

    assert ("no-reply@example.org", "example.org") == (address.addr_spec, address.domain)


@pytest.mark.parametrize("sender", ["", "Example", "no-reply@", "@example.org", "a b@example.org"])
def test_a_sender_without_an_address_is_refused(sender: str) -> None:
    with pytest.raises(ValueError, match="address"):
        sender_address(sender)
