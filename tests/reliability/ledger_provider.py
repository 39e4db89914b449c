"""A recording provider on 127.0.0.1 impersonating Brevo (email) and WasenderAPI (WhatsApp).

Worker subprocesses reach it over real HTTP. Every request that reaches it is written to
the ledger with the message id (Brevo's idempotency key; for WhatsApp, the message whose
secret the text carries), the worker that sent it (each worker gets its own API key), when
it arrived and what it was answered. It can be told to answer slowly, hang, reset the
connection, answer 503, 429 with Retry-After, suspend the account (402
``not_enough_credits``) or always reject one destination. Like Brevo, it remembers the
idempotency keys it accepted and answers a replay with 400 ``duplicate_parameter``.
"""

from __future__ import annotations

import enum
import json
import re
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from uuid import UUID

import attrs

BREVO_EMAIL = "/v3/smtp/email"
WASENDER_SEND = "/api/send-message"
KEY_PREFIX = "rel-key-"  # a worker's API key is KEY_PREFIX + its label
_SECRET_WORDS = re.compile(r"[A-Za-z0-9_-]{6,}")


class Fault(enum.StrEnum):
    """What the Brevo side does to every request while the fault is on."""

    NONE = "none"
    HANG = "hang"  # read the request, answer nothing, close after ``hang_seconds``
    RESET = "reset"  # read the request, then reset the connection (RST)
    UNAVAILABLE = "503"
    THROTTLED = "429"  # with Retry-After: ``retry_after`` seconds
    SUSPENDED = "402"  # Brevo out of credits: the whole account is down


class Answer(enum.StrEnum):
    """How one request was answered."""

    ACCEPTED = "accepted"  # the provider took the message: one email or WhatsApp out
    REPLAYED = "replayed"  # an idempotency key seen before: nothing new goes out
    REJECTED = "rejected"  # the destination is refused for good
    UNAVAILABLE = "503"
    THROTTLED = "429"
    SUSPENDED = "402"
    HUNG = "hung"
    RESET = "reset"
    UNAUTHORIZED = "401"


@attrs.frozen(kw_only=True)
class Send:
    """One request the provider received."""

    provider: str  # brevo or wasender
    message_id: UUID | None
    worker: str  # the label in the API key
    destination: str
    received_at: float  # time.time() when the request had been read
    answer: Answer


@attrs.define
class Behaviour:
    """The faults in force; tests change these while workers run."""

    fault: Fault = Fault.NONE
    latency: float = 0.0  # every answer (both providers) waits this long first
    retry_after: int = 2
    hang_seconds: float = 3.0
    reject_destination: str | None = None


class _Server(ThreadingHTTPServer):
    """A threaded server whose listen backlog takes a whole batch of new connections.

    The default backlog (5) drops the SYNs of a burst of connections; the kernel then
    retries them a second later, which looks like a provider hanging for a second.
    """

    daemon_threads = True
    request_queue_size = 256


class LedgerProvider:
    """The server, its behaviour and its ledger (thread-safe)."""

    def __init__(self) -> None:
        self.behaviour = Behaviour()
        self._lock = threading.Lock()
        self._ledger: list[Send] = []
        self._accepted_keys: set[str] = set()
        self._secrets: dict[str, UUID] = {}
        self._closing = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def worker_env(self, label: str) -> dict[str, str]:
        """OUTBOX_* variables that send email through Brevo and WhatsApp through Wasender here."""
        key = KEY_PREFIX + label
        return {
            "OUTBOX_CHANNEL_EMAIL": "brevo",
            "OUTBOX_CHANNEL_SMS": "none",
            "OUTBOX_CHANNEL_WHATSAPP": "wasender",
            "OUTBOX_BREVO_API_KEY": key,
            "OUTBOX_BREVO_BASE_URL": f"{self.url}/v3",
            "OUTBOX_BREVO_SENDER_EMAIL": "no-reply@outbox.test",
            "OUTBOX_WASENDER_API_KEY": key,
            "OUTBOX_WASENDER_BASE_URL": f"{self.url}/api",
        }

    def know_secret(self, secret: str, message_id: UUID) -> None:
        """Tell the ledger which message a WhatsApp text carrying ``secret`` belongs to."""
        with self._lock:
            self._secrets[secret] = message_id

    def ledger(self) -> list[Send]:
        """Every request so far, in arrival order."""
        with self._lock:
            return list(self._ledger)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Cut hangs short, stop serving and close the socket."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def wait(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops."""
        self._closing.wait(seconds)

    def decide(self, path: str, headers: dict[str, str], body: Any) -> tuple[Send, dict[str, Any]]:
        """Record one request and choose its answer (and the reply's status, headers, body)."""
        received_at = time.time()
        behaviour = self.behaviour
        if path == BREVO_EMAIL:
            provider, key = "brevo", headers.get("api-key", "")
            message_id = _uuid((body.get("headers") or {}).get("idempotencyKey"))
            destination = str(((body.get("to") or [{}])[0]).get("email", ""))
        else:
            provider, key = "wasender", headers.get("authorization", "").removeprefix("Bearer ")
            text = str(body.get("text", ""))
            message_id = self._message_of(text)
            destination = str(body.get("to", ""))
        worker = key.removeprefix(KEY_PREFIX)
        answer, reply = self._answer(provider, key, message_id, destination, behaviour)
        send = Send(
            provider=provider,
            message_id=message_id,
            worker=worker,
            destination=destination,
            received_at=received_at,
            answer=answer,
        )
        with self._lock:
            self._ledger.append(send)
        return send, reply

    def _answer(
        self,
        provider: str,
        key: str,
        message_id: UUID | None,
        destination: str,
        behaviour: Behaviour,
    ) -> tuple[Answer, dict[str, Any]]:
        if not key.startswith(KEY_PREFIX):
            return Answer.UNAUTHORIZED, _reply(401, {"code": "unauthorized"})
        if provider == "brevo" and behaviour.fault is not Fault.NONE:
            return _fault_answer(behaviour)
        if destination == behaviour.reject_destination:
            return Answer.REJECTED, _reply(400, {"code": "invalid_parameter"})
        if provider == "brevo":
            idempotency_key = str(message_id)
            with self._lock:
                replay = idempotency_key in self._accepted_keys
                self._accepted_keys.add(idempotency_key)
            if replay:
                return Answer.REPLAYED, _reply(400, {"code": "duplicate_parameter"})
            return Answer.ACCEPTED, _reply(201, {"messageId": f"<{message_id}@relay.test>"})
        return Answer.ACCEPTED, _reply(200, {"success": True, "data": {"msgId": 1}})

    def _message_of(self, text: str) -> UUID | None:
        with self._lock:
            for word in _SECRET_WORDS.findall(text):
                if word in self._secrets:
                    return self._secrets[word]
        return None


def _fault_answer(behaviour: Behaviour) -> tuple[Answer, dict[str, Any]]:
    """How Brevo answers while ``behaviour.fault`` is on."""
    match behaviour.fault:
        case Fault.HANG:
            return Answer.HUNG, {"hang": behaviour.hang_seconds}
        case Fault.RESET:
            return Answer.RESET, {"reset": True}
        case Fault.UNAVAILABLE:
            return Answer.UNAVAILABLE, _reply(503, {"code": "service_unavailable"})
        case Fault.THROTTLED:
            headers = {"retry-after": str(behaviour.retry_after)}
            return Answer.THROTTLED, _reply(429, {"code": "too_many_requests"}, headers)
        case _:
            return Answer.SUSPENDED, _reply(402, {"code": "not_enough_credits"})


def _uuid(value: object) -> UUID | None:
    try:
        return UUID(str(value))
    except ValueError:
        return None


def _reply(status: int, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {"status": status, "body": body, "headers": headers or {}}


def _handler_for(provider: LedgerProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            if not isinstance(body, dict):
                body = {}
            headers = {name.lower(): value for name, value in self.headers.items()}
            _, reply = provider.decide(self.path, headers, body)
            latency = provider.behaviour.latency
            if latency:
                provider.wait(latency)
            if "hang" in reply:
                provider.wait(reply["hang"])
                self.close_connection = True
                return
            if "reset" in reply:
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True
                self.connection.close()
                return
            data = json.dumps(reply["body"]).encode()
            self.send_response(reply["status"])
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply["headers"].items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            """Keep test output clean."""

        def handle(self) -> None:
            try:
                super().handle()
            except OSError:  # the worker was killed mid-request, or we reset it ourselves
                self.close_connection = True

    return Handler
