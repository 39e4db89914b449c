-- Password recovery does the same work for known and unknown identifiers (SPEC §10, §14).
-- Until now an unknown identifier wrote nothing, so its transaction committed without a WAL
-- flush and answered about half a millisecond sooner than a known one, which writes a
-- challenge, a message and its envelope: a timing tell of who has an account.
--
-- Now both paths write the same rows inside a subtransaction. For an unknown identifier a
-- stand-in identity (the challenge id) is written first, so the challenge's foreign key
-- holds, and the subtransaction is then rolled back: the rows, index entries and WAL were
-- made, the commit has a transaction id to flush, and nothing remains (a NOTIFY queued in a
-- rolled-back subtransaction is dropped too). A known identifier's error propagates as
-- before; a stand-in's is swallowed with its rows.
--
-- The signature is unchanged, so CREATE OR REPLACE keeps the grants.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION identity.open_recovery_if_known(
    p_identity_id uuid,
    p_challenge_id uuid, p_identifier text, p_channel text, p_code_hash text,
    p_failed_attempts integer, p_created_at timestamptz, p_expires_at timestamptz,
    p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_identity_id uuid := COALESCE(p_identity_id, p_challenge_id);
BEGIN
    BEGIN
        IF p_identity_id IS NULL THEN
            INSERT INTO identity.identities (id, created_at) VALUES (v_identity_id, p_created_at);
        END IF;
        UPDATE identity.challenges AS c
        SET state = 'closed', ended_at = p_created_at
        WHERE c.purpose = 'password_recovery' AND c.identifier = p_identifier
          AND c.state = 'open' AND c.id <> p_challenge_id;
        PERFORM identity.save_challenge(
            p_challenge_id, 'password_recovery', v_identity_id, p_identifier, p_channel,
            p_code_hash, p_failed_attempts, 'open', p_created_at, p_expires_at, NULL
        );
        PERFORM outbox.enqueue_message(
            p_id => p_message_id,
            p_purpose => 'password_recovery',
            p_channel => p_channel,
            p_destination => p_identifier,
            p_subject_id => p_challenge_id,
            p_template => p_template,
            p_params => p_params,
            p_locale => p_locale,
            p_sealed_secret => p_sealed_secret,
            p_expires_at => p_expires_at
        );
        IF p_identity_id IS NULL THEN
            -- Undo the stand-in's rows; only this exception is caught, here.
            RAISE EXCEPTION USING ERRCODE = 'OXR01';
        END IF;
    EXCEPTION
        WHEN SQLSTATE 'OXR01' THEN
            NULL;
        WHEN OTHERS THEN
            -- The stand-in's rows were never to be kept: their failure changes nothing, and
            -- the answer stays the one a known identifier's hidden failure gets.
            IF p_identity_id IS NOT NULL THEN
                RAISE;
            END IF;
    END;
END
$$;

RESET ROLE;
