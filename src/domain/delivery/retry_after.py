"""A strict parser for the HTTP ``Retry-After`` header (RFC 9110 §10.2.3)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

MAX_RETRY_AFTER = timedelta(days=1)

_DELTA = re.compile(r"[0-9]{1,10}", re.ASCII)
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
        start=1,
    )
}
_DAY = r"(?P<wkday>Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_LONG_DAY = r"(?P<weekday>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_MONTH = r"(?P<month>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_TIME = r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
_IMF_FIXDATE = re.compile(
    rf"{_DAY}, (?P<day>[0-9]{{2}}) {_MONTH} (?P<year>[0-9]{{4}}) {_TIME} GMT", re.ASCII
)
_RFC850 = re.compile(
    rf"{_LONG_DAY}, (?P<day>[0-9]{{2}})-{_MONTH}-(?P<year>[0-9]{{2}}) {_TIME} GMT", re.ASCII
)
_ASCTIME = re.compile(
    rf"{_DAY} {_MONTH} (?P<day>[ 0-9][0-9]) {_TIME} (?P<year>[0-9]{{4}})", re.ASCII
)


def parse_retry_after(
    value: str | None, now: datetime, *, ceiling: timedelta = MAX_RETRY_AFTER
) -> datetime | None:
    """Return the absolute time a ``Retry-After`` value asks for, or None if it is unusable.

    Accepts delta-seconds (ASCII digits only) and the three HTTP-date forms
    (IMF-fixdate, obsolete RFC 850, asctime). Negative, malformed, past or absurd
    values (further than ``ceiling`` away) give None, so the caller falls back to
    its schedule.
    """
    if value is None:
        return None
    value = value.strip(" \t")
    if _DELTA.fullmatch(value):
        delay = timedelta(seconds=int(value))
        return now + delay if delay <= ceiling else None
    when = _parse_http_date(value, now)
    if when is None or when <= now or when - now > ceiling:
        return None
    return when


def _parse_http_date(value: str, now: datetime) -> datetime | None:
    for pattern in (_IMF_FIXDATE, _RFC850, _ASCTIME):
        match = pattern.fullmatch(value)
        if match is None:
            continue
        year = int(match["year"])
        if pattern is _RFC850:
            year = _two_digit_year(year, now)
        try:
            return datetime(
                year,
                _MONTHS[match["month"]],
                int(match["day"].strip()),
                int(match["hour"]),
                int(match["minute"]),
                int(match["second"]),
                tzinfo=UTC,
            )
        except ValueError:  # 31 Feb, 25:00:00 and other impossible dates
            return None
    return None


def _two_digit_year(year: int, now: datetime) -> int:
    """RFC 9110: the year within 50 of now ending in ``year`` (more than 50 ahead is the past)."""
    century = now.year - now.year % 100
    candidate = century + year
    if candidate > now.year + 50:
        candidate -= 100
    elif candidate <= now.year - 50:  # late in a century: "00" is the next one, not 99 years ago
        candidate += 100
    return candidate
