"""Behaviours that make the HTTP stand-in answer like Brevo and WasenderAPI, as documented."""

from __future__ import annotations

import attrs

from tests.integration.providers.http_stand_in import Received, Reply

BREVO_KEY = "xkeysib-0123456789abcdef-TESTKEY"
WASENDER_KEY = "wsk_0123456789abcdef_TESTKEY"


@attrs.define
class Brevo:
    """Brevo v3: ``api-key`` auth, 201 with a messageId, idempotency keys remembered.

    A repeated ``headers.idempotencyKey`` is refused with 400 ``duplicate_parameter``,
    which is how Brevo documents its idempotency for /smtp/email.
    """

    api_key: str = BREVO_KEY
    seen_keys: set[str] = attrs.field(factory=set)
    sent: int = 0

    def __call__(self, request: Received) -> Reply:
        """Answer one request."""
        if request.headers.get("api-key") != self.api_key:
            return Reply(status=401, body={"code": "unauthorized", "message": "Key not found"})
        if request.path == "/v3/smtp/email":
            key = (request.body.get("headers") or {}).get("idempotencyKey")
            if key is not None and key in self.seen_keys:
                return Reply(
                    status=400,
                    body={"code": "duplicate_parameter", "message": "idempotencyKey reused"},
                )
            if key is not None:
                self.seen_keys.add(key)
            self.sent += 1
            return Reply(
                status=201, body={"messageId": f"<20260101.{self.sent}@smtp-relay.mailin.fr>"}
            )
        if request.path == "/v3/transactionalSMS/send":
            self.sent += 1
            return Reply(
                status=201,
                body={
                    "reference": f"ref{self.sent}",
                    "messageId": 1511882900176220 + self.sent,
                    "smsCount": 1,
                    "usedCredits": 1.0,
                    "remainingCredits": 99.0,
                },
            )
        return Reply(status=404, body={"code": "not_found", "message": "Route not found"})


@attrs.define
class Wasender:
    """WasenderAPI: bearer session key, 200 ``{"success": true, "data": {"msgId": …}}``.

    ``session`` is the session status (``connected``, ``logged_out``, ``need_scan``…);
    WasenderAPI does not document the send-message body for a session that is down, so
    this one answers with its documented status names.
    """

    api_key: str = WASENDER_KEY
    session: str = "connected"
    sent: int = 0

    def __call__(self, request: Received) -> Reply:
        """Answer one request."""
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return Reply(status=401, body={"success": False, "message": "Unauthenticated."})
        if request.path != "/api/send-message":
            return Reply(status=404, body={"success": False, "message": "Not found"})
        if self.session != "connected":
            return Reply(
                status=400,
                body={
                    "success": False,
                    "message": "WhatsApp session is not connected",
                    "data": {"status": self.session},
                },
            )
        self.sent += 1
        to = request.body["to"]
        return Reply(
            status=200,
            body={
                "success": True,
                "data": {"msgId": 100000 + self.sent, "jid": to, "status": "in_progress"},
            },
        )


def ses(request: Received) -> Reply:
    """SESv2 SendEmail (rest-json): 200 with a MessageId."""
    if request.path != "/v2/email/outbound-emails":
        return aws_error(404, "NotFoundException", "Unknown operation")
    return Reply(status=200, body={"MessageId": "0100018c-stand-in-000000"})


def aws_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    """An AWS rest-json error: the code in ``x-amzn-ErrorType``, the text in the body."""
    return Reply(
        status=status,
        body={"message": message},
        headers={"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/"} | (headers or {}),
    )
