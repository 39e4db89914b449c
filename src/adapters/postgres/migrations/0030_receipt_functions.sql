-- Delivery receipts and suppression (SPEC §19): recording a receipt (the webhook listener,
-- in the API process: identity_service), the operator's suppression list, add and lift
-- (outboxctl as the database operator; the staff_* twins check the staff member's own fresh
-- elevation, for the admin listener), a message's receipts, and the metrics counts.

SET LOCAL ROLE outbox_owner;

-- The delivery-state order -------------------------------------------------------------------
-- accepted < delivered < failed < bounced < complained. A receipt's event moves the state to
-- the higher of the two (soft_bounced and other move nothing). Taking the maximum is
-- commutative, associative and idempotent, so duplicates and any arrival order give the same
-- final state. The domain twin is domain.outbox.delivery_states.
CREATE FUNCTION outbox.delivery_state_rank(p_state text) RETURNS integer
LANGUAGE sql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE p_state
        WHEN 'accepted' THEN 0
        WHEN 'delivered' THEN 1
        WHEN 'failed' THEN 2
        WHEN 'bounced' THEN 3
        WHEN 'complained' THEN 4
    END
$$;
REVOKE ALL ON FUNCTION outbox.delivery_state_rank(text) FROM PUBLIC;

-- The state after p_state (NULL: accepted) receives an event.
CREATE FUNCTION outbox.delivery_state_after(p_state text, p_event text) RETURNS text
LANGUAGE sql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN p_event NOT IN ('delivered', 'failed', 'bounced', 'complained')
            THEN COALESCE(p_state, 'accepted')
        WHEN outbox.delivery_state_rank(p_event)
             > outbox.delivery_state_rank(COALESCE(p_state, 'accepted'))
            THEN p_event
        ELSE COALESCE(p_state, 'accepted')
    END
$$;
REVOKE ALL ON FUNCTION outbox.delivery_state_after(text, text) FROM PUBLIC;

-- Recording a receipt --------------------------------------------------------------------------
-- One verified, sanitised receipt. The same (provider, event id) twice is kept once and the
-- second changes nothing (duplicate). The message is the one whose published attempt
-- through p_provider recorded p_provider_message_id; none: the receipt is kept, unmatched,
-- and changes nothing. A matched delivered/failed/bounced/complained receipt advances the
-- message's delivery state along the order above; a bounced or complained one suppresses
-- the message's destination, unless an operator lifted a suppression of it at or after the
-- time the receipt reports (an old receipt arriving late does not undo the lift).
CREATE FUNCTION outbox.record_receipt(
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
REVOKE ALL ON FUNCTION outbox.record_receipt(text, text, text, text, text, timestamptz, jsonb)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.record_receipt(text, text, text, text, text, timestamptz, jsonb)
    TO identity_service;

-- A message's receipts and delivery state ------------------------------------------------------

-- The receipts of one message, oldest first (raw bodies stay in the table).
CREATE FUNCTION outbox.message_receipts(p_actor uuid, p_message_id uuid)
RETURNS TABLE (
    id bigint,
    provider text,
    event text,
    detail text,
    occurred_at timestamptz,
    received_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT r.id, r.provider, r.event, r.detail, r.occurred_at, r.received_at
    FROM outbox.receipts AS r
    WHERE r.message_id = p_message_id
    ORDER BY r.id;
END
$$;

CREATE FUNCTION outbox.staff_message_receipts(p_actor uuid, p_elevation text, p_message_id uuid)
RETURNS TABLE (
    id bigint,
    provider text,
    event text,
    detail text,
    occurred_at timestamptz,
    received_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT r.* FROM outbox.message_receipts(p_actor, p_message_id) AS r;
END
$$;

-- Published messages per delivery state (accepted: published, no receipt moved it yet), for
-- the metrics gauges. Zero-filled.
CREATE FUNCTION outbox.delivery_state_counts()
RETURNS TABLE (state text, messages bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT k.state, COALESCE(c.messages, 0)
    FROM pg_catalog.unnest(
        ARRAY['accepted', 'delivered', 'failed', 'bounced', 'complained']
    ) AS k (state)
    LEFT JOIN (
        SELECT COALESCE(d.state, 'accepted') AS state, pg_catalog.count(*) AS messages
        FROM outbox.messages AS m
        LEFT JOIN outbox.delivery_states AS d ON d.message_id = m.id
        WHERE m.state = 'published'
        GROUP BY 1
    ) AS c ON c.state = k.state
$$;
REVOKE ALL ON FUNCTION outbox.delivery_state_counts() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.delivery_state_counts() TO identity_service;

-- Suppressions ----------------------------------------------------------------------------------

-- The newest suppressions first, active ones only unless p_include_lifted; reason is the one
-- given when it was added (a receipt's: its provider and event).
CREATE FUNCTION outbox.list_suppressions(p_actor uuid, p_include_lifted boolean, p_limit integer)
RETURNS TABLE (
    id uuid,
    destination text,
    channel text,
    cause text,
    reason text,
    created_at timestamptz,
    lifted_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT s.id, s.destination_masked, s.channel, s.cause,
           (SELECT a.reason FROM outbox.suppression_audit AS a
            WHERE a.suppression_id = s.id AND a.action = 'add' ORDER BY a.id LIMIT 1),
           s.created_at, s.lifted_at
    FROM outbox.suppressions AS s
    WHERE p_include_lifted OR s.lifted_at IS NULL
    ORDER BY s.created_at DESC, s.id DESC
    LIMIT p_limit;
END
$$;

-- Suppress p_destination (the exact destination, as messages carry it) on p_channel, audited
-- with p_reason; an already suppressed destination is left as it is (created false).
CREATE FUNCTION outbox.add_suppression(
    p_actor uuid, p_elevation_id uuid, p_destination text, p_channel text, p_reason text
)
RETURNS TABLE (id uuid, destination text, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_digest text;
    v_id uuid;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_destination IS NULL OR p_destination = '' THEN
        RAISE EXCEPTION 'destination: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_reason IS NULL OR pg_catalog.length(pg_catalog.btrim(p_reason)) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'reason: required, at most 500 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_channel IS NULL OR p_channel NOT IN ('email', 'sms', 'whatsapp') THEN
        RAISE EXCEPTION 'channel: expected email, sms or whatsapp'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_digest := pg_catalog.encode(
        pg_catalog.sha256(pg_catalog.convert_to(p_destination, 'UTF8')), 'hex'
    );
    INSERT INTO outbox.suppressions AS s (
        id, destination_digest, destination_masked, channel, cause, created_at
    ) VALUES (
        pg_catalog.gen_random_uuid(), v_digest, outbox.mask_destination(p_destination),
        p_channel, 'operator', v_now
    )
    ON CONFLICT (destination_digest) WHERE lifted_at IS NULL DO NOTHING
    RETURNING s.id INTO v_id;
    IF v_id IS NULL THEN
        SELECT s.id INTO v_id FROM outbox.suppressions AS s
        WHERE s.destination_digest = v_digest AND s.lifted_at IS NULL;
        RETURN QUERY SELECT v_id, outbox.mask_destination(p_destination), false;
        RETURN;
    END IF;
    INSERT INTO outbox.suppression_audit (
        suppression_id, action, actor_id, elevation_id, reason, occurred_at
    ) VALUES (v_id, 'add', p_actor, p_elevation_id, pg_catalog.btrim(p_reason), v_now);
    RETURN QUERY SELECT v_id, outbox.mask_destination(p_destination), true;
END
$$;

-- Lift the active suppression of p_destination, audited with p_reason; no row when none.
CREATE FUNCTION outbox.lift_suppression(
    p_actor uuid, p_elevation_id uuid, p_destination text, p_reason text
)
RETURNS TABLE (id uuid, destination text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_id uuid;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_reason IS NULL OR pg_catalog.length(pg_catalog.btrim(p_reason)) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'reason: required, at most 500 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE outbox.suppressions AS s
    SET lifted_at = v_now
    WHERE s.destination_digest = pg_catalog.encode(
              pg_catalog.sha256(pg_catalog.convert_to(COALESCE(p_destination, ''), 'UTF8')), 'hex'
          )
      AND s.lifted_at IS NULL
    RETURNING s.id INTO v_id;
    IF v_id IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO outbox.suppression_audit (
        suppression_id, action, actor_id, elevation_id, reason, occurred_at
    ) VALUES (v_id, 'lift', p_actor, p_elevation_id, pg_catalog.btrim(p_reason), v_now);
    RETURN QUERY SELECT v_id, outbox.mask_destination(p_destination);
END
$$;

-- The staff twins: the staff member's own fresh elevation, checked here, recorded in the audit.
CREATE FUNCTION outbox.staff_suppressions(
    p_actor uuid, p_elevation text, p_include_lifted boolean, p_limit integer
)
RETURNS TABLE (
    id uuid,
    destination text,
    channel text,
    cause text,
    reason text,
    created_at timestamptz,
    lifted_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT s.* FROM outbox.list_suppressions(p_actor, p_include_lifted, p_limit) AS s;
END
$$;

CREATE FUNCTION outbox.staff_add_suppression(
    p_actor uuid, p_elevation text, p_destination text, p_channel text, p_reason text
)
RETURNS TABLE (id uuid, destination text, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY SELECT s.* FROM outbox.add_suppression(
        p_actor, v_elevation, p_destination, p_channel, p_reason
    ) AS s;
END
$$;

CREATE FUNCTION outbox.staff_lift_suppression(
    p_actor uuid, p_elevation text, p_destination text, p_reason text
)
RETURNS TABLE (id uuid, destination text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY SELECT s.* FROM outbox.lift_suppression(
        p_actor, v_elevation, p_destination, p_reason
    ) AS s;
END
$$;

GRANT EXECUTE ON FUNCTION
    outbox.staff_message_receipts(uuid, text, uuid),
    outbox.staff_suppressions(uuid, text, boolean, integer),
    outbox.staff_add_suppression(uuid, text, text, text, text),
    outbox.staff_lift_suppression(uuid, text, text, text)
TO identity_service;

RESET ROLE;
