"""An observer inside the test database: every change of every message, with the lease it ended.

A trigger (installed by the test as superuser, never by a migration) appends one row per
insert or update of ``outbox.messages`` to ``reliability.transitions``: the old and new
state, the old and new lease (owner, token, expiry), the statement's time — the same
``statement_timestamp()`` the SQL functions compare leases with — and which function made
the change. The checker reads it to know which worker held which lease when.

A second trigger does the same for the tenant events outbox (``events.outbox_records``,
into ``reliability.event_transitions``; ``message_id`` is then the record's id), naming
``claim_outbox_batch`` as ``claim`` and ``record_publication_attempt`` as ``record``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import attrs
import psycopg

INSTALL = """
CREATE SCHEMA IF NOT EXISTS reliability;
CREATE TABLE reliability.transitions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id uuid NOT NULL,
    at timestamptz NOT NULL,
    caller text NOT NULL,
    old_state text,
    new_state text NOT NULL,
    old_owner text,
    new_owner text,
    old_token uuid,
    new_token uuid,
    old_lease_expires_at timestamptz,
    new_lease_expires_at timestamptz,
    reason text
);
CREATE INDEX transitions_by_message ON reliability.transitions (message_id, id);

CREATE FUNCTION reliability.log_transition() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_query text := pg_catalog.current_query();
BEGIN
    INSERT INTO reliability.transitions (
        message_id, at, caller, old_state, new_state, old_owner, new_owner, old_token,
        new_token, old_lease_expires_at, new_lease_expires_at, reason
    ) VALUES (
        NEW.id, pg_catalog.statement_timestamp(),
        CASE
            WHEN v_query ~ 'claim_messages' THEN 'claim'
            WHEN v_query ~ 'record_outcomes' THEN 'record'
            WHEN v_query ~ 'expire_messages' THEN 'expire'
            WHEN v_query ~ 'enqueue_message' THEN 'enqueue'
            WHEN v_query ~ 'cancel_by_subject' THEN 'cancel'
            ELSE 'other'
        END,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END, NEW.state,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_owner END, NEW.lease_owner,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_token END, NEW.lease_token,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_expires_at END, NEW.lease_expires_at,
        NEW.dead_letter_reason
    );
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_reliability_audit
    AFTER INSERT OR UPDATE ON outbox.messages
    FOR EACH ROW EXECUTE FUNCTION reliability.log_transition();
"""

INSTALL_EVENTS = """
CREATE SCHEMA IF NOT EXISTS reliability;
CREATE TABLE reliability.event_transitions (LIKE reliability.transitions INCLUDING ALL);
CREATE INDEX event_transitions_by_record ON reliability.event_transitions (message_id, id);

CREATE FUNCTION reliability.log_event_transition() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_query text := pg_catalog.current_query();
BEGIN
    INSERT INTO reliability.event_transitions (
        message_id, at, caller, old_state, new_state, old_owner, new_owner, old_token,
        new_token, old_lease_expires_at, new_lease_expires_at, reason
    ) VALUES (
        NEW.id, pg_catalog.statement_timestamp(),
        CASE
            WHEN v_query ~ 'claim_outbox_batch' THEN 'claim'
            WHEN v_query ~ 'record_publication_attempt' THEN 'record'
            WHEN v_query ~ 'append_domain_event' THEN 'append'
            ELSE 'other'
        END,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END, NEW.state,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_owner END, NEW.lease_owner,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_token END, NEW.lease_token,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_expires_at END, NEW.lease_expires_at,
        NEW.dead_letter_reason
    );
    RETURN NULL;
END
$$;
CREATE TRIGGER outbox_records_reliability_audit
    AFTER INSERT OR UPDATE ON events.outbox_records
    FOR EACH ROW EXECUTE FUNCTION reliability.log_event_transition();
"""

TRANSITIONS = """
SELECT id, message_id, at, caller, old_state, new_state, old_owner, new_owner, old_token,
       new_token, old_lease_expires_at, new_lease_expires_at, reason
FROM reliability.{table} ORDER BY id
"""
MESSAGES = "transitions"
EVENT_RECORDS = "event_transitions"


@attrs.frozen(kw_only=True)
class Transition:
    """One change of one message, as the trigger saw it."""

    id: int
    message_id: UUID
    at: float  # epoch seconds
    caller: str
    old_state: str | None
    new_state: str
    old_owner: str | None
    new_owner: str | None
    old_token: UUID | None
    new_token: UUID | None
    old_lease_expires_at: float | None
    new_lease_expires_at: float | None
    reason: str | None

    @property
    def grants_lease(self) -> bool:
        """Whether this change gave a worker a new lease (a claim)."""
        return self.new_state == "leased" and self.new_token != self.old_token


def install(url: str) -> None:
    """Install both triggers in the database of ``url`` (superuser); empty the logs if present."""
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass('reliability.transitions')").fetchone()
        if found is not None and found[0] is not None:
            conn.execute("TRUNCATE reliability.transitions")
        else:
            conn.execute(INSTALL)
        found = conn.execute("SELECT to_regclass('reliability.event_transitions')").fetchone()
        if found is not None and found[0] is not None:
            conn.execute("TRUNCATE reliability.event_transitions")
        else:
            conn.execute(INSTALL_EVENTS)


def transitions(url: str, table: str = MESSAGES) -> list[Transition]:
    """Every logged change of ``table`` (MESSAGES or EVENT_RECORDS), in order."""
    assert table in (MESSAGES, EVENT_RECORDS)
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(TRANSITIONS.format(table=table)).fetchall()
    return [_transition(row) for row in rows]


def _epoch(value: Any) -> float | None:
    return value.timestamp() if value is not None else None


def _transition(row: tuple[Any, ...]) -> Transition:
    (
        id_,
        message_id,
        at,
        caller,
        old_state,
        new_state,
        old_owner,
        new_owner,
        old_token,
        new_token,
        old_expiry,
        new_expiry,
        reason,
    ) = row
    return Transition(
        id=id_,
        message_id=message_id,
        at=at.timestamp(),
        caller=caller,
        old_state=old_state,
        new_state=new_state,
        old_owner=old_owner,
        new_owner=new_owner,
        old_token=old_token,
        new_token=new_token,
        old_lease_expires_at=_epoch(old_expiry),
        new_lease_expires_at=_epoch(new_expiry),
        reason=reason,
    )
