"""The one environment reader: every kind of value is parsed one way, and errors name it."""

from __future__ import annotations

import enum
from datetime import timedelta
from pathlib import Path

import pytest

from outbox.entrypoints.settings.reader import EnvironmentReader, SettingsError


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


def _problem(environ: dict[str, str], read: str) -> SettingsError:
    reader = EnvironmentReader(environ, strict=True)
    with pytest.raises(SettingsError) as caught:
        getattr(reader, read)("X")
    return caught.value


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        *[("1", True), ("TRUE", True), ("Yes", True), ("on", True)],
        *[("0", False), ("False", False), ("NO", False), ("off", False)],
    ],
)
def test_booleans_are_read_one_way_in_any_case(raw: str, expected: bool) -> None:
    assert expected is EnvironmentReader({"OUTBOX_X": raw}).flag("X", default=not expected)


def test_a_bad_boolean_names_its_variable() -> None:
    reader = EnvironmentReader({"OUTBOX_X": "maybe"})
    with pytest.raises(SettingsError) as caught:
        reader.flag("X", default=True)
    assert ("OUTBOX_X", "expected true or false, got 'maybe'") == (
        caught.value.variable,
        caught.value.problem,
    )


def test_seconds_may_be_fractional_and_respect_their_minimum() -> None:
    reader = EnvironmentReader({"OUTBOX_A": "1.5", "OUTBOX_B": "0.5"})

    assert timedelta(seconds=1.5) == reader.seconds("A", 10)
    assert timedelta(minutes=2) == reader.seconds("UNSET", timedelta(minutes=2))
    with pytest.raises(SettingsError, match="at least 1 seconds"):
        reader.seconds("B", 10, minimum=1)


def test_a_blank_variable_takes_the_default() -> None:
    reader = EnvironmentReader({"OUTBOX_X": "   "})

    assert 7 == reader.integer("X", 7)
    assert "fallback" == reader.text("X", "fallback")


def test_integers_are_bounded_on_both_sides() -> None:
    reader = EnvironmentReader({"OUTBOX_LOW": "0", "OUTBOX_HIGH": "13", "OUTBOX_WORD": "ten"})

    assert "must be at least 1, got 0" == _bounded(reader, "LOW")
    assert "must be at most 12, got 13" == _bounded(reader, "HIGH")
    assert "expected an integer, got 'ten'" == _bounded(reader, "WORD")


def _bounded(reader: EnvironmentReader, name: str) -> str:
    with pytest.raises(SettingsError) as caught:
        reader.integer(name, 6, minimum=1, maximum=12)
    return caught.value.problem


@pytest.mark.parametrize("raw", ["0", "65536", "http"])
def test_a_port_outside_the_range_is_refused(raw: str) -> None:
    with pytest.raises(SettingsError) as caught:
        EnvironmentReader({"OUTBOX_PORT": raw}).port("PORT", 25)
    assert "OUTBOX_PORT" == caught.value.variable
    assert "port number" in caught.value.problem


def test_port_zero_is_accepted_where_it_means_any_or_off() -> None:
    assert 0 == EnvironmentReader({"OUTBOX_PORT": "0"}).port("PORT", 8000, allow_zero=True)


def test_lists_of_seconds_keep_their_order_and_refuse_a_zero_step() -> None:
    reader = EnvironmentReader({"OUTBOX_OK": "5, 30,120", "OUTBOX_BAD": "5,0"})

    assert (timedelta(seconds=5), timedelta(seconds=30), timedelta(minutes=2)) == (
        reader.seconds_list("OK", ())
    )
    with pytest.raises(SettingsError, match="comma-separated positive seconds"):
        reader.seconds_list("BAD", ())


def test_choices_are_read_in_any_case_and_list_the_allowed_values() -> None:
    reader = EnvironmentReader({"OUTBOX_OK": "BLUE", "OUTBOX_BAD": "green"})

    assert Colour.BLUE is reader.choice("OK", Colour.RED, Colour)
    with pytest.raises(SettingsError) as caught:
        reader.choice("BAD", Colour.RED, Colour)
    assert "expected one of red, blue, got 'green'" == caught.value.problem


def test_urls_lose_their_trailing_slash_and_must_be_http() -> None:
    reader = EnvironmentReader({"OUTBOX_OK": "https://a.example/x/", "OUTBOX_BAD": "ftp://a"})

    assert "https://a.example/x" == reader.url("OK")
    assert "https://default.example" == reader.url("UNSET", "https://default.example")
    with pytest.raises(SettingsError, match=r"expected an http\(s\):// URL"):
        reader.url("BAD")


def test_https_only_urls_refuse_plain_http_only_outside_development() -> None:
    environ = {"OUTBOX_URL": "http://relay.internal"}

    assert "http://relay.internal" == EnvironmentReader(environ).url("URL", https_only=True)
    with pytest.raises(SettingsError, match="must be https:// outside development"):
        EnvironmentReader(environ, strict=True).url("URL", https_only=True)


def test_an_address_may_carry_a_display_name() -> None:
    reader = EnvironmentReader({"OUTBOX_OK": "Example <a@b.example>"})

    assert "Example <a@b.example>" == reader.address("OK")
    assert "expected an email address" in _problem({"OUTBOX_X": "nobody"}, "address").problem
    assert "required when sending" == _required(reader, "UNSET")


def _required(reader: EnvironmentReader, name: str) -> str:
    with pytest.raises(SettingsError) as caught:
        reader.address(name, " when sending")
    return caught.value.problem


def test_an_existing_file_must_exist(tmp_path: Path) -> None:
    present = tmp_path / "ca.pem"
    present.write_text("x")
    reader = EnvironmentReader({"OUTBOX_OK": str(present), "OUTBOX_BAD": str(tmp_path / "no")})

    assert present == reader.existing_file("OK")
    with pytest.raises(SettingsError, match="no such file"):
        reader.existing_file("BAD")


def test_only_our_variables_and_aws_credentials_are_kept() -> None:
    reader = EnvironmentReader(
        {"OUTBOX_X": "1", "AWS_REGION": "eu-west-1", "GITHUB_TOKEN": "ghp_secret"}
    )

    assert "eu-west-1" == reader.foreign("AWS_REGION")
    assert reader.foreign("GITHUB_TOKEN") is None
