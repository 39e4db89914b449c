"""The provider clients of a sending process, built from the provider settings."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from datetime import timedelta
from typing import Protocol, TextIO

from outbox.adapters.providers.brevo.provider import BrevoProvider
from outbox.adapters.providers.console.provider import ConsoleProvider
from outbox.adapters.providers.rate_limit import LeakyBucketRateLimit
from outbox.adapters.providers.smtp.provider import SmtpProvider
from outbox.adapters.providers.wasender.provider import WasenderProvider
from outbox.application.delivery.ports import DeliveryProvider
from outbox.application.ports import Clock
from outbox.domain.channels import Channel
from outbox.entrypoints.settings.providers import ProviderSettings
from outbox.entrypoints.settings.reader import PREFIX, SettingsError
from outbox.entrypoints.settings.tree import Settings


class ClosableProvider(DeliveryProvider, Protocol):
    """A delivery provider holding clients, threads or connections until closed."""

    async def aclose(self) -> None:
        """Release what the provider holds; it is not used afterwards."""
        ...


def build_providers(
    settings: Settings,
    *,
    clock: Clock,
    timeout: timedelta | None = None,
    stream: TextIO | None = None,
) -> Mapping[Channel, ClosableProvider]:
    """Build one provider per configured channel (Brevo serves email and SMS with one client).

    ``timeout`` bounds each network step (default: OUTBOX_PROVIDER_TIMEOUT_SECONDS);
    ``stream`` is where the console provider prints (default: stdout). The settings must have
    been loaded with ``providers=True``. Close with ``close_providers``.
    """
    config = settings.providers
    if config is None:
        raise RuntimeError("the settings were loaded without the providers (providers=True)")
    seconds = (timeout or settings.worker.provider_timeout).total_seconds()
    # Every batch in flight sends up to `concurrency` messages at once: a send queued for a
    # connection would spend its timeout waiting and end INDETERMINATE without having left.
    security = settings.worker.security
    pool = security.concurrency * security.parallel_batches
    built: dict[str, ClosableProvider] = {}
    for name in set(config.channels.values()):
        built[name] = _build(name, config, clock=clock, seconds=seconds, pool=pool, stream=stream)
    return {channel: built[name] for channel, name in config.channels.items()}


def build_rate_limits(settings: Settings) -> dict[str, LeakyBucketRateLimit]:
    """One send quota per provider that has OUTBOX_<PROVIDER>_RATE_PER_SECOND set.

    Built inside the worker's event loop: a bucket belongs to the loop it first runs on.
    """
    rates = settings.providers.rate_per_second if settings.providers is not None else {}
    return {name: LeakyBucketRateLimit(rate) for name, rate in rates.items()}


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
        # boto3 alone takes a tenth of a second to import: only a process that sends through
        # SES pays for it (every outboxctl command imports this module).
        from outbox.adapters.providers.ses.provider import (  # noqa: PLC0415
            SesProvider,
            ses_client,
        )

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
