-- The queue: messages, their sealed envelopes (one to one) and the attempt history (SPEC §3, §5).

SET LOCAL ROLE outbox_owner;

CREATE TABLE outbox.messages (
    id uuid PRIMARY KEY,
    purpose text NOT NULL CONSTRAINT messages_purpose_known CHECK (purpose IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up',
        'invitation', 'magic_link', 'notification'
    )),
    channel text NOT NULL CONSTRAINT messages_channel_known CHECK (
        channel IN ('email', 'sms', 'whatsapp')
    ),
    destination text NOT NULL CONSTRAINT messages_destination_named CHECK (destination <> ''),
    subject_id uuid,
    template text NOT NULL CONSTRAINT messages_template_named CHECK (template <> ''),
    params jsonb NOT NULL DEFAULT '{}' CONSTRAINT messages_params_object CHECK (
        pg_catalog.jsonb_typeof(params) = 'object'
    ),
    locale text NOT NULL DEFAULT 'en' CONSTRAINT messages_locale_named CHECK (locale <> ''),
    state text NOT NULL DEFAULT 'pending' CONSTRAINT messages_state_known CHECK (
        state IN ('pending', 'leased', 'published', 'dead_lettered')
    ),
    attempt_count integer NOT NULL DEFAULT 0 CONSTRAINT messages_attempts_counted CHECK (
        attempt_count >= 0
    ),
    available_at timestamptz NOT NULL,
    expires_at timestamptz,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamptz,
    -- When the claim may take the row: available_at while pending, the lease expiry while
    -- leased, never once final. One column lets one partial index serve both claim cases.
    claimable_at timestamptz GENERATED ALWAYS AS (
        CASE state WHEN 'pending' THEN available_at WHEN 'leased' THEN lease_expires_at END
    ) STORED,
    created_at timestamptz NOT NULL,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    dead_letter_reason text CONSTRAINT messages_reason_known CHECK (dead_letter_reason IN (
        'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
        'decryption_failed', 'unexpected_worker_error', 'link_unconfigured',
        'challenge_expired', 'invitation_expired', 'superseded_by_resend',
        'challenge_consumed', 'invitation_revoked'
    )),
    CONSTRAINT messages_subject_named CHECK (purpose = 'notification' OR subject_id IS NOT NULL),
    CONSTRAINT messages_not_born_expired CHECK (expires_at IS NULL OR expires_at > created_at),
    -- leased <=> owner, token and expiry are all set; any other state holds no lease at all.
    CONSTRAINT messages_lease_shape CHECK (
        (state = 'leased'
            AND lease_owner IS NOT NULL AND lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)
        OR (state <> 'leased'
            AND lease_owner IS NULL AND lease_token IS NULL AND lease_expires_at IS NULL)
    ),
    CONSTRAINT messages_published_shape CHECK ((state = 'published') = (published_at IS NOT NULL)),
    CONSTRAINT messages_dead_letter_shape CHECK (
        (state = 'dead_lettered') = (dead_lettered_at IS NOT NULL)
        AND (state = 'dead_lettered') = (dead_letter_reason IS NOT NULL)
    )
);

-- The claim path: live rows only, in claim order, so terminal rows never slow a claim and a
-- claim reads O(batch) index entries however many rows are pending.
CREATE INDEX messages_claim_order ON outbox.messages (claimable_at, created_at, id)
    WHERE state IN ('pending', 'leased');
-- Supersede (a resend) and cancel-by-subject look up the live messages of one subject.
CREATE INDEX messages_live_subject ON outbox.messages (subject_id, purpose)
    WHERE state IN ('pending', 'leased') AND subject_id IS NOT NULL;
-- The expiry sweep reads live rows by expiry.
CREATE INDEX messages_live_expiry ON outbox.messages (expires_at)
    WHERE state IN ('pending', 'leased') AND expires_at IS NOT NULL;
-- The retention sweep and the dead-letter listing read final rows by age.
CREATE INDEX messages_published_age ON outbox.messages (published_at)
    WHERE state = 'published';
CREATE INDEX messages_dead_letter_age ON outbox.messages (dead_lettered_at, id)
    WHERE state = 'dead_lettered';

-- Final states are immutable: a reissue or requeue creates a new message (SPEC §3).
CREATE FUNCTION outbox.refuse_final_update() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'message % is % and final; it cannot change', OLD.id, OLD.state
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
REVOKE ALL ON FUNCTION outbox.refuse_final_update() FROM PUBLIC;

CREATE TRIGGER messages_final_is_immutable
    BEFORE UPDATE ON outbox.messages
    FOR EACH ROW
    WHEN (OLD.state IN ('published', 'dead_lettered'))
    EXECUTE FUNCTION outbox.refuse_final_update();

-- The sealed secret, one row per message, deleted in the transaction that makes the message
-- final or expired (SPEC §5). The shape check refuses anything that is not an envelope
-- (`v<version>.` then dot-separated base64url parts), so a plaintext code cannot land here.
CREATE TABLE outbox.envelopes (
    message_id uuid PRIMARY KEY REFERENCES outbox.messages (id) ON DELETE CASCADE,
    sealed text NOT NULL CONSTRAINT envelopes_sealed_shape CHECK (
        sealed ~ '^v[0-9]+(\.[A-Za-z0-9_-]+){2,}$'
    )
);

-- One row per recorded outcome; deleted with its message by the retention sweep. Each row
-- names the lease it was recorded under (SPEC §13): with it, an audit can compare every
-- recorded result with the leases workers held and prove that none was recorded under a stale
-- token. The token is NULL only on rows recorded before the history kept it (databases first
-- migrated by the first milestone's files).
CREATE TABLE outbox.attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id uuid NOT NULL REFERENCES outbox.messages (id) ON DELETE CASCADE,
    attempt integer NOT NULL CONSTRAINT attempts_numbered CHECK (attempt >= 1),
    counted boolean NOT NULL,
    outcome text NOT NULL CONSTRAINT attempts_outcome_known CHECK (
        outcome IN ('published', 'retry', 'release', 'dead_letter')
    ),
    failure_class text CONSTRAINT attempts_class_known CHECK (failure_class IN (
        'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
        'decryption_failed', 'unexpected_worker_error', 'link_unconfigured',
        'challenge_expired', 'invitation_expired', 'superseded_by_resend',
        'challenge_consumed', 'invitation_revoked'
    )),
    code text NOT NULL DEFAULT '',
    provider text NOT NULL DEFAULT '',
    provider_message_id text NOT NULL DEFAULT '',
    recorded_at timestamptz NOT NULL,
    retry_at timestamptz,
    lease_token uuid,
    CONSTRAINT attempts_class_shape CHECK ((outcome = 'published') = (failure_class IS NULL)),
    CONSTRAINT attempts_retry_shape CHECK (
        (outcome IN ('retry', 'release')) = (retry_at IS NOT NULL)
    )
);
CREATE INDEX attempts_by_message ON outbox.attempts (message_id, id);

RESET ROLE;
