-- The operator console (SPEC §20) over the security outbox: staff search with filters, the last
-- hour's activity, a message's audit, repairs that record a reason, and operator pauses of a
-- provider that every worker honours.
--
-- Every staff_* function checks the caller's staff membership and fresh step-up
-- (outbox.require_elevation, 0009) before it reads or writes anything, and returns
-- destinations masked only.

SET LOCAL ROLE outbox_owner;

-- Provider pauses ----------------------------------------------------------------------------------

-- A provider staff paused: no worker sends through it until it is resumed (its messages are
-- released back to pending without spending an attempt). One row per paused provider.
CREATE TABLE outbox.provider_pauses (
    provider text PRIMARY KEY CONSTRAINT provider_pauses_name_shape CHECK (
        provider ~ '^[a-z0-9][a-z0-9_-]{0,39}$'
    ),
    paused_by uuid NOT NULL,
    reason text NOT NULL CONSTRAINT provider_pauses_reason_length CHECK (
        pg_catalog.length(reason) BETWEEN 1 AND 500
    ),
    paused_at timestamptz NOT NULL
);

-- Every pause and resume: who, when, why, under which elevation. No foreign key: the audit
-- outlives the staff membership.
CREATE TABLE outbox.provider_pause_audit (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action text NOT NULL CONSTRAINT provider_pause_audit_action_known CHECK (
        action IN ('pause', 'resume')
    ),
    provider text NOT NULL,
    actor_id uuid NOT NULL,
    elevation_id uuid NOT NULL,
    reason text NOT NULL CONSTRAINT provider_pause_audit_reason_length CHECK (
        pg_catalog.length(reason) BETWEEN 1 AND 500
    ),
    occurred_at timestamptz NOT NULL
);

-- The paused providers' names, for the worker (a few rows; read once per batch at most).
CREATE FUNCTION outbox.paused_providers() RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p.provider FROM outbox.provider_pauses AS p ORDER BY p.provider
$$;

-- The paused providers with who paused each, when and why.
CREATE FUNCTION outbox.staff_provider_pauses(p_actor uuid, p_elevation text)
RETURNS TABLE (provider text, paused_by uuid, reason text, paused_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT p.provider, p.paused_by, p.reason, p.paused_at
    FROM outbox.provider_pauses AS p
    ORDER BY p.provider;
END
$$;

-- Pause a provider, audited; false (and no audit row) when it was already paused.
CREATE FUNCTION outbox.staff_pause_provider(
    p_actor uuid, p_elevation text, p_provider text, p_reason text
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
    v_now timestamptz := pg_catalog.statement_timestamp();
BEGIN
    INSERT INTO outbox.provider_pauses (provider, paused_by, reason, paused_at)
    VALUES (p_provider, p_actor, p_reason, v_now)
    ON CONFLICT (provider) DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO outbox.provider_pause_audit (
        action, provider, actor_id, elevation_id, reason, occurred_at
    ) VALUES ('pause', p_provider, p_actor, v_elevation, p_reason, v_now);
    RETURN true;
END
$$;

-- Resume a paused provider, audited; false (and no audit row) when it was not paused.
CREATE FUNCTION outbox.staff_resume_provider(
    p_actor uuid, p_elevation text, p_provider text, p_reason text
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    DELETE FROM outbox.provider_pauses AS p WHERE p.provider = p_provider;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO outbox.provider_pause_audit (
        action, provider, actor_id, elevation_id, reason, occurred_at
    ) VALUES (
        'resume', p_provider, p_actor, v_elevation, p_reason, pg_catalog.statement_timestamp()
    );
    RETURN true;
END
$$;

-- Search ------------------------------------------------------------------------------------------

-- outbox.find_messages (0016) for staff: the same filters, keyset pages and masked
-- destinations, gated by the caller's elevation instead of the database operator's role.
CREATE FUNCTION outbox.staff_find_messages(
    p_actor uuid,
    p_elevation text,
    p_state text,
    p_purpose text,
    p_reason text,
    p_provider text,
    p_since timestamptz,
    p_until timestamptz,
    p_message_id uuid,
    p_destination_digest text,
    p_after uuid,
    p_before uuid,
    p_limit integer
)
RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    state text,
    attempt_count integer,
    created_at timestamptz,
    dead_letter_reason text,
    provider text,
    repair_action text,
    repair_message_id uuid,
    repaired_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_cursor_at timestamptz;
    v_cursor_id uuid;
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL AND p_before IS NOT NULL THEN
        RAISE EXCEPTION 'after, before: give at most one cursor'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL OR p_before IS NOT NULL THEN
        SELECT m.created_at, m.id INTO v_cursor_at, v_cursor_id
        FROM outbox.messages AS m
        WHERE m.id = COALESCE(p_after, p_before);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'cursor: no message has this id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    RETURN QUERY
    WITH page AS (
        SELECT m.*
        FROM outbox.messages AS m
        WHERE (p_state IS NULL OR m.state = p_state)
          AND (p_purpose IS NULL OR m.purpose = p_purpose)
          AND (p_reason IS NULL OR m.dead_letter_reason = p_reason)
          AND (p_since IS NULL OR m.created_at >= p_since)
          AND (p_until IS NULL OR m.created_at < p_until)
          AND (p_message_id IS NULL OR m.id = p_message_id)
          AND (p_destination_digest IS NULL OR pg_catalog.encode(
              pg_catalog.sha256(pg_catalog.convert_to(m.destination, 'UTF8')), 'hex'
          ) = p_destination_digest)
          AND (p_provider IS NULL OR EXISTS (
              SELECT 1 FROM outbox.attempts AS a
              WHERE a.message_id = m.id AND a.provider = p_provider
          ))
          AND (v_cursor_id IS NULL
               OR (p_before IS NULL AND (m.created_at, m.id) < (v_cursor_at, v_cursor_id))
               OR (p_before IS NOT NULL AND (m.created_at, m.id) > (v_cursor_at, v_cursor_id)))
        ORDER BY
            CASE WHEN p_before IS NULL THEN m.created_at END DESC,
            CASE WHEN p_before IS NULL THEN m.id END DESC,
            CASE WHEN p_before IS NOT NULL THEN m.created_at END,
            CASE WHEN p_before IS NOT NULL THEN m.id END
        LIMIT p_limit
    )
    SELECT p.id, p.purpose, p.channel, outbox.mask_destination(p.destination), p.state,
           p.attempt_count, p.created_at, p.dead_letter_reason,
           (
               SELECT a.provider FROM outbox.attempts AS a
               WHERE a.message_id = p.id
               ORDER BY a.id DESC
               LIMIT 1
           ),
           r.action, r.new_message_id, r.occurred_at
    FROM page AS p
    LEFT JOIN LATERAL (
        SELECT s.action, s.new_message_id, s.occurred_at
        FROM outbox.staff_audit AS s
        WHERE s.message_id = p.id AND s.action IN ('reissue', 'requeue')
        ORDER BY s.id DESC
        LIMIT 1
    ) AS r ON true
    ORDER BY p.created_at DESC, p.id DESC;
END
$$;

-- Activity ----------------------------------------------------------------------------------------

-- Messages created, published and dead-lettered per minute over the last p_minutes minutes
-- (1 to 240), oldest minute first, every minute present (zero-filled); read from the
-- messages' own timestamps, each range served by its index.
CREATE FUNCTION outbox.staff_activity(p_actor uuid, p_elevation text, p_minutes integer)
RETURNS TABLE (minute timestamptz, created bigint, published bigint, dead_lettered bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_end timestamptz := pg_catalog.date_trunc('minute', pg_catalog.statement_timestamp());
    v_start timestamptz;
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    IF p_minutes IS NULL OR p_minutes < 1 OR p_minutes > 240 THEN
        RAISE EXCEPTION 'minutes: must be between 1 and 240'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_start := v_end - pg_catalog.make_interval(mins => p_minutes - 1);
    RETURN QUERY
    WITH minutes AS (
        SELECT g AS minute
        FROM pg_catalog.generate_series(v_start, v_end, interval '1 minute') AS g
    ),
    created AS (
        SELECT pg_catalog.date_trunc('minute', m.created_at) AS minute, pg_catalog.count(*) AS n
        FROM outbox.messages AS m WHERE m.created_at >= v_start GROUP BY 1
    ),
    published AS (
        SELECT pg_catalog.date_trunc('minute', m.published_at) AS minute,
               pg_catalog.count(*) AS n
        FROM outbox.messages AS m WHERE m.published_at >= v_start GROUP BY 1
    ),
    dead AS (
        SELECT pg_catalog.date_trunc('minute', m.dead_lettered_at) AS minute,
               pg_catalog.count(*) AS n
        FROM outbox.messages AS m WHERE m.dead_lettered_at >= v_start GROUP BY 1
    )
    SELECT t.minute, COALESCE(c.n, 0), COALESCE(p.n, 0), COALESCE(d.n, 0)
    FROM minutes AS t
    LEFT JOIN created AS c ON c.minute = t.minute
    LEFT JOIN published AS p ON p.minute = t.minute
    LEFT JOIN dead AS d ON d.minute = t.minute
    ORDER BY t.minute;
END
$$;

-- Repairs with a reason ---------------------------------------------------------------------------

-- Why staff repaired: the console asks every repair for a reason (a ticket, a sentence; never
-- a payload, a secret or an address). NULL for the repairs made before, or without one.
ALTER TABLE outbox.staff_audit ADD COLUMN IF NOT EXISTS console_reason text
    CONSTRAINT staff_audit_console_reason_length CHECK (
        pg_catalog.length(console_reason) BETWEEN 1 AND 500
    );

-- outbox.staff_requeue_dead_letter (0009), and the audit row it wrote keeps p_reason (a replay
-- writes no row, so none is touched).
CREATE FUNCTION outbox.staff_requeue_dead_letter_for(
    p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid,
    p_idempotency_key text, p_reason text
)
RETURNS TABLE (outcome text, new_message_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id
    FROM outbox.staff_requeue_dead_letter(
        p_actor, p_elevation, p_message_id, p_new_message_id, p_idempotency_key
    ) AS r;
    UPDATE outbox.staff_audit AS a
    SET console_reason = p_reason
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.console_reason IS NULL;
END
$$;

-- outbox.staff_reissue_dead_letter (0009), and the audit row it wrote keeps p_reason.
CREATE FUNCTION outbox.staff_reissue_dead_letter_for(
    p_actor uuid,
    p_elevation text,
    p_message_id uuid,
    p_new_message_id uuid,
    p_sealed_secret text,
    p_code_hash text,
    p_idempotency_key text,
    p_reason text
)
RETURNS TABLE (outcome text, new_message_id uuid, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id, r.expires_at
    FROM outbox.staff_reissue_dead_letter(
        p_actor, p_elevation, p_message_id, p_new_message_id, p_sealed_secret, p_code_hash,
        p_idempotency_key
    ) AS r;
    UPDATE outbox.staff_audit AS a
    SET console_reason = p_reason
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.console_reason IS NULL;
END
$$;

-- The staff actions on one message (as the dead letter repaired, or as the copy a repair
-- made), oldest first. No idempotency key: it names a request, not what happened.
CREATE FUNCTION outbox.staff_message_audit(p_actor uuid, p_elevation text, p_message_id uuid)
RETURNS TABLE (
    action text,
    actor_id uuid,
    message_id uuid,
    new_message_id uuid,
    reason text,
    occurred_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT a.action, a.actor_id, a.message_id, a.new_message_id, a.console_reason,
           a.occurred_at
    FROM outbox.staff_audit AS a
    WHERE a.message_id = p_message_id OR a.new_message_id = p_message_id
    ORDER BY a.id;
END
$$;

-- Grants -----------------------------------------------------------------------------------------

REVOKE ALL ON FUNCTION
    outbox.paused_providers(),
    outbox.staff_provider_pauses(uuid, text),
    outbox.staff_pause_provider(uuid, text, text, text),
    outbox.staff_resume_provider(uuid, text, text, text),
    outbox.staff_find_messages(
        uuid, text, text, text, text, text, timestamptz, timestamptz, uuid, text, uuid, uuid,
        integer
    ),
    outbox.staff_activity(uuid, text, integer),
    outbox.staff_requeue_dead_letter_for(uuid, text, uuid, uuid, text, text),
    outbox.staff_reissue_dead_letter_for(uuid, text, uuid, uuid, text, text, text, text),
    outbox.staff_message_audit(uuid, text, uuid)
FROM PUBLIC;

GRANT EXECUTE ON FUNCTION outbox.paused_providers() TO outbox_worker;

GRANT EXECUTE ON FUNCTION
    outbox.staff_provider_pauses(uuid, text),
    outbox.staff_pause_provider(uuid, text, text, text),
    outbox.staff_resume_provider(uuid, text, text, text),
    outbox.staff_find_messages(
        uuid, text, text, text, text, text, timestamptz, timestamptz, uuid, text, uuid, uuid,
        integer
    ),
    outbox.staff_activity(uuid, text, integer),
    outbox.staff_requeue_dead_letter_for(uuid, text, uuid, uuid, text, text),
    outbox.staff_reissue_dead_letter_for(uuid, text, uuid, uuid, text, text, text, text),
    outbox.staff_message_audit(uuid, text, uuid)
TO identity_service;

RESET ROLE;
