"""The Jinja2 renderer: built-ins per purpose, locale fallback, escaping, sandbox, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from outbox.adapters.templates.renderer import BUILTIN_DIR, JinjaRenderer
from outbox.application.delivery.errors import TemplateNotFound, TemplateRenderFailed
from outbox.application.delivery.ports import RenderedMessage
from outbox.domain.channels import Channel
from outbox.domain.identity.security_changes import SecurityChange
from outbox.domain.notifications.catalogue import CATALOGUE
from outbox.domain.purposes import Purpose

CODE = "482913"
LINK = "https://app.example/accept#token=tKn_0123456789abcdef&x=1"
LOCALES = ("en", "es")


def _inputs(purpose: Purpose) -> dict[str, object]:
    """What a producer gives each purpose: a code, a link and its parameters, or a body."""
    if purpose.is_one_time_code:
        return {"params": {}, "secret": CODE, "link": None}
    if purpose is Purpose.INVITATION:
        return {"params": {"organization_name": "Acme"}, "secret": None, "link": LINK}
    if purpose is Purpose.MAGIC_LINK:
        return {"params": {}, "secret": None, "link": LINK}
    if purpose is Purpose.SECURITY_NOTICE:
        return {
            "params": _notice(SecurityChange.SIGN_IN_METHOD_ADDED),
            "secret": None,
            "link": None,
        }
    return {
        "params": {"subject": "Invoice ready", "body": "Your invoice is ready."},
        "secret": None,
        "link": None,
    }


def _notice(change: SecurityChange) -> dict[str, str]:
    return {
        "change": change.value,
        "occurred_at": "2026-12-01T10:00:00+00:00",
        "identifier": "+34***78",
    }


def _render(
    renderer: JinjaRenderer, purpose: Purpose, channel: Channel, locale: str
) -> RenderedMessage:
    return renderer.render(
        template=purpose.value,
        channel=channel,
        locale=locale,
        **_inputs(purpose),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def renderer() -> JinjaRenderer:
    return JinjaRenderer()


def _override(tmp_path: Path, files: dict[str, str]) -> JinjaRenderer:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return JinjaRenderer(override_dir=tmp_path)


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("channel", list(Channel))
@pytest.mark.parametrize("purpose", list(Purpose))
def test_every_purpose_renders_on_every_channel_in_english_and_spanish(
    renderer: JinjaRenderer, purpose: Purpose, channel: Channel, locale: str
) -> None:
    message = _render(renderer, purpose, channel, locale)

    expected = {CODE} if purpose.is_one_time_code else {LINK} if purpose.renders_link else set()
    assert message.text.strip()
    assert expected <= {s for s in (CODE, LINK) if s in message.text}
    if channel is Channel.EMAIL:
        assert message.subject
        assert message.html is not None
        assert f'<html lang="{locale}">' in message.html
        assert all(s.replace("&", "&amp;") in message.html for s in expected)
    else:
        assert "" == message.subject
        assert message.html is None


@pytest.mark.parametrize("channel", list(Channel))
@pytest.mark.parametrize("purpose", [p for p in Purpose if p is not Purpose.NOTIFICATION], ids=str)
def test_spanish_templates_differ_from_english(
    renderer: JinjaRenderer, purpose: Purpose, channel: Channel
) -> None:
    english = _render(renderer, purpose, channel, "en")
    spanish = _render(renderer, purpose, channel, "es")

    assert english.text != spanish.text
    assert english.subject != spanish.subject or channel is not Channel.EMAIL


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("channel", list(Channel))
def test_each_security_change_has_its_own_wording_on_every_channel(
    renderer: JinjaRenderer, channel: Channel, locale: str
) -> None:
    texts = {
        change: renderer.render(
            template=Purpose.SECURITY_NOTICE.value,
            channel=channel,
            locale=locale,
            params=_notice(change),
            secret=None,
            link=None,
        ).text
        for change in SecurityChange
    }

    assert len(SecurityChange) == len(set(texts.values()))
    assert "+34***78" in texts[SecurityChange.SIGN_IN_METHOD_ADDED]


@pytest.mark.parametrize("locale", ["fr", "de-DE", "", "../../etc", "en-US", "x" * 200])
def test_a_locale_without_templates_falls_back_to_english(
    renderer: JinjaRenderer, locale: str
) -> None:
    fallback = _render(renderer, Purpose.SIGN_UP, Channel.EMAIL, locale)

    assert _render(renderer, Purpose.SIGN_UP, Channel.EMAIL, "en") == fallback


@pytest.mark.parametrize("locale", ["es-MX", "es_MX", "es-419", "ES"])
def test_a_regional_locale_falls_back_to_its_language(renderer: JinjaRenderer, locale: str) -> None:
    regional = _render(renderer, Purpose.PASSWORD_RECOVERY, Channel.EMAIL, locale)

    assert _render(renderer, Purpose.PASSWORD_RECOVERY, Channel.EMAIL, "es") == regional


def test_a_parameter_is_escaped_in_html_and_kept_plain_in_text_and_subject(
    renderer: JinjaRenderer,
) -> None:
    name = '<script>alert("x")</script> & Sons'

    message = renderer.render(
        template="invitation",
        channel=Channel.EMAIL,
        locale="en",
        params={"organization_name": name},
        secret=None,
        link=LINK,
    )

    assert message.html is not None
    assert "<script>" not in message.html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; Sons" in message.html
    assert name in message.text
    assert f"You are invited to join {name}" == message.subject


def test_the_code_is_in_the_text_and_html_but_not_the_subject(renderer: JinjaRenderer) -> None:
    message = _render(renderer, Purpose.STEP_UP, Channel.EMAIL, "en")

    assert message.html is not None
    assert CODE in message.text
    assert CODE in message.html
    assert CODE not in message.subject


def test_the_link_is_the_href_of_the_html_button(renderer: JinjaRenderer) -> None:
    message = _render(renderer, Purpose.MAGIC_LINK, Channel.EMAIL, "en")

    assert message.html is not None
    assert f'href="{LINK.replace("&", "&amp;")}"' in message.html
    assert LINK in message.text


def test_a_parameter_named_code_cannot_replace_the_secret(renderer: JinjaRenderer) -> None:
    message = renderer.render(
        template="sign_up",
        channel=Channel.SMS,
        locale="en",
        params={"code": "000000", "link": "https://evil.example"},
        secret=CODE,
        link=None,
    )

    assert CODE in message.text
    assert "000000" not in message.text


def test_a_missing_parameter_is_an_error_naming_it(renderer: JinjaRenderer) -> None:
    with pytest.raises(TemplateRenderFailed, match="organization_name"):
        renderer.render(
            template="invitation",
            channel=Channel.EMAIL,
            locale="en",
            params={},
            secret=None,
            link=LINK,
        )


def test_a_code_template_without_a_secret_is_an_error(renderer: JinjaRenderer) -> None:
    with pytest.raises(TemplateRenderFailed, match="code"):
        renderer.render(
            template="sign_up",
            channel=Channel.SMS,
            locale="en",
            params={},
            secret=None,
            link=None,
        )


def test_optional_expiry_is_rendered_when_given(renderer: JinjaRenderer) -> None:
    message = renderer.render(
        template="sign_up",
        channel=Channel.EMAIL,
        locale="es",
        params={"expires_in_minutes": "10"},
        secret=CODE,
        link=None,
    )

    assert "Caduca en 10 minutos." in message.text


def test_the_subject_is_one_line_whatever_the_parameters(renderer: JinjaRenderer) -> None:
    message = renderer.render(
        template="notification",
        channel=Channel.EMAIL,
        locale="en",
        params={"subject": "Hello\r\nBcc: victim@example.com", "body": "Hi"},
        secret=None,
        link=None,
    )

    assert "Hello Bcc: victim@example.com" == message.subject


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("purpose", [p for p in Purpose if p.is_one_time_code], ids=str)
def test_code_sms_fits_one_unicode_segment(
    renderer: JinjaRenderer, purpose: Purpose, locale: str
) -> None:
    """70 characters is one SMS segment even when accents force UCS-2 encoding."""
    message = _render(renderer, purpose, Channel.SMS, locale)

    assert len(message.text) <= 70


@pytest.mark.parametrize("name", ["welcome", "Sign_Up", "../en/sign_up", "sign-up", ""])
def test_an_unknown_template_is_a_clear_error(renderer: JinjaRenderer, name: str) -> None:
    with pytest.raises(TemplateNotFound):
        renderer.render(
            template=name, channel=Channel.EMAIL, locale="en", params={}, secret=None, link=None
        )


def test_an_override_file_wins_over_the_built_in_one(tmp_path: Path) -> None:
    renderer = _override(tmp_path, {"en/sign_up.sms.text": "ACME code: {{ code }}"})

    assert "ACME code: 482913" == _render(renderer, Purpose.SIGN_UP, Channel.SMS, "en").text


def test_an_override_replaces_only_the_files_it_has(tmp_path: Path) -> None:
    renderer = _override(tmp_path, {"en/sign_up.sms.text": "ACME code: {{ code }}"})

    assert _render(JinjaRenderer(), Purpose.SIGN_UP, Channel.EMAIL, "en") == _render(
        renderer, Purpose.SIGN_UP, Channel.EMAIL, "en"
    )
    assert "ACME" not in _render(renderer, Purpose.SIGN_UP, Channel.SMS, "es").text


def test_an_override_of_the_layout_changes_every_html_part(tmp_path: Path) -> None:
    renderer = _override(
        tmp_path, {"layout.html": "<main>{% block content %}{% endblock %}</main>"}
    )

    html = _render(renderer, Purpose.MAGIC_LINK, Channel.EMAIL, "es").html

    assert html is not None
    assert html.startswith("<main>")
    assert "Entrar" in html


def test_an_override_may_add_a_template_for_some_channels_only(tmp_path: Path) -> None:
    renderer = _override(
        tmp_path,
        {
            "en/welcome.email.subject": "Welcome, {{ name }}",
            "en/welcome.email.text": "Hello {{ name }}",
        },
    )

    message = renderer.render(
        template="welcome",
        channel=Channel.EMAIL,
        locale="es",
        params={"name": "Ana"},
        secret=None,
        link=None,
    )

    assert RenderedMessage(subject="Welcome, Ana", text="Hello Ana", html=None) == message
    with pytest.raises(TemplateNotFound, match="sms"):
        renderer.render(
            template="welcome",
            channel=Channel.SMS,
            locale="en",
            params={"name": "Ana"},
            secret=None,
            link=None,
        )


def test_an_email_template_without_a_subject_is_not_found(tmp_path: Path) -> None:
    renderer = _override(tmp_path, {"en/welcome.email.text": "Hello"})

    with pytest.raises(TemplateNotFound, match="subject"):
        renderer.render(
            template="welcome",
            channel=Channel.EMAIL,
            locale="en",
            params={},
            secret=None,
            link=None,
        )


@pytest.mark.parametrize(
    "source",
    [
        "{{ code.__class__.__mro__ }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ ''.__class__.__subclasses__() }}",
        "{{ lipsum.__globals__['os'] }}",
    ],
)
def test_the_sandbox_refuses_unsafe_attribute_access_in_an_override(
    tmp_path: Path, source: str
) -> None:
    renderer = _override(tmp_path, {"en/sign_up.sms.text": source})

    with pytest.raises(TemplateRenderFailed, match="SecurityError"):
        _render(renderer, Purpose.SIGN_UP, Channel.SMS, "en")


def test_an_override_that_raises_is_a_render_error(tmp_path: Path) -> None:
    renderer = _override(tmp_path, {"en/sign_up.sms.text": "{{ 1 // 0 }}"})

    with pytest.raises(TemplateRenderFailed, match="ZeroDivisionError"):
        _render(renderer, Purpose.SIGN_UP, Channel.SMS, "en")


def test_a_template_is_read_once_and_not_checked_again(tmp_path: Path) -> None:
    renderer = _override(tmp_path, {"en/sign_up.sms.text": "First {{ code }}"})
    first = _render(renderer, Purpose.SIGN_UP, Channel.SMS, "en-GB")

    (tmp_path / "en" / "sign_up.sms.text").write_text("Second {{ code }}")
    (tmp_path / "en-GB").mkdir()
    (tmp_path / "en-GB" / "sign_up.sms.text").write_text("Third {{ code }}")

    assert first == _render(renderer, Purpose.SIGN_UP, Channel.SMS, "en-GB")
    assert "First 482913" == first.text


def test_preload_compiles_every_built_in_file(renderer: JinjaRenderer) -> None:
    files = [p for p in BUILTIN_DIR.rglob("*") if p.is_file()]

    assert len(files) == renderer.preload()
    # layout + 2 locales x 5 parts per purpose + the catalogue's account_welcome (email's
    # three parts and SMS text, in 2 locales)
    assert len(files) == 1 + 2 * len(Purpose) * 5 + 2 * 4


@pytest.mark.parametrize(
    ("locale", "subject", "text"),
    [
        ("es-MX", "Bienvenido: tu cuenta está lista", "¡Bienvenido! Tu cuenta está lista"),
        ("en", "Welcome: your account is ready", "Welcome! Your account is ready"),
        ("fr", "Welcome: your account is ready", "Welcome! Your account is ready"),
    ],
)
def test_every_category_of_the_catalogue_renders_on_each_channel_in_each_locale(
    renderer: JinjaRenderer, locale: str, subject: str, text: str
) -> None:
    for category in CATALOGUE:
        for channel in category.channels:
            for written in category.locales:
                rendered = renderer.render(
                    template=category.template,
                    channel=channel,
                    locale=written,
                    params={},
                    secret=None,
                    link=None,
                )
                assert rendered.text
    email = renderer.render(
        template="account_welcome",
        channel=Channel.EMAIL,
        locale=locale,
        params={},
        secret=None,
        link=None,
    )
    assert subject == email.subject
    assert email.text.startswith(text)
    assert email.html is not None
    assert text in email.html


def test_preload_names_an_override_that_does_not_compile(tmp_path: Path) -> None:
    renderer = _override(tmp_path, {"en/sign_up.sms.text": "{% if %}"})

    with pytest.raises(TemplateRenderFailed, match=r"en/sign_up\.sms\.text"):
        renderer.preload()


def test_preload_skips_hidden_files_in_the_override_directory(tmp_path: Path) -> None:
    renderer = _override(
        tmp_path, {".git/HEAD": "{% broken", "en/.DS_Store": "{{", "en/welcome.sms.text": "Hi"}
    )

    assert len([p for p in BUILTIN_DIR.rglob("*") if p.is_file()]) + 1 == renderer.preload()
