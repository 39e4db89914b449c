"""Rate limits: fixed windows of at most ``limit`` hits, and a backoff per destination."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta

import attrs

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The smallest IPv6 block a subscriber is given: one client for the limits, whichever of its
# 2^64 addresses it sends from.
CLIENT_PREFIX_V6 = 64


# Providers known to ignore dots in the local part, and the domain each delivers as.
_DOTLESS = {"gmail.com": "gmail.com", "googlemail.com": "gmail.com"}


def inbox_of(address: str) -> str:
    """The inbox an e-mail address reaches, for pacing: without a ``+tag``, and without dots
    for providers known to ignore them. A message still goes to the address as given."""
    local, at, domain = address.rpartition("@")
    if not at:
        return address
    local = local.split("+", 1)[0] or local
    if domain in _DOTLESS:
        domain = _DOTLESS[domain]
        local = local.replace(".", "") or local
    return f"{local}@{domain}"


def client_block(address: str) -> str:
    """The client a limit counts: an IPv4 address (an IPv4-mapped IPv6 one as IPv4), the /64
    of an IPv6 address, or the text as given when it is no address (a socket path, unknown)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, CLIENT_PREFIX_V6), strict=False))
    return str(ip)


@attrs.frozen(kw_only=True)
class RateLimit:
    """At most ``limit`` hits in each fixed window of length ``window``."""

    limit: int
    window: timedelta

    def __attrs_post_init__(self) -> None:
        if self.limit < 1 or self.window <= timedelta(0):
            raise ValueError("a rate limit allows at least one hit in a positive window")

    def window_start(self, now: datetime) -> datetime:
        """The start of the window ``now`` falls in (windows are aligned to the epoch)."""
        elapsed = (now - _EPOCH) // self.window
        return _EPOCH + elapsed * self.window

    def retry_after(self, *, hits: int, now: datetime) -> timedelta | None:
        """None if the ``hits``-th hit of this window is allowed, else the wait until the next."""
        if hits <= self.limit:
            return None
        return self.window_start(now) + self.window - now


@attrs.frozen(kw_only=True)
class Backoff:
    """A pace per destination: sends are spaced, never blocked for long.

    After the n-th send of a streak the next one waits ``min(max_wait, first_wait * 2**(n-1))``;
    a streak ends after ``quiet`` without a send. With the defaults one mailbox gets at most
    five sends in fifteen minutes (at 0, 1, 3, 7 and 12 minutes), then one every five, and
    whoever asks, its owner never waits more than five minutes for the next one.
    """

    first_wait: timedelta = timedelta(minutes=1)
    max_wait: timedelta = timedelta(minutes=5)
    quiet: timedelta = timedelta(minutes=15)

    def __attrs_post_init__(self) -> None:
        if not timedelta(0) <= self.first_wait <= self.max_wait or self.quiet <= timedelta(0):
            raise ValueError("a backoff's first wait is between zero and its longest wait")

    def wait_after(self, sends: int) -> timedelta:
        """How long the next send waits after the ``sends``-th send of a streak."""
        doubled: timedelta = self.first_wait * 2 ** min(sends - 1, 30)
        return min(self.max_wait, doubled)

    def streak_ended(self, *, last_sent_at: datetime, now: datetime) -> bool:
        """Whether a send at ``now`` starts a new streak (the destination was quiet long enough)."""
        return now >= last_sent_at + self.quiet
