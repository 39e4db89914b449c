"""``outboxctl doctor``, wired: the health readings on the database operator's connection."""

from __future__ import annotations

from outbox.adapters.postgres.health_readings import PostgresHealthReadings
from outbox.application.operator.doctor import CheckHealth, HealthReport
from outbox.domain.operator.doctor import Thresholds
from outbox.entrypoints.bootstrap.database import DatabaseAccess, database_pool
from outbox.entrypoints.settings.tree import Settings


async def check_health(settings: Settings, thresholds: Thresholds) -> HealthReport:
    """Read the database's health as the database operator and diagnose it."""
    async with database_pool(settings, DatabaseAccess.OPERATOR) as pool:
        return await CheckHealth(readings=PostgresHealthReadings(pool), thresholds=thresholds)()
