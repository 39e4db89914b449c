-- The operator's SQL API (SPEC §10-§11): backlog, dead letters, message
-- inspection, requeue, reissue and staff membership. SECURITY DEFINER functions owned by
-- outbox_owner with a fixed search_path and schema-qualified bodies.
--
-- Who may call what (the grants are at the end of this file):
-- - The staff functions take the acting identity (p_actor) and raise 42501 unless it has an
--   unrevoked identity.staff_members row. outbox_runtime (the API) may execute them;
--   outbox_worker may not execute any function here.
-- - The read functions also accept p_actor NULL, meaning "the database operator": allowed only
--   when the calling role is a member of outbox_owner (the migrator's login, used by outboxctl),
--   so the API role can never read without naming a staff member.
-- - Staff membership itself (grant_staff, revoke_staff) and the e-mail look-up are granted to
--   nobody: only the database operator may make someone staff.
-- Nothing unmasked leaves these functions: destinations are masked here, envelopes and code
-- hashes are never returned.

SET LOCAL ROLE outbox_owner;

-- Masking and gating (internal) ----------------------------------------------------------------

-- The SQL twin of domain.destinations.mask: a***@example.com, +34***78, else ***.
CREATE FUNCTION outbox.mask_destination(p_value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN pg_catalog.length(p_value) <= 254 AND p_value ~ (
            '^[A-Za-z0-9.!#$%&''*+/=?^_`{|}~-]{1,64}'
            '@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
            '(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$'
        )
            THEN pg_catalog.substr(p_value, 1, 1) || '***@'
                || pg_catalog.lower(pg_catalog.split_part(p_value, '@', 2))
        WHEN p_value ~ '^\+[1-9][0-9]{6,14}$'
            THEN pg_catalog.substr(p_value, 1, 3) || '***' || pg_catalog.right(p_value, 2)
        ELSE '***'
    END
$$;

-- 42501 unless p_actor is an active (unrevoked) staff member.
CREATE FUNCTION outbox.require_staff(p_actor uuid) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_actor IS NULL OR NOT EXISTS (
        SELECT 1 FROM identity.staff_members AS s
        WHERE s.identity_id = p_actor AND s.revoked_at IS NULL
    ) THEN
        RAISE EXCEPTION 'staff membership required' USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

-- require_staff, except that no actor at all means the database operator: then the calling
-- role (SET ROLE's, else the login's; a SECURITY DEFINER call changes neither) must be a
-- member of outbox_owner. An API connection that SET ROLE outbox_runtime is refused even when
-- its login is a superuser (the embedded development server).
CREATE FUNCTION outbox.require_operator(p_actor uuid) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role text := pg_catalog.current_setting('role');
BEGIN
    IF p_actor IS NOT NULL THEN
        PERFORM outbox.require_staff(p_actor);
        RETURN;
    END IF;
    IF NOT pg_catalog.pg_has_role(
        CASE WHEN v_role = 'none' THEN SESSION_USER ELSE v_role::name END,
        'outbox_owner',
        'MEMBER'
    ) THEN
        RAISE EXCEPTION 'staff membership required' USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

-- Backlog ----------------------------------------------------------------------------------------

-- Messages per state (zero-filled) and how long the longest-waiting due pending message has
-- been due; NULL when none is due.
CREATE FUNCTION outbox.count_backlog()
RETURNS TABLE (
    pending bigint,
    leased bigint,
    published bigint,
    dead_lettered bigint,
    oldest_due_age_seconds double precision
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        pg_catalog.count(*) FILTER (WHERE m.state = 'pending'),
        pg_catalog.count(*) FILTER (WHERE m.state = 'leased'),
        pg_catalog.count(*) FILTER (WHERE m.state = 'published'),
        pg_catalog.count(*) FILTER (WHERE m.state = 'dead_lettered'),
        (
            SELECT pg_catalog.date_part(
                'epoch', pg_catalog.statement_timestamp() - pg_catalog.min(d.claimable_at)
            )
            FROM outbox.messages AS d
            WHERE d.state = 'pending' AND d.claimable_at <= pg_catalog.statement_timestamp()
        )
    FROM outbox.messages AS m
$$;

-- The backlog for a staff member (or the database operator).
CREATE FUNCTION outbox.backlog(p_actor uuid)
RETURNS TABLE (
    pending bigint,
    leased bigint,
    published bigint,
    dead_lettered bigint,
    oldest_due_age_seconds double precision
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT b.pending, b.leased, b.published, b.dead_lettered, b.oldest_due_age_seconds
    FROM outbox.count_backlog() AS b;
END
$$;

-- The same counts for the API's /metrics, which a Prometheus scrape reaches with no identity;
-- counts and an age are all it returns.
CREATE FUNCTION outbox.backlog_metrics()
RETURNS TABLE (
    pending bigint,
    leased bigint,
    published bigint,
    dead_lettered bigint,
    oldest_due_age_seconds double precision
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT b.pending, b.leased, b.published, b.dead_lettered, b.oldest_due_age_seconds
    FROM outbox.count_backlog() AS b
$$;

-- Dead letters and messages -----------------------------------------------------------------------

-- One keyset page of dead letters, newest first (dead-lettered-at, then id). p_after: the page
-- of older rows after that dead letter; p_before: the page of newer rows before it (still
-- returned newest first); neither: the newest page. The cursor must name a dead letter.
CREATE FUNCTION outbox.dead_letters(
    p_actor uuid, p_after uuid, p_before uuid, p_limit integer
)
RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    attempt_count integer,
    failure_class text,
    dead_lettered_at timestamptz,
    expires_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_cursor_at timestamptz;
    v_cursor_id uuid;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL AND p_before IS NOT NULL THEN
        RAISE EXCEPTION 'after, before: give at most one cursor'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL OR p_before IS NOT NULL THEN
        SELECT m.dead_lettered_at, m.id INTO v_cursor_at, v_cursor_id
        FROM outbox.messages AS m
        WHERE m.id = COALESCE(p_after, p_before) AND m.state = 'dead_lettered';
        IF NOT FOUND THEN
            RAISE EXCEPTION 'cursor: no dead letter has this id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    IF p_before IS NULL THEN
        RETURN QUERY
        SELECT m.id, m.purpose, m.channel, outbox.mask_destination(m.destination),
               m.attempt_count, m.dead_letter_reason, m.dead_lettered_at, m.expires_at
        FROM outbox.messages AS m
        WHERE m.state = 'dead_lettered'
          AND (v_cursor_id IS NULL OR (m.dead_lettered_at, m.id) < (v_cursor_at, v_cursor_id))
        ORDER BY m.dead_lettered_at DESC, m.id DESC
        LIMIT p_limit;
    ELSE
        RETURN QUERY
        SELECT page.*
        FROM (
            SELECT m.id, m.purpose, m.channel, outbox.mask_destination(m.destination),
                   m.attempt_count, m.dead_letter_reason, m.dead_lettered_at, m.expires_at
            FROM outbox.messages AS m
            WHERE m.state = 'dead_lettered'
              AND (m.dead_lettered_at, m.id) > (v_cursor_at, v_cursor_id)
            ORDER BY m.dead_lettered_at, m.id
            LIMIT p_limit
        ) AS page (id, purpose, channel, destination, attempt_count, failure_class,
                   dead_lettered_at, expires_at)
        ORDER BY page.dead_lettered_at DESC, page.id DESC;
    END IF;
END
$$;

-- One message, masked: no envelope, only whether one is held; reissued_as names the copy a
-- reissue or requeue of it made. No row for an unknown id.
CREATE FUNCTION outbox.message_detail(p_actor uuid, p_message_id uuid)
RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    subject_id uuid,
    template text,
    locale text,
    state text,
    attempt_count integer,
    created_at timestamptz,
    available_at timestamptz,
    expires_at timestamptz,
    lease_owner text,
    lease_expires_at timestamptz,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    dead_letter_reason text,
    has_secret boolean,
    reissued_as uuid
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT m.id, m.purpose, m.channel, outbox.mask_destination(m.destination), m.subject_id,
           m.template, m.locale, m.state, m.attempt_count, m.created_at, m.available_at,
           m.expires_at, m.lease_owner, m.lease_expires_at, m.published_at,
           m.dead_lettered_at, m.dead_letter_reason,
           EXISTS (SELECT 1 FROM outbox.envelopes AS e WHERE e.message_id = m.id),
           (
               SELECT a.new_message_id FROM outbox.staff_audit AS a
               WHERE a.message_id = m.id AND a.action IN ('reissue', 'requeue')
               ORDER BY a.id DESC
               LIMIT 1
           )
    FROM outbox.messages AS m
    WHERE m.id = p_message_id;
END
$$;

-- A message's attempt history, oldest first.
CREATE FUNCTION outbox.message_attempts(p_actor uuid, p_message_id uuid)
RETURNS TABLE (
    attempt integer,
    counted boolean,
    outcome text,
    failure_class text,
    code text,
    provider text,
    provider_message_id text,
    recorded_at timestamptz,
    retry_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT a.attempt, a.counted, a.outcome, a.failure_class, a.code, a.provider,
           a.provider_message_id, a.recorded_at, a.retry_at
    FROM outbox.attempts AS a
    WHERE a.message_id = p_message_id
    ORDER BY a.id;
END
$$;

-- Requeue and reissue -----------------------------------------------------------------------------

-- The idempotency gate of a staff request (internal). Answers no row when the request is new,
-- else one: 'in_progress' while another transaction handles the same key (its advisory lock
-- is held), 'replayed' with the first result when the key already did this very request,
-- 'key_reused' when it did another. The lock is transaction-level, so it works behind
-- PgBouncer in transaction mode and ends with the request's transaction.
CREATE FUNCTION outbox.staff_request_replay(
    p_actor uuid, p_key text, p_action text, p_message_id uuid
)
RETURNS TABLE (outcome text, new_message_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_audit outbox.staff_audit%ROWTYPE;
BEGIN
    IF p_key IS NULL OR pg_catalog.length(p_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'idempotency key: 1 to 255 characters required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
        'outbox.staff_request:' || p_actor::text || ':' || p_key, 0
    )) THEN
        RETURN QUERY SELECT 'in_progress'::text, NULL::uuid;
        RETURN;
    END IF;
    SELECT a.* INTO v_audit
    FROM outbox.staff_audit AS a
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_key;
    IF FOUND THEN
        IF v_audit.action = p_action AND v_audit.message_id = p_message_id THEN
            RETURN QUERY SELECT 'replayed'::text, v_audit.new_message_id;
        ELSE
            RETURN QUERY SELECT 'key_reused'::text, NULL::uuid;
        END IF;
    END IF;
END
$$;

-- Send a dead-lettered notification again as a new message (a copy; the dead letter stays
-- final), audited. Outcomes: requeued, replayed, in_progress, key_reused, not_found,
-- not_dead_lettered, not_requeueable (not a notification), already_requeued.
CREATE FUNCTION outbox.requeue_dead_letter(
    p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text
)
RETURNS TABLE (outcome text, new_message_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_replay record;
    v_message outbox.messages%ROWTYPE;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    SELECT r.outcome, r.new_message_id INTO v_replay
    FROM outbox.staff_request_replay(p_actor, p_idempotency_key, 'requeue', p_message_id) AS r;
    IF FOUND THEN
        RETURN QUERY SELECT v_replay.outcome::text, v_replay.new_message_id::uuid;
        RETURN;
    END IF;

    -- The row lock serializes concurrent requeues of one dead letter.
    SELECT m.* INTO v_message FROM outbox.messages AS m WHERE m.id = p_message_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::uuid;
        RETURN;
    END IF;
    IF v_message.state <> 'dead_lettered' THEN
        RETURN QUERY SELECT 'not_dead_lettered'::text, NULL::uuid;
        RETURN;
    END IF;
    IF v_message.purpose <> 'notification' THEN
        RETURN QUERY SELECT 'not_requeueable'::text, NULL::uuid;
        RETURN;
    END IF;
    IF EXISTS (
        SELECT 1 FROM outbox.staff_audit AS a
        WHERE a.message_id = p_message_id AND a.action = 'requeue'
    ) THEN
        RETURN QUERY SELECT 'already_requeued'::text, NULL::uuid;
        RETURN;
    END IF;

    PERFORM outbox.enqueue_message(
        p_id => p_new_message_id,
        p_purpose => v_message.purpose,
        p_channel => v_message.channel,
        p_destination => v_message.destination,
        p_subject_id => v_message.subject_id,
        p_template => v_message.template,
        p_params => v_message.params,
        p_locale => v_message.locale,
        p_sealed_secret => NULL,
        p_expires_at => NULL
    );
    INSERT INTO outbox.staff_audit (
        action, actor_id, message_id, new_message_id, idempotency_key, occurred_at
    ) VALUES (
        'requeue', p_actor, p_message_id, p_new_message_id, p_idempotency_key,
        pg_catalog.statement_timestamp()
    );
    RETURN QUERY SELECT 'requeued'::text, p_new_message_id;
END
$$;

-- Reissue a dead-lettered one-time code (SPEC §11): the caller mints a new code, seals it
-- for p_new_message_id and the dead letter's purpose, and hashes it with Argon2id; in this one
-- transaction the challenge's hash is replaced (the old code stops working), the new message
-- is enqueued and the audit row written. Outcomes: reissued (with the challenge's expiry),
-- replayed, in_progress, key_reused, not_found, not_dead_lettered, not_reissuable (no
-- one-time code: invitation, magic link, notification), not_a_delivery_failure (superseded,
-- expired, consumed or revoked), challenge_missing, own_challenge (the actor's own code),
-- challenge_expired, challenge_consumed, challenge_locked, newer_message_exists.
CREATE FUNCTION outbox.reissue_dead_letter(
    p_actor uuid,
    p_message_id uuid,
    p_new_message_id uuid,
    p_sealed_secret text,
    p_code_hash text,
    p_idempotency_key text
)
RETURNS TABLE (outcome text, new_message_id uuid, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_replay record;
    v_message outbox.messages%ROWTYPE;
    v_challenge identity.challenges%ROWTYPE;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    SELECT r.outcome, r.new_message_id INTO v_replay
    FROM outbox.staff_request_replay(p_actor, p_idempotency_key, 'reissue', p_message_id) AS r;
    IF FOUND THEN
        RETURN QUERY
        SELECT v_replay.outcome::text, v_replay.new_message_id::uuid, c.expires_at
        FROM (SELECT 1) AS one
        LEFT JOIN outbox.messages AS n ON n.id = v_replay.new_message_id
        LEFT JOIN identity.challenges AS c ON c.id = n.subject_id;
        RETURN;
    END IF;

    -- The row locks serialize concurrent reissues: the loser, once it gets the locks, finds
    -- the winner's message and is refused as newer_message_exists.
    SELECT m.* INTO v_message FROM outbox.messages AS m WHERE m.id = p_message_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_message.state <> 'dead_lettered' THEN
        RETURN QUERY SELECT 'not_dead_lettered'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_message.purpose NOT IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up'
    ) THEN
        RETURN QUERY SELECT 'not_reissuable'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_message.dead_letter_reason IN (
        'challenge_expired', 'invitation_expired', 'superseded_by_resend',
        'challenge_consumed', 'invitation_revoked'
    ) THEN
        RETURN QUERY SELECT 'not_a_delivery_failure'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;

    SELECT c.* INTO v_challenge
    FROM identity.challenges AS c
    WHERE c.id = v_message.subject_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'challenge_missing'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    -- Nobody reissues their own code (OX-O2): staff rights are not a way around a challenge.
    IF v_challenge.identity_id = p_actor THEN
        RETURN QUERY SELECT 'own_challenge'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_challenge.state = 'consumed' THEN
        RETURN QUERY SELECT 'challenge_consumed'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_challenge.state = 'locked' THEN
        RETURN QUERY SELECT 'challenge_locked'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_challenge.state <> 'open' OR v_challenge.expires_at <= v_now THEN
        RETURN QUERY SELECT 'challenge_expired'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;

    -- A newer message for the same purpose and destination: the person has, or is about to
    -- get, a code. Live rows are few; a published one newer than this dead letter is found
    -- through the publication-age index (the challenge is open, so the range is short).
    IF EXISTS (
        SELECT 1 FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased')
          AND m.purpose = v_message.purpose
          AND m.destination = v_message.destination
    ) OR EXISTS (
        SELECT 1 FROM outbox.messages AS m
        WHERE m.state = 'published'
          AND m.published_at > v_message.created_at
          AND m.created_at > v_message.created_at
          AND m.purpose = v_message.purpose
          AND m.destination = v_message.destination
    ) THEN
        RETURN QUERY SELECT 'newer_message_exists'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;

    UPDATE identity.challenges AS c SET code_hash = p_code_hash WHERE c.id = v_challenge.id;
    PERFORM outbox.enqueue_message(
        p_id => p_new_message_id,
        p_purpose => v_message.purpose,
        p_channel => v_message.channel,
        p_destination => v_message.destination,
        p_subject_id => v_message.subject_id,
        p_template => v_message.template,
        p_params => v_message.params,
        p_locale => v_message.locale,
        p_sealed_secret => p_sealed_secret,
        p_expires_at => v_challenge.expires_at
    );
    INSERT INTO outbox.staff_audit (
        action, actor_id, message_id, new_message_id, idempotency_key, occurred_at
    ) VALUES (
        'reissue', p_actor, p_message_id, p_new_message_id, p_idempotency_key, v_now
    );
    RETURN QUERY SELECT 'reissued'::text, p_new_message_id, v_challenge.expires_at;
END
$$;

-- Staff membership (database operator only) ------------------------------------------------------

-- The identity whose verified e-mail login is p_email, or NULL.
CREATE FUNCTION outbox.staff_identity(p_email text) RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.identity_id FROM identity.login_identifiers AS l
    WHERE l.value = p_email AND l.channel = 'email' AND l.verified_at IS NOT NULL
$$;

-- Make the identity of a verified e-mail staff, audited. Outcomes: granted, already_staff,
-- unknown_identity.
CREATE FUNCTION outbox.grant_staff(p_email text)
RETURNS TABLE (outcome text, identity_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_identity uuid := outbox.staff_identity(p_email);
BEGIN
    IF v_identity IS NULL THEN
        RETURN QUERY SELECT 'unknown_identity'::text, NULL::uuid;
        RETURN;
    END IF;
    INSERT INTO identity.staff_members AS s (identity_id, granted_at)
    VALUES (v_identity, v_now)
    ON CONFLICT (identity_id) DO UPDATE
    SET granted_at = excluded.granted_at, revoked_at = NULL
    WHERE s.revoked_at IS NOT NULL;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'already_staff'::text, v_identity;
        RETURN;
    END IF;
    INSERT INTO outbox.staff_audit (action, target_identity_id, occurred_at)
    VALUES ('staff_grant', v_identity, v_now);
    RETURN QUERY SELECT 'granted'::text, v_identity;
END
$$;

-- Revoke the staff membership of a verified e-mail's identity, audited. Outcomes: revoked,
-- not_staff, unknown_identity.
CREATE FUNCTION outbox.revoke_staff(p_email text)
RETURNS TABLE (outcome text, identity_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_identity uuid := outbox.staff_identity(p_email);
BEGIN
    IF v_identity IS NULL THEN
        RETURN QUERY SELECT 'unknown_identity'::text, NULL::uuid;
        RETURN;
    END IF;
    UPDATE identity.staff_members AS s
    SET revoked_at = v_now
    WHERE s.identity_id = v_identity AND s.revoked_at IS NULL;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_staff'::text, v_identity;
        RETURN;
    END IF;
    INSERT INTO outbox.staff_audit (action, target_identity_id, occurred_at)
    VALUES ('staff_revoke', v_identity, v_now);
    RETURN QUERY SELECT 'revoked'::text, v_identity;
END
$$;

-- Grants -------------------------------------------------------------------------------------------

REVOKE ALL ON FUNCTION
    outbox.mask_destination(text),
    outbox.require_staff(uuid),
    outbox.require_operator(uuid),
    outbox.count_backlog(),
    outbox.backlog(uuid),
    outbox.backlog_metrics(),
    outbox.dead_letters(uuid, uuid, uuid, integer),
    outbox.message_detail(uuid, uuid),
    outbox.message_attempts(uuid, uuid),
    outbox.staff_request_replay(uuid, text, text, uuid),
    outbox.requeue_dead_letter(uuid, uuid, uuid, text),
    outbox.reissue_dead_letter(uuid, uuid, uuid, text, text, text),
    outbox.staff_identity(text),
    outbox.grant_staff(text),
    outbox.revoke_staff(text)
FROM PUBLIC;

-- The API role: the staff functions and the metrics counts; never the worker.
GRANT EXECUTE ON FUNCTION
    outbox.backlog(uuid),
    outbox.backlog_metrics(),
    outbox.dead_letters(uuid, uuid, uuid, integer),
    outbox.message_detail(uuid, uuid),
    outbox.message_attempts(uuid, uuid),
    outbox.requeue_dead_letter(uuid, uuid, uuid, text),
    outbox.reissue_dead_letter(uuid, uuid, uuid, text, text, text)
TO outbox_runtime;

RESET ROLE;
