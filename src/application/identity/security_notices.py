"""Security notices: every verified identifier of an account hears of a security change.

A notice carries no secret: what changed, when, and for an added sign-in method its masked
value. It is enqueued in the transaction that makes the change, so the change and its
notice commit together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from uuid import UUID

import attrs

from application.identity.ports import IdentityUnitOfWork
from application.ports import Ids
from domain.identity.identities import LoginIdentifier
from domain.identity.security_changes import SecurityChange
from domain.outbox.messages import Message
from domain.purposes import Purpose

TEMPLATE = Purpose.SECURITY_NOTICE.value


@attrs.frozen(kw_only=True)
class SecurityNotices:
    """Enqueues one security_notice per verified identifier of the account."""

    ids: Ids
    locale: str = "en"

    async def send(
        self,
        uow: IdentityUnitOfWork,
        *,
        identity_id: UUID,
        change: SecurityChange,
        now: datetime,
        recipients: Sequence[LoginIdentifier] | None = None,
        details: Mapping[str, str] | None = None,
    ) -> int:
        """Enqueue the notice in ``uow``; return how many identifiers it goes to.

        ``recipients`` defaults to the account's verified identifiers as ``uow`` sees them.
        """
        if recipients is None:
            recipients = await uow.identity.find_verified_identifiers(identity_id)
        params = {"change": change.value, "occurred_at": now.isoformat(), **(details or {})}
        for login in recipients:
            await uow.outbox.enqueue(
                Message.enqueue(
                    id=self.ids.new_id(),
                    purpose=Purpose.SECURITY_NOTICE,
                    channel=login.channel,
                    destination=login.value,
                    subject_id=identity_id,
                    template=TEMPLATE,
                    params=params,
                    locale=self.locale,
                    now=now,
                )
            )
        return len(recipients)
