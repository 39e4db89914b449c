-- A suppressed identifier's owner is told (SPEC §19). When a receipt suppresses a destination
-- that is a verified sign-in identifier of an account, every other verified identifier of
-- that account gets a security_notice (change identifier_suppressed, the identifier
-- masked): the codes that address would receive no longer arrive, and the owner should know
-- why before they are locked out. The notice is enqueued in the transaction that records the
-- receipt. The answers of the public API do not change (a suppressed address signs up,
-- recovers and asks for links exactly as any other; its messages are dead-lettered later, at
-- claim), so nobody outside learns that an address is suppressed.
--
-- record_receipt keeps its signature (its grant stays) and 0030's body, plus the notice.

SET LOCAL ROLE outbox_owner;

-- The identity module's part: who owns p_destination, and whom else to tell. Internal
-- (called by outbox.record_receipt as the owner); granted to nobody.
CREATE FUNCTION identity.notify_suppressed_identifier(
    p_destination text, p_occurred_at timestamptz
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_identity uuid;
    v_count integer := 0;
    v_other record;
BEGIN
    SELECT l.identity_id INTO v_identity
    FROM identity.login_identifiers AS l
    WHERE l.value = p_destination AND l.verified_at IS NOT NULL;
    IF v_identity IS NULL THEN
        RETURN 0;
    END IF;
    FOR v_other IN
        SELECT l.value, l.channel
        FROM identity.login_identifiers AS l
        WHERE l.identity_id = v_identity AND l.verified_at IS NOT NULL AND l.value <> p_destination
        ORDER BY l.channel <> 'email', l.created_at, l.value
    LOOP
        PERFORM outbox.enqueue_message(
            pg_catalog.gen_random_uuid(), 'security_notice', v_other.channel, v_other.value,
            v_identity, 'security_notice',
            pg_catalog.jsonb_build_object(
                'change', 'identifier_suppressed',
                'identifier', outbox.mask_destination(p_destination),
                'occurred_at', pg_catalog.to_char(
                    p_occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'
                )
            ),
            'en'
        );
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END
$$;
REVOKE ALL ON FUNCTION identity.notify_suppressed_identifier(text, timestamptz) FROM PUBLIC;

CREATE OR REPLACE FUNCTION outbox.record_receipt(
    p_provider text,
    p_provider_event_id text,
    p_provider_message_id text,
    p_event text,
    p_detail text,
    p_occurred_at timestamptz,
    p_raw jsonb
)
RETURNS TABLE (
    receipt_id bigint,
    message_id uuid,
    duplicate boolean,
    delivery_state text,
    suppressed boolean
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_receipt bigint;
    v_message uuid;
    v_destination text;
    v_channel text;
    v_digest text;
    v_state text;
    v_suppression uuid;
BEGIN
    IF p_occurred_at IS NULL OR NOT pg_catalog.isfinite(p_occurred_at) THEN
        RAISE EXCEPTION 'p_occurred_at: expected a finite time'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT a.message_id INTO v_message
    FROM outbox.attempts AS a
    WHERE a.provider_message_id = p_provider_message_id
      AND a.provider = p_provider
      AND a.outcome = 'published'
      AND p_provider_message_id <> ''
    ORDER BY a.id DESC
    LIMIT 1;

    INSERT INTO outbox.receipts AS r (
        provider, provider_event_id, provider_message_id, message_id, event, detail,
        occurred_at, received_at, raw
    ) VALUES (
        p_provider, p_provider_event_id, COALESCE(p_provider_message_id, ''), v_message,
        p_event, COALESCE(p_detail, ''), p_occurred_at, v_now, COALESCE(p_raw, '{}')
    )
    ON CONFLICT ON CONSTRAINT receipts_once DO NOTHING
    RETURNING r.id INTO v_receipt;

    IF v_receipt IS NULL THEN
        SELECT r.id, r.message_id INTO v_receipt, v_message
        FROM outbox.receipts AS r
        WHERE r.provider = p_provider AND r.provider_event_id = p_provider_event_id;
        RETURN QUERY
        SELECT v_receipt, v_message, true,
               COALESCE(
                   (SELECT d.state FROM outbox.delivery_states AS d WHERE d.message_id = v_message),
                   'accepted'
               ),
               false;
        RETURN;
    END IF;

    IF v_message IS NULL THEN
        RETURN QUERY SELECT v_receipt, NULL::uuid, false, NULL::text, false;
        RETURN;
    END IF;

    -- Two receipts of one message at once: the first takes the row, the second waits and
    -- then reads the state the first wrote, so neither overwrites the other.
    INSERT INTO outbox.delivery_states AS d (message_id, state, updated_at)
    SELECT v_message, p_event, v_now
    WHERE p_event IN ('delivered', 'failed', 'bounced', 'complained')
    ON CONFLICT (message_id) DO UPDATE
        SET state = outbox.delivery_state_after(d.state, EXCLUDED.state),
            updated_at = CASE
                WHEN outbox.delivery_state_after(d.state, EXCLUDED.state) = d.state
                    THEN d.updated_at
                ELSE EXCLUDED.updated_at
            END;
    SELECT COALESCE(
        (SELECT d.state FROM outbox.delivery_states AS d WHERE d.message_id = v_message),
        'accepted'
    ) INTO v_state;

    IF p_event IN ('bounced', 'complained') THEN
        SELECT m.destination, m.channel INTO v_destination, v_channel
        FROM outbox.messages AS m WHERE m.id = v_message;
        v_digest := pg_catalog.encode(
            pg_catalog.sha256(pg_catalog.convert_to(v_destination, 'UTF8')), 'hex'
        );
        IF NOT EXISTS (
            SELECT 1 FROM outbox.suppressions AS s
            WHERE s.destination_digest = v_digest AND s.lifted_at >= p_occurred_at
        ) THEN
            INSERT INTO outbox.suppressions AS s (
                id, destination_digest, destination_masked, channel, cause, receipt_id,
                created_at
            ) VALUES (
                pg_catalog.gen_random_uuid(), v_digest, outbox.mask_destination(v_destination),
                v_channel,
                CASE p_event WHEN 'bounced' THEN 'hard_bounce' ELSE 'complaint' END,
                v_receipt, v_now
            )
            ON CONFLICT (destination_digest) WHERE lifted_at IS NULL DO NOTHING
            RETURNING s.id INTO v_suppression;
            IF v_suppression IS NOT NULL THEN
                PERFORM identity.notify_suppressed_identifier(v_destination, p_occurred_at);
                INSERT INTO outbox.suppression_audit (
                    suppression_id, action, actor_id, reason, occurred_at
                ) VALUES (
                    v_suppression, 'add', NULL,
                    p_provider || ' receipt ' || p_event
                        || CASE WHEN COALESCE(p_detail, '') = '' THEN '' ELSE ': ' || p_detail END,
                    v_now
                );
            END IF;
        END IF;
    END IF;

    RETURN QUERY SELECT v_receipt, v_message, false, v_state, v_suppression IS NOT NULL;
END
$$;

RESET ROLE;
