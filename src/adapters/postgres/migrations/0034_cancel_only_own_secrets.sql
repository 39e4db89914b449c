-- Withdrawing live messages by subject is the identity module's, and only for its secrets.
--
-- outbox.cancel_by_subject was granted to outbox_producer (0009): any producer service that
-- learned an identity id (every identity.* event carries one) could withdraw the security
-- notice queued for that identity, and it was never sent. Now only identity_service may call
-- it, and it withdraws only messages that carry a code, a link or an invitation (the purposes
-- a consumed, revoked or locked challenge or invitation makes useless); a security notice or a
-- notification is never withdrawn by subject.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION outbox.cancel_by_subject(p_subject_id uuid, p_reason text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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
        WHERE m.subject_id = p_subject_id
          AND m.state IN ('pending', 'leased')
          AND m.purpose IN ('sign_up', 'add_sign_in_method', 'password_recovery', 'step_up',
                            'invitation', 'magic_link')
        RETURNING m.id
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e USING cancelled AS c WHERE e.message_id = c.id
    )
    SELECT pg_catalog.count(*) INTO v_cancelled FROM cancelled;
    RETURN v_cancelled;
END
$$;

REVOKE ALL ON FUNCTION outbox.cancel_by_subject(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION outbox.cancel_by_subject(uuid, text) FROM outbox_producer;
REVOKE ALL ON FUNCTION outbox.cancel_by_subject(uuid, text) FROM outbox_runtime;
GRANT EXECUTE ON FUNCTION outbox.cancel_by_subject(uuid, text) TO identity_service;
