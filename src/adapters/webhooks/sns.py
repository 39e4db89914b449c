"""Amazon SNS HTTP(S) messages: the signature verified before anything is believed.

An SNS message is JSON. Its signature covers a canonical string of some of its fields, in a
fixed order, one ``name\\nvalue\\n`` pair each; SignatureVersion 1 signs it with
SHA1withRSA, 2 with SHA256withRSA. The certificate whose key signed it is fetched from
``SigningCertURL``, which is believed only over HTTPS from a host the configured pattern
matches (``sns.*.amazonaws.com`` by default), and cached; at most a few new certificates are
fetched a minute. The topic must be one of the configured ARNs, and the timestamp recent
(both checked before any fetch): a captured message replayed later is refused, and one
replayed soon after is a duplicate of a MessageId already kept.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
import re
import ssl
from collections import OrderedDict, deque
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from outbox.application.delivery.receipt_errors import WebhookRejected
from outbox.application.ports import Clock

NOTIFICATION = "Notification"
SUBSCRIPTION_CONFIRMATION = "SubscriptionConfirmation"
UNSUBSCRIBE_CONFIRMATION = "UnsubscribeConfirmation"
_SIGNED_FIELDS = {
    NOTIFICATION: ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    SUBSCRIPTION_CONFIRMATION: (
        "Message",
        "MessageId",
        "SubscribeURL",
        "Timestamp",
        "Token",
        "TopicArn",
        "Type",
    ),
    UNSUBSCRIBE_CONFIRMATION: (
        "Message",
        "MessageId",
        "SubscribeURL",
        "Timestamp",
        "Token",
        "TopicArn",
        "Type",
    ),
}
_HASHES: dict[str, type[hashes.HashAlgorithm]] = {"1": hashes.SHA1, "2": hashes.SHA256}
_MAX_CERTIFICATE_BYTES = 16 * 1024
_CACHE_SIZE = 32
_HOST_LABEL = re.compile(r"[a-z0-9-]+")
# SNS signs with a few certificates that change rarely: more new ones than this in a minute
# are forgeries naming certificates, and each would be an outbound request.
CERTIFICATE_FETCHES_PER_MINUTE = 5
_FETCH_WINDOW = timedelta(minutes=1)


@attrs.frozen(kw_only=True)
class SnsPolicy:
    """What an SNS message must satisfy besides its signature."""

    topic_arns: frozenset[str]  # the topics whose messages are accepted; empty: none is
    certificate_host: str = "sns.*.amazonaws.com"  # ``*`` stands for one DNS label
    max_age: timedelta = timedelta(hours=1)  # older messages are refused as replays
    max_skew: timedelta = timedelta(minutes=5)  # how far in the future a timestamp may be


@attrs.frozen(kw_only=True)
class SnsMessage:
    """A verified SNS message."""

    type: str
    message_id: str
    topic_arn: str
    timestamp: datetime
    message: str
    subscribe_url: str = ""


def host_matches(pattern: str, host: str) -> bool:
    """Whether ``host`` matches ``pattern`` label by label (``*``: exactly one label)."""
    wanted = pattern.lower().split(".")
    labels = host.lower().split(".")
    if len(wanted) != len(labels):
        return False
    return all(
        _HOST_LABEL.fullmatch(label) is not None
        and (want in (label, "*") or ("*" in want and fnmatch.fnmatchcase(label, want)))
        for want, label in zip(wanted, labels, strict=True)
    )


def trusted_url(pattern: str, url: str) -> bool:
    """Whether ``url`` is HTTPS, carries no credentials and its host matches ``pattern``."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        _ = parts.port  # a malformed port raises here
    except ValueError:
        return False
    return (
        parts.scheme == "https"
        and parts.username is None
        and parts.password is None
        and host_matches(pattern, host)
    )


def canonical_string(fields: Mapping[str, Any]) -> bytes:
    """The bytes SNS signed for ``fields`` (its Type names which fields, in which order)."""
    names = _SIGNED_FIELDS[str(fields.get("Type"))]
    parts: list[str] = []
    for name in names:
        if name == "Subject" and name not in fields:
            continue  # the only optional signed field
        parts.append(f"{name}\n{fields[name]}\n")
    return "".join(parts).encode()


class SnsVerifier:
    """Verifies SNS messages; keeps the signing certificates it fetched, by URL."""

    def __init__(
        self,
        *,
        policy: SnsPolicy,
        clock: Clock,
        timeout: float = 5.0,
        ca_file: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._policy = policy
        self._clock = clock
        verify: ssl.SSLContext | bool = True
        if ca_file is not None:
            verify = ssl.create_default_context(cafile=ca_file)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            verify=verify,
            transport=transport,
        )
        self._keys: OrderedDict[str, rsa.RSAPublicKey] = OrderedDict()
        self._fetches: deque[datetime] = deque()  # when the last new certificates were fetched

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

    async def verify(self, body: bytes) -> SnsMessage:
        """The message ``body`` holds, once its signature, topic and age are checked.

        Raises WebhookRejected, naming the check that failed.
        """
        fields = _fields(body)
        kind = fields.get("Type")
        if kind not in _SIGNED_FIELDS:
            raise WebhookRejected("sns_type_unknown")
        for name in _SIGNED_FIELDS[kind]:
            if name != "Subject" and not isinstance(fields.get(name), str):
                raise WebhookRejected("sns_field_missing")
        algorithm = _HASHES.get(str(fields.get("SignatureVersion")))
        if algorithm is None:
            raise WebhookRejected("sns_signature_version")
        signature = _signature(fields.get("Signature"))
        cert_url = fields.get("SigningCertURL") or fields.get("SigningCertUrl")
        if not isinstance(cert_url, str) or not trusted_url(
            self._policy.certificate_host, cert_url
        ):
            raise WebhookRejected("sns_certificate_host")
        if not urlsplit(cert_url).path.endswith(".pem"):
            raise WebhookRejected("sns_certificate_host")
        # What costs nothing is checked before a certificate is fetched: a forgery naming
        # another topic or an old time makes no outbound request.
        if fields["TopicArn"] not in self._policy.topic_arns:
            raise WebhookRejected("sns_topic_not_pinned")
        timestamp = _timestamp(fields["Timestamp"])
        now = self._clock.now()
        if timestamp < now - self._policy.max_age or timestamp > now + self._policy.max_skew:
            raise WebhookRejected("sns_timestamp_stale")
        key = await self._key(cert_url)
        try:
            key.verify(signature, canonical_string(fields), padding.PKCS1v15(), algorithm())
        except InvalidSignature:
            raise WebhookRejected("sns_signature_invalid") from None
        subscribe_url = str(fields.get("SubscribeURL", ""))
        return SnsMessage(
            type=kind,
            message_id=fields["MessageId"],
            topic_arn=fields["TopicArn"],
            timestamp=timestamp,
            message=fields["Message"],
            subscribe_url=subscribe_url,
        )

    async def confirm(self, message: SnsMessage) -> None:
        """Confirm a verified subscription by fetching its SubscribeURL (pinned host only).

        Raises WebhookRejected if the URL is not on the SNS host pattern or SNS refuses.
        """
        if message.type != SUBSCRIPTION_CONFIRMATION or not trusted_url(
            self._policy.certificate_host, message.subscribe_url
        ):
            raise WebhookRejected("sns_subscribe_url")
        try:
            response = await self._client.get(message.subscribe_url)
        except httpx.HTTPError:
            raise WebhookRejected("sns_subscribe_failed") from None
        if response.status_code != httpx.codes.OK:
            raise WebhookRejected("sns_subscribe_failed")

    async def _key(self, url: str) -> rsa.RSAPublicKey:
        cached = self._keys.get(url)
        if cached is not None:
            self._keys.move_to_end(url)
            return cached
        now = self._clock.now()
        while self._fetches and self._fetches[0] <= now - _FETCH_WINDOW:
            self._fetches.popleft()
        if len(self._fetches) >= CERTIFICATE_FETCHES_PER_MINUTE:
            raise WebhookRejected("sns_certificate_budget")
        self._fetches.append(now)
        try:
            async with self._client.stream("GET", url) as response:
                if response.status_code != httpx.codes.OK:
                    raise WebhookRejected("sns_certificate_unavailable")
                pem = b""
                async for chunk in response.aiter_bytes():
                    pem += chunk
                    if len(pem) > _MAX_CERTIFICATE_BYTES:
                        raise WebhookRejected("sns_certificate_invalid")
        except httpx.HTTPError:
            raise WebhookRejected("sns_certificate_unavailable") from None
        try:
            certificate = x509.load_pem_x509_certificate(pem)
        except ValueError:
            raise WebhookRejected("sns_certificate_invalid") from None
        now = self._clock.now()
        if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
            raise WebhookRejected("sns_certificate_expired")
        key = certificate.public_key()
        if not isinstance(key, rsa.RSAPublicKey):
            raise WebhookRejected("sns_certificate_invalid")
        self._keys[url] = key
        while len(self._keys) > _CACHE_SIZE:
            self._keys.popitem(last=False)
        return key


def _fields(body: bytes) -> dict[str, Any]:
    try:
        fields = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise WebhookRejected("body_not_json") from None
    if not isinstance(fields, dict):
        raise WebhookRejected("body_not_json")
    return fields


def _signature(value: object) -> bytes:
    if not isinstance(value, str) or not value:
        raise WebhookRejected("sns_unsigned")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise WebhookRejected("sns_signature_invalid") from None


def _timestamp(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise WebhookRejected("sns_timestamp_invalid") from None
    if moment.tzinfo is None:
        raise WebhookRejected("sns_timestamp_invalid")
    return moment
