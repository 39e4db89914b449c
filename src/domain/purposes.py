"""Why a message exists, and the rules each purpose brings with it."""

from __future__ import annotations

import enum


class Purpose(enum.StrEnum):
    """The reason a message is sent; it fixes supersession, secrets and expiry wording."""

    SIGN_UP = "sign_up"
    ADD_SIGN_IN_METHOD = "add_sign_in_method"
    PASSWORD_RECOVERY = "password_recovery"  # noqa: S105 - a purpose, not a password
    STEP_UP = "step_up"
    INVITATION = "invitation"
    MAGIC_LINK = "magic_link"
    NOTIFICATION = "notification"
    # A notice that an account's security changed (a method added, a password reset, every
    # session ended, the day's wrong codes used up): no secret, sent to every verified
    # identifier of the account, and security traffic like the codes themselves.
    SECURITY_NOTICE = "security_notice"

    @property
    def is_one_time_code(self) -> bool:
        """Whether the secret is a short code typed back by the person."""
        return self in _ONE_TIME_CODES

    @property
    def renders_link(self) -> bool:
        """Whether the secret is a token rendered into a link."""
        return self in (Purpose.INVITATION, Purpose.MAGIC_LINK)

    @property
    def carries_secret(self) -> bool:
        """Whether messages of this purpose must carry a sealed secret."""
        return self not in (Purpose.NOTIFICATION, Purpose.SECURITY_NOTICE)

    @property
    def is_security(self) -> bool:
        """Whether the purpose is security traffic (served first): all but plain notifications."""
        return self is not Purpose.NOTIFICATION

    @property
    def names_subject(self) -> bool:
        """Whether a message of this purpose names its subject (a challenge, link, invitation
        or, for a security notice, the account)."""
        return self is not Purpose.NOTIFICATION

    @property
    def is_supersedable(self) -> bool:
        """Whether a newer message for the same subject cancels older unsent ones (a resend).

        Invitations never are: two organizations may invite one address.
        """
        return self in _ONE_TIME_CODES or self is Purpose.MAGIC_LINK

    @property
    def is_reissuable(self) -> bool:
        """Whether staff may reissue a dead letter of this purpose with a new code."""
        return self in _ONE_TIME_CODES

    @property
    def is_requeueable(self) -> bool:
        """Whether a dead letter of this purpose may be sent again as a copy."""
        return self is Purpose.NOTIFICATION


_ONE_TIME_CODES = frozenset(
    {Purpose.SIGN_UP, Purpose.ADD_SIGN_IN_METHOD, Purpose.PASSWORD_RECOVERY, Purpose.STEP_UP}
)
