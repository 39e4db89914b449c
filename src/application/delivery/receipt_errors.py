"""Why a provider's webhook was not believed."""

from __future__ import annotations


class WebhookRejected(Exception):
    """A webhook request failed a check: a bad signature, credential, topic, age or body.

    ``reason`` is a short machine word (``sns_signature_invalid``, ``credentials``...), safe
    to log and to count; the request itself is never echoed.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
