"""The console provider prints the rendered message and accepts it (development only)."""

from __future__ import annotations

import io

import pytest

from outbox.adapters.providers.console.provider import ConsoleProvider
from outbox.domain.channels import Channel
from tests.fakes.deliveries import CODE, EMAIL, MESSAGE_ID, PHONE, email_delivery, phone_delivery


async def test_an_email_is_printed_with_subject_and_text_and_accepted() -> None:
    stream = io.StringIO()

    provider_id = await ConsoleProvider(stream=stream).send(email_delivery())

    printed = stream.getvalue()
    assert f"console-{MESSAGE_ID}" == provider_id
    assert f"To: {EMAIL}" in printed
    assert "Subject: Your verification code" in printed
    assert f"Your code is {CODE}. It expires in 10 minutes." in printed
    assert "[HTML part: 44 characters, not shown]" in printed


async def test_an_sms_is_printed_without_a_subject_line() -> None:
    stream = io.StringIO()

    await ConsoleProvider(stream=stream).send(phone_delivery(Channel.SMS))

    printed = stream.getvalue()
    assert f"To: {PHONE}" in printed
    assert "Subject:" not in printed
    assert "· sms ·" in printed


async def test_stdout_is_the_default_stream(capsys: pytest.CaptureFixture[str]) -> None:
    await ConsoleProvider().send(phone_delivery(Channel.WHATSAPP))

    assert f"Your code is {CODE}" in capsys.readouterr().out
