-- Delivery receipts and suppression (SPEC §19): the tables, and suppression at claim time.
--
-- "published" only says that a provider accepted a message. A provider's webhook later says
-- what became of it: delivered, bounced, complained about, or failed. Each receipt is kept
-- once, insert-only (outbox.receipts), sanitised by the webhook listener (no full address,
-- no secret), and correlated with its message through the provider message id the publishing
-- attempt recorded. A message's delivery state (outbox.delivery_states; no row: accepted)
-- only moves forward, along a total order, so the same receipts give the same state in any
-- order. A hard bounce or a complaint suppresses the destination (outbox.suppressions, by
-- the SHA-256 of the destination, the digest outboxctl messages list --destination already
-- uses): a later message to it is dead-lettered 'suppressed' when a worker claims it, and
-- is never handed to a provider. Operators add and lift suppressions; every change is
-- written to outbox.suppression_audit.

SET LOCAL ROLE outbox_owner;

ALTER TABLE outbox.messages
    DROP CONSTRAINT messages_reason_known,
    ADD CONSTRAINT messages_reason_known CHECK (dead_letter_reason IN (
        'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
        'decryption_failed', 'unexpected_worker_error', 'link_unconfigured',
        'challenge_expired', 'invitation_expired', 'superseded_by_resend',
        'challenge_consumed', 'invitation_revoked', 'challenge_locked', 'suppressed'
    )) NOT VALID;
ALTER TABLE outbox.messages VALIDATE CONSTRAINT messages_reason_known;

-- Correlation: a receipt names the provider's message id, which the publishing attempt
-- stored. Published attempts with an id only, so the worker's other rows cost nothing here.
CREATE INDEX attempts_by_provider_message_id ON outbox.attempts (provider_message_id, provider)
    WHERE outcome = 'published' AND provider_message_id <> '';

-- One row per provider event, whatever it says. event is what the receipt means:
--   delivered     the recipient's server accepted it
--   bounced       a permanent (hard) bounce: the address does not exist or refuses mail
--   soft_bounced  a transient bounce (mailbox full, greylisting): the state does not move
--   complained    the recipient marked it as spam
--   failed        the provider refused to send it (SES Reject, a WhatsApp failure)
--   other         anything else the provider reports (opens, clicks): kept, no effect
-- message_id is NULL when no published attempt carries the provider message id: the
-- receipt is kept (an operator can see what arrived) and changes nothing.
CREATE TABLE outbox.receipts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider text NOT NULL CONSTRAINT receipts_provider_known CHECK (
        provider IN ('ses', 'brevo', 'wasender')
    ),
    -- The provider's id of this event (SNS MessageId; a digest of the event's fields for a
    -- provider that numbers none): the same event delivered twice is kept once.
    provider_event_id text NOT NULL CONSTRAINT receipts_event_id_shape CHECK (
        pg_catalog.length(provider_event_id) BETWEEN 1 AND 200
    ),
    provider_message_id text NOT NULL CONSTRAINT receipts_message_id_shape CHECK (
        pg_catalog.length(provider_message_id) <= 300
    ),
    message_id uuid REFERENCES outbox.messages (id) ON DELETE CASCADE,
    event text NOT NULL CONSTRAINT receipts_event_known CHECK (
        event IN ('delivered', 'bounced', 'soft_bounced', 'complained', 'failed', 'other')
    ),
    -- The provider's own word for it (Permanent/General, spam, hard_bounce...), short.
    detail text NOT NULL DEFAULT '' CONSTRAINT receipts_detail_short CHECK (
        pg_catalog.length(detail) <= 200
    ),
    occurred_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    -- The body as received, sanitised: addresses masked, secrets and headers dropped. The
    -- check is a last line of defence: no unmasked e-mail address (local@domain) gets in.
    raw jsonb NOT NULL CONSTRAINT receipts_raw_object CHECK (
        pg_catalog.jsonb_typeof(raw) = 'object'
    ),
    CONSTRAINT receipts_raw_masked CHECK (raw::text !~ '[A-Za-z0-9._%+=-]@[A-Za-z0-9]'),
    CONSTRAINT receipts_once UNIQUE (provider, provider_event_id)
);
CREATE INDEX receipts_by_message ON outbox.receipts (message_id, id) WHERE message_id IS NOT NULL;
-- Receipts that named no message, by age, for their own retention.
CREATE INDEX receipts_unmatched_age ON outbox.receipts (received_at) WHERE message_id IS NULL;

-- Receipts are evidence: no UPDATE ever, and a DELETE only by retention: the cascade of a
-- purged message (a foreign-key action, which runs inside a trigger), or a retention job
-- run by the database operator that says so in a transaction-local setting
-- (SET LOCAL outbox.receipt_retention = on).
CREATE FUNCTION outbox.refuse_receipt_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' AND (
        pg_catalog.pg_trigger_depth() > 1
        OR pg_catalog.current_setting('outbox.receipt_retention', true) = 'on'
    ) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'receipts are insert-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
REVOKE ALL ON FUNCTION outbox.refuse_receipt_change() FROM PUBLIC;

CREATE TRIGGER receipts_insert_only
    BEFORE UPDATE OR DELETE ON outbox.receipts
    FOR EACH ROW EXECUTE FUNCTION outbox.refuse_receipt_change();

-- A message's delivery state once a receipt moved it; no row means accepted (or not sent).
CREATE TABLE outbox.delivery_states (
    message_id uuid PRIMARY KEY REFERENCES outbox.messages (id) ON DELETE CASCADE,
    state text NOT NULL CONSTRAINT delivery_states_known CHECK (
        state IN ('delivered', 'failed', 'bounced', 'complained')
    ),
    updated_at timestamptz NOT NULL
);

-- Destinations no message may be sent to. At most one active (unlifted) row per digest; a
-- lifted row stays, for the audit. receipt_id names the receipt that caused it (NULL: an
-- operator added it).
CREATE TABLE outbox.suppressions (
    id uuid PRIMARY KEY,
    destination_digest text NOT NULL CONSTRAINT suppressions_digest_shape CHECK (
        destination_digest ~ '^[0-9a-f]{64}$'
    ),
    destination_masked text NOT NULL CONSTRAINT suppressions_masked_shape CHECK (
        destination_masked !~ '[A-Za-z0-9._%+=-]@' AND destination_masked !~ '[0-9]{5}'
    ),
    channel text NOT NULL CONSTRAINT suppressions_channel_known CHECK (
        channel IN ('email', 'sms', 'whatsapp')
    ),
    cause text NOT NULL CONSTRAINT suppressions_cause_known CHECK (
        cause IN ('hard_bounce', 'complaint', 'operator')
    ),
    receipt_id bigint REFERENCES outbox.receipts (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL,
    lifted_at timestamptz,
    -- An operator's suppression names no receipt; a receipt's may lose its receipt to
    -- retention.
    CONSTRAINT suppressions_receipt_shape CHECK (cause <> 'operator' OR receipt_id IS NULL)
);
CREATE UNIQUE INDEX suppressions_one_active ON outbox.suppressions (destination_digest)
    WHERE lifted_at IS NULL;
CREATE INDEX suppressions_by_age ON outbox.suppressions (created_at DESC, id);

-- Who added or lifted each suppression, and why. actor_id NULL: the database operator
-- (outboxctl) or, for an add with a receipt, the provider's receipt.
CREATE TABLE outbox.suppression_audit (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    suppression_id uuid NOT NULL REFERENCES outbox.suppressions (id),
    action text NOT NULL CONSTRAINT suppression_audit_action_known CHECK (
        action IN ('add', 'lift')
    ),
    actor_id uuid,
    elevation_id uuid,
    reason text NOT NULL CONSTRAINT suppression_audit_reason_shape CHECK (
        pg_catalog.length(reason) BETWEEN 1 AND 500
    ),
    occurred_at timestamptz NOT NULL
);
CREATE INDEX suppression_audit_by_suppression ON outbox.suppression_audit (suppression_id, id);

-- The claim dead-letters a suppressed message instead of leasing it: a BEFORE UPDATE trigger
-- on the fresh lease, so every claim path (whatever its shape) is covered and the worker is
-- never handed the message. The claim already drops the envelope of every row it turns
-- dead-lettered, and returns only the leased ones.
CREATE FUNCTION outbox.suppress_at_claim() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM outbox.suppressions AS s
        WHERE s.destination_digest = pg_catalog.encode(
                  pg_catalog.sha256(pg_catalog.convert_to(NEW.destination, 'UTF8')), 'hex'
              )
          AND s.lifted_at IS NULL
    ) THEN
        NEW.state := 'dead_lettered';
        NEW.lease_owner := NULL;
        NEW.lease_token := NULL;
        NEW.lease_expires_at := NULL;
        NEW.dead_lettered_at := pg_catalog.statement_timestamp();
        NEW.dead_letter_reason := 'suppressed';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION outbox.suppress_at_claim() FROM PUBLIC;

CREATE TRIGGER messages_suppressed_at_claim
    BEFORE UPDATE ON outbox.messages
    FOR EACH ROW
    WHEN (NEW.state = 'leased' AND OLD.lease_token IS DISTINCT FROM NEW.lease_token)
    EXECUTE FUNCTION outbox.suppress_at_claim();

RESET ROLE;
