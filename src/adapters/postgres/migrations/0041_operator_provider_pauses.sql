-- Break glass: the database operator pauses and resumes providers, audited.
--
-- Staff step-up codes are outbox messages: with the email provider paused from the console,
-- no code arrived, and nothing but SQL (with no audit row) could resume it. These are the
-- database operator's versions of the staff functions (`outboxctl providers pause|resume
-- --staff EMAIL`): owner-only, like every operator function, in the named staff member's
-- name and audited without an elevation (the operator could rewrite any table anyway). Both
-- versions now change the pause through one function, so the rule and the audit exist once.

SET LOCAL ROLE outbox_owner;

ALTER TABLE outbox.provider_pause_audit ALTER COLUMN elevation_id DROP NOT NULL;

-- Granted to nobody: pause (or resume) ``p_provider`` for ``p_actor``, audited with the
-- elevation that allowed it (NULL: the database operator); false when nothing changed.
CREATE FUNCTION outbox.change_provider_pause(
    p_pause boolean, p_actor uuid, p_elevation uuid, p_provider text, p_reason text
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
BEGIN
    IF p_pause THEN
        INSERT INTO outbox.provider_pauses (provider, paused_by, reason, paused_at)
        VALUES (p_provider, p_actor, p_reason, v_now)
        ON CONFLICT (provider) DO NOTHING;
    ELSE
        DELETE FROM outbox.provider_pauses AS p WHERE p.provider = p_provider;
    END IF;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO outbox.provider_pause_audit (
        action, provider, actor_id, elevation_id, reason, occurred_at
    ) VALUES (
        CASE WHEN p_pause THEN 'pause' ELSE 'resume' END, p_provider, p_actor, p_elevation,
        p_reason, v_now
    );
    RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION outbox.staff_pause_provider(
    p_actor uuid, p_elevation text, p_provider text, p_reason text
) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT outbox.change_provider_pause(
        true, p_actor, outbox.require_elevation(p_actor, p_elevation), p_provider, p_reason
    )
$$;

CREATE OR REPLACE FUNCTION outbox.staff_resume_provider(
    p_actor uuid, p_elevation text, p_provider text, p_reason text
) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT outbox.change_provider_pause(
        false, p_actor, outbox.require_elevation(p_actor, p_elevation), p_provider, p_reason
    )
$$;

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

-- The database operator's: in the named staff member's name (required), no elevation.
CREATE FUNCTION outbox.pause_provider(p_actor uuid, p_provider text, p_reason text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_actor IS NULL THEN
        RAISE EXCEPTION 'p_actor: the staff member it is done for is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM outbox.require_operator(p_actor);
    RETURN outbox.change_provider_pause(true, p_actor, NULL, p_provider, p_reason);
END
$$;

CREATE FUNCTION outbox.resume_provider(p_actor uuid, p_provider text, p_reason text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_actor IS NULL THEN
        RAISE EXCEPTION 'p_actor: the staff member it is done for is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM outbox.require_operator(p_actor);
    RETURN outbox.change_provider_pause(false, p_actor, NULL, p_provider, p_reason);
END
$$;

REVOKE ALL ON FUNCTION
    outbox.change_provider_pause(boolean, uuid, uuid, text, text),
    outbox.provider_pauses(uuid),
    outbox.pause_provider(uuid, text, text),
    outbox.resume_provider(uuid, text, text)
FROM PUBLIC;
