"""The channel → provider map and provider credentials, read and checked at startup."""

from __future__ import annotations

import io

import pytest

from outbox.adapters.providers.brevo.provider import BrevoProvider
from outbox.adapters.providers.console.provider import ConsoleProvider
from outbox.adapters.providers.ses.provider import SesProvider
from outbox.adapters.providers.smtp.provider import SmtpProvider, SmtpSecurity
from outbox.adapters.providers.wasender.provider import WasenderProvider
from outbox.domain.channels import Channel
from outbox.entrypoints.bootstrap.providers import build_providers, close_providers
from outbox.entrypoints.settings.providers import ProviderSettings
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import Settings, load_settings
from tests.fakes.clock import FixedClock
from tests.fakes.deliveries import CODE, phone_delivery

SMTP = {
    "OUTBOX_CHANNEL_EMAIL": "smtp",
    "OUTBOX_SMTP_HOST": "smtp.example.org",
    "OUTBOX_SMTP_FROM": "Example <no-reply@example.org>",
}
PRODUCTION = {
    "OUTBOX_ENV": "production",
    "OUTBOX_CHANNEL_SMS": "none",
    "OUTBOX_CHANNEL_WHATSAPP": "none",
}


def _settings(**environ: str) -> Settings:
    return load_settings(environ, providers=True)


def load_provider_settings(settings: Settings) -> ProviderSettings:
    """The provider part of the settings tree (read because ``_settings`` asks for it)."""
    assert settings.providers is not None
    return settings.providers


def _error(environ: dict[str, str]) -> SettingsError:
    with pytest.raises(SettingsError) as raised:
        load_settings(environ, providers=True)
    return raised.value


async def test_development_sends_every_channel_to_the_console() -> None:
    stream = io.StringIO()
    providers = build_providers(_settings(), clock=FixedClock(), stream=stream)

    await providers[Channel.WHATSAPP].send(phone_delivery(Channel.WHATSAPP))
    await close_providers(providers)

    assert set(Channel) == set(providers)
    assert all(isinstance(provider, ConsoleProvider) for provider in providers.values())
    assert CODE in stream.getvalue()


@pytest.mark.parametrize("variable", ["OUTBOX_CHANNEL_EMAIL", "OUTBOX_CHANNEL_SMS"])
def test_staging_and_production_require_every_channel_to_be_chosen(variable: str) -> None:
    environ = {
        "OUTBOX_ENV": "staging",
        **SMTP,
        "OUTBOX_CHANNEL_SMS": "none",
        "OUTBOX_CHANNEL_WHATSAPP": "none",
    }
    del environ[variable]

    error = _error(environ)

    assert variable == error.variable
    assert "required in staging" in error.problem


def test_the_console_is_refused_outside_development() -> None:
    error = _error({**PRODUCTION, "OUTBOX_CHANNEL_EMAIL": "console"})

    assert ("OUTBOX_CHANNEL_EMAIL", "the console provider is for development only") == (
        error.variable,
        error.problem,
    )


def test_a_channel_set_to_none_has_no_provider() -> None:
    providers = build_providers(_settings(**PRODUCTION, **SMTP), clock=FixedClock())

    assert [Channel.EMAIL] == list(providers)
    assert isinstance(providers[Channel.EMAIL], SmtpProvider)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OUTBOX_CHANNEL_SMS", "ses"),
        ("OUTBOX_CHANNEL_WHATSAPP", "brevo"),
        ("OUTBOX_CHANNEL_EMAIL", "mailgun"),
    ],
)
def test_a_provider_the_channel_cannot_use_is_refused(variable: str, value: str) -> None:
    error = _error({variable: value})

    assert variable == error.variable
    assert repr(value) in error.problem


def test_smtp_defaults_to_starttls_on_587() -> None:
    config = load_provider_settings(_settings(**SMTP)).smtp

    assert config is not None
    assert (SmtpSecurity.STARTTLS, 587, None) == (config.security, config.port, config.username)


@pytest.mark.parametrize(("security", "port"), [("tls", 465), ("plain", 25)])
def test_smtp_port_follows_the_security(security: str, port: int) -> None:
    config = load_provider_settings(_settings(**SMTP, OUTBOX_SMTP_SECURITY=security)).smtp

    assert config is not None
    assert port == config.port


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"OUTBOX_SMTP_HOST": ""}, "OUTBOX_SMTP_HOST"),
        ({"OUTBOX_SMTP_FROM": ""}, "OUTBOX_SMTP_FROM"),
        ({"OUTBOX_SMTP_FROM": "Example"}, "OUTBOX_SMTP_FROM"),
        ({"OUTBOX_SMTP_PORT": "99999"}, "OUTBOX_SMTP_PORT"),
        ({"OUTBOX_SMTP_SECURITY": "ssl3"}, "OUTBOX_SMTP_SECURITY"),
        ({"OUTBOX_SMTP_USERNAME": "outbox"}, "OUTBOX_SMTP_PASSWORD"),
        ({"OUTBOX_SMTP_PASSWORD": "pw"}, "OUTBOX_SMTP_USERNAME"),
        ({"OUTBOX_SMTP_CA_FILE": "/nonexistent/ca.pem"}, "OUTBOX_SMTP_CA_FILE"),
    ],
)
def test_bad_smtp_settings_name_the_variable(environ: dict[str, str], variable: str) -> None:
    assert variable == _error({**SMTP, **environ}).variable


def test_an_smtp_password_over_plain_smtp_is_refused_in_production() -> None:
    error = _error(
        {
            **PRODUCTION,
            **SMTP,
            "OUTBOX_SMTP_SECURITY": "plain",
            "OUTBOX_SMTP_USERNAME": "outbox",
            "OUTBOX_SMTP_PASSWORD": "pw",
        }
    )

    assert "OUTBOX_SMTP_SECURITY" == error.variable


async def test_ses_takes_its_region_and_credentials_from_the_aws_variables() -> None:
    settings = _settings(
        OUTBOX_CHANNEL_EMAIL="ses",
        OUTBOX_SES_FROM="no-reply@example.org",
        AWS_REGION="eu-west-1",
        AWS_ACCESS_KEY_ID="AKIAEXAMPLE",
        AWS_SECRET_ACCESS_KEY="secret-example",
    )
    config = load_provider_settings(settings).ses
    providers = build_providers(settings, clock=FixedClock())
    await close_providers(providers)

    assert config is not None
    assert ("eu-west-1", "AKIAEXAMPLE") == (config.region, config.access_key_id)
    assert "secret-example" not in repr(config)
    assert isinstance(providers[Channel.EMAIL], SesProvider)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({}, "OUTBOX_SES_REGION"),
        ({"AWS_REGION": "eu-west-1", "OUTBOX_SES_FROM": ""}, "OUTBOX_SES_FROM"),
        ({"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIA"}, "AWS_SECRET_ACCESS_KEY"),
        (
            {"AWS_REGION": "eu-west-1", "OUTBOX_SES_ENDPOINT_URL": "localhost:5000"},
            "OUTBOX_SES_ENDPOINT_URL",
        ),
    ],
)
def test_bad_ses_settings_name_the_variable(environ: dict[str, str], variable: str) -> None:
    base = {"OUTBOX_CHANNEL_EMAIL": "ses", "OUTBOX_SES_FROM": "no-reply@example.org"}

    assert variable == _error({**base, **environ}).variable


def test_provider_urls_must_be_https_outside_development() -> None:
    error = _error(
        {
            **PRODUCTION,
            "OUTBOX_CHANNEL_EMAIL": "ses",
            "OUTBOX_SES_FROM": "no-reply@example.org",
            "OUTBOX_SES_REGION": "eu-west-1",
            "OUTBOX_SES_ENDPOINT_URL": "http://ses.internal",
        }
    )

    assert ("OUTBOX_SES_ENDPOINT_URL", "must be https:// outside development") == (
        error.variable,
        error.problem,
    )


async def test_brevo_serves_email_and_sms_with_one_client() -> None:
    settings = _settings(
        OUTBOX_CHANNEL_EMAIL="brevo",
        OUTBOX_CHANNEL_SMS="brevo",
        OUTBOX_BREVO_API_KEY="xkeysib-secret",
        OUTBOX_BREVO_SENDER_EMAIL="Example <no-reply@example.org>",
        OUTBOX_BREVO_SMS_SENDER="Example",
    )
    providers = build_providers(settings, clock=FixedClock())
    await close_providers(providers)
    config = load_provider_settings(settings).brevo

    assert isinstance(providers[Channel.EMAIL], BrevoProvider)
    assert providers[Channel.EMAIL] is providers[Channel.SMS]
    assert isinstance(providers[Channel.WHATSAPP], ConsoleProvider)
    assert config is not None
    assert "no-reply@example.org" == config.sender_email
    assert "xkeysib-secret" not in repr(config)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        (
            {"OUTBOX_CHANNEL_SMS": "brevo", "OUTBOX_BREVO_SMS_SENDER": "Example"},
            "OUTBOX_BREVO_API_KEY",
        ),
        ({"OUTBOX_CHANNEL_SMS": "brevo", "OUTBOX_BREVO_API_KEY": "k"}, "OUTBOX_BREVO_SMS_SENDER"),
        (
            {
                "OUTBOX_CHANNEL_SMS": "brevo",
                "OUTBOX_BREVO_API_KEY": "k",
                "OUTBOX_BREVO_SMS_SENDER": "Too Long Name",
            },
            "OUTBOX_BREVO_SMS_SENDER",
        ),
        (
            {"OUTBOX_CHANNEL_EMAIL": "brevo", "OUTBOX_BREVO_API_KEY": "k"},
            "OUTBOX_BREVO_SENDER_EMAIL",
        ),
        ({"OUTBOX_CHANNEL_WHATSAPP": "wasender"}, "OUTBOX_WASENDER_API_KEY"),
        (
            {
                "OUTBOX_CHANNEL_WHATSAPP": "wasender",
                "OUTBOX_WASENDER_API_KEY": "k",
                "OUTBOX_WASENDER_BASE_URL": "ftp://x",
            },
            "OUTBOX_WASENDER_BASE_URL",
        ),
    ],
)
def test_bad_http_provider_settings_name_the_variable(
    environ: dict[str, str], variable: str
) -> None:
    assert variable == _error(environ).variable


async def test_wasender_serves_whatsapp() -> None:
    settings = _settings(OUTBOX_CHANNEL_WHATSAPP="wasender", OUTBOX_WASENDER_API_KEY="wsk-secret")
    providers = build_providers(settings, clock=FixedClock())
    await close_providers(providers)

    assert isinstance(providers[Channel.WHATSAPP], WasenderProvider)
    assert "wsk-secret" not in repr(load_provider_settings(settings))


class _Closing:
    """A provider that records being closed, or fails to close."""

    def __init__(self, *, fails: bool = False) -> None:
        self.closed = 0
        self.fails = fails

    @property
    def name(self) -> str:
        """Its name."""
        return "closing"

    async def send(self, delivery: object) -> str:
        """Never used here."""
        return ""

    async def aclose(self) -> None:
        """Count the close, then fail if told to."""
        self.closed += 1
        if self.fails:
            raise OSError("close failed")


async def test_closing_closes_each_provider_once_even_after_a_failure() -> None:
    broken, shared = _Closing(fails=True), _Closing()

    with pytest.raises(OSError, match="close failed"):
        await close_providers(
            {Channel.EMAIL: broken, Channel.SMS: shared, Channel.WHATSAPP: shared}
        )

    assert (1, 1) == (broken.closed, shared.closed)
