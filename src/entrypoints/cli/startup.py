"""How every ``outboxctl`` command starts: settings read whole, logging set up, warnings said."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from outbox.entrypoints.cli.guard import run_guarded
from outbox.entrypoints.observability import configure_logging
from outbox.entrypoints.settings.reader import SettingsError, SettingsProblems
from outbox.entrypoints.settings.tree import Settings, load_settings

if TYPE_CHECKING:  # the checks load with the long-running commands that name their needs
    from outbox.entrypoints.bootstrap.preflight import Needs


def start(
    *,
    providers: bool | Callable[[Settings], bool] = False,
    needs: Callable[[Settings], Needs] | None = None,
) -> Settings:
    """The settings (exit 3 listing every bad variable), with logging configured from them.

    ``providers`` also reads the provider settings (processes that send); given a function,
    they are read when it says so of the rest of the settings (a worker whose lanes send).
    ``needs`` names what the process will reach once it runs (its database URLs, the seal
    keys): anything missing or bad there is named in the same round as the settings.
    The tree's start-up warnings (an unset link base URL in production…) are logged here, once.
    """

    def read() -> Settings:
        if isinstance(providers, bool):
            return load_settings(os.environ, providers=providers)
        try:
            settings = load_settings(os.environ)
        except SettingsError:
            # Refused anyway: read the providers too, so every bad variable is named at once.
            return load_settings(os.environ, providers=True)
        return load_settings(os.environ, providers=True) if providers(settings) else settings

    def load() -> Settings:
        if needs is None:
            return read()
        from outbox.entrypoints.bootstrap.preflight import problems_of  # noqa: PLC0415

        try:
            settings = read()
        except SettingsError as error:
            try:
                base = load_settings(os.environ)
            except SettingsError:
                raise error from None
            later = needs(base).problems(base)
            if later:
                raise SettingsProblems([*problems_of(error), *later]) from None
            raise
        found = needs(settings).problems(settings)
        if found:
            raise SettingsProblems(found)
        return settings

    settings = run_guarded(load)
    configure_logging(settings.log_format, settings.log_level, development=settings.is_development)
    log = structlog.get_logger()
    for warning in settings.warnings:
        log.warning("settings.warning", logger="outbox", detail=warning)
    return settings
