"""Email through AWS SES (SESv2 SendEmail) with boto3, run in worker threads."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import boto3
import botocore.config
import botocore.exceptions

from outbox.adapters.providers.ses.errors import classify_botocore_error, classify_client_error
from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery
from outbox.application.ports import Clock

if TYPE_CHECKING:
    from mypy_boto3_sesv2.client import SESV2Client
    from mypy_boto3_sesv2.type_defs import BodyTypeDef

MESSAGE_ID_HEADER = "X-Outbox-Message-Id"
MESSAGE_ID_TAG = "outbox_message_id"
_UTF8 = "UTF-8"


def ses_client(
    *,
    region: str,
    timeout: float,
    max_connections: int,
    endpoint_url: str | None = None,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
    session_token: str | None = None,
) -> SESV2Client:
    """A thread-safe SESv2 client with SDK retries off and bounded connect/read timeouts.

    ``total_max_attempts=1`` is one attempt and no retry: botocore's older
    ``max_attempts`` key counts *retries*, so ``max_attempts=1`` would still retry once.
    Credentials left as None come from boto3's standard chain (``AWS_*`` variables,
    shared files, instance roles).
    """
    config = botocore.config.Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=timeout,
        read_timeout=timeout,
        max_pool_connections=max_connections,
    )
    session = boto3.session.Session(
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        aws_session_token=session_token,
        region_name=region,
    )
    return session.client("sesv2", endpoint_url=endpoint_url, config=config)


class SesProvider:
    """One SES account and verified sender; boto3 is synchronous, so sends run in threads.

    The message id goes in an ``X-Outbox-Message-Id`` header and an ``outbox_message_id``
    message tag (SES has no idempotency key). Failures are classified from the AWS error
    code (see ``outbox.adapters.providers.ses.errors``).
    """

    def __init__(
        self,
        *,
        client: SESV2Client,
        sender: str,
        clock: Clock,
        configuration_set: str | None = None,
        max_workers: int = 10,
    ) -> None:
        self._client = client
        self._sender = sender
        self._clock = clock
        self._configuration_set = configuration_set
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ses")

    @property
    def name(self) -> str:
        """``ses``."""
        return "ses"

    async def send(self, delivery: Delivery) -> str:
        """Send one email; return the SES MessageId.

        Raises DeliveryFailed with the AWS error code (or botocore's error class name).
        """
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, self._send_blocking, delivery)
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as error:
            if isinstance(error, botocore.exceptions.ClientError):
                failure = classify_client_error(error.response, self._clock.now())
            else:
                classified = classify_botocore_error(error)
                if classified is None:
                    raise
                failure = classified
            raise DeliveryFailed(failure) from None

    async def aclose(self) -> None:
        """Let running sends finish, then release the threads and the connection pool."""
        await asyncio.to_thread(self._executor.shutdown, wait=True)
        self._client.close()

    def _send_blocking(self, delivery: Delivery) -> str:
        content = delivery.content
        body: BodyTypeDef = {"Text": {"Data": content.text, "Charset": _UTF8}}
        if content.html is not None:
            body["Html"] = {"Data": content.html, "Charset": _UTF8}
        extra: dict[str, Any] = {}
        if self._configuration_set:
            extra["ConfigurationSetName"] = self._configuration_set
        response = self._client.send_email(
            FromEmailAddress=self._sender,
            Destination={"ToAddresses": [delivery.destination]},
            Content={
                "Simple": {
                    "Subject": {"Data": content.subject, "Charset": _UTF8},
                    "Body": body,
                    "Headers": [{"Name": MESSAGE_ID_HEADER, "Value": delivery.idempotency_key}],
                }
            },
            EmailTags=[{"Name": MESSAGE_ID_TAG, "Value": _tag_value(delivery.idempotency_key)}],
            **extra,
        )
        return response.get("MessageId", "")


def _tag_value(value: str) -> str:
    """SES tag values allow letters, digits, ``_`` and ``-`` only (a UUID already fits)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", value)
