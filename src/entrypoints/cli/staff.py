"""``outboxctl staff grant|revoke EMAIL``: who may use the staff routes and repair commands."""

from __future__ import annotations

from typing import Annotated

import typer

from outbox.application.operator.grant_staff import GrantStaffCommand
from outbox.application.operator.revoke_staff import RevokeStaffCommand
from outbox.entrypoints.cli.operator_run import run_operator

staff_app = typer.Typer(
    help="Grant or revoke staff membership (needs the database operator's login).",
    no_args_is_help=True,
)

Email = Annotated[str, typer.Argument(help="The verified e-mail the person signs in with.")]


@staff_app.command("grant")
def grant(email: Email) -> None:
    """Make the account of EMAIL staff: it may then read the backlog and dead letters and,
    after a step-up, reissue codes. Audited."""
    change = run_operator(lambda services: services.grant_staff(GrantStaffCommand(email=email)))
    state = "granted staff to" if change.changed else "already staff:"
    typer.echo(f"{state} identity {change.identity_id}")


@staff_app.command("revoke")
def revoke(email: Email) -> None:
    """Revoke the staff membership of EMAIL's account; its next staff call is refused. Audited."""
    change = run_operator(lambda services: services.revoke_staff(RevokeStaffCommand(email=email)))
    state = "revoked staff of" if change.changed else "not staff:"
    typer.echo(f"{state} identity {change.identity_id}")
