"""A recording publication target for the tenant events outbox: a server on 127.0.0.1 and the
``PublicationTarget`` a worker process uses to reach it.

Every event a worker offers is written to the ledger with its record, lease token, aggregate,
the worker that offered it (its label), when it arrived and what it was answered, so the
checker can tell an event offered twice (a kill between the offer and the record) from one
offered once, and an offer under a lease the worker held from one under none. The answer
is decided by the event's own payload, which the test wrote: ``{"fail": "reject"}`` is
refused for good, ``{"fail": "unavailable", "times": N}`` is refused as unavailable its
first N offers (``"times": 0`` or none: always), anything else is accepted. The server
answers after ``latency`` seconds, so kills find publications in flight.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from uuid import UUID

import attrs
import httpx

from outbox.application.events.ports import ClaimedEvent, TargetRefusal
from outbox.domain.delivery.failures import FailureClass

OFFER_PATH = "/events"
TARGET_NAME = "ledger"
TARGET_URL_VARIABLE = "RELIABILITY_EVENT_TARGET_URL"  # not OUTBOX_*: the product never reads it
WORKER_LABEL_VARIABLE = "RELIABILITY_WORKER_LABEL"
ACCEPTED = "accepted"


@attrs.frozen(kw_only=True)
class Offer:
    """One event as one worker offered it to the target."""

    event_id: UUID
    record_id: UUID
    lease_token: UUID
    organization_id: UUID
    aggregate: tuple[UUID, str, str]  # organization, aggregate type, aggregate id
    append_sequence: int
    attempt: int
    worker: str  # the offering worker's label
    received_at: float  # time.time() when the request had been read
    answer: str  # ACCEPTED or the failure class it was refused with


@attrs.define
class Behaviour:
    """What the target does; tests change it while workers run."""

    latency: float = 0.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


class EventLedger:
    """The recording target's server, its behaviour and its ledger (thread-safe)."""

    def __init__(self) -> None:
        self.behaviour = Behaviour()
        self._lock = threading.Lock()
        self._offers: list[Offer] = []
        self._refused: dict[UUID, int] = {}  # event id -> times refused as unavailable
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    @property
    def url(self) -> str:
        """Where a worker's target posts its offers."""
        return f"http://127.0.0.1:{self._server.server_address[1]}{OFFER_PATH}"

    def worker_env(self, label: str) -> dict[str, str]:
        """The variables that point the worker labelled ``label`` at this ledger."""
        return {TARGET_URL_VARIABLE: self.url, WORKER_LABEL_VARIABLE: label}

    def start(self) -> None:
        """Serve on a thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def offers(self) -> list[Offer]:
        """Every offer so far, in arrival order."""
        with self._lock:
            return list(self._offers)

    def _answer(self, worker: str, event: dict[str, Any], received_at: float) -> str:
        failing = event.get("payload", {}).get("fail")
        event_id = UUID(event["event_id"])
        answer = ACCEPTED
        with self._lock:
            if failing == "reject":
                answer = FailureClass.REJECTED.value
            elif failing == "unavailable":
                times = int(event["payload"].get("times") or 0)
                refused = self._refused.get(event_id, 0)
                if times == 0 or refused < times:
                    self._refused[event_id] = refused + 1
                    answer = FailureClass.UNAVAILABLE.value
            organization = UUID(event["organization_id"])
            self._offers.append(
                Offer(
                    event_id=event_id,
                    record_id=UUID(event["record_id"]),
                    lease_token=UUID(event["lease_token"]),
                    organization_id=organization,
                    aggregate=(organization, event["aggregate_type"], event["aggregate_id"]),
                    append_sequence=int(event["append_sequence"]),
                    attempt=int(event["attempt"]),
                    worker=worker,
                    received_at=received_at,
                    answer=answer,
                )
            )
        return answer


def _handler_for(ledger: EventLedger) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            received_at = time.time()
            answers = [
                ledger._answer(str(body["worker"]), event, received_at) for event in body["events"]
            ]
            if ledger.behaviour.latency:
                time.sleep(ledger.behaviour.latency)
            data = json.dumps({"answers": answers}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            return

    return Handler


@attrs.define
class LedgerTarget:
    """The ``PublicationTarget`` a worker process publishes to the ledger through."""

    url: str
    worker: str
    name: str = TARGET_NAME
    _client: httpx.AsyncClient = attrs.field(factory=lambda: httpx.AsyncClient(timeout=30))

    async def publish(self, events: Sequence[ClaimedEvent]) -> Sequence[TargetRefusal | None]:
        """Offer ``events``; one answer each (None: accepted)."""
        body = {
            "worker": self.worker,
            "events": [
                {
                    "event_id": str(event.event_id),
                    "record_id": str(event.record_id),
                    "lease_token": str(event.lease_token),
                    "organization_id": str(event.organization_id),
                    "aggregate_type": event.aggregate_type,
                    "aggregate_id": event.aggregate_id,
                    "append_sequence": event.append_sequence,
                    "attempt": event.attempts + 1,
                    "payload": dict(event.payload),
                }
                for event in events
            ],
        }
        response = await self._client.post(self.url, json=body)
        response.raise_for_status()
        return [
            None
            if answer == ACCEPTED
            else TargetRefusal(failure_class=FailureClass(answer), code="ledger_refused")
            for answer in response.json()["answers"]
        ]
