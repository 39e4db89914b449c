"""What every console page is handed: the services, the sessions and how cookies are set."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import attrs

from outbox.application.identity.services import IdentityServices
from outbox.application.operator.console_services import ConsoleServices
from outbox.application.operator.services import OperatorServices
from outbox.entrypoints.http.console.sessions import COOKIE, SECURE_COOKIE, ConsoleSessions

PREFIX = "/console"


@attrs.frozen(kw_only=True)
class Console:
    """The console's parts, built once by the composition root.

    ``secure`` says the console is reached over https (a configured origin): cookies are
    then Secure and ``__Host-`` prefixed.
    """

    identity: IdentityServices
    operator: OperatorServices
    services: ConsoleServices
    sessions: ConsoleSessions
    clock: Callable[[], datetime]
    secure: bool = False
    origin: str | None = None  # the configured https origin (OUTBOX_CONSOLE_ORIGIN)

    @property
    def cookie(self) -> str:
        """The session cookie's name."""
        return SECURE_COOKIE if self.secure else COOKIE
