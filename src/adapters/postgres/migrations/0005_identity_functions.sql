-- The Identity module's SQL API: SECURITY DEFINER functions owned by outbox_owner, a fixed
-- search_path and schema-qualified bodies, EXECUTE revoked from PUBLIC and granted to
-- outbox_runtime only (at the end of this file). They store and find rows; the rules (expiry,
-- wrong tries, resends, limits) live in the Python domain, which passes every time in. The
-- two *_if_known functions are the anti-enumeration path (SPEC §10): one statement whether or not
-- the account exists, enqueueing through outbox.enqueue_message in the caller's transaction.

SET LOCAL ROLE outbox_owner;

-- Accounts ------------------------------------------------------------------------------------

CREATE FUNCTION identity.find_account(p_identifier text)
RETURNS TABLE (
    identity_id uuid, value text, channel text, created_at timestamptz,
    verified_at timestamptz, password_hash text
)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.identity_id, l.value, l.channel, l.created_at, l.verified_at, p.password_hash
    FROM identity.login_identifiers AS l
    LEFT JOIN identity.password_credentials AS p ON p.identity_id = l.identity_id
    WHERE l.value = p_identifier
    FOR UPDATE OF l
$$;

CREATE FUNCTION identity.find_verified_identifiers(p_identity_id uuid)
RETURNS TABLE (value text, channel text, created_at timestamptz, verified_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.value, l.channel, l.created_at, l.verified_at
    FROM identity.login_identifiers AS l
    WHERE l.identity_id = p_identity_id AND l.verified_at IS NOT NULL
    ORDER BY l.channel <> 'email', l.created_at, l.value
$$;

CREATE FUNCTION identity.add_identity(p_id uuid, p_created_at timestamptz) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.identities (id, created_at) VALUES (p_id, p_created_at)
$$;

-- Insert or update; another identity's unverified identifier is taken over, a verified one is
-- refused with unique_violation on the pseudo-constraint login_identifiers_taken.
CREATE FUNCTION identity.save_login_identifier(
    p_value text, p_channel text, p_identity_id uuid, p_created_at timestamptz,
    p_verified_at timestamptz
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO identity.login_identifiers AS l (value, channel, identity_id, created_at, verified_at)
    VALUES (p_value, p_channel, p_identity_id, p_created_at, p_verified_at)
    ON CONFLICT (value) DO UPDATE
    SET channel = excluded.channel,
        identity_id = excluded.identity_id,
        created_at = CASE
            WHEN l.identity_id = excluded.identity_id THEN l.created_at ELSE excluded.created_at
        END,
        verified_at = excluded.verified_at
    WHERE l.identity_id = excluded.identity_id OR l.verified_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the identifier belongs to another identity'
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'login_identifiers_taken';
    END IF;
END
$$;

CREATE FUNCTION identity.save_password(
    p_identity_id uuid, p_password_hash text, p_now timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.password_credentials (identity_id, password_hash, updated_at)
    VALUES (p_identity_id, p_password_hash, p_now)
    ON CONFLICT (identity_id) DO UPDATE
    SET password_hash = excluded.password_hash, updated_at = excluded.updated_at
$$;

-- Challenges ----------------------------------------------------------------------------------

CREATE FUNCTION identity.find_challenge(
    p_purpose text, p_identity_id uuid, p_identifier text
)
RETURNS SETOF identity.challenges
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.*
    FROM identity.challenges AS c
    WHERE c.purpose = p_purpose
      AND c.state = 'open'
      AND (p_identity_id IS NULL OR c.identity_id = p_identity_id)
      AND (p_identifier IS NULL OR c.identifier = p_identifier)
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT 1
    FOR UPDATE
$$;

CREATE FUNCTION identity.save_challenge(
    p_id uuid, p_purpose text, p_identity_id uuid, p_identifier text, p_channel text,
    p_code_hash text, p_failed_attempts integer, p_state text, p_created_at timestamptz,
    p_expires_at timestamptz, p_ended_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.challenges AS c (
        id, purpose, identity_id, identifier, channel, code_hash, failed_attempts, state,
        created_at, expires_at, ended_at
    ) VALUES (
        p_id, p_purpose, p_identity_id, p_identifier, p_channel, p_code_hash, p_failed_attempts,
        p_state, p_created_at, p_expires_at, p_ended_at
    )
    ON CONFLICT (id) DO UPDATE
    SET code_hash = excluded.code_hash,
        failed_attempts = excluded.failed_attempts,
        state = excluded.state,
        expires_at = excluded.expires_at,
        ended_at = excluded.ended_at
$$;

-- Sessions and elevations ---------------------------------------------------------------------

CREATE FUNCTION identity.add_session(
    p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamptz,
    p_expires_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.sessions (id, identity_id, token_digest, created_at, expires_at)
    VALUES (p_id, p_identity_id, p_token_digest, p_created_at, p_expires_at)
$$;

CREATE FUNCTION identity.find_session(p_token_digest text)
RETURNS SETOF identity.sessions
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.* FROM identity.sessions AS s WHERE s.token_digest = p_token_digest
$$;

CREATE FUNCTION identity.revoke_sessions(p_identity_id uuid, p_now timestamptz) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH revoked AS (
        UPDATE identity.sessions AS s
        SET revoked_at = p_now
        WHERE s.identity_id = p_identity_id AND s.revoked_at IS NULL AND s.expires_at > p_now
        RETURNING s.id
    )
    SELECT pg_catalog.count(*)::integer FROM revoked
$$;

CREATE FUNCTION identity.add_elevation(
    p_id uuid, p_session_id uuid, p_identity_id uuid, p_token_digest text,
    p_created_at timestamptz, p_expires_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.elevations (
        id, session_id, identity_id, token_digest, created_at, expires_at
    ) VALUES (p_id, p_session_id, p_identity_id, p_token_digest, p_created_at, p_expires_at)
$$;

CREATE FUNCTION identity.find_elevation(p_token_digest text)
RETURNS SETOF identity.elevations
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT e.* FROM identity.elevations AS e WHERE e.token_digest = p_token_digest
$$;

-- Organizations -------------------------------------------------------------------------------

CREATE FUNCTION identity.add_organization(
    p_id uuid, p_name text, p_created_by uuid, p_created_at timestamptz, p_permissions text[]
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.organizations (id, name, created_by, created_at)
    VALUES (p_id, p_name, p_created_by, p_created_at);
    INSERT INTO identity.memberships (organization_id, identity_id, permissions, created_at)
    VALUES (p_id, p_created_by, p_permissions, p_created_at);
$$;

CREATE FUNCTION identity.find_organization(p_id uuid)
RETURNS SETOF identity.organizations
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT o.* FROM identity.organizations AS o WHERE o.id = p_id
$$;

CREATE FUNCTION identity.find_membership(p_organization_id uuid, p_identity_id uuid)
RETURNS SETOF identity.memberships
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.* FROM identity.memberships AS m
    WHERE m.organization_id = p_organization_id AND m.identity_id = p_identity_id
$$;

CREATE FUNCTION identity.save_membership(
    p_organization_id uuid, p_identity_id uuid, p_permissions text[], p_created_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.memberships (organization_id, identity_id, permissions, created_at)
    VALUES (p_organization_id, p_identity_id, p_permissions, p_created_at)
    ON CONFLICT (organization_id, identity_id) DO UPDATE SET permissions = excluded.permissions
$$;

-- Invitations ---------------------------------------------------------------------------------

CREATE FUNCTION identity.find_invitation(p_id uuid)
RETURNS SETOF identity.invitations
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.* FROM identity.invitations AS i WHERE i.id = p_id FOR UPDATE
$$;

CREATE FUNCTION identity.find_invitation_by_token(p_token_digest text)
RETURNS SETOF identity.invitations
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.* FROM identity.invitations AS i WHERE i.token_digest = p_token_digest FOR UPDATE
$$;

CREATE FUNCTION identity.find_pending_invitation(p_organization_id uuid, p_email text)
RETURNS SETOF identity.invitations
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.* FROM identity.invitations AS i
    WHERE i.organization_id = p_organization_id AND i.email = p_email AND i.state = 'pending'
    FOR UPDATE
$$;

CREATE FUNCTION identity.count_pending_invitations(p_organization_id uuid, p_now timestamptz)
RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.count(*)::integer FROM identity.invitations AS i
    WHERE i.organization_id = p_organization_id AND i.state = 'pending' AND i.expires_at > p_now
$$;

CREATE FUNCTION identity.save_invitation(
    p_id uuid, p_organization_id uuid, p_email text, p_token_digest text, p_invited_by uuid,
    p_state text, p_created_at timestamptz, p_expires_at timestamptz, p_ended_at timestamptz,
    p_accepted_by uuid
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.invitations (
        id, organization_id, email, token_digest, invited_by, state, created_at, expires_at,
        ended_at, accepted_by
    ) VALUES (
        p_id, p_organization_id, p_email, p_token_digest, p_invited_by, p_state, p_created_at,
        p_expires_at, p_ended_at, p_accepted_by
    )
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, ended_at = excluded.ended_at, accepted_by = excluded.accepted_by
$$;

-- Magic links ---------------------------------------------------------------------------------

CREATE FUNCTION identity.find_magic_link_by_token(p_token_digest text)
RETURNS SETOF identity.magic_links
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.* FROM identity.magic_links AS m WHERE m.token_digest = p_token_digest FOR UPDATE
$$;

CREATE FUNCTION identity.save_magic_link(
    p_id uuid, p_identity_id uuid, p_email text, p_token_digest text, p_created_at timestamptz,
    p_expires_at timestamptz, p_redeemed_at timestamptz
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO identity.magic_links (
        id, identity_id, email, token_digest, created_at, expires_at, redeemed_at
    ) VALUES (
        p_id, p_identity_id, p_email, p_token_digest, p_created_at, p_expires_at, p_redeemed_at
    )
    ON CONFLICT (id) DO UPDATE
    SET token_digest = excluded.token_digest,
        expires_at = excluded.expires_at,
        redeemed_at = excluded.redeemed_at
$$;

-- Anti-enumeration ------------------------------------------------------------------------------
-- Each lookup answers exactly one row whatever it finds, after the same two index probes; the
-- matching *_if_known writes and enqueues only when given an identity, and is called either way.
-- (They are PL/pgSQL on purpose: a LEFT JOIN LATERAL (… FOR UPDATE) returning a whole row
-- crashed the PostgreSQL 15 backend at CREATE FUNCTION time.)

CREATE FUNCTION identity.find_recovery_target(p_identifier text)
RETURNS TABLE (
    target_identity_id uuid, challenge_id uuid, challenge_identity_id uuid,
    challenge_identifier text, challenge_channel text, challenge_code_hash text,
    challenge_failed_attempts integer, challenge_state text, challenge_created_at timestamptz,
    challenge_expires_at timestamptz, challenge_ended_at timestamptz
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_challenge identity.challenges%ROWTYPE;
BEGIN
    SELECT l.identity_id INTO target_identity_id
    FROM identity.login_identifiers AS l
    WHERE l.value = p_identifier AND l.verified_at IS NOT NULL;
    SELECT c.* INTO v_challenge
    FROM identity.challenges AS c
    WHERE c.purpose = 'password_recovery' AND c.identifier = p_identifier AND c.state = 'open'
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT 1
    FOR UPDATE;
    challenge_id := v_challenge.id;
    challenge_identity_id := v_challenge.identity_id;
    challenge_identifier := v_challenge.identifier;
    challenge_channel := v_challenge.channel;
    challenge_code_hash := v_challenge.code_hash;
    challenge_failed_attempts := v_challenge.failed_attempts;
    challenge_state := v_challenge.state;
    challenge_created_at := v_challenge.created_at;
    challenge_expires_at := v_challenge.expires_at;
    challenge_ended_at := v_challenge.ended_at;
    RETURN NEXT;
END
$$;

CREATE FUNCTION identity.open_recovery_if_known(
    p_identity_id uuid,
    p_challenge_id uuid, p_identifier text, p_channel text, p_code_hash text,
    p_failed_attempts integer, p_created_at timestamptz, p_expires_at timestamptz,
    p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_identity_id IS NULL THEN
        RETURN;
    END IF;
    UPDATE identity.challenges AS c
    SET state = 'closed', ended_at = p_created_at
    WHERE c.purpose = 'password_recovery' AND c.identifier = p_identifier
      AND c.state = 'open' AND c.id <> p_challenge_id;
    PERFORM identity.save_challenge(
        p_challenge_id, 'password_recovery', p_identity_id, p_identifier, p_channel, p_code_hash,
        p_failed_attempts, 'open', p_created_at, p_expires_at, NULL
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
END
$$;

-- The magic link's target, found through one index by email (magic_links_open_by_email)
-- whether or not the address belongs to an account: an unknown address costs what a known
-- one costs (anti-enumeration).
CREATE FUNCTION identity.find_magic_link_target(p_email text)
RETURNS TABLE (
    target_identity_id uuid, link_id uuid, link_email text, link_token_digest text,
    link_created_at timestamptz, link_expires_at timestamptz, link_redeemed_at timestamptz
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_link identity.magic_links%ROWTYPE;
BEGIN
    SELECT l.identity_id INTO target_identity_id
    FROM identity.login_identifiers AS l
    WHERE l.value = p_email AND l.verified_at IS NOT NULL AND l.channel = 'email';
    SELECT m.* INTO v_link
    FROM identity.magic_links AS m
    WHERE m.email = p_email AND m.redeemed_at IS NULL AND m.identity_id = target_identity_id
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT 1
    FOR UPDATE;
    link_id := v_link.id;
    link_email := v_link.email;
    link_token_digest := v_link.token_digest;
    link_created_at := v_link.created_at;
    link_expires_at := v_link.expires_at;
    link_redeemed_at := v_link.redeemed_at;
    RETURN NEXT;
END
$$;

CREATE FUNCTION identity.open_magic_link_if_known(
    p_identity_id uuid,
    p_link_id uuid, p_email text, p_token_digest text, p_created_at timestamptz,
    p_expires_at timestamptz,
    p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_identity_id IS NULL THEN
        RETURN;
    END IF;
    PERFORM identity.save_magic_link(
        p_link_id, p_identity_id, p_email, p_token_digest, p_created_at, p_expires_at, NULL
    );
    PERFORM outbox.enqueue_message(
        p_id => p_message_id,
        p_purpose => 'magic_link',
        p_channel => 'email',
        p_destination => p_email,
        p_subject_id => p_link_id,
        p_template => p_template,
        p_params => p_params,
        p_locale => p_locale,
        p_sealed_secret => p_sealed_secret,
        p_expires_at => p_expires_at
    );
END
$$;

-- Rate limits ---------------------------------------------------------------------------------

-- Count one hit in the key's window and return the window's total. Each call also deletes a
-- few counters whose window ended before this one started, so the table stays small.
CREATE FUNCTION identity.hit_rate_limit(
    p_key text, p_window_start timestamptz, p_window_end timestamptz
) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM identity.rate_limit_counters AS r
    WHERE (r.key, r.window_start) IN (
        SELECT old.key, old.window_start FROM identity.rate_limit_counters AS old
        WHERE old.window_end <= p_window_start
        ORDER BY old.window_end
        LIMIT 10
        FOR UPDATE SKIP LOCKED
    );
    INSERT INTO identity.rate_limit_counters AS r (key, window_start, window_end, hits)
    VALUES (p_key, p_window_start, p_window_end, 1)
    ON CONFLICT (key, window_start) DO UPDATE SET hits = r.hits + 1
    RETURNING r.hits;
$$;

-- Readiness: the applied migrations, for /readyz (the API role cannot read the ledger itself).
-- Readiness is no concern of identity's: 0008_readiness_function.sql moves this function to
-- outbox_meta.
RESET ROLE;
GRANT USAGE ON SCHEMA outbox_meta TO outbox_owner;
GRANT SELECT ON outbox_meta.migrations TO outbox_owner;
SET LOCAL ROLE outbox_owner;

CREATE FUNCTION identity.applied_migrations()
RETURNS TABLE (version integer, checksum text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.version, m.checksum FROM outbox_meta.migrations AS m ORDER BY m.version
$$;

-- Grants: the API role calls every function above; nobody else calls any of them.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA identity FROM PUBLIC;
GRANT USAGE ON SCHEMA identity TO outbox_runtime;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA identity TO outbox_runtime;
