"""``outboxctl staff grant|revoke EMAIL``: who may use the staff routes and repair commands;
``outboxctl staff step-up EMAIL``: break glass when no step-up code can arrive."""

from __future__ import annotations

from typing import Annotated

import typer

from outbox.application.operator.break_glass_step_up import BreakGlassCommand
from outbox.application.operator.grant_staff import GrantStaffCommand
from outbox.application.operator.revoke_staff import RevokeStaffCommand
from outbox.entrypoints.cli.operator_run import run_operator
from outbox.entrypoints.cli.options import AsJson, Reason
from outbox.entrypoints.cli.output import print_json

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


@staff_app.command("step-up")
def step_up(email: Email, reason: Reason, as_json: AsJson = False) -> None:
    """Break glass: open EMAIL's step-up with a code printed here, never sent. For when no
    code can arrive (the email provider paused or down) and the console, which would resume
    it, needs a step-up. Read the code to the staff member, who signs in to the console and
    types it on the step-up page within its lifetime. Audited with the reason."""
    code = run_operator(
        lambda services: services.break_glass_step_up(BreakGlassCommand(email=email, reason=reason))
    )
    if as_json:
        print_json(
            {
                "identityId": str(code.identity_id),
                "code": code.code,
                "expiresAt": code.expires_at.isoformat(),
            }
        )
        return
    typer.echo(f"step-up code for identity {code.identity_id}: {code.code}")
    typer.echo(
        f"valid until {code.expires_at:%Y-%m-%d %H:%M:%S} UTC: type it on the console's step-up"
        " page (it was not sent anywhere; this was audited)",
        err=True,
    )
