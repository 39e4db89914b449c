-- Staff read through an incident: a step-up serves reads for hours, commands need a fresh one.
--
-- Every staff function asked for an elevation younger than five minutes, reads included, so
-- an operator watching the console in an incident was sent a new code every five minutes
-- (and with the email provider paused, none could arrive). The reading staff functions (the
-- STABLE ones) now accept an elevation of the caller's live staff session made within the
-- last eight hours, expired or not (outbox.require_read_elevation); every function that
-- changes anything keeps outbox.require_elevation, a fresh step-up. Both are one rule,
-- outbox.staff_elevation. The code keeps the same window (READ_WINDOW in
-- application/staff.py).

SET LOCAL ROLE outbox_owner;

-- Granted to nobody: the elevation that lets p_actor act, the one rule both checks share.
-- Reading, a step-up of the caller's live staff session made in the last eight hours serves,
-- expired or not; changing anything needs a live one.
CREATE FUNCTION outbox.staff_elevation(p_actor uuid, p_elevation text, p_reading boolean)
RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_elevation uuid;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    SELECT e.id INTO v_elevation
    FROM identity.elevations AS e
    JOIN identity.sessions AS s ON s.id = e.session_id
    WHERE e.token_digest = p_elevation
      AND e.identity_id = p_actor
      AND s.identity_id = p_actor
      AND s.staff
      AND CASE WHEN p_reading THEN e.created_at > v_now - interval '8 hours'
               ELSE e.expires_at > v_now END
      AND s.revoked_at IS NULL
      AND s.expires_at > v_now;
    IF v_elevation IS NULL THEN
        RAISE EXCEPTION 'fresh step-up required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v_elevation;
END
$$;

CREATE OR REPLACE FUNCTION outbox.require_elevation(p_actor uuid, p_elevation text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT outbox.staff_elevation(p_actor, p_elevation, false)
$$;

CREATE FUNCTION outbox.require_read_elevation(p_actor uuid, p_elevation text) RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT outbox.staff_elevation(p_actor, p_elevation, true)
$$;

REVOKE ALL ON FUNCTION outbox.staff_elevation(uuid, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION outbox.require_read_elevation(uuid, text) FROM PUBLIC;

-- Every reading staff function checks with it instead; their grants are kept.
DO $$
DECLARE
    v_function oid;
BEGIN
    FOR v_function IN
        SELECT p.oid
        FROM pg_catalog.pg_proc AS p
        JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('outbox', 'events')
          AND p.proname LIKE 'staff\_%'
          AND p.provolatile = 's'
          AND p.prosrc LIKE '%outbox.require_elevation(%'
    LOOP
        EXECUTE pg_catalog.replace(
            pg_catalog.pg_get_functiondef(v_function),
            'outbox.require_elevation(',
            'outbox.require_read_elevation('
        );
    END LOOP;
END
$$;
