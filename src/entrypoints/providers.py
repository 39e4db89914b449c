"""Which provider serves each channel, with which credentials, read and checked at startup."""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from datetime import timedelta
from email.utils import parseaddr
from pathlib import Path
from typing import Protocol, TextIO

import attrs

from adapters.providers.brevo.provider import DEFAULT_BASE_URL as BREVO_BASE_URL
from adapters.providers.brevo.provider import BrevoProvider
from adapters.providers.console.provider import ConsoleProvider
from adapters.providers.ses.provider import SesProvider, ses_client
from adapters.providers.smtp.provider import SmtpProvider, SmtpSecurity
from adapters.providers.wasender.provider import DEFAULT_BASE_URL as WASENDER_BASE_URL
from adapters.providers.wasender.provider import WasenderProvider
from application.outbox.ports import DeliveryProvider
from application.ports import Clock
from domain.channels import Channel
from domain.destinations import is_email
from entrypoints.settings import PREFIX, Settings, SettingsError

NONE = "none"
CHOICES: Mapping[Channel, tuple[str, ...]] = {
    Channel.EMAIL: ("console", "smtp", "ses", "brevo"),
    Channel.SMS: ("console", "brevo"),
    Channel.WHATSAPP: ("console", "wasender"),
}
_SMTP_PORTS = {SmtpSecurity.STARTTLS: 587, SmtpSecurity.TLS: 465, SmtpSecurity.PLAIN: 25}
_SMS_SENDER = re.compile(r"[A-Za-z0-9]{1,11}|[0-9]{1,15}", re.ASCII)


class ClosableProvider(DeliveryProvider, Protocol):
    """A delivery provider holding clients, threads or connections until closed."""

    async def aclose(self) -> None:
        """Release what the provider holds; it is not used afterwards."""
        ...


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


def load_provider_settings(settings: Settings) -> ProviderSettings:
    """Read and check the provider variables; raises SettingsError naming the variable.

    In development every channel defaults to the console; in staging and production
    each OUTBOX_CHANNEL_* must be set (to a provider, or ``none``) and the console is
    refused, as are plain-HTTP provider URLs and SMTP passwords over plain SMTP.
    """
    read = _Reader(settings.environ, strict=not settings.is_development)
    channels = {
        channel: name
        for channel in Channel
        if (name := _channel_choice(read, channel, settings)) != NONE
    }
    used = set(channels.values())
    return ProviderSettings(
        channels=channels,
        smtp=_smtp(read) if "smtp" in used else None,
        ses=_ses(read) if "ses" in used else None,
        brevo=_brevo(read, channels) if "brevo" in used else None,
        wasender=_wasender(read) if "wasender" in used else None,
    )


def build_providers(
    settings: Settings,
    *,
    clock: Clock,
    timeout: timedelta | None = None,
    stream: TextIO | None = None,
) -> Mapping[Channel, ClosableProvider]:
    """Build one provider per configured channel (Brevo serves email and SMS with one client).

    ``timeout`` bounds each network step (default: OUTBOX_PROVIDER_TIMEOUT_SECONDS);
    ``stream`` is where the console provider prints (default: stdout). Raises
    SettingsError naming the first bad variable. Close with ``close_providers``.
    """
    config = load_provider_settings(settings)
    seconds = (timeout or settings.worker.provider_timeout).total_seconds()
    # Every lane sends up to `concurrency` messages at once: a send queued for a connection
    # would spend its timeout waiting and end INDETERMINATE without having left.
    pool = settings.worker.concurrency * settings.worker.lanes
    built: dict[str, ClosableProvider] = {}
    for name in set(config.channels.values()):
        built[name] = _build(name, config, clock=clock, seconds=seconds, pool=pool, stream=stream)
    return {channel: built[name] for channel, name in config.channels.items()}


async def close_providers(providers: Mapping[Channel, ClosableProvider]) -> None:
    """Close every distinct provider once, even when one of them fails to close."""
    distinct = list({id(provider): provider for provider in providers.values()}.values())
    errors: list[Exception] = []
    for provider in distinct:
        try:
            await provider.aclose()
        except Exception as error:  # noqa: BLE001 - the others must still be closed
            errors.append(error)
    if errors:
        raise errors[0]


def _build(
    name: str,
    config: ProviderSettings,
    *,
    clock: Clock,
    seconds: float,
    pool: int,
    stream: TextIO | None,
) -> ClosableProvider:
    if name == "smtp" and config.smtp is not None:
        smtp = config.smtp
        return SmtpProvider(
            host=smtp.host,
            port=smtp.port,
            sender=smtp.sender,
            clock=clock,
            timeout=seconds,
            security=smtp.security,
            username=smtp.username,
            password=smtp.password,
            tls_context=ssl.create_default_context(cafile=smtp.ca_file) if smtp.ca_file else None,
        )
    if name == "ses" and config.ses is not None:
        ses = config.ses
        client = ses_client(
            region=ses.region,
            timeout=seconds,
            max_connections=pool,
            endpoint_url=ses.endpoint_url,
            access_key_id=ses.access_key_id,
            secret_access_key=ses.secret_access_key,
            session_token=ses.session_token,
        )
        return SesProvider(
            client=client,
            sender=ses.sender,
            clock=clock,
            configuration_set=ses.configuration_set,
            max_workers=pool,
        )
    if name == "brevo" and config.brevo is not None:
        brevo = config.brevo
        return BrevoProvider(
            api_key=brevo.api_key,
            clock=clock,
            timeout=seconds,
            sender_email=brevo.sender_email,
            sender_name=brevo.sender_name,
            sms_sender=brevo.sms_sender,
            base_url=brevo.base_url,
            max_connections=pool,
        )
    if name == "wasender" and config.wasender is not None:
        wasender = config.wasender
        return WasenderProvider(
            api_key=wasender.api_key,
            clock=clock,
            timeout=seconds,
            base_url=wasender.base_url,
            max_connections=pool,
        )
    if name == "console":
        return ConsoleProvider(stream=stream)
    raise SettingsError(PREFIX + "CHANNEL_*", f"no configuration for provider {name!r}")


class _Reader:
    """Reads OUTBOX_* (and plain AWS_*) variables, naming the variable in every error."""

    def __init__(self, environ: Mapping[str, str], *, strict: bool) -> None:
        self._environ = environ
        self.strict = strict  # staging or production

    def raw(self, name: str) -> str | None:
        value = self._environ.get(name, "").strip()
        return value or None

    def optional(self, name: str) -> str | None:
        return self.raw(PREFIX + name)

    def required(self, name: str, why: str = "") -> str:
        value = self.optional(name)
        if value is None:
            raise SettingsError(PREFIX + name, f"required{why}")
        return value

    def url(self, name: str, default: str | None) -> str | None:
        value = self.optional(name)
        if value is None:
            return default
        if not value.startswith(("https://", "http://")):
            raise SettingsError(PREFIX + name, "expected an http(s):// URL")
        if self.strict and not value.startswith("https://"):
            raise SettingsError(PREFIX + name, "must be https:// outside development")
        return value.rstrip("/")

    def address(self, name: str, why: str = "") -> str:
        value = self.required(name, why)
        if not is_email(parseaddr(value)[1]):
            raise SettingsError(PREFIX + name, "expected an email address, e.g. Name <a@b.example>")
        return value


def _channel_choice(read: _Reader, channel: Channel, settings: Settings) -> str:
    name = f"CHANNEL_{channel.value.upper()}"
    choices = (*CHOICES[channel], NONE)
    value = (read.optional(name) or "").lower()
    if not value:
        if read.strict:
            raise SettingsError(
                PREFIX + name,
                f"required in {settings.environment.value} (one of {', '.join(choices)})",
            )
        value = "console"
    if value not in choices:
        raise SettingsError(PREFIX + name, f"expected one of {', '.join(choices)}, got {value!r}")
    if value == "console" and read.strict:
        raise SettingsError(PREFIX + name, "the console provider is for development only")
    return value


def _smtp(read: _Reader) -> SmtpConfig:
    security_text = (read.optional("SMTP_SECURITY") or SmtpSecurity.STARTTLS.value).lower()
    try:
        security = SmtpSecurity(security_text)
    except ValueError:
        raise SettingsError(
            PREFIX + "SMTP_SECURITY", f"expected starttls, tls or plain, got {security_text!r}"
        ) from None
    port_text = read.optional("SMTP_PORT")
    port = _SMTP_PORTS[security]
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise SettingsError(PREFIX + "SMTP_PORT", f"expected a port number, got {port_text!r}")
        port = int(port_text)
    username, password = read.optional("SMTP_USERNAME"), read.optional("SMTP_PASSWORD")
    if (username is None) != (password is None):
        missing = "SMTP_PASSWORD" if password is None else "SMTP_USERNAME"
        raise SettingsError(PREFIX + missing, "set both OUTBOX_SMTP_USERNAME and the password")
    if read.strict and username is not None and security is SmtpSecurity.PLAIN:
        raise SettingsError(
            PREFIX + "SMTP_SECURITY", "plain would send the SMTP password unencrypted"
        )
    ca_file = read.optional("SMTP_CA_FILE")
    if ca_file is not None and not Path(ca_file).is_file():
        raise SettingsError(PREFIX + "SMTP_CA_FILE", f"no such file: {ca_file}")
    return SmtpConfig(
        host=read.required("SMTP_HOST", " when a channel uses smtp"),
        port=port,
        security=security,
        sender=read.address("SMTP_FROM", " when a channel uses smtp"),
        username=username,
        password=password,
        ca_file=Path(ca_file) if ca_file else None,
    )


def _ses(read: _Reader) -> SesConfig:
    region = read.optional("SES_REGION") or read.raw("AWS_REGION") or read.raw("AWS_DEFAULT_REGION")
    if region is None:
        raise SettingsError(PREFIX + "SES_REGION", "required (or AWS_REGION) when email uses ses")
    access_key_id, secret = read.raw("AWS_ACCESS_KEY_ID"), read.raw("AWS_SECRET_ACCESS_KEY")
    if (access_key_id is None) != (secret is None):
        missing = "AWS_SECRET_ACCESS_KEY" if secret is None else "AWS_ACCESS_KEY_ID"
        raise SettingsError(missing, "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    return SesConfig(
        region=region,
        sender=read.address("SES_FROM", " when email uses ses"),
        endpoint_url=read.url("SES_ENDPOINT_URL", None),
        configuration_set=read.optional("SES_CONFIGURATION_SET"),
        access_key_id=access_key_id,
        secret_access_key=secret,
        session_token=read.raw("AWS_SESSION_TOKEN"),
    )


def _brevo(read: _Reader, channels: Mapping[Channel, str]) -> BrevoConfig:
    sender_email = sms_sender = None
    if channels.get(Channel.EMAIL) == "brevo":
        sender_email = parseaddr(read.address("BREVO_SENDER_EMAIL", " when email uses brevo"))[1]
    if channels.get(Channel.SMS) == "brevo":
        sms_sender = read.required("BREVO_SMS_SENDER", " when sms uses brevo")
        if not _SMS_SENDER.fullmatch(sms_sender):
            raise SettingsError(
                PREFIX + "BREVO_SMS_SENDER", "expected up to 11 letters/digits or 15 digits"
            )
    return BrevoConfig(
        api_key=read.required("BREVO_API_KEY", " when a channel uses brevo"),
        base_url=read.url("BREVO_BASE_URL", BREVO_BASE_URL) or BREVO_BASE_URL,
        sender_email=sender_email,
        sender_name=read.optional("BREVO_SENDER_NAME"),
        sms_sender=sms_sender,
    )


def _wasender(read: _Reader) -> WasenderConfig:
    return WasenderConfig(
        api_key=read.required("WASENDER_API_KEY", " when whatsapp uses wasender"),
        base_url=read.url("WASENDER_BASE_URL", WASENDER_BASE_URL) or WASENDER_BASE_URL,
    )
