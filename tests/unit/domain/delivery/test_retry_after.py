"""The strict Retry-After parser: delta-seconds and the three HTTP-date forms (RFC 9110)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from outbox.domain.delivery.retry_after import MAX_RETRY_AFTER, parse_retry_after

NOW = datetime(1994, 11, 6, 8, 0, 0, tzinfo=UTC)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
Form = Callable[[datetime], str]
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def imf_fixdate(when: datetime) -> str:
    return format_datetime(when, usegmt=True)


def rfc850(when: datetime) -> str:
    return (
        f"{WEEKDAYS[when.weekday()]}, {when.day:02d}-{MONTHS[when.month - 1]}-"
        f"{when.year % 100:02d} {when:%H:%M:%S} GMT"
    )


def asctime(when: datetime) -> str:
    return when.ctime()


def test_the_formatters_produce_the_rfc_examples() -> None:
    """RFC 9110 §5.6.7 gives one instant in all three forms."""
    when = datetime(1994, 11, 6, 8, 49, 37, tzinfo=UTC)

    assert "Sun, 06 Nov 1994 08:49:37 GMT" == imf_fixdate(when)
    assert "Sunday, 06-Nov-94 08:49:37 GMT" == rfc850(when)
    assert "Sun Nov  6 08:49:37 1994" == asctime(when)


# --- delta-seconds ---------------------------------------------------------------------


@pytest.mark.parametrize(("value", "seconds"), [("0", 0), ("1", 1), ("120", 120), ("86400", 86400)])
def test_delta_seconds_count_from_now(value: str, seconds: int) -> None:
    assert NOW + timedelta(seconds=seconds) == parse_retry_after(value, NOW)


def test_surrounding_spaces_and_tabs_are_optional_whitespace() -> None:
    assert NOW + timedelta(seconds=120) == parse_retry_after(" \t120 \t", NOW)


def test_a_delta_beyond_a_day_is_absurd() -> None:
    assert parse_retry_after("86401", NOW) is None


def test_the_ceiling_is_configurable() -> None:
    assert NOW + timedelta(seconds=60) == parse_retry_after("60", NOW, ceiling=timedelta(minutes=1))
    assert parse_retry_after("61", NOW, ceiling=timedelta(minutes=1)) is None


def test_the_default_ceiling_is_one_day() -> None:
    assert timedelta(days=1) == MAX_RETRY_AFTER


@pytest.mark.parametrize(
    "value",
    [
        "\u0661\u0662\u0660",  # Arabic-Indic 120
        "\u06f1\u06f2\u06f0",  # Extended Arabic-Indic 120
        "\uff11\uff12\uff10",  # full-width 120
        "\u0967\u0968\u0966",  # Devanagari 120
        "1\u0662",  # one ASCII digit, one Arabic-Indic
    ],
)
def test_non_ascii_digits_are_refused(value: str) -> None:
    assert int(value) > 0  # Python's int() accepts them: the parser must not
    assert parse_retry_after(value, NOW) is None


@pytest.mark.parametrize(
    "value",
    [
        "-5",
        "+5",
        "5.0",
        ".5",
        "1e3",
        "0x10",
        "1_0",  # int() accepts digit-group underscores
        "1 0",
        "1\t0",
        "5s",
        "\u00b2",  # superscript two
        "5\n",
        "\n5",
        "5\r\n",
        "\u00a05",  # a no-break space is not HTTP whitespace
        "",
        " ",
        "soon",
        "99999999999",
        "9" * 5000,  # longer than int()'s digit limit: must not raise
    ],
)
def test_malformed_or_signed_or_absurd_deltas_give_none(value: str) -> None:
    assert parse_retry_after(value, NOW) is None


def test_no_header_gives_none() -> None:
    assert parse_retry_after(None, NOW) is None


# --- HTTP-date -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"],
)
def test_each_http_date_form_is_parsed(value: str) -> None:
    assert datetime(1994, 11, 6, 8, 49, 37, tzinfo=UTC) == parse_retry_after(value, NOW)


def test_an_http_date_exactly_one_day_ahead_is_accepted() -> None:
    when = NOW + MAX_RETRY_AFTER

    assert when == parse_retry_after(imf_fixdate(when), NOW)


@pytest.mark.parametrize("form", [imf_fixdate, rfc850, asctime])
@pytest.mark.parametrize("offset", [timedelta(0), -timedelta(seconds=1), -timedelta(days=400)])
def test_an_http_date_now_or_in_the_past_gives_none(form: Form, offset: timedelta) -> None:
    assert parse_retry_after(form(NOW + offset), NOW) is None


@pytest.mark.parametrize("form", [imf_fixdate, rfc850, asctime])
def test_an_http_date_more_than_a_day_ahead_gives_none(form: Form) -> None:
    assert parse_retry_after(form(NOW + MAX_RETRY_AFTER + timedelta(seconds=1)), NOW) is None


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 31 Feb 1994 08:49:37 GMT",  # no such day
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:60 GMT",  # leap seconds are not representable
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 gmt",
        "Sun, 06 Nov 1994 08:49:37",
        "sun, 06 Nov 1994 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 November 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, \u0660\u0666 Nov 1994 08:49:37 GMT",  # Arabic-Indic day
        "Sun, 06 Nov \uff11\uff19\uff19\uff14 08:49:37 GMT",  # full-width year
        "Sun, 06-Nov-94 08:49:37 GMT",  # short weekday in the RFC 850 form
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sunday, 06 Nov 1994 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",  # asctime pads a one-digit day with a space
        "Sun Nov  6 08:49:37 1994 GMT",
        "1994-11-06T08:49:37Z",
        "Sun, 06 Nov 0000 08:49:37 GMT",
    ],
)
def test_malformed_http_dates_give_none(value: str) -> None:
    assert parse_retry_after(value, NOW) is None


def test_rfc850_two_digit_year_is_read_in_the_current_century() -> None:
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    assert datetime(2026, 3, 1, 12, 5, tzinfo=UTC) == parse_retry_after(
        "Sunday, 01-Mar-26 12:05:00 GMT", now
    )


def test_rfc850_year_up_to_fifty_years_ahead_is_the_future() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    century = timedelta(days=365 * 100)

    assert datetime(2076, 1, 1, tzinfo=UTC) == parse_retry_after(
        "Wednesday, 01-Jan-76 00:00:00 GMT", now, ceiling=century
    )


def test_rfc850_year_more_than_fifty_years_ahead_is_the_past_century() -> None:
    """'77' read in 2026 is 1977, which is in the past, so there is nothing to wait for."""
    now = datetime(2026, 1, 1, tzinfo=UTC)

    assert (
        parse_retry_after("Saturday, 01-Jan-77 00:00:00 GMT", now, ceiling=timedelta(days=36500))
        is None
    )


def test_rfc850_year_zero_late_in_a_century_is_the_next_century() -> None:
    """Found by review: '00' seen on 31 Dec 2099 is 2100, not 2000."""
    now = datetime(2099, 12, 31, 23, 59, 50, tzinfo=UTC)

    assert datetime(2100, 1, 1, 0, 0, 10, tzinfo=UTC) == parse_retry_after(
        "Friday, 01-Jan-00 00:00:10 GMT", now
    )


# --- properties ------------------------------------------------------------------------

# Hypothesis takes naive bounds and attaches the timezone itself.
instants = st.datetimes(
    min_value=datetime(1971, 1, 1),  # noqa: DTZ001
    max_value=datetime(2199, 12, 30),  # noqa: DTZ001
    timezones=st.just(UTC),
).map(lambda d: d.replace(microsecond=0))


@settings(max_examples=500)
@given(value=st.text(), now=instants)
@example(value="\u0661", now=NOW)
@example(value="9" * 5000, now=NOW)
def test_the_parser_never_raises_and_never_answers_beyond_the_ceiling(
    value: str, now: datetime
) -> None:
    when = parse_retry_after(value, now)

    assert when is None or now <= when <= now + MAX_RETRY_AFTER


@settings(max_examples=200)
@given(value=st.from_regex(r"[ -~]{0,40}", fullmatch=True), now=instants)
def test_the_parser_never_raises_on_header_like_ascii(value: str, now: datetime) -> None:
    when = parse_retry_after(value, now)

    assert when is None or now <= when <= now + MAX_RETRY_AFTER


@settings(max_examples=200)
@given(seconds=st.integers(min_value=0, max_value=86400), now=instants)
def test_any_delta_up_to_a_day_round_trips(seconds: int, now: datetime) -> None:
    assert now + timedelta(seconds=seconds) == parse_retry_after(str(seconds), now)


@settings(max_examples=200)
@given(seconds=st.integers(min_value=86401, max_value=10**30), now=instants)
def test_any_delta_beyond_a_day_gives_none(seconds: int, now: datetime) -> None:
    assert parse_retry_after(str(seconds), now) is None


@settings(max_examples=300)
@given(
    now=instants,
    seconds=st.integers(min_value=1, max_value=86400),
    form=st.sampled_from([imf_fixdate, rfc850, asctime]),
)
@example(now=datetime(2099, 12, 31, 23, 59, 50, tzinfo=UTC), seconds=20, form=rfc850)
@example(now=datetime(1999, 12, 31, 12, 0, tzinfo=UTC), seconds=86400, form=rfc850)
def test_any_date_within_a_day_round_trips_in_each_form(
    now: datetime, seconds: int, form: Form
) -> None:
    when = now + timedelta(seconds=seconds)

    assert when == parse_retry_after(form(when), now)


@settings(max_examples=200)
@given(
    now=instants,
    seconds=st.integers(min_value=86401, max_value=40 * 365 * 86400),
    form=st.sampled_from([imf_fixdate, rfc850, asctime]),
)
def test_any_date_beyond_a_day_gives_none(now: datetime, seconds: int, form: Form) -> None:
    assert parse_retry_after(form(now + timedelta(seconds=seconds)), now) is None
