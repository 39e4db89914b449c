"""How every ``outboxctl`` command starts: settings read whole, logging set up, warnings said."""

from __future__ import annotations

import os
from collections.abc import Callable

import structlog

from outbox.entrypoints.cli.guard import run_guarded
from outbox.entrypoints.observability import configure_logging
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import Settings, load_settings


def start(*, providers: bool | Callable[[Settings], bool] = False) -> Settings:
    """The settings (exit 3 listing every bad variable), with logging configured from them.

    ``providers`` also reads the provider settings (processes that send); given a function,
    they are read when it says so of the rest of the settings (a worker whose lanes send).
    The tree's start-up warnings (an unset link base URL in production…) are logged here, once.
    """

    def load() -> Settings:
        if isinstance(providers, bool):
            return load_settings(os.environ, providers=providers)
        try:
            settings = load_settings(os.environ)
        except SettingsError:
            # Refused anyway: read the providers too, so every bad variable is named at once.
            return load_settings(os.environ, providers=True)
        return load_settings(os.environ, providers=True) if providers(settings) else settings

    settings = run_guarded(load)
    configure_logging(settings.log_format, settings.log_level, development=settings.is_development)
    log = structlog.get_logger()
    for warning in settings.warnings:
        log.warning("settings.warning", logger="outbox", detail=warning)
    return settings
