"""The webhook listener's settings: where it listens, and what each provider must present.

Providers must reach this listener, so it has its own address (never the admin one). A
provider whose credential is unset has no route that accepts anything: SES needs at least
one pinned topic ARN, Brevo its token, Wasender its secret.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import attrs

from outbox.entrypoints.settings.reader import EnvironmentReader

DEFAULT_SNS_CERTIFICATE_HOST = "sns.*.amazonaws.com"
_ARN = "arn:aws:sns:"


@attrs.frozen(kw_only=True)
class WebhookSettings:
    """The webhook listener."""

    host: str
    port: int
    sns_topic_arns: tuple[str, ...]  # the only topics whose messages are believed
    sns_certificate_host: str  # signing certificates and SubscribeURLs only from here
    sns_ca_file: Path | None  # a CA bundle for fetching them (default: the system's)
    sns_max_age: timedelta  # an SNS message older than this is a replay
    brevo_token: str | None = attrs.field(repr=False)
    wasender_secret: str | None = attrs.field(repr=False)


def read_webhook_settings(read: EnvironmentReader) -> WebhookSettings:
    """The webhook settings from ``OUTBOX_WEBHOOK_*``, ``OUTBOX_SNS_*``, Brevo's and Wasender's."""
    arns = tuple(
        part.strip() for part in (read.raw("SNS_TOPIC_ARNS") or "").split(",") if part.strip()
    )
    for arn in arns:
        if not arn.startswith(_ARN):
            read.refuse("SNS_TOPIC_ARNS", f"expected comma-separated {_ARN}... ARNs", None)
            break
    host = read.text("SNS_CERT_HOST", DEFAULT_SNS_CERTIFICATE_HOST).lower()
    if not all(label and all(c.isalnum() or c in "-*" for c in label) for label in host.split(".")):
        read.refuse("SNS_CERT_HOST", "expected a host name, * standing for one label", None)
    return WebhookSettings(
        host=read.text("WEBHOOK_HOST", "127.0.0.1"),
        port=read.port("WEBHOOK_PORT", 8002, allow_zero=True),
        sns_topic_arns=arns,
        sns_certificate_host=host,
        sns_ca_file=read.existing_file("SNS_CA_FILE"),
        sns_max_age=read.seconds("SNS_MAX_AGE_SECONDS", 3600, minimum=60),
        brevo_token=read.raw("BREVO_WEBHOOK_TOKEN"),
        wasender_secret=read.raw("WASENDER_WEBHOOK_SECRET"),
    )
