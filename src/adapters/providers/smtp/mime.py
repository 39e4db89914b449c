"""The MIME message the SMTP provider sends: a text part and an optional HTML alternative."""

from __future__ import annotations

import email.policy
from datetime import datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

from outbox.application.delivery.ports import Delivery


def sender_address(sender: str) -> Address:
    """The address part of a From value (``Name <user@example.com>`` or a bare address).

    Raises ValueError when ``sender`` holds no usable address.
    """
    _, address = parseaddr(sender)
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain or any(c.isspace() for c in address):
        raise ValueError("the sender must contain an address like user@example.com")
    return Address(addr_spec=address)


def message_id_header(delivery: Delivery, domain: str) -> str:
    """A Message-ID derived from the outbox message id, so a resend keeps the same one."""
    return f"<{delivery.message_id}@{domain}>"


def build_message(*, delivery: Delivery, sender: str, domain: str, now: datetime) -> bytes:
    """Build the RFC 5322 message; raises ValueError for a header that cannot be encoded.

    Both parts are quoted-printable UTF-8, so the message is 7-bit clean and needs no
    8BITMIME or SMTPUTF8 from the server.
    """
    content = delivery.content
    message = EmailMessage(policy=email.policy.SMTP)
    message["From"] = sender
    message["To"] = delivery.destination
    message["Subject"] = content.subject
    message["Date"] = format_datetime(now)
    message["Message-ID"] = message_id_header(delivery, domain)
    message.set_content(content.text, cte="quoted-printable")
    if content.html is not None:
        message.add_alternative(content.html, subtype="html", cte="quoted-printable")
    return message.as_bytes()
