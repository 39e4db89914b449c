"""Phone identifiers: parsed and validated with phonenumbers into E.164, and their country.

The domain keeps to the standard library, so the one library that knows every numbering
plan is used here, at the edge where caller input becomes an identifier.
"""

from __future__ import annotations

import re

import attrs
import phonenumbers

from outbox.domain.errors import InvalidDestination

# What people type around the digits; phonenumbers alone would also read letters (vanity
# numbers) and extensions ("x12"), which no text message can reach.
_TYPED = re.compile(r"\+[0-9][0-9 ().-]{5,29}", re.ASCII)


@attrs.frozen
class PhoneCountry:
    """Where a number belongs: its region (ISO 3166 alpha-2, ``"001"`` for non-geographic
    numbers) and its country calling code as a prefix (``"+34"``)."""

    region: str
    prefix: str


def parse_phone(raw: str) -> str:
    """An international number (``+`` first; spaces, dots, dashes and brackets allowed) as
    E.164; raises InvalidDestination unless it is a valid number of a numbering plan."""
    text = raw.strip()
    if not _TYPED.fullmatch(text):
        raise InvalidDestination("not an international phone number")
    try:
        number = phonenumbers.parse(text, None)
    except phonenumbers.NumberParseException:
        raise InvalidDestination("not a phone number") from None
    if not phonenumbers.is_valid_number(number):
        raise InvalidDestination("not a valid phone number")
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def country_of(e164: str) -> PhoneCountry:
    """The region and calling-code prefix of an E.164 number (``"ZZ"`` when unknown)."""
    try:
        number = phonenumbers.parse(e164, None)
    except phonenumbers.NumberParseException:
        return PhoneCountry(region="ZZ", prefix="+")
    region = phonenumbers.region_code_for_number(number) or "ZZ"
    return PhoneCountry(region=region, prefix=f"+{number.country_code}")
