"""Parsing caller input into domain values, naming the request field when it is invalid."""

from __future__ import annotations

import asyncio

from zxcvbn import zxcvbn

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


# zxcvbn's 3: "safely unguessable", about 10^10 guesses; below it a password falls to an online
# or a slow-hash offline attack. zxcvbn refuses inputs over 72 characters, and its work grows
# with the length: a longer password is scored on its first 72 (the rest only adds strength).
MIN_STRENGTH = 3
SCORED_LENGTH = 72


def _strength(password: str, hints: tuple[str, ...]) -> tuple[int, str]:
    result = zxcvbn(password[:SCORED_LENGTH], user_inputs=list(hints))
    feedback = result["feedback"]
    advice = feedback["warning"] or " ".join(feedback["suggestions"][:1])
    return int(result["score"]), str(advice)


async def check_strength(
    password: str, field: str = "password", *, hints: tuple[str, ...] = ()
) -> None:
    """Raise InvalidField naming ``field`` when ``password`` is too easy to guess (zxcvbn
    scores it below MIN_STRENGTH, with ``hints`` such as the account's address counted as
    known words). The scoring (up to some 30 ms of CPU) runs in a worker thread; the message
    is zxcvbn's generic advice, never a part of the password."""
    score, advice = await asyncio.to_thread(_strength, password, hints)
    if score < MIN_STRENGTH:
        reason = f": {advice}" if advice else ""
        raise InvalidField(field, f"too easy to guess{reason}")
