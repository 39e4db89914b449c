-- Staff power comes only from the admin listener's role and a consumed step-up challenge.
--
-- identity.add_session and identity.add_elevation were granted to identity_service and checked
-- nothing, and outbox.require_elevation only asked that an elevation row existed: a login
-- holding only the public API's role minted a session and an elevation for a staff member and
-- acted in their name through every staff function. From here:
--
-- - staff_service is the admin listener's role (the staff routes, the console). It is a
--   member of identity_service (staff sign in and step up with the identity module) and alone
--   may start a staff session (identity.add_staff_session) and elevate one.
-- - A session identity_service starts is never a staff session, and the staff functions accept
--   only an elevation of a staff session.
-- - An elevation exists only as the result of consuming a step-up challenge of the session's
--   own identity, once per challenge (identity.elevate_session, identity.elevate_staff_session);
--   identity.add_elevation, which took any session and identity, is gone.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'staff_service') THEN
        BEGIN
            CREATE ROLE staff_service NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- a migration of another database in the cluster created it meanwhile
        END;
    END IF;
END
$$;

GRANT identity_service TO staff_service;

SET LOCAL ROLE outbox_owner;

ALTER TABLE identity.sessions ADD COLUMN staff boolean NOT NULL DEFAULT false;
ALTER TABLE identity.elevations ADD COLUMN challenge_id uuid;
CREATE UNIQUE INDEX elevations_one_per_challenge ON identity.elevations (challenge_id);

DROP FUNCTION identity.add_elevation(uuid, uuid, uuid, text, timestamptz, timestamptz);

CREATE FUNCTION identity.add_staff_session(
    p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamptz,
    p_expires_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.sessions (id, identity_id, token_digest, created_at, expires_at, staff)
    VALUES (p_id, p_identity_id, p_token_digest, p_created_at, p_expires_at, true)
$$;

-- Granted to nobody: the two functions below call it with the kind of session their role
-- may elevate.
CREATE FUNCTION identity.grant_elevation(
    p_staff boolean, p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid,
    p_token_digest text, p_created_at timestamptz, p_expires_at timestamptz
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM 1 FROM identity.challenges AS c
    WHERE c.id = p_challenge_id
      AND c.purpose = 'step_up'
      AND c.identity_id = p_identity_id
      AND c.state = 'consumed'
      AND NOT EXISTS (SELECT 1 FROM identity.elevations AS e WHERE e.challenge_id = c.id)
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'an elevation needs a consumed step-up challenge of the session''s identity'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM 1 FROM identity.sessions AS s
    WHERE s.id = p_session_id
      AND s.identity_id = p_identity_id
      AND s.staff = p_staff
      AND s.revoked_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no session of this identity that this role may elevate'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO identity.elevations (
        id, session_id, identity_id, token_digest, created_at, expires_at, challenge_id
    ) VALUES (
        p_id, p_session_id, p_identity_id, p_token_digest, p_created_at, p_expires_at,
        p_challenge_id
    );
END
$$;

CREATE FUNCTION identity.elevate_session(
    p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text,
    p_created_at timestamptz, p_expires_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT identity.grant_elevation(
        false, p_id, p_session_id, p_identity_id, p_challenge_id, p_token_digest, p_created_at,
        p_expires_at
    )
$$;

CREATE FUNCTION identity.elevate_staff_session(
    p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text,
    p_created_at timestamptz, p_expires_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT identity.grant_elevation(
        true, p_id, p_session_id, p_identity_id, p_challenge_id, p_token_digest, p_created_at,
        p_expires_at
    )
$$;

REVOKE ALL ON FUNCTION
    identity.add_staff_session(uuid, uuid, text, timestamptz, timestamptz),
    identity.grant_elevation(boolean, uuid, uuid, uuid, uuid, text, timestamptz, timestamptz),
    identity.elevate_session(uuid, uuid, uuid, uuid, text, timestamptz, timestamptz),
    identity.elevate_staff_session(uuid, uuid, uuid, uuid, text, timestamptz, timestamptz)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    identity.elevate_session(uuid, uuid, uuid, uuid, text, timestamptz, timestamptz)
TO identity_service;
GRANT EXECUTE ON FUNCTION
    identity.add_staff_session(uuid, uuid, text, timestamptz, timestamptz),
    identity.elevate_staff_session(uuid, uuid, uuid, uuid, text, timestamptz, timestamptz)
TO staff_service;

-- Only an elevation of a staff session, which only staff_service can start, acts for staff.
CREATE OR REPLACE FUNCTION outbox.require_elevation(p_actor uuid, p_elevation text)
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
      AND e.expires_at > v_now
      AND s.revoked_at IS NULL
      AND s.expires_at > v_now;
    IF v_elevation IS NULL THEN
        RAISE EXCEPTION 'fresh step-up required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v_elevation;
END
$$;
