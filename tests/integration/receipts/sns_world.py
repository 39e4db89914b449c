"""A trusted SNS stand-in: a local CA, an HTTPS server holding the signing certificate and
answering SubscribeURLs, and a signer that writes SNS messages as SNS would."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from outbox.adapters.webhooks.sns import canonical_string

TOPIC = "arn:aws:sns:eu-west-1:123456789012:outbox-receipts"
CERT_PATH = "/SimpleNotificationService-test.pem"


class SnsStandIn:
    """The HTTPS side of SNS on 127.0.0.1 (named ``localhost``): the signing certificate and
    the subscription-confirmation endpoint; every request path is kept in ``requests``."""

    def __init__(self, ca: trustme.CA, certificate_pem: bytes) -> None:
        self.requests: list[str] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stand_in.requests.append(self.path)
                body = certificate_pem if self.path == CERT_PATH else b"<ConfirmSubscription/>"
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))
        self._thread.start()

    @property
    def base(self) -> str:
        """``https://localhost:PORT``."""
        return f"https://localhost:{self._server.server_address[1]}"

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class Signer:
    """Signs SNS messages with one RSA key, as SNS does (SignatureVersion 1 or 2)."""

    def __init__(self, key: rsa.RSAPrivateKey, cert_url: str) -> None:
        self.key = key
        self.cert_url = cert_url

    def message(
        self,
        kind: str = "Notification",
        *,
        message: str = "{}",
        topic: str = TOPIC,
        timestamp: datetime | None = None,
        message_id: str | None = None,
        version: str = "1",
        cert_url: str | None = None,
        subscribe_url: str = "",
        **extra: Any,
    ) -> dict[str, Any]:
        """A signed SNS message of ``kind``."""
        fields: dict[str, Any] = {
            "Type": kind,
            "MessageId": message_id or str(uuid.uuid4()),
            "TopicArn": topic,
            "Message": message,
            "Timestamp": (timestamp or datetime.now(UTC))
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "SignatureVersion": version,
            "SigningCertURL": cert_url or self.cert_url,
            **extra,
        }
        if kind != "Notification":
            fields["SubscribeURL"] = subscribe_url
            fields["Token"] = "a-subscription-token"
        algorithm = hashes.SHA1() if version == "1" else hashes.SHA256()  # noqa: S303 - SNS v1
        signature = self.key.sign(canonical_string(fields), padding.PKCS1v15(), algorithm)
        fields["Signature"] = base64.b64encode(signature).decode()
        return fields


def ses_event(kind: str, ses_message_id: str, **part: Any) -> str:
    """The JSON of an SES notification of ``kind`` about ``ses_message_id``."""
    body: dict[str, Any] = {
        "notificationType": kind,
        "mail": {
            "messageId": ses_message_id,
            "timestamp": datetime.now(UTC).isoformat(),
            "source": "sender@example.com",
            "destination": ["gone@example.com"],
            "headers": [{"name": "Subject", "value": "Your code is 493817"}],
        },
    }
    if part:
        body[kind.lower()] = part
    return json.dumps(body)


@contextmanager
def sns_world(tmp_path: Path) -> Iterator[tuple[SnsStandIn, Signer, Path]]:
    """The stand-in, a signer whose certificate it serves, and the CA file to trust it by."""
    ca = trustme.CA(key_type=trustme.KeyType.RSA)
    leaf = ca.issue_cert("sns.amazonaws.com", key_type=trustme.KeyType.RSA)
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    stand_in = SnsStandIn(ca, leaf.cert_chain_pems[0].bytes())
    ca_file = tmp_path / "sns-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    try:
        yield stand_in, Signer(key, stand_in.base + CERT_PATH), ca_file
    finally:
        stand_in.close()
