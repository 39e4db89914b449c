"""A renderer that writes what it was given into the message, and can be told to fail."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from outbox.application.delivery.ports import RenderedMessage
from outbox.domain.channels import Channel


@attrs.define
class RecordingRenderer:
    """Renders ``template`` as a subject and the secret or link as the text; keeps every call."""

    calls: list[dict[str, object]] = attrs.field(factory=list)
    failure: Exception | None = None

    def render(
        self,
        *,
        template: str,
        channel: Channel,
        locale: str,
        params: Mapping[str, str],
        secret: str | None,
        link: str | None,
    ) -> RenderedMessage:
        """Render deterministically, or raise ``failure`` if one was set."""
        self.calls.append(
            {
                "template": template,
                "channel": channel,
                "locale": locale,
                "secret": secret,
                "link": link,
            }
        )
        if self.failure is not None:
            raise self.failure
        body = secret or link or ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
        return RenderedMessage(subject=template, text=body, html=None)
