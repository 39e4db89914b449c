"""The operator console, wired from settings, and the rule for where it may listen."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from datetime import datetime

from outbox.application.identity.services import IdentityServices
from outbox.application.operator.console_services import ConsoleServices
from outbox.application.operator.services import OperatorServices
from outbox.entrypoints.http.console.context import Console
from outbox.entrypoints.http.console.sessions import ConsoleSessions
from outbox.entrypoints.settings.reader import PREFIX, SettingsError
from outbox.entrypoints.settings.tree import ConsoleSettings, Settings


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_console_exposure(settings: Settings) -> None:
    """Refuse to serve the console beyond loopback without staff authentication over https.

    Staff sign in to the console with their password and a step-up code, and its session
    cookie must then travel only over TLS: on a non-loopback admin address the console needs
    its https origin (OUTBOX_CONSOLE_ORIGIN), or must be turned off (OUTBOX_CONSOLE=off).
    Raises SettingsError naming OUTBOX_CONSOLE_ORIGIN.
    """
    console, host = settings.http.console, settings.http.admin_host
    if not console.enabled or is_loopback(host):
        return
    if console.origin is not None and console.origin.startswith("https://"):
        return
    raise SettingsError(
        PREFIX + "CONSOLE_ORIGIN",
        f"the operator console would listen on {host}, beyond loopback, without staff"
        " authentication over https; set it to the https:// address staff reach the admin"
        " listener at (TLS in front), or set OUTBOX_CONSOLE=off",
    )


def build_console(
    settings: ConsoleSettings,
    *,
    identity: IdentityServices,
    operator: OperatorServices,
    services: ConsoleServices,
    clock: Callable[[], datetime],
) -> Console:
    """The console's parts; its sessions live in this process."""
    return Console(
        identity=identity,
        operator=operator,
        services=services,
        sessions=ConsoleSessions(clock, idle=settings.idle, lifetime=settings.lifetime),
        clock=clock,
        secure=settings.origin is not None and settings.origin.startswith("https://"),
        origin=settings.origin,
    )
