"""The four code flows, each as: set up a caller, ask for a code, confirm a code."""

from __future__ import annotations

from typing import Any

import attrs

from outbox.domain.purposes import Purpose
from tests.integration.identity.api import PASSWORD, Api

ALICE = "alice@example.com"
PHONE = "+34612345678"


@attrs.define
class Flow:
    """One code-sending route and its confirmation, driven through the real app."""

    purpose: Purpose
    token: str | None = None
    elevation: str | None = None

    @property
    def destination(self) -> str:
        """Where the code goes."""
        return PHONE if self.purpose is Purpose.ADD_SIGN_IN_METHOD else ALICE

    @property
    def hides_failures(self) -> bool:
        """Whether a failure after the account lookup is answered with the usual 201."""
        return self.purpose is Purpose.PASSWORD_RECOVERY

    @property
    def confirmed_status(self) -> int:
        """What a right code answers."""
        return 201 if self.purpose is Purpose.STEP_UP else 204

    async def set_up(self, api: Api) -> None:
        """Everything but sign-up needs an account (signed in, except for recovery)."""
        if self.purpose is not Purpose.SIGN_UP:
            self.token = await api.signed_up(ALICE)
        if self.purpose is Purpose.ADD_SIGN_IN_METHOD:
            self.elevation = await api.elevated(self.token)

    async def request(self, api: Api) -> Any:
        """Ask for a code (again, for a resend)."""
        match self.purpose:
            case Purpose.SIGN_UP:
                return await api.post("/sign-ups", {"identifier": ALICE})
            case Purpose.ADD_SIGN_IN_METHOD:
                return await api.post(
                    "/sign-in-methods",
                    {"identifier": PHONE},
                    token=self.token,
                    headers={"Elevation-Token": self.elevation or ""},
                )
            case Purpose.PASSWORD_RECOVERY:
                return await api.post("/password-recoveries", {"identifier": ALICE})
            case _:
                return await api.post("/step-ups", token=self.token)

    async def confirm(self, api: Api, code: str) -> Any:
        """Type a code."""
        match self.purpose:
            case Purpose.SIGN_UP:
                body: dict[str, str] = {"identifier": ALICE, "code": code, "password": PASSWORD}
                return await api.post("/sign-ups/confirmations", body)
            case Purpose.ADD_SIGN_IN_METHOD:
                body = {"identifier": PHONE, "code": code}
                return await api.post("/sign-in-methods/confirmations", body, token=self.token)
            case Purpose.PASSWORD_RECOVERY:
                body = {"identifier": ALICE, "code": code, "newPassword": "a new long password"}
                return await api.post("/password-recoveries/confirmations", body)
            case _:
                return await api.post("/step-ups/confirmations", {"code": code}, token=self.token)


CODE_PURPOSES = [
    Purpose.SIGN_UP,
    Purpose.ADD_SIGN_IN_METHOD,
    Purpose.PASSWORD_RECOVERY,
    Purpose.STEP_UP,
]
