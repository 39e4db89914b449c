"""The rule a new password must follow."""

from __future__ import annotations

from outbox.domain.identity.errors import WeakPassword

MIN_LENGTH = 8
MAX_LENGTH = 256


def check_password(password: str) -> str:
    """Return ``password`` if it follows the rule, else raise WeakPassword saying why."""
    if len(password) < MIN_LENGTH:
        raise WeakPassword(f"must be at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise WeakPassword(f"must be at most {MAX_LENGTH} characters")
    if not password.strip():
        raise WeakPassword("must not be only white space")
    return password
