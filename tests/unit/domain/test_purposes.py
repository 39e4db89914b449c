"""What each purpose implies: secrets, links, supersession, reissue and requeue."""

from __future__ import annotations

from outbox.domain.channels import Channel
from outbox.domain.purposes import Purpose

CODES = {Purpose.SIGN_UP, Purpose.ADD_SIGN_IN_METHOD, Purpose.PASSWORD_RECOVERY, Purpose.STEP_UP}


def test_the_purposes_and_their_stored_names_are_the_specified_ones() -> None:
    assert {
        "sign_up",
        "add_sign_in_method",
        "password_recovery",
        "step_up",
        "invitation",
        "magic_link",
        "notification",
        "security_notice",
    } == {str(p) for p in Purpose}


def test_one_time_codes_are_the_four_challenge_purposes() -> None:
    assert CODES == {p for p in Purpose if p.is_one_time_code}


def test_invitations_and_magic_links_render_a_link() -> None:
    assert {Purpose.INVITATION, Purpose.MAGIC_LINK} == {p for p in Purpose if p.renders_link}


def test_every_purpose_but_the_two_notices_carries_a_secret() -> None:
    notices = {Purpose.NOTIFICATION, Purpose.SECURITY_NOTICE}

    assert set(Purpose) - notices == {p for p in Purpose if p.carries_secret}


def test_every_purpose_but_plain_notifications_is_security_traffic_and_names_a_subject() -> None:
    others = set(Purpose) - {Purpose.NOTIFICATION}

    assert others == {p for p in Purpose if p.is_security}
    assert others == {p for p in Purpose if p.names_subject}


def test_codes_and_magic_links_are_superseded_but_invitations_never() -> None:
    supersedable = {p for p in Purpose if p.is_supersedable}

    assert CODES | {Purpose.MAGIC_LINK} == supersedable
    assert Purpose.INVITATION not in supersedable


def test_only_one_time_codes_are_reissued() -> None:
    assert CODES == {p for p in Purpose if p.is_reissuable}


def test_only_notifications_are_requeued() -> None:
    assert {Purpose.NOTIFICATION} == {p for p in Purpose if p.is_requeueable}


def test_the_channels_are_email_sms_and_whatsapp() -> None:
    assert {"email", "sms", "whatsapp"} == {str(c) for c in Channel}
