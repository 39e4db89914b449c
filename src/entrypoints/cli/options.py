"""The options many ``outboxctl`` commands share, spelled and explained once."""

from __future__ import annotations

from typing import Annotated

import typer

AsJson = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
StaffEmail = Annotated[
    str,
    typer.Option(
        "--staff",
        help="The acting staff member's e-mail (recorded in the audit).",
        show_default=False,
    ),
]
Reason = Annotated[
    str,
    typer.Option(
        "--reason",
        help="Why (a ticket, a sentence; kept in the audit: never personal data).",
        show_default=False,
    ),
]
IdempotencyKey = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key",
        help="Makes a retry safe: the same key answers the first result and does nothing more.",
    ),
]
