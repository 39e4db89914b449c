"""Parsing caller input into domain values, naming the request field when it is invalid."""

from __future__ import annotations

from outbox.application.errors import InvalidField
from outbox.application.identity.phone_numbers import parse_phone
from outbox.domain.channels import Channel
from outbox.domain.destinations import normalize
from outbox.domain.errors import InvalidDestination
from outbox.domain.identity.errors import WeakPassword
from outbox.domain.identity.identifiers import Identifier
from outbox.domain.identity.passwords import check_password


def parse_identifier(raw: str, field: str = "identifier") -> Identifier:
    """An email address (lower-cased, NFC) or a valid international phone number (as E.164);
    raises InvalidField naming ``field``."""
    try:
        if "@" in raw:
            return Identifier(normalize(Channel.EMAIL, raw), Channel.EMAIL)
        return Identifier(parse_phone(raw), Channel.SMS)
    except InvalidDestination:
        raise InvalidField(
            field, "expected an email address or a valid international phone number (+…)"
        ) from None


def parse_email(raw: str, field: str = "email") -> Identifier:
    """An email address; raises InvalidField naming ``field``."""
    try:
        return Identifier(normalize(Channel.EMAIL, raw), Channel.EMAIL)
    except InvalidDestination:
        raise InvalidField(field, "expected an email address") from None


def parse_password(raw: str, field: str = "password") -> str:
    """A password that follows the rule; raises InvalidField naming ``field``."""
    try:
        return check_password(raw)
    except WeakPassword as error:
        raise InvalidField(field, str(error)) from None
