-- Break glass: the database operator pauses and resumes providers, audited.
--
-- Staff step-up codes are outbox messages: with the email provider paused from the console,
-- no code arrived, and nothing but SQL (with no audit row) could resume it. These are the
-- database operator's versions of the staff functions (`outboxctl providers pause|resume
-- --staff EMAIL`): owner-only, like every operator function, in the named staff member's
-- name and audited without an elevation (the operator could rewrite any table anyway).

SET LOCAL ROLE outbox_owner;

ALTER TABLE outbox.provider_pause_audit ALTER COLUMN elevation_id DROP NOT NULL;

CREATE FUNCTION outbox.provider_pauses(p_actor uuid)
RETURNS TABLE (provider text, paused_by uuid, reason text, paused_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT p.provider, p.paused_by, p.reason, p.paused_at
    FROM outbox.provider_pauses AS p
    ORDER BY p.provider;
END
$$;

CREATE FUNCTION outbox.pause_provider(p_actor uuid, p_provider text, p_reason text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
BEGIN
    IF p_actor IS NULL THEN
        RAISE EXCEPTION 'p_actor: the staff member the pause is made for is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM outbox.require_operator(p_actor);
    INSERT INTO outbox.provider_pauses (provider, paused_by, reason, paused_at)
    VALUES (p_provider, p_actor, p_reason, v_now)
    ON CONFLICT (provider) DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO outbox.provider_pause_audit (
        action, provider, actor_id, elevation_id, reason, occurred_at
    ) VALUES ('pause', p_provider, p_actor, NULL, p_reason, v_now);
    RETURN true;
END
$$;

CREATE FUNCTION outbox.resume_provider(p_actor uuid, p_provider text, p_reason text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_actor IS NULL THEN
        RAISE EXCEPTION 'p_actor: the staff member the resumption is made for is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM outbox.require_operator(p_actor);
    DELETE FROM outbox.provider_pauses AS p WHERE p.provider = p_provider;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO outbox.provider_pause_audit (
        action, provider, actor_id, elevation_id, reason, occurred_at
    ) VALUES (
        'resume', p_provider, p_actor, NULL, p_reason, pg_catalog.statement_timestamp()
    );
    RETURN true;
END
$$;

REVOKE ALL ON FUNCTION
    outbox.provider_pauses(uuid),
    outbox.pause_provider(uuid, text, text),
    outbox.resume_provider(uuid, text, text)
FROM PUBLIC;
