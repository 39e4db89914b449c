"""Runs an operator command: settings, logging, the operator services, and its errors mapped
to a message on stderr and an exit code (on top of the shared guard)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from outbox.application.delivery.errors import DeadLetterRefused
from outbox.application.errors import InvalidField, InvalidRequest, PermissionDenied
from outbox.application.events.errors import DeadLetterNotFound, EventNotFound, EventRepairRefused
from outbox.application.operator.errors import NotStaff, StaffIdentityNotFound
from outbox.application.staff import IdempotencyKeyReused, RequestInProgress, StaffRequired
from outbox.domain.delivery.dead_letters import Refusal
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail, guarded
from outbox.entrypoints.cli.startup import start

if TYPE_CHECKING:  # the services' module loads with the command that runs them
    from outbox.application.operator.services import OperatorServices

_T = TypeVar("_T")

# What each refusal means to the operator, and what to do instead.
REFUSALS: dict[Refusal, str] = {
    Refusal.NOT_DEAD_LETTERED: "the message is not dead-lettered: there is nothing to repair",
    Refusal.NOT_REISSUABLE: (
        "only one-time codes are reissued; a notification is requeued"
        " (outboxctl dead-letters requeue), an invitation or magic link is asked for again"
    ),
    Refusal.NOT_REQUEUEABLE: (
        "only notifications are requeued; reissue a one-time code with"
        " outboxctl dead-letters reissue"
    ),
    Refusal.NOT_A_DELIVERY_FAILURE: (
        "the message was withdrawn (superseded, expired, consumed or revoked), not lost:"
        " the person asks again"
    ),
    Refusal.CHALLENGE_MISSING: "its challenge no longer exists: the person starts over",
    Refusal.OWN_CHALLENGE: "it is a code of your own: ask another staff member",
    Refusal.CHALLENGE_EXPIRED: "its challenge expired: the person starts over",
    Refusal.CHALLENGE_CONSUMED: "its challenge was already confirmed: nothing to send",
    Refusal.CHALLENGE_LOCKED: "its challenge is locked after wrong codes: the person starts over",
    Refusal.NEWER_MESSAGE_EXISTS: (
        "a newer message for the same purpose already goes to this destination"
        " (outboxctl dead-letters list, outboxctl backlog)"
    ),
    Refusal.ALREADY_REQUEUED: "it was already requeued (outboxctl messages show shows the copy)",
    Refusal.NO_PROVIDER: (
        "no provider sends this message's channel (OUTBOX_CHANNEL_* says none), so a new"
        " message would dead-letter at once; nothing was changed. Configure a provider for"
        " the channel, then try again"
    ),
}


@contextmanager
def operator_guarded() -> Iterator[None]:
    """The shared guard plus the operator's own errors."""
    with guarded():
        try:
            yield
        except StaffRequired:
            raise fail(
                "refused (42501): the acting identity is not an active staff member (grant it"
                " with outboxctl staff grant EMAIL)",
                ExitCode.REFUSED,
            ) from None
        except PermissionDenied:
            raise fail(
                "refused (42501): this database login is not the database operator; run"
                " outboxctl's operator commands with the migrator's login (a member of"
                " outbox_owner) in OUTBOX_DATABASE_URL",
                ExitCode.REFUSED,
            ) from None
        except DeadLetterRefused as refused:
            raise fail(
                f"refused ({refused.refusal.value}): {REFUSALS[refused.refusal]}",
                ExitCode.REFUSED,
            ) from None
        except EventRepairRefused as refused:
            raise fail(
                f"refused (already_{refused.resolution}): the dead letter was already"
                f" {refused.resolution} (outboxctl events dead-letters shows what became of it)",
                ExitCode.REFUSED,
            ) from None
        except DeadLetterNotFound:
            raise fail(
                "not found: no tenant event dead letter has this id (outboxctl events"
                " dead-letters lists them)",
                ExitCode.NOT_FOUND,
            ) from None
        except EventNotFound:
            raise fail("not found: no tenant event has this id", ExitCode.NOT_FOUND) from None
        except IdempotencyKeyReused:
            raise fail(
                "refused: this idempotency key already named another request; use a new key",
                ExitCode.REFUSED,
            ) from None
        except RequestInProgress:
            raise fail(
                "conflict: a request with this idempotency key is running; retry in a moment",
                ExitCode.CONFLICT,
            ) from None
        except StaffIdentityNotFound:
            raise fail(
                "not found: no account has this verified e-mail address", ExitCode.NOT_FOUND
            ) from None
        except NotStaff:
            raise fail(
                "refused: this account is not an active staff member (outboxctl staff grant)",
                ExitCode.REFUSED,
            ) from None
        except InvalidField as error:
            raise fail(f"{error.field}: {error.problem}", ExitCode.USAGE) from None
        except InvalidRequest as error:
            raise fail(f"refused: {error}", ExitCode.USAGE) from None


def run_operator(
    action: Callable[[OperatorServices], Awaitable[_T]], *, seal_keys: bool = False
) -> _T:
    """Run ``action`` with the operator services; logs go to stderr, stdout stays the output."""
    settings = start()

    async def main() -> _T:
        from outbox.entrypoints.bootstrap.operator import operator_services  # noqa: PLC0415 - only this command loads it

        async with operator_services(settings, seal_keys=seal_keys) as services:
            return await action(services)

    with operator_guarded():
        return asyncio.run(main())
