"""The providers this package sends through, per channel: the names a pause may name."""

from __future__ import annotations

from collections.abc import Mapping

from outbox.domain.channels import Channel

CONSOLE = "console"  # writes what it would send to the log (development only)
PROVIDERS_BY_CHANNEL: Mapping[Channel, tuple[str, ...]] = {
    Channel.EMAIL: (CONSOLE, "smtp", "ses", "brevo"),
    Channel.SMS: (CONSOLE, "brevo"),
    Channel.WHATSAPP: (CONSOLE, "wasender"),
}
PROVIDER_NAMES = frozenset(name for names in PROVIDERS_BY_CHANNEL.values() for name in names)
