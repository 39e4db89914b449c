"""The changes to an account's security that its owner is told about."""

from __future__ import annotations

import enum


class SecurityChange(enum.StrEnum):
    """What happened; the value is the ``change`` parameter of the security_notice template."""

    ACCOUNT_VERIFIED = "account_verified"
    SIGN_IN_METHOD_ADDED = "sign_in_method_added"
    PASSWORD_RESET = "password_reset"  # noqa: S105 - a kind of change, not a password
    SESSIONS_REVOKED = "sessions_revoked"
    WRONG_CODE_BUDGET_EXHAUSTED = "wrong_code_budget_exhausted"
    # Failed sign-ins of one of the account's identifiers pace its password sign-in.
    SIGN_IN_FAILURES = "sign_in_failures"
    # A hard bounce or a complaint suppressed one of the account's identifiers:
    # the other verified identifiers hear of it (0031_suppression_notices.sql).
    IDENTIFIER_SUPPRESSED = "identifier_suppressed"
