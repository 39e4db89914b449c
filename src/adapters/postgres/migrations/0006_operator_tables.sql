-- Operator surfaces (SPEC §10-§11): revocable staff membership and the audit
-- trail of every staff action. Neither table is granted to any role: the operator functions of
-- 0007_operator_functions.sql are the only way in.

SET LOCAL ROLE outbox_owner;

-- A revoked member keeps its row (who was staff, and until when) but passes no staff check;
-- granting again clears the revocation.
ALTER TABLE identity.staff_members
    ADD COLUMN revoked_at timestamptz,
    ADD CONSTRAINT staff_members_revoked_after_grant CHECK (
        revoked_at IS NULL OR revoked_at >= granted_at
    );

-- One row per staff action: who did what to which message, when, under which idempotency key.
-- A reissue or requeue row is also the idempotency record of its request (replays answer from
-- it). Message ids carry no foreign key: the audit outlives the retention sweep.
CREATE TABLE outbox.staff_audit (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action text NOT NULL CONSTRAINT staff_audit_action_known CHECK (
        action IN ('reissue', 'requeue', 'staff_grant', 'staff_revoke')
    ),
    -- The acting staff identity; NULL only for the database operator (outboxctl staff ...).
    actor_id uuid,
    message_id uuid,
    new_message_id uuid,
    target_identity_id uuid,
    idempotency_key text CONSTRAINT staff_audit_key_length CHECK (
        pg_catalog.length(idempotency_key) BETWEEN 1 AND 255
    ),
    occurred_at timestamptz NOT NULL,
    CONSTRAINT staff_audit_copy_shape CHECK (
        (action IN ('reissue', 'requeue')) = (
            actor_id IS NOT NULL AND message_id IS NOT NULL AND new_message_id IS NOT NULL
            AND idempotency_key IS NOT NULL
        )
    ),
    CONSTRAINT staff_audit_membership_shape CHECK (
        (action IN ('staff_grant', 'staff_revoke')) = (target_identity_id IS NOT NULL)
    )
);
-- A key names one request of one staff member.
CREATE UNIQUE INDEX staff_audit_idempotency
    ON outbox.staff_audit (actor_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- "Was this dead letter already reissued or requeued?" (refusals, message inspection).
CREATE INDEX staff_audit_by_message
    ON outbox.staff_audit (message_id, action) WHERE message_id IS NOT NULL;

RESET ROLE;
