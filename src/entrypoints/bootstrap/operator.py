"""The operator surfaces (staff HTTP routes and outboxctl), wired from settings."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from uuid import UUID

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from adapters.crypto.hashing import Argon2idHasher
from adapters.postgres.identity_transactions import PostgresIdentityTransactions
from adapters.postgres.operator_store import PostgresBacklogGauge, PostgresOperatorStore
from adapters.postgres.pool import open_pool
from adapters.system.clock import SystemClock
from adapters.system.ids import Uuid7Ids
from adapters.system.secrets import SystemSecrets
from application.identity.challenge_issuer import ChallengeIssuer
from application.operator.grant_staff import GrantStaff
from application.operator.list_dead_letters import ListDeadLetters
from application.operator.observe_backlog import ObserveBacklog
from application.operator.reissue_dead_letter import ReissueDeadLetter
from application.operator.requeue_dead_letter import RequeueDeadLetter
from application.operator.require_elevation import RequireElevation
from application.operator.resolve_staff_member import ResolveStaffMember
from application.operator.revoke_staff import RevokeStaff
from application.operator.services import OperatorServices
from application.operator.show_backlog import ShowBacklog
from application.operator.show_message import ShowMessage
from application.ports import Clock, Ids, Sealer, SecretHasher, SecretSource, Telemetry
from domain.identity.challenges import ChallengePolicy
from domain.purposes import Purpose
from entrypoints.bootstrap.database import api_role, resolve_database_url
from entrypoints.identity_settings import load_identity_settings
from entrypoints.observability import build_telemetry, new_registry
from entrypoints.seal_keys import load_sealer
from entrypoints.settings import Settings

# --- Operator surfaces (staff HTTP routes and outboxctl) ------------------------------------
# build_operator_services wires the operator use cases over one pool. On the API pool (role
# outbox_runtime) every call names a staff member, checked by the database; operator_services
# opens outboxctl's pool on the configured URL without SET ROLE: the database operator (a
# member of outbox_owner) may read with no staff identity and grant or revoke staff.


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
) -> OperatorServices:
    """Every operator use case over ``pool``; reissued codes follow ``challenges``."""
    store = PostgresOperatorStore(pool)
    issuer = ChallengeIssuer(
        secrets=secret_source, hasher=hasher, sealer=sealer, ids=ids, policy=challenges
    )
    return OperatorServices(
        show_backlog=ShowBacklog(store=store),
        list_dead_letters=ListDeadLetters(store=store),
        show_message=ShowMessage(store=store),
        requeue_dead_letter=RequeueDeadLetter(store=store, ids=ids, telemetry=telemetry),
        reissue_dead_letter=ReissueDeadLetter(store=store, issuer=issuer, telemetry=telemetry),
        grant_staff=GrantStaff(store=store, telemetry=telemetry),
        revoke_staff=RevokeStaff(store=store, telemetry=telemetry),
        resolve_staff_member=ResolveStaffMember(store=store),
        require_elevation=RequireElevation(
            transactions=PostgresIdentityTransactions(pool), clock=clock
        ),
        observe_backlog=ObserveBacklog(gauge=PostgresBacklogGauge(pool), telemetry=telemetry),
        telemetry=telemetry,
    )


class _KeysNotLoaded:
    """The sealer of operator commands that never seal: they need no outbox key at all."""

    # The arguments are the Sealer port's; a command that never seals never calls either.
    def seal(self, *, message_id: UUID, purpose: Purpose, plaintext: str) -> str:  # noqa: ARG002
        """Refuse: the keys were not loaded."""
        raise RuntimeError("this command was started without the outbox keys")

    def open(self, *, message_id: UUID, purpose: Purpose, envelope: str) -> str:  # noqa: ARG002
        """Refuse: the keys were not loaded."""
        raise RuntimeError("this command was started without the outbox keys")


@contextlib.asynccontextmanager
async def operator_services(
    settings: Settings, *, seal_keys: bool = False, telemetry: Telemetry | None = None
) -> AsyncIterator[OperatorServices]:
    """``outboxctl``'s operator services on the database operator's own connection.

    ``seal_keys`` loads the outbox keys (a reissue seals a new code); without it no key is
    read. Raises SettingsError naming a bad variable, StoreUnavailable if the database is down.
    """
    identity = load_identity_settings(settings.environ)
    telemetry = telemetry or build_telemetry(new_registry(process_metrics=False))
    sealer: Sealer = (
        load_sealer(
            settings,
            warn=lambda text: telemetry.event("keys.warning", level="warning", detail=text),
        )
        if seal_keys
        else _KeysNotLoaded()
    )
    pool = await open_pool(
        resolve_database_url(settings),
        min_size=1,
        max_size=2,
        prepared_statements=settings.database.prepared_statements,
    )
    try:
        yield build_operator_services(
            pool=pool,
            sealer=sealer,
            hasher=Argon2idHasher(),
            clock=SystemClock(),
            ids=Uuid7Ids(),
            secret_source=SystemSecrets(),
            telemetry=telemetry,
            challenges=identity.challenges,
        )
    finally:
        await pool.close()


@contextlib.asynccontextmanager
async def staff_api_services(
    settings: Settings, *, telemetry: Telemetry
) -> AsyncIterator[OperatorServices]:
    """The staff routes' services on a small pool of their own, acting as the API role.

    Every call names the signed-in staff member; the database refuses anyone else.
    """
    identity = load_identity_settings(settings.environ)
    # The API's own services already warned about a development key; once is enough.
    sealer = load_sealer(settings, warn=lambda _: None)
    pool = await open_pool(
        resolve_database_url(settings),
        min_size=1,
        max_size=4,
        prepared_statements=settings.database.prepared_statements,
        role=api_role(settings),
    )
    try:
        yield build_operator_services(
            pool=pool,
            sealer=sealer,
            hasher=Argon2idHasher(),
            clock=SystemClock(),
            ids=Uuid7Ids(),
            secret_source=SystemSecrets(),
            telemetry=telemetry,
            challenges=identity.challenges,
        )
    finally:
        await pool.close()
