"""The notifications catalogue: what may be sent, on which channels, in which words.

A category is a code (``account.welcome``), the channels it may use, one template name, the
variable names that template may be given (nothing else is accepted) and the locales that
template exists in, with the locale to fall back to. Consent is per
recipient, category and channel (``snapshots.py``): a recipient who opted out of a category on
a channel gets nothing there. Adding a category is one entry in ``CATALOGUE``, its templates
(docs/templates.md) and its row in ``notifications.categories`` (docs/notifications.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import attrs

from outbox.domain.channels import Channel
from outbox.domain.errors import DomainError

CATEGORY_CODE = re.compile(r"^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$")
TEMPLATE_NAME = re.compile(r"^[a-z0-9_]{1,64}$")
VARIABLE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}$")


class UnknownCategory(DomainError):
    """No category of the catalogue has that code."""


class InvalidCategory(DomainError):
    """A category as declared breaks a catalogue rule; the message names the field."""


def _channels(value: Iterable[Channel]) -> tuple[Channel, ...]:
    return tuple(dict.fromkeys(Channel(channel) for channel in value))


def _names(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen(kw_only=True)
class Category:
    """One kind of notification: its channels, its template and the locales it is written in."""

    code: str
    channels: tuple[Channel, ...] = attrs.field(converter=_channels)
    template: str
    locales: frozenset[str] = attrs.field(converter=_names)
    variables: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    fallback_locale: str = "en"
    description: str = ""

    def __attrs_post_init__(self) -> None:
        if not CATEGORY_CODE.match(self.code):
            raise InvalidCategory(f"code: expected area.name, got {self.code!r}")
        if not self.channels:
            raise InvalidCategory(f"{self.code}: channels: expected at least one")
        if not TEMPLATE_NAME.match(self.template):
            raise InvalidCategory(f"{self.code}: template: expected [a-z0-9_], 1 to 64")
        if self.fallback_locale not in self.locales:
            raise InvalidCategory(f"{self.code}: fallback_locale: not one of its locales")
        for name in self.variables:
            if not VARIABLE_NAME.match(name):
                raise InvalidCategory(f"{self.code}: variables: {name!r} is not a lowercase name")

    def offers(self, channel: Channel) -> bool:
        """Whether this category may be sent on ``channel``."""
        return channel in self.channels

    def locale_for(self, preferred: str | None) -> str:
        """The locale a recipient who prefers ``preferred`` is written to: the preferred tag,
        else its language alone (``es-MX`` → ``es``), when the category has it; else the
        fallback locale."""
        if preferred:
            subtags = re.split(r"[-_]", preferred.strip())
            if _LANGUAGE.match(subtags[0]):
                language = subtags[0].lower()
                tag = "-".join([language, *(s.upper() if len(s) == 2 else s for s in subtags[1:])])
                for candidate in (tag, language):
                    if candidate in self.locales:
                        return candidate
        return self.fallback_locale


class Catalogue:
    """The categories a process knows, by code."""

    def __init__(self, categories: Iterable[Category]) -> None:
        self._by_code: dict[str, Category] = {}
        for category in categories:
            if category.code in self._by_code:
                raise InvalidCategory(f"{category.code}: declared twice")
            self._by_code[category.code] = category

    def __iter__(self) -> Iterator[Category]:
        return iter(sorted(self._by_code.values(), key=lambda category: category.code))

    def __contains__(self, code: object) -> bool:
        return code in self._by_code

    def category(self, code: str) -> Category:
        """The category ``code``; raises UnknownCategory."""
        try:
            return self._by_code[code]
        except KeyError:
            raise UnknownCategory(f"category: no category {code[:120]!r}") from None


# A welcome once an account is verified (the identity.account_notifications consumer).
ACCOUNT_WELCOME = Category(
    code="account.welcome",
    channels=(Channel.EMAIL, Channel.SMS),
    template="account_welcome",
    variables=frozenset({"first_name"}),
    locales=frozenset({"en", "es"}),
    fallback_locale="en",
    description="A welcome to a newly verified account.",
)

CATALOGUE = Catalogue([ACCOUNT_WELCOME])
