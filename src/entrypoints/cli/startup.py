"""How every ``outboxctl`` command starts: settings read whole, logging set up, warnings said."""

from __future__ import annotations

import os

import structlog

from entrypoints.cli.guard import run_guarded
from entrypoints.observability import configure_logging
from entrypoints.settings.tree import Settings, load_settings


def start(*, providers: bool = False) -> Settings:
    """The settings (exit 3 listing every bad variable), with logging configured from them.

    ``providers`` also reads the provider settings (processes that send). The tree's
    start-up warnings (an unset link base URL in production…) are logged here, once.
    """
    settings = run_guarded(lambda: load_settings(os.environ, providers=providers))
    configure_logging(settings.log_format, settings.log_level, development=settings.is_development)
    log = structlog.get_logger()
    for warning in settings.warnings:
        log.warning("settings.warning", logger="outbox", detail=warning)
    return settings
