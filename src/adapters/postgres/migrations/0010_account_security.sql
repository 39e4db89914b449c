-- Account security (SPEC §14 "Accounts" and the wrong-code budget of "Limits"): the
-- security_notice purpose, the challenge_locked withdrawal, signing out one session, and the
-- daily budget of wrong codes per account.

SET LOCAL ROLE outbox_owner;

-- Purposes and withdrawal reasons ------------------------------------------------------------
-- A security notice carries no secret and names the account it is about as its subject
-- (outbox.enqueue_message, replaced after this file by 0013 and 0014, accepts it from
-- 0014_trace_context.sql on; a later replacement must keep it). A challenge locked by wrong codes withdraws its unsent message
-- (challenge_locked). The new
-- constraints are added NOT VALID and then validated, so existing rows are checked without
-- holding the table's strongest lock for the scan.

ALTER TABLE outbox.messages
    DROP CONSTRAINT messages_purpose_known,
    ADD CONSTRAINT messages_purpose_known CHECK (purpose IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up',
        'invitation', 'magic_link', 'notification', 'security_notice'
    )) NOT VALID,
    DROP CONSTRAINT messages_reason_known,
    ADD CONSTRAINT messages_reason_known CHECK (dead_letter_reason IN (
        'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
        'decryption_failed', 'unexpected_worker_error', 'link_unconfigured',
        'challenge_expired', 'invitation_expired', 'superseded_by_resend',
        'challenge_consumed', 'invitation_revoked', 'challenge_locked'
    )) NOT VALID;
ALTER TABLE outbox.messages VALIDATE CONSTRAINT messages_purpose_known;
ALTER TABLE outbox.messages VALIDATE CONSTRAINT messages_reason_known;

-- Withdraw every live message of a subject that was consumed, revoked or locked (0003, now
-- with challenge_locked); fences leases. Same signature: the grants of 0003 stay.
CREATE OR REPLACE FUNCTION outbox.cancel_by_subject(p_subject_id uuid, p_reason text)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_cancelled integer;
BEGIN
    IF p_reason IS NULL
        OR p_reason NOT IN ('challenge_consumed', 'invitation_revoked', 'challenge_locked') THEN
        RAISE EXCEPTION
            'p_reason: expected challenge_consumed, invitation_revoked or challenge_locked, got %',
            p_reason USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH cancelled AS (
        UPDATE outbox.messages AS m
        SET state = 'dead_lettered',
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            dead_lettered_at = v_now,
            dead_letter_reason = p_reason
        WHERE m.subject_id = p_subject_id AND m.state IN ('pending', 'leased')
        RETURNING m.id
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e USING cancelled AS c WHERE e.message_id = c.id
    )
    SELECT pg_catalog.count(*) INTO v_cancelled FROM cancelled;
    RETURN v_cancelled;
END
$$;

-- Sessions ------------------------------------------------------------------------------------

-- Sign out: revoke one session (DELETE /sessions/current); answers 1, or 0 if it had ended.
CREATE FUNCTION identity.revoke_session(p_session_id uuid, p_now timestamptz) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH revoked AS (
        UPDATE identity.sessions AS s
        SET revoked_at = p_now
        WHERE s.id = p_session_id AND s.revoked_at IS NULL AND s.expires_at > p_now
        RETURNING s.id
    )
    SELECT pg_catalog.count(*)::integer FROM revoked
$$;

-- The wrong-code budget -----------------------------------------------------------------------
-- One row per account, audience and UTC day. The rule (how many wrong codes exhaust it) lives
-- in the domain (domain/identity/code_budgets.py); these functions lock, store and tidy.

CREATE TABLE identity.code_budgets (
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    audience text NOT NULL CONSTRAINT code_budgets_audience_known CHECK (
        audience IN ('anyone', 'session')
    ),
    day date NOT NULL,
    wrong_codes integer NOT NULL DEFAULT 0 CONSTRAINT code_budgets_wrong_codes_counted CHECK (
        wrong_codes >= 0
    ),
    exhausted_at timestamptz,
    PRIMARY KEY (identity_id, audience, day)
);
CREATE INDEX code_budgets_by_day ON identity.code_budgets (day);

-- The day's budget, created if absent and locked until the transaction ends: every code typed
-- for one account and audience waits for the one before it, so concurrent guesses cannot
-- spend more than the budget. Each call also deletes a few rows of earlier days.
CREATE FUNCTION identity.hold_code_budget(p_identity_id uuid, p_audience text, p_day date)
RETURNS TABLE (wrong_codes integer, exhausted_at timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM identity.code_budgets AS b
    WHERE (b.identity_id, b.audience, b.day) IN (
        SELECT old.identity_id, old.audience, old.day FROM identity.code_budgets AS old
        WHERE old.day < p_day
        ORDER BY old.day
        LIMIT 10
        FOR UPDATE SKIP LOCKED
    );
    INSERT INTO identity.code_budgets AS b (identity_id, audience, day)
    VALUES (p_identity_id, p_audience, p_day)
    ON CONFLICT (identity_id, audience, day) DO UPDATE SET wrong_codes = b.wrong_codes
    RETURNING b.wrong_codes, b.exhausted_at;
$$;

CREATE FUNCTION identity.save_code_budget(
    p_identity_id uuid, p_audience text, p_day date, p_wrong_codes integer,
    p_exhausted_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.code_budgets AS b (identity_id, audience, day, wrong_codes, exhausted_at)
    VALUES (p_identity_id, p_audience, p_day, p_wrong_codes, p_exhausted_at)
    ON CONFLICT (identity_id, audience, day) DO UPDATE
    SET wrong_codes = excluded.wrong_codes, exhausted_at = excluded.exhausted_at
$$;

-- Grants: the new identity functions for the API role (identity_service, 0009) only.
REVOKE ALL ON FUNCTION identity.revoke_session(uuid, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.hold_code_budget(uuid, text, date) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.save_code_budget(uuid, text, date, integer, timestamptz)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.revoke_session(uuid, timestamptz) TO identity_service;
GRANT EXECUTE ON FUNCTION identity.hold_code_budget(uuid, text, date) TO identity_service;
GRANT EXECUTE ON FUNCTION identity.save_code_budget(uuid, text, date, integer, timestamptz)
    TO identity_service;
