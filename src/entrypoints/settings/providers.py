"""Which provider serves each channel, with which credentials (``OUTBOX_CHANNEL_*`` and the rest).

Only processes that send read the credentials (the worker, ``outboxctl up``): a migration or an
operator command needs none. Every process reads the channel map itself
(``read_channel_routes``), so the admin listener and ``outboxctl`` know which channels have a
provider.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from email.utils import parseaddr
from pathlib import Path

import attrs

from outbox.adapters.providers.brevo.provider import DEFAULT_BASE_URL as BREVO_BASE_URL
from outbox.adapters.providers.smtp.provider import SmtpSecurity
from outbox.adapters.providers.wasender.provider import DEFAULT_BASE_URL as WASENDER_BASE_URL
from outbox.domain.channels import Channel
from outbox.domain.delivery.providers import CONSOLE, PROVIDERS_BY_CHANNEL
from outbox.entrypoints.settings.reader import PREFIX, EnvironmentReader, SettingsError

NONE = "none"
CHOICES = PROVIDERS_BY_CHANNEL
_SMTP_PORTS = {SmtpSecurity.STARTTLS: 587, SmtpSecurity.TLS: 465, SmtpSecurity.PLAIN: 25}
_SMS_SENDER = re.compile(r"[A-Za-z0-9]{1,11}|[0-9]{1,15}", re.ASCII)


@attrs.frozen(kw_only=True)
class SmtpConfig:
    """OUTBOX_SMTP_*."""

    host: str
    port: int
    security: SmtpSecurity
    sender: str
    username: str | None
    password: str | None = attrs.field(repr=False)
    ca_file: Path | None


@attrs.frozen(kw_only=True)
class SesConfig:
    """OUTBOX_SES_*, plus AWS_* credentials when the environment gives them."""

    region: str
    sender: str
    endpoint_url: str | None
    configuration_set: str | None
    access_key_id: str | None = attrs.field(repr=False)
    secret_access_key: str | None = attrs.field(repr=False)
    session_token: str | None = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class BrevoConfig:
    """OUTBOX_BREVO_*."""

    api_key: str = attrs.field(repr=False)
    base_url: str
    sender_email: str | None
    sender_name: str | None
    sms_sender: str | None


@attrs.frozen(kw_only=True)
class WasenderConfig:
    """OUTBOX_WASENDER_*."""

    api_key: str = attrs.field(repr=False)
    base_url: str


@attrs.frozen(kw_only=True)
class ProviderSettings:
    """The channel → provider map and the configuration of each provider in use."""

    channels: Mapping[Channel, str]  # channels set to "none" are absent
    smtp: SmtpConfig | None = None
    ses: SesConfig | None = None
    brevo: BrevoConfig | None = None
    wasender: WasenderConfig | None = None
    # OUTBOX_<PROVIDER>_RATE_PER_SECOND of each provider in use that has a quota.
    rate_per_second: Mapping[str, float] = attrs.field(factory=dict)


def read_provider_settings(read: EnvironmentReader, environment: str) -> ProviderSettings:
    """Read and check the provider variables; raises SettingsError naming the variable.

    In development every channel defaults to the console; in staging and production
    (``read.strict``) each OUTBOX_CHANNEL_* must be set (to a provider, or ``none``) and the
    console is refused, as are plain-HTTP provider URLs and SMTP passwords over plain SMTP.
    """
    channels = {
        channel: name
        for channel in Channel
        if (name := _channel_choice(read, channel, environment)) != NONE
    }
    used = set(channels.values())
    return ProviderSettings(
        channels=channels,
        # Each provider's group is checked on its own, so a bad one does not hide the next.
        smtp=read.section(lambda: _smtp(read), None) if "smtp" in used else None,
        ses=read.section(lambda: _ses(read), None) if "ses" in used else None,
        brevo=read.section(lambda: _brevo(read, channels), None) if "brevo" in used else None,
        wasender=read.section(lambda: _wasender(read), None) if "wasender" in used else None,
        rate_per_second=_rates(read, used),
    )


def read_channel_routes(read: EnvironmentReader, environment: str) -> dict[Channel, str | None]:
    """Which provider sends each channel (None: ``none``), as OUTBOX_CHANNEL_* say, checked as
    the worker checks them; no credential is read.

    In development an unset channel is the console's, as for the worker. In staging and
    production an unset channel is left out: a process that does not send need not be told,
    and then refuses nothing on that channel's account.
    """
    routes: dict[Channel, str | None] = {}
    for channel in Channel:
        if read.strict and not read.raw(f"CHANNEL_{channel.value.upper()}"):
            continue
        name = _channel_choice(read, channel, environment)
        routes[channel] = None if name == NONE else name
    return routes


def _rates(read: EnvironmentReader, used: set[str]) -> dict[str, float]:
    """Each provider's send quota, when set: unset means as fast as the worker sends."""
    rates = {
        name: read.parse(
            f"{name.upper()}_RATE_PER_SECOND", None, _rate, "a positive number of sends per second"
        )
        for name in sorted(used)
    }
    return {name: rate for name, rate in rates.items() if rate is not None}


def _rate(value: str) -> float:
    rate = float(value)
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(value)
    return rate


def _channel_choice(read: EnvironmentReader, channel: Channel, environment: str) -> str:
    name = f"CHANNEL_{channel.value.upper()}"
    choices = (*CHOICES[channel], NONE)
    value = (read.raw(name) or "").lower()
    if not value:
        if read.strict:
            problem = f"required in {environment} (one of {', '.join(choices)})"
            return read.refuse(name, problem, NONE)
        value = CONSOLE
    if value not in choices:
        problem = f"expected one of {', '.join(choices)}, got {read.shown(name, value)}"
        return read.refuse(name, problem, NONE)
    if value == CONSOLE and read.strict:
        return read.refuse(name, "the console provider is for development only", NONE)
    return value


def _smtp(read: EnvironmentReader) -> SmtpConfig:
    security = read.choice("SMTP_SECURITY", SmtpSecurity.STARTTLS, SmtpSecurity)
    username, password = read.raw("SMTP_USERNAME"), read.raw("SMTP_PASSWORD")
    if (username is None) != (password is None):
        missing = "SMTP_PASSWORD" if password is None else "SMTP_USERNAME"
        read.refuse(missing, "set both OUTBOX_SMTP_USERNAME and the password", None)
    if read.strict and username is not None and security is SmtpSecurity.PLAIN:
        read.refuse("SMTP_SECURITY", "plain would send the SMTP password unencrypted", None)
    return SmtpConfig(
        host=read.required("SMTP_HOST", " when a channel uses smtp"),
        port=read.port("SMTP_PORT", _SMTP_PORTS[security]),
        security=security,
        sender=read.address("SMTP_FROM", " when a channel uses smtp"),
        username=username,
        password=password,
        ca_file=read.existing_file("SMTP_CA_FILE"),
    )


def _ses(read: EnvironmentReader) -> SesConfig:
    region = (
        read.raw("SES_REGION") or read.foreign("AWS_REGION") or read.foreign("AWS_DEFAULT_REGION")
    )
    if region is None:
        raise SettingsError(PREFIX + "SES_REGION", "required (or AWS_REGION) when email uses ses")
    access_key_id, secret = read.foreign("AWS_ACCESS_KEY_ID"), read.foreign("AWS_SECRET_ACCESS_KEY")
    if (access_key_id is None) != (secret is None):
        missing = "AWS_SECRET_ACCESS_KEY" if secret is None else "AWS_ACCESS_KEY_ID"
        read.refuse_variable(missing, "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", None)
    return SesConfig(
        region=region,
        sender=read.address("SES_FROM", " when email uses ses"),
        endpoint_url=read.url("SES_ENDPOINT_URL", https_only=True),
        configuration_set=read.raw("SES_CONFIGURATION_SET"),
        access_key_id=access_key_id,
        secret_access_key=secret,
        session_token=read.foreign("AWS_SESSION_TOKEN"),
    )


def _brevo(read: EnvironmentReader, channels: Mapping[Channel, str]) -> BrevoConfig:
    sender_email = sms_sender = None
    if channels.get(Channel.EMAIL) == "brevo":
        sender_email = parseaddr(read.address("BREVO_SENDER_EMAIL", " when email uses brevo"))[1]
    if channels.get(Channel.SMS) == "brevo":
        sms_sender = read.required("BREVO_SMS_SENDER", " when sms uses brevo")
        if sms_sender and not _SMS_SENDER.fullmatch(sms_sender):
            raise SettingsError(
                PREFIX + "BREVO_SMS_SENDER", "expected up to 11 letters/digits or 15 digits"
            )
    return BrevoConfig(
        api_key=read.required("BREVO_API_KEY", " when a channel uses brevo"),
        base_url=read.url("BREVO_BASE_URL", https_only=True) or BREVO_BASE_URL,
        sender_email=sender_email,
        sender_name=read.raw("BREVO_SENDER_NAME"),
        sms_sender=sms_sender,
    )


def _wasender(read: EnvironmentReader) -> WasenderConfig:
    return WasenderConfig(
        api_key=read.required("WASENDER_API_KEY", " when whatsapp uses wasender"),
        base_url=read.url("WASENDER_BASE_URL", https_only=True) or WASENDER_BASE_URL,
    )
