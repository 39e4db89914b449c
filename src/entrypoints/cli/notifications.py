"""``outboxctl notifications categories|show|consent``: the notifications catalogue, an
intent's frozen snapshots, and recipients' consent, as the database operator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar
from uuid import UUID

import typer

from outbox.application.notifications.errors import UnknownRecipient
from outbox.domain.channels import Channel
from outbox.domain.notifications.catalogue import CATALOGUE, UnknownCategory
from outbox.domain.notifications.snapshots import Intent, IntentSource, InvalidIntent
from outbox.entrypoints.bootstrap.notifications import NotificationsAdmin, notifications_admin
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail
from outbox.entrypoints.cli.operator_run import operator_guarded
from outbox.entrypoints.cli.options import AsJson
from outbox.entrypoints.cli.output import lines, print_json, print_table, short_time, table
from outbox.entrypoints.cli.startup import start
from outbox.entrypoints.wire.notifications import (
    CategoriesView,
    CategoryView,
    IntentView,
    OptOutsView,
    TakenListView,
)

_T = TypeVar("_T")

notifications_app = typer.Typer(
    help="The notifications catalogue: categories, an intent's snapshots, consent.",
    no_args_is_help=True,
)
consent_app = typer.Typer(
    help="A recipient's opt-outs, per category and channel.", no_args_is_help=True
)
notifications_app.add_typer(consent_app, name="consent")

Recipient = Annotated[UUID, typer.Argument(help="The recipient's id (an account's id).")]
Category = Annotated[str, typer.Argument(help="The category's code, e.g. account.welcome.")]
Channels = Annotated[
    list[Channel] | None,
    typer.Option("--channel", help="A channel (repeat it); default: every channel of it."),
]


def _run(action: Callable[[NotificationsAdmin], Awaitable[_T]]) -> _T:
    settings = start()

    async def main() -> _T:
        async with notifications_admin(settings) as admin:
            return await action(admin)

    with operator_guarded():
        try:
            return asyncio.run(main())
        except UnknownCategory as error:
            raise fail(f"not found: {error}", ExitCode.NOT_FOUND) from None
        except UnknownRecipient:
            raise fail(
                "not found: no recipient has this id (an account with a verified identifier)",
                ExitCode.NOT_FOUND,
            ) from None


@notifications_app.command("categories")
def categories(as_json: AsJson = False) -> None:
    """Every category of the catalogue: its channels, template and locales."""
    items = [CategoryView.of(c) for c in CATALOGUE]
    if as_json:
        print_json(CategoriesView(items=items))
        return
    built = table("Category\nTemplate", "Channels", "Locales\nFallback", "Description")
    for item in items:
        built.add_row(
            lines(item.code, item.template),
            lines(*item.channels),
            lines(", ".join(item.locales), item.fallback_locale),
            lines(item.description),
        )
    print_table(built)


@notifications_app.command("show")
def show(
    some_id: Annotated[
        UUID, typer.Argument(help="An intent's id, or a delivery's (its snapshot's or message's).")
    ],
    as_json: AsJson = False,
) -> None:
    """An intent and its frozen snapshots: per channel, the masked destination, template,
    locale, the consent decision (send or suppressed_by_consent) and its message's state."""
    view = _run(lambda admin: admin.reader.find(some_id))
    if view is None:
        raise fail("not found: no notification intent or delivery has this id", ExitCode.NOT_FOUND)
    first = view.snapshots[0]
    if as_json:
        print_json(IntentView.of(view.snapshots, view.message_states))
        return
    typer.echo(f"intent {first.intent_id} ({first.source.value}, {first.intent_key})")
    typer.echo(f"category {first.category}, recipient {first.recipient_id}")
    built = table(
        "Delivery",
        "Channel\nDestination",
        "Template\nLocale",
        "Decision\nMessage",
        ids=1,
        words=(1, 3),
    )
    for s, state in zip(view.snapshots, view.message_states, strict=True):
        built.add_row(
            lines(str(s.id)),
            lines(s.channel.value, s.masked_destination),
            lines(s.template, s.locale),
            lines(s.decision.value, state or "-"),
        )
    print_table(built)


@notifications_app.command("request")
def request(
    recipient: Recipient,
    category: Category,
    key: Annotated[
        str,
        typer.Option(
            "--key",
            help="Names this request (stored as staff:KEY): the same key and recipient never"
            " notify twice.",
        ),
    ],
    variable: Annotated[
        list[str] | None,
        typer.Option("--var", help="A template variable, NAME=VALUE (repeat it); never a secret."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Ask for a notification of CATEGORY to RECIPIENT as staff: its snapshots are taken now
    (consent applied) and its messages enqueued, in one transaction."""
    variables: dict[str, str] = {}
    for pair in variable or ():
        name, separator, value = pair.partition("=")
        if not separator:
            raise fail(f"--var: expected NAME=VALUE, got {name[:64]!r}", ExitCode.USAGE)
        variables[name] = value
    try:
        intent = Intent(
            key=f"staff:{key}",
            category=category,
            recipient_id=recipient,
            source=IntentSource.STAFF,
            variables=variables,
        )
    except InvalidIntent as error:
        raise fail(str(error), ExitCode.USAGE) from None
    taken = _run(lambda admin: admin.request(intent))
    if as_json:
        print_json(TakenListView.of(taken))
        return
    if not taken:
        typer.echo("nothing to send: the recipient has no address on the category's channels")
        return
    for t in taken:
        state = "new" if t.created else "asked before"
        typer.echo(f"{t.snapshot_id}  {t.channel.value}  {t.decision.value}  ({state})")


@consent_app.command("list")
def list_opt_outs(recipient: Recipient, as_json: AsJson = False) -> None:
    """The recipient's opt-outs."""
    rows = _run(lambda admin: admin.consent.opt_outs(recipient))
    if as_json:
        print_json(OptOutsView.of(recipient, rows))
        return
    if not rows:
        typer.echo("no opt-out: every category is sent")
        return
    built = table("Category", "Channel", "Opted out at")
    for row in rows:
        built.add_row(
            lines(row.category), lines(row.channel.value), lines(short_time(row.opted_out_at))
        )
    print_table(built)


@consent_app.command("opt-out")
def opt_out(
    recipient: Recipient, category: Category, channel: Channels = None, as_json: AsJson = False
) -> None:
    """Opt the recipient out of the category: snapshots taken from now on suppress it."""
    changed = _run(lambda admin: admin.consent.opt_out(recipient, category, channel or ()))
    if as_json:
        print_json({"recipientId": recipient, "category": category, "optedOut": changed})
        return
    typer.echo(f"{changed} new opt-out(s) of {category} for {recipient}")


@consent_app.command("opt-in")
def opt_in(
    recipient: Recipient, category: Category, channel: Channels = None, as_json: AsJson = False
) -> None:
    """Lift the recipient's opt-outs of the category (snapshots already taken keep theirs)."""
    changed = _run(lambda admin: admin.consent.opt_in(recipient, category, channel or ()))
    if as_json:
        print_json({"recipientId": recipient, "category": category, "optedIn": changed})
        return
    typer.echo(f"{changed} opt-out(s) of {category} lifted for {recipient}")
