"""The composition root: builds the application services from settings, and runs processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import TypedDict
from uuid import UUID

import attrs
from prometheus_client import CollectorRegistry
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from adapters.crypto.hashing import Argon2idHasher
from adapters.postgres.dispatch_store import PostgresDispatchStore
from adapters.postgres.embedded import EmbeddedPostgres
from adapters.postgres.identity_transactions import PostgresIdentityTransactions
from adapters.postgres.migrations import apply_migrations
from adapters.postgres.operator_store import PostgresBacklogGauge, PostgresOperatorStore
from adapters.postgres.pool import open_pool
from adapters.postgres.rate_limiter import PostgresRateLimiter
from adapters.postgres.readiness import PostgresReadinessProbe
from adapters.postgres.work_listener import WorkListener
from adapters.system.clock import SystemClock
from adapters.system.ids import Uuid7Ids
from adapters.system.secrets import SystemSecrets
from adapters.templates.renderer import JinjaRenderer
from application.accept_invitation import AcceptInvitation
from application.authenticate_bearer import AuthenticateBearer
from application.challenge_answers import ChallengeAnswers
from application.challenge_issuer import ChallengeIssuer
from application.check_readiness import CheckReadiness
from application.confirm_password_recovery import ConfirmPasswordRecovery
from application.confirm_sign_in_method import ConfirmSignInMethod
from application.confirm_sign_up import ConfirmSignUp
from application.confirm_step_up import ConfirmStepUp
from application.create_organization import CreateOrganization
from application.dispatch_due_messages import DispatchDueMessages, DispatchResult
from application.grant_staff import GrantStaff
from application.identity_ports import IdentityTransactions, SecretSource
from application.identity_services import IdentityServices
from application.invite_member import InviteMember
from application.links import LinkBases
from application.list_dead_letters import ListDeadLetters
from application.observe_backlog import ObserveBacklog
from application.operator_services import OperatorServices
from application.ports import (
    Clock,
    DeliveryProvider,
    DispatchStore,
    Ids,
    Sealer,
    SecretHasher,
    Telemetry,
)
from application.provider_breaker import ProviderBreaker
from application.purge_retained_messages import PurgeRetainedMessages
from application.redeem_magic_link import RedeemMagicLink
from application.reissue_dead_letter import ReissueDeadLetter
from application.request_limits import RequestLimits
from application.request_magic_link import RequestMagicLink
from application.request_password_recovery import RequestPasswordRecovery
from application.request_sign_in_method import RequestSignInMethod
from application.request_sign_up import RequestSignUp
from application.request_step_up import RequestStepUp
from application.requeue_dead_letter import RequeueDeadLetter
from application.require_elevation import RequireElevation
from application.resolve_staff_member import ResolveStaffMember
from application.revoke_invitation import RevokeInvitation
from application.revoke_staff import RevokeStaff
from application.show_backlog import ShowBacklog
from application.show_message import ShowMessage
from application.sign_in import SessionStarter, SignIn
from application.sweep_expired_messages import SweepExpiredMessages
from domain.challenges import ChallengePolicy
from domain.channels import Channel
from domain.purposes import Purpose
from domain.retention import RetentionPolicy
from domain.retry_policy import RetryPolicy
from entrypoints.http.app import create_app
from entrypoints.http.server import bind, serve
from entrypoints.identity_settings import IdentitySettings, load_identity_settings
from entrypoints.observability import build_telemetry, new_registry, serve_metrics
from entrypoints.providers import build_providers, close_providers
from entrypoints.seal_keys import load_sealer
from entrypoints.settings import Settings
from entrypoints.worker.loop import WorkerLoop
from entrypoints.worker.process import run_worker_process
from entrypoints.worker.schedule import Every


def embedded_data_dir(settings: Settings) -> Path:
    """Where the embedded PostgreSQL keeps its data when no database URL is configured."""
    return settings.data_dir / "postgres"


def resolve_database_url(settings: Settings) -> str:
    """OUTBOX_DATABASE_URL, or a superuser URL of the embedded server (started if needed).

    The embedded server keeps running until this process (and any other using it) exits.
    """
    if settings.database.url is not None:
        return settings.database.url
    return EmbeddedPostgres.start(embedded_data_dir(settings)).ensure_database()


def resolve_worker_database_url(settings: Settings) -> str:
    """OUTBOX_WORKER_DATABASE_URL when the worker has its own login role, else the API's URL."""
    if settings.database.worker_url is not None:
        return settings.database.worker_url
    return resolve_database_url(settings)


def worker_role(settings: Settings) -> str | None:
    """The role the worker's connections take: configured, or outbox_worker when embedded.

    On the embedded server the URL is a superuser's, so development runs the worker with
    exactly the privileges production gives it.
    """
    if settings.database.worker_role is not None:
        return settings.database.worker_role
    return "outbox_worker" if settings.database.url is None else None


def api_role(settings: Settings) -> str | None:
    """The role the API's connections take: configured, or outbox_runtime when embedded."""
    if settings.database.api_role is not None:
        return settings.database.api_role
    return "outbox_runtime" if settings.database.url is None else None


@attrs.frozen(kw_only=True)
class WorkerServices:
    """Everything a worker process runs: dispatch, sweeps, and the wake-up source."""

    dispatch: DispatchDueMessages
    expire: SweepExpiredMessages
    purge: PurgeRetainedMessages
    store: DispatchStore
    telemetry: Telemetry
    registry: CollectorRegistry


@contextlib.asynccontextmanager
async def worker_services(
    settings: Settings,
    *,
    batch_size: int | None = None,
    concurrency: int | None = None,
    providers: Mapping[Channel, DeliveryProvider] | None = None,
    registry: CollectorRegistry | None = None,
    telemetry: Telemetry | None = None,
) -> AsyncIterator[WorkerServices]:
    """Open the worker's pool, listener and provider clients; close them all on exit.

    ``providers`` replaces the configured ones (tests and benchmarks use it); ``telemetry``
    (built on ``registry``) is shared when the API runs in the same process.
    Raises SettingsError naming a bad variable, StoreUnavailable if the database is down.
    """
    clock = SystemClock()
    registry = registry or new_registry()
    telemetry = telemetry or build_telemetry(registry)
    sealer = load_sealer(
        settings, warn=lambda text: telemetry.event("keys.warning", level="warning", detail=text)
    )
    renderer = JinjaRenderer(override_dir=settings.template_dir)
    renderer.preload()
    worker = settings.worker
    url = resolve_worker_database_url(settings)
    async with contextlib.AsyncExitStack() as stack:
        concurrency = concurrency or worker.concurrency
        if providers is None:
            # Provider clients are sized for the sends this worker makes (--concurrency wins).
            sized = attrs.evolve(settings, worker=attrs.evolve(worker, concurrency=concurrency))
            built = build_providers(sized, clock=clock)
            stack.push_async_callback(close_providers, built)
            providers = built
        pool = await open_pool(
            url,
            min_size=1,
            max_size=max(2, settings.database.pool_max),
            prepared_statements=settings.database.prepared_statements,
            role=worker_role(settings),
        )
        stack.push_async_callback(pool.close)
        listener = WorkListener(url)
        stack.push_async_callback(listener.close)
        store = PostgresDispatchStore(pool, listener)
        sweeps = settings.sweeps
        yield WorkerServices(
            dispatch=DispatchDueMessages(
                store=store,
                sealer=sealer,
                renderer=renderer,
                providers=providers,
                clock=clock,
                telemetry=telemetry,
                policy=RetryPolicy(
                    schedule=worker.retry_schedule,
                    max_attempts=worker.max_attempts,
                    suspension_probe=worker.suspension_probe,
                ),
                breaker=ProviderBreaker(),
                links=LinkBases(
                    invitation=settings.invitation_link_base_url,
                    magic_link=settings.magic_link_base_url,
                ),
                owner=worker_owner(),
                batch_size=batch_size or worker.batch_size,
                concurrency=concurrency,
                lease=worker.lease,
                provider_timeout=worker.provider_timeout,
            ),
            expire=SweepExpiredMessages(
                store=store, telemetry=telemetry, batch_size=sweeps.batch_size
            ),
            purge=PurgeRetainedMessages(
                store=store,
                telemetry=telemetry,
                retention=RetentionPolicy(
                    published=sweeps.published_retention,
                    dead_lettered=sweeps.dead_lettered_retention,
                ),
                batch_size=sweeps.batch_size,
            ),
            store=store,
            telemetry=telemetry,
            registry=registry,
        )


def worker_owner() -> str:
    """A lease owner name that tells operators which host and process holds a message.

    ``host:pid<pid>:<8 hex>``: no part is a bare run of six digits, which the log redaction
    takes for a one-time code (a six-digit pid or an all-digit suffix would be masked, and
    the owner in ``worker.started`` would no longer match the leases it holds).
    """
    return f"{socket.gethostname()}:pid{os.getpid()}:{secrets.token_hex(4)}"


def sweep_schedule(services: WorkerServices, settings: Settings) -> list[Every]:
    """The sweeps a worker runs on its own schedule (SPEC §8)."""
    return [
        Every(
            name="expiry",
            interval=settings.sweeps.expiry_interval,
            job=services.expire,
            telemetry=services.telemetry,
        ),
        Every(
            name="retention",
            interval=settings.sweeps.retention_interval,
            job=services.purge,
            telemetry=services.telemetry,
        ),
    ]


async def run_worker(
    settings: Settings,
    *,
    drain: bool = False,
    batch_size: int | None = None,
    concurrency: int | None = None,
) -> DispatchResult:
    """``outboxctl worker``: dispatch until stopped (or drained); serve /metrics if configured."""
    async with worker_services(
        settings, batch_size=batch_size, concurrency=concurrency
    ) as services:
        metrics = (
            serve_metrics(services.registry, port=settings.worker.metrics_port)
            if settings.worker.metrics_port
            else None
        )
        try:
            services.telemetry.event(
                "worker.started",
                owner=services.dispatch.owner,
                batch_size=services.dispatch.batch_size,
                concurrency=services.dispatch.concurrency,
                lanes=settings.worker.lanes,
                drain=drain,
                metrics_port=metrics.port if metrics else None,
            )
            await services.store.wait_for_work(0)  # LISTEN before the first claim: no lost hint
            loop = WorkerLoop(
                dispatch=services.dispatch,
                wait_for_work=services.store.wait_for_work,
                telemetry=services.telemetry,
                poll_interval=settings.worker.poll_interval,
                drain=drain,
                lanes=settings.worker.lanes,
            )
            return await run_worker_process(
                loop=loop,
                sweeps=[] if drain else sweep_schedule(services, settings),
                grace=settings.worker.shutdown_grace,
                telemetry=services.telemetry,
            )
        finally:
            if metrics is not None:
                metrics.close()


async def run_sweeps(settings: Settings, *, which: str, loop: bool) -> dict[str, int]:
    """``outboxctl sweep``: run the expiry and/or retention sweep once, or forever with ``loop``."""
    async with worker_services(settings, providers={}) as services:
        jobs: dict[str, Callable[[], Awaitable[int]]] = {
            "expiry": services.expire,
            "retention": services.purge,
        }
        chosen = {name: job for name, job in jobs.items() if which in (name, "all")}
        if loop:
            schedule = [e for e in sweep_schedule(services, settings) if e.name in chosen]
            await asyncio.gather(*(every.run() for every in schedule))
        return {name: await job() for name, job in chosen.items()}


# --- The HTTP API and the reference Identity module ----------------------------------------
# build_identity_services wires the identity use cases from already-open parts (tests pass
# their own clock, secrets and hasher); api_services opens and closes the API's pool around
# them; run_api serves the Litestar app with uvicorn in the same event loop.


class _Common(TypedDict):
    """The parts every identity use case takes."""

    transactions: IdentityTransactions
    clock: Clock
    telemetry: Telemetry


def build_identity_services(
    *,
    pool: AsyncConnectionPool[AsyncConnection],
    sealer: Sealer,
    hasher: SecretHasher,
    clock: Clock,
    ids: Ids,
    secret_source: SecretSource,
    telemetry: Telemetry,
    identity: IdentitySettings,
) -> IdentityServices:
    """Every identity use case over the API pool (role ``outbox_runtime``)."""
    transactions = PostgresIdentityTransactions(pool)
    limits = RequestLimits(limiter=PostgresRateLimiter(pool), policy=identity.rate_limits)
    issuer = ChallengeIssuer(
        secrets=secret_source,
        hasher=hasher,
        sealer=sealer,
        ids=ids,
        policy=identity.challenges,
    )
    answers = ChallengeAnswers(hasher=hasher, telemetry=telemetry, policy=identity.challenges)
    sessions = SessionStarter(secrets=secret_source, ids=ids, lifetime=identity.session_lifetime)
    common = _Common(transactions=transactions, clock=clock, telemetry=telemetry)
    return IdentityServices(
        request_sign_up=RequestSignUp(
            issuer=issuer, hasher=hasher, limits=limits, ids=ids, **common
        ),
        confirm_sign_up=ConfirmSignUp(answers=answers, limits=limits, **common),
        sign_in=SignIn(sessions=sessions, hasher=hasher, limits=limits, **common),
        authenticate=AuthenticateBearer(transactions=transactions, clock=clock),
        request_sign_in_method=RequestSignInMethod(issuer=issuer, limits=limits, **common),
        confirm_sign_in_method=ConfirmSignInMethod(answers=answers, limits=limits, **common),
        request_password_recovery=RequestPasswordRecovery(issuer=issuer, limits=limits, **common),
        confirm_password_recovery=ConfirmPasswordRecovery(
            answers=answers, hasher=hasher, limits=limits, **common
        ),
        request_step_up=RequestStepUp(issuer=issuer, limits=limits, **common),
        confirm_step_up=ConfirmStepUp(
            answers=answers,
            secrets=secret_source,
            limits=limits,
            ids=ids,
            lifetime=identity.elevation_lifetime,
            **common,
        ),
        create_organization=CreateOrganization(ids=ids, **common),
        invite_member=InviteMember(
            secrets=secret_source,
            sealer=sealer,
            limits=limits,
            ids=ids,
            invitation_limits=identity.invitations,
            **common,
        ),
        revoke_invitation=RevokeInvitation(**common),
        accept_invitation=AcceptInvitation(limits=limits, **common),
        request_magic_link=RequestMagicLink(
            secrets=secret_source,
            sealer=sealer,
            limits=limits,
            ids=ids,
            lifetime=identity.magic_link_lifetime,
            **common,
        ),
        redeem_magic_link=RedeemMagicLink(sessions=sessions, limits=limits, **common),
        check_readiness=CheckReadiness(probe=PostgresReadinessProbe(pool), telemetry=telemetry),
        telemetry=telemetry,
    )


@contextlib.asynccontextmanager
async def api_services(
    settings: Settings,
    *,
    registry: CollectorRegistry | None = None,
    telemetry: Telemetry | None = None,
) -> AsyncIterator[IdentityServices]:
    """Open the API's pool and build the identity services; close the pool on exit.

    ``telemetry`` (built on ``registry``) is shared when the worker runs in the same process.
    Raises SettingsError naming a bad variable, StoreUnavailable if the database is down.
    """
    identity = load_identity_settings(settings.environ)
    telemetry = telemetry or build_telemetry(registry or new_registry())
    sealer = load_sealer(
        settings, warn=lambda text: telemetry.event("keys.warning", level="warning", detail=text)
    )
    pool = await open_pool(
        resolve_database_url(settings),
        min_size=settings.database.pool_min,
        max_size=settings.database.pool_max,
        prepared_statements=settings.database.prepared_statements,
        role=api_role(settings),
    )
    try:
        yield build_identity_services(
            pool=pool,
            sealer=sealer,
            hasher=Argon2idHasher(),
            clock=SystemClock(),
            ids=Uuid7Ids(),
            secret_source=SystemSecrets(),
            telemetry=telemetry,
            identity=identity,
        )
    finally:
        await pool.close()


async def run_api(settings: Settings) -> None:
    """``outboxctl serve``: the HTTP API until SIGINT/SIGTERM, then a clean exit."""
    registry = new_registry()
    async with (
        api_services(settings, registry=registry) as services,
        staff_api_services(settings, telemetry=services.telemetry) as operator,
    ):
        app = create_app(services, registry=registry, operator=operator)
        services.telemetry.event("api.started", host=settings.http.host, port=settings.http.port)
        await serve(app, host=settings.http.host, port=settings.http.port)
        services.telemetry.event("api.stopped")


def session_role(settings: Settings, group_role: str) -> str | None:
    """The group role pools must ``SET ROLE`` to, or None when a login role already has it.

    The embedded server is reached as its superuser, so its pools act as ``outbox_runtime`` or
    ``outbox_worker`` explicitly; a configured URL names a login role granted the group role.
    """
    return group_role if settings.database.url is None else None


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


# --- outboxctl up: the all-in-one development stack -----------------------------------------


async def run_stack(settings: Settings, *, announce: Callable[[str], None]) -> DispatchResult:
    """``outboxctl up``: migrate, then the API, the worker and its sweeps in one process.

    With no OUTBOX_DATABASE_URL the embedded PostgreSQL in the data directory is used.
    ``announce`` is told where the API listens once it accepts connections. SIGINT or
    SIGTERM stops the worker (with its grace period), then the API.
    """
    url = await asyncio.to_thread(resolve_database_url, settings)
    await apply_migrations(url)
    listener = bind(settings.http.host, settings.http.port)
    registry = new_registry()
    telemetry = build_telemetry(registry)
    async with (
        api_services(settings, registry=registry, telemetry=telemetry) as services,
        staff_api_services(settings, telemetry=telemetry) as operator,
        worker_services(settings, registry=registry, telemetry=telemetry) as worker,
    ):
        app = create_app(services, registry=registry, operator=operator)
        stop = asyncio.Event()
        host, port = listener.getsockname()[:2]
        api = asyncio.create_task(
            serve(app, host=host, port=port, listener=listener, stop=stop), name="api"
        )
        try:
            await worker.store.wait_for_work(0)
            telemetry.event("stack.started", host=host, port=port)
            announce(f"http://{host}:{port}")
            loop = WorkerLoop(
                dispatch=worker.dispatch,
                wait_for_work=worker.store.wait_for_work,
                telemetry=telemetry,
                poll_interval=settings.worker.poll_interval,
            )
            return await run_worker_process(
                loop=loop,
                sweeps=sweep_schedule(worker, settings),
                grace=settings.worker.shutdown_grace,
                telemetry=telemetry,
            )
        finally:
            stop.set()
            await asyncio.gather(api, return_exceptions=True)
            telemetry.event("stack.stopped")
