"""Deliveries for provider tests, each carrying a one-time code that must never leak."""

from __future__ import annotations

from uuid import UUID

from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery, RenderedMessage
from outbox.domain.channels import Channel

CODE = "493817"
MESSAGE_ID = UUID("01890a5d-ac96-774b-bcce-b302099a8057")
EMAIL = "alice.liddell@example.com"
PHONE = "+34612345678"


def email_delivery(
    *, destination: str = EMAIL, html: bool = True, message_id: UUID = MESSAGE_ID
) -> Delivery:
    """A sign-up code by email, with an HTML part unless ``html`` is False."""
    return Delivery(
        message_id=message_id,
        channel=Channel.EMAIL,
        destination=destination,
        content=RenderedMessage(
            subject="Your verification code",
            text=f"Your code is {CODE}. It expires in 10 minutes.",
            html=f"<p>Your code is <strong>{CODE}</strong>.</p>" if html else None,
        ),
    )


def phone_delivery(
    channel: Channel, *, destination: str = PHONE, message_id: UUID = MESSAGE_ID
) -> Delivery:
    """A sign-up code by SMS or WhatsApp."""
    return Delivery(
        message_id=message_id,
        channel=channel,
        destination=destination,
        content=RenderedMessage(subject="", text=f"Your code is {CODE}"),
    )


def leaks(failed: DeliveryFailed, *secrets: str) -> list[str]:
    """The secrets found in the error's str or repr, or in an exception chained to it."""
    shown = [str(failed), repr(failed)]
    if failed.__cause__ is not None or not failed.__suppress_context__:
        shown.append(repr(failed.__cause__ or failed.__context__))
    return [secret for secret in secrets if any(secret in text for text in shown)]
