"""``outboxctl providers list|pause|resume``: the break-glass path to provider pauses.

The console pauses a provider with a staff member's step-up, and step-up codes are outbox
messages: with the email provider paused, no code can arrive. The database operator can
always list, pause and resume providers here, in a staff member's name, audited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from outbox.application.operator.pause_provider import ProviderCommand
from outbox.entrypoints.cli.operator_run import run_operator
from outbox.entrypoints.cli.options import AsJson, Reason, StaffEmail
from outbox.entrypoints.cli.output import print_json, print_table, short_time, table
from outbox.entrypoints.wire.providers import ProviderChangeView, ProviderPausesView

if TYPE_CHECKING:  # the services' module loads with the command that runs them
    from outbox.application.operator.services import OperatorServices

providers_app = typer.Typer(
    help="List, pause and resume providers (the database operator's break-glass). Audited.",
    no_args_is_help=True,
)

Provider = Annotated[str, typer.Argument(help="The provider's name: console, smtp, ses, …")]


@providers_app.command("list")
def list_(as_json: AsJson = False) -> None:
    """The paused providers: who paused each, when and why."""
    rows = run_operator(lambda services: services.pauses.pauses(actor=None))
    if as_json:
        print_json(ProviderPausesView.of(rows))
        return
    if not rows:
        typer.echo("no provider is paused: every worker sends through every provider")
        return
    # The staff member's id first: an id is never cut (it is copied into the next command).
    rows_table = table("Paused by", "Provider", "Paused at (UTC)", "Reason", ids=1, words=(1,))
    for row in rows:
        rows_table.add_row(str(row.paused_by), row.provider, short_time(row.paused_at), row.reason)
    print_table(rows_table)


def _change(provider: str, staff: str, reason: str, *, pause: bool) -> ProviderChangeView:
    async def act(services: OperatorServices) -> bool:
        actor = await services.resolve_staff_member(staff)
        command = ProviderCommand(actor=actor, provider=provider, reason=reason)
        use = services.pause_provider if pause else services.resume_provider
        return await use(command)

    changed = run_operator(act)
    return ProviderChangeView(provider=provider.strip(), paused=pause, changed=changed)


@providers_app.command("pause")
def pause(provider: Provider, staff: StaffEmail, reason: Reason, as_json: AsJson = False) -> None:
    """Stop every worker sending through PROVIDER; its messages wait, no attempt spent."""
    change = _change(provider, staff, reason, pause=True)
    if as_json:
        print_json(change)
        return
    typer.echo(
        f"paused {change.provider}" if change.changed else f"{change.provider} was already paused"
    )


@providers_app.command("resume")
def resume(provider: Provider, staff: StaffEmail, reason: Reason, as_json: AsJson = False) -> None:
    """Let every worker send through PROVIDER again."""
    change = _change(provider, staff, reason, pause=False)
    if as_json:
        print_json(change)
        return
    typer.echo(
        f"resumed {change.provider}" if change.changed else f"{change.provider} was not paused"
    )
