"""The operator surfaces (staff HTTP routes and outboxctl), wired from settings."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.console_store import PostgresConsoleStore, PostgresPausedProviders
from outbox.adapters.postgres.consumer_store import PostgresConsumerAdmin
from outbox.adapters.postgres.event_operator_store import (
    PostgresEventBacklogGauge,
    PostgresEventCatalog,
    PostgresEventOperatorStore,
)
from outbox.adapters.postgres.health_readings import PostgresHealthReadings
from outbox.adapters.postgres.identity_transactions import PostgresIdentityTransactions
from outbox.adapters.postgres.message_log import PostgresMessageLog
from outbox.adapters.postgres.operator_store import PostgresBacklogGauge, PostgresOperatorStore
from outbox.adapters.postgres.receipt_store import PostgresReceiptStore, PostgresSuppressionStore
from outbox.application.delivery.copy_routes import ChannelRoutes, CopyRouter
from outbox.application.delivery.observe_delivery_states import ObserveDeliveryStates
from outbox.application.delivery.operations import MessageOperations
from outbox.application.events.consumer_operations import ConsumerOperations
from outbox.application.events.operations import EventOperations
from outbox.application.identity.challenge_issuer import ChallengeIssuer
from outbox.application.operator.break_glass_step_up import BreakGlassStepUp
from outbox.application.operator.console_services import ConsoleServices
from outbox.application.operator.doctor import CheckHealth, ObserveHealth
from outbox.application.operator.grant_staff import GrantStaff
from outbox.application.operator.pause_provider import PauseProvider, ResumeProvider
from outbox.application.operator.reissue_dead_letter import ReissueDeadLetter
from outbox.application.operator.repair_matching_messages import RepairMatchingMessages
from outbox.application.operator.require_elevation import RequireElevation
from outbox.application.operator.resolve_staff_member import ResolveStaffMember
from outbox.application.operator.revoke_staff import RevokeStaff
from outbox.application.operator.services import OperatorServices
from outbox.application.operator.show_console_overview import ShowConsoleOverview
from outbox.application.ports import Clock, Ids, Sealer, SecretHasher, SecretSource, Telemetry
from outbox.domain.identity.challenges import ChallengePolicy
from outbox.entrypoints.bootstrap.database import DatabaseAccess, database_pool
from outbox.entrypoints.bootstrap.parts import ProcessParts, build_process_parts
from outbox.entrypoints.settings.tree import Settings

# --- Operator surfaces (staff HTTP routes and outboxctl) ------------------------------------
# build_operator_services wires the operator use cases over one pool. On the API pool (role
# identity_service) every call names a staff member and the elevation they presented, both
# checked by the database; operator_services opens outboxctl's pool on the configured URL
# without SET ROLE: the database operator (a member of outbox_owner) may read with no staff
# identity, act in a staff member's name, and grant or revoke staff.


def build_operator_services(
    *,
    pool: AsyncConnectionPool[AsyncConnection],
    sealer: Sealer,
    hasher: SecretHasher,
    clock: Clock,
    ids: Ids,
    secret_source: SecretSource,
    telemetry: Telemetry,
    challenges: ChallengePolicy,
    routes: ChannelRoutes | None = None,
) -> OperatorServices:
    """Every operator use case over ``pool``; reissued codes follow ``challenges``, and a
    reissue or requeue is refused for a channel ``routes`` say no provider sends."""
    store = PostgresOperatorStore(pool)
    console = PostgresConsoleStore(pool)
    router = CopyRouter(routes=routes or ChannelRoutes(), pauses=console)
    issuer = ChallengeIssuer(
        secrets=secret_source, hasher=hasher, sealer=sealer, ids=ids, policy=challenges
    )
    return OperatorServices(
        messages=MessageOperations(
            store=store,
            log=PostgresMessageLog(pool),  # the database operator's reads; the API never calls them
            search=console,
            suppressions=PostgresSuppressionStore(pool),
            gauge=PostgresBacklogGauge(pool),
            ids=ids,
            telemetry=telemetry,
            router=router,
        ),
        reissue_dead_letter=ReissueDeadLetter(
            store=store, issuer=issuer, telemetry=telemetry, router=router
        ),
        grant_staff=GrantStaff(store=store, telemetry=telemetry),
        revoke_staff=RevokeStaff(store=store, telemetry=telemetry),
        resolve_staff_member=ResolveStaffMember(store=store),
        require_elevation=RequireElevation(
            transactions=PostgresIdentityTransactions(pool), clock=clock
        ),
        events=build_event_operator_services(pool=pool, ids=ids, telemetry=telemetry),
        telemetry=telemetry,
        observe_delivery_states=ObserveDeliveryStates(
            gauge=PostgresReceiptStore(pool), telemetry=telemetry
        ),
        pause_provider=PauseProvider(store=console, telemetry=telemetry),
        resume_provider=ResumeProvider(store=console, telemetry=telemetry),
        pauses=console,
        consumers=ConsumerOperations(admin=PostgresConsumerAdmin(pool), telemetry=telemetry),
        workers=console,
        break_glass_step_up=BreakGlassStepUp(
            store=store, issuer=issuer, clock=clock, telemetry=telemetry
        ),
        observe_health=ObserveHealth(
            check=CheckHealth(readings=PostgresHealthReadings(pool)), telemetry=telemetry
        ),
    )


def build_event_operator_services(
    *, pool: AsyncConnectionPool[AsyncConnection], ids: Ids, telemetry: Telemetry
) -> EventOperations:
    """The operator use cases over the tenant events outbox, over ``pool``."""
    return EventOperations(
        store=PostgresEventOperatorStore(pool),
        gauge=PostgresEventBacklogGauge(pool),
        catalog=PostgresEventCatalog(pool),
        ids=ids,
        telemetry=telemetry,
    )


def channel_routes(settings: Settings) -> ChannelRoutes:
    """Which provider sends each channel, as ``OUTBOX_CHANNEL_*`` say (read by every process,
    so the admin listener and outboxctl refuse a copy the worker could not send)."""
    return ChannelRoutes(settings.channels)


def staff_operator_services(
    parts: ProcessParts,
    pool: AsyncConnectionPool[AsyncConnection],
    settings: Settings,
) -> OperatorServices:
    """The staff routes' services over the API pool (role ``identity_service``).

    Every call names the signed-in staff member and their elevation; the database refuses
    anyone else.
    """
    return build_operator_services(
        pool=pool,
        sealer=parts.sealer,
        hasher=parts.hasher,
        clock=parts.clock,
        ids=parts.ids,
        secret_source=parts.secret_source,
        telemetry=parts.telemetry,
        challenges=settings.identity.challenges,
        routes=channel_routes(settings),
    )


@contextlib.asynccontextmanager
async def operator_services(
    settings: Settings, *, seal_keys: bool = False, telemetry: Telemetry | None = None
) -> AsyncIterator[OperatorServices]:
    """``outboxctl``'s operator services on the database operator's own connection.

    ``seal_keys`` loads the outbox keys (a reissue seals a new code); without it no key is
    read. Raises SettingsError naming a bad variable, StoreUnavailable if the database is down.
    """
    parts = build_process_parts(
        settings, seal_keys=seal_keys, telemetry=telemetry, process_metrics=False
    )
    async with database_pool(settings, DatabaseAccess.OPERATOR) as pool:
        yield staff_operator_services(parts, pool, settings)


def build_console_services(
    *,
    pool: AsyncConnectionPool[AsyncConnection],
    operator: OperatorServices,
    clock: Clock,
) -> ConsoleServices:
    """The operator console's use cases over the API pool (role ``identity_service``)."""
    console = PostgresConsoleStore(pool)
    store = PostgresOperatorStore(pool)
    return ConsoleServices(
        overview=ShowConsoleOverview(
            store=store,
            events=PostgresEventOperatorStore(pool),
            reads=console,
            pauses=console,
            consumers=PostgresConsumerAdmin(pool),
            delivery=PostgresReceiptStore(pool),
        ),
        repair_matching=RepairMatchingMessages(
            search=operator.messages.list_messages,
            reissue=operator.reissue_dead_letter,
            requeue=operator.messages.requeue_dead_letter,
            clock=clock,
            router=operator.reissue_dead_letter.router,
        ),
        reads=console,
        paused=PostgresPausedProviders(pool),
    )
