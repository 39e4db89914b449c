"""The webhook listener's app: provider receipts, nothing else.

Providers must reach it, so it is its own listener (``OUTBOX_WEBHOOK_HOST``/``PORT``),
never the admin one, and serves only these routes: no OpenAPI page, no probes. Every body is
checked before it is believed (SNS signature, Brevo token, Wasender secret); a refusal is a
403 naming nothing but the check, counted in ``outbox_receipts_rejected_total``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from litestar import Litestar, Request, post
from litestar.datastructures import CacheControlHeader
from litestar.exceptions import HTTPException, ValidationException
from litestar.plugins.problem_details import (
    ProblemDetailsConfig,
    ProblemDetailsException,
    ProblemDetailsPlugin,
)
from litestar.status_codes import HTTP_200_OK

from outbox.adapters.webhooks.brevo import brevo_receipts, check_brevo_credential
from outbox.adapters.webhooks.ses import ses_receipt
from outbox.adapters.webhooks.sns import (
    NOTIFICATION,
    SUBSCRIPTION_CONFIRMATION,
    SnsVerifier,
)
from outbox.adapters.webhooks.wasender import (
    SECRET_HEADER,
    check_wasender_secret,
    wasender_receipts,
)
from outbox.application.delivery.receipt_errors import WebhookRejected
from outbox.application.delivery.record_receipts import RecordReceipts
from outbox.application.errors import StoreUnavailable
from outbox.application.ports import Telemetry
from outbox.domain.delivery.receipts import Receipt, RecordedReceipt
from outbox.entrypoints.http.hygiene import nesting_exceeds
from outbox.entrypoints.http.problems import EXCEPTION_MAP, TYPE_PREFIX, internal_error_handler

# An SES notification with its headers is a few KiB; Brevo may batch events. Larger bodies
# are refused (413) before they are read in full.
MAX_WEBHOOK_BODY_BYTES = 128 * 1024
MAX_WEBHOOK_JSON_DEPTH = 32  # providers' payloads nest a few levels
REJECTED = "outbox_receipts_rejected_total"


@attrs.frozen(kw_only=True)
class WebhookServices:
    """What the webhook routes use; a provider left None (unconfigured) accepts nothing."""

    record: RecordReceipts
    telemetry: Telemetry
    sns: SnsVerifier | None = None
    brevo_token: str | None = attrs.field(default=None, repr=False)
    wasender_secret: str | None = attrs.field(default=None, repr=False)


def _answer(results: Sequence[RecordedReceipt]) -> dict[str, Any]:
    return {
        "received": len(results),
        "duplicates": sum(1 for r in results if r.duplicate),
        "unmatched": sum(1 for r in results if r.message_id is None and not r.duplicate),
    }


def _refuse(services: WebhookServices, provider: str, error: WebhookRejected) -> Exception:
    services.telemetry.count(REJECTED, provider=provider, reason=error.reason)
    services.telemetry.event(
        "receipt.rejected", level="warning", provider=provider, reason=error.reason
    )
    return ProblemDetailsException(
        type_=TYPE_PREFIX + "webhook-rejected",
        title="The webhook request was not believed",
        status_code=403,
        detail=error.reason,
    )


async def _sns_receipts(services: WebhookServices, body: bytes) -> list[Receipt] | None:
    """The receipts of a verified SNS message; None for a subscription it confirmed.

    Raises WebhookRejected.
    """
    if services.sns is None:
        raise WebhookRejected("not_configured")
    message = await services.sns.verify(body)
    if message.type == SUBSCRIPTION_CONFIRMATION:
        await services.sns.confirm(message)
        services.telemetry.event("sns.subscription_confirmed", topic=message.topic_arn)
        return None
    if message.type != NOTIFICATION:
        return []  # an unsubscribe confirmation: verified, nothing to keep
    return [ses_receipt(message)]


async def _body(request: Request[Any, Any, Any]) -> bytes:
    """The body, once it is known not to nest deeper than any provider's payload does (a
    deeper one, from anyone, would be parsed into a RecursionError): else a 400."""
    body = await request.body()
    if nesting_exceeds(body, MAX_WEBHOOK_JSON_DEPTH):
        raise ValidationException(
            detail=f"the JSON body nests deeper than {MAX_WEBHOOK_JSON_DEPTH}"
        )
    return body


def create_webhook_app(services: WebhookServices) -> Litestar:
    """The app of the webhook listener: POST /webhooks/ses, /webhooks/brevo, /webhooks/wasender."""

    @post("/webhooks/ses", status_code=HTTP_200_OK, summary="SES notifications through SNS")
    async def ses(request: Request[Any, Any, Any]) -> dict[str, Any]:
        body = await _body(request)
        try:
            receipts = await _sns_receipts(services, body)
        except WebhookRejected as error:
            raise _refuse(services, "ses", error) from None
        if receipts is None:
            return {"confirmed": True}
        return _answer(await services.record(receipts))

    @post("/webhooks/brevo", status_code=HTTP_200_OK, summary="Brevo transactional events")
    async def brevo(request: Request[Any, Any, Any]) -> dict[str, Any]:
        body = await _body(request)
        try:
            check_brevo_credential(request.headers.get("authorization"), services.brevo_token or "")
            receipts = brevo_receipts(body)
        except WebhookRejected as error:
            raise _refuse(services, "brevo", error) from None
        return _answer(await services.record(receipts))

    @post("/webhooks/wasender", status_code=HTTP_200_OK, summary="WasenderAPI status callbacks")
    async def wasender(request: Request[Any, Any, Any]) -> dict[str, Any]:
        body = await _body(request)
        try:
            check_wasender_secret(
                request.headers.get(SECRET_HEADER), services.wasender_secret or ""
            )
            receipts = wasender_receipts(body)
        except WebhookRejected as error:
            raise _refuse(services, "wasender", error) from None
        return _answer(await services.record(receipts))

    return Litestar(
        route_handlers=[ses, brevo, wasender],
        plugins=[
            ProblemDetailsPlugin(
                ProblemDetailsConfig(
                    enable_for_all_http_exceptions=True,
                    exception_to_problem_detail_map={
                        HTTPException: EXCEPTION_MAP[HTTPException],
                        StoreUnavailable: EXCEPTION_MAP[StoreUnavailable],
                    },
                )
            )
        ],
        exception_handlers={Exception: internal_error_handler(services.telemetry)},
        request_max_body_size=MAX_WEBHOOK_BODY_BYTES,
        cache_control=CacheControlHeader(no_store=True),
        openapi_config=None,
        logging_config=None,
    )
