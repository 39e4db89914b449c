-- Roles by job (SPEC §14). Until now one role, outbox_runtime, was both what another service
-- was told to use to enqueue and what the API used to run the Identity module and the staff
-- routes, so any producer could start a session or an elevation for any account, set
-- passwords, read password hashes and call the staff functions in any staff member's name.
-- From here each job has its own NOLOGIN group role:
--
-- - outbox_producer: enqueue and cancel by subject, nothing else. What another service gets.
-- - identity_service: the API process: the Identity module's functions, the staff functions
--   below (each checks the staff member's own fresh elevation), the metrics counts and
--   readiness; it is a member of outbox_producer, since the Identity module enqueues.
-- - outbox_worker (unchanged): claim, record, expire, purge.
--
-- outbox_runtime stays, as a deprecated name for outbox_producer: a service granted it by the
-- old docs keeps enqueueing and loses everything else. An API login that was granted it must
-- now be granted identity_service; the API refuses to start, naming that GRANT, until it is.

DO $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['outbox_producer', 'identity_service'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = role_name) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', role_name);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- a migration of another database in the cluster created it meanwhile
            END;
        END IF;
    END LOOP;
END
$$;

-- Role memberships are cluster-wide; granting one that exists only raises a notice.
GRANT outbox_producer TO identity_service;
GRANT outbox_producer TO outbox_runtime;

SET LOCAL ROLE outbox_owner;

-- The producer's job ----------------------------------------------------------------------------

GRANT USAGE ON SCHEMA outbox TO outbox_producer;
GRANT EXECUTE ON FUNCTION
    outbox.enqueue_message(uuid, text, text, text, uuid, text, jsonb, text, text, timestamptz),
    outbox.cancel_by_subject(uuid, text)
TO outbox_producer;

-- outbox_runtime keeps only what it inherits from outbox_producer.
REVOKE ALL ON FUNCTION
    outbox.enqueue_message(uuid, text, text, text, uuid, text, jsonb, text, text, timestamptz),
    outbox.cancel_by_subject(uuid, text),
    outbox.backlog(uuid),
    outbox.backlog_metrics(),
    outbox.dead_letters(uuid, uuid, uuid, integer),
    outbox.message_detail(uuid, uuid),
    outbox.message_attempts(uuid, uuid),
    outbox.requeue_dead_letter(uuid, uuid, uuid, text),
    outbox.reissue_dead_letter(uuid, uuid, uuid, text, text, text),
    outbox_meta.applied_migrations()
FROM outbox_runtime;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA identity FROM outbox_runtime;
REVOKE ALL ON SCHEMA identity FROM outbox_runtime;
REVOKE ALL ON SCHEMA outbox FROM outbox_runtime;

-- The Identity module's job ---------------------------------------------------------------------

GRANT USAGE ON SCHEMA identity TO identity_service;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA identity TO identity_service;
GRANT EXECUTE ON FUNCTION outbox.backlog_metrics() TO identity_service;

-- The staff functions: the staff member's own fresh elevation, checked here ----------------------
-- The functions of 0007 take the acting staff member's id on trust. They stay, for the
-- database operator alone (outboxctl, a member of outbox_owner, who could rewrite any table
-- anyway). The API calls the staff_* functions below instead: each takes the digest of the
-- elevation token the staff member presented and refuses (42501) unless it names an unexpired
-- elevation of that very staff member, on an active session of theirs. A role that can call
-- them still cannot act for a staff member whose elevation token it does not hold.

-- Which elevation a staff action was allowed by; NULL when the database operator acted.
ALTER TABLE outbox.staff_audit ADD COLUMN elevation_id uuid;

-- The elevation's id; 42501 "staff membership required" unless p_actor is an active staff
-- member, 42501 "fresh step-up required" unless p_elevation is the SHA-256 (hex) of a token of
-- an unexpired elevation of p_actor whose session is neither revoked nor expired.
CREATE FUNCTION outbox.require_elevation(p_actor uuid, p_elevation text) RETURNS uuid
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
      AND e.expires_at > v_now
      AND s.revoked_at IS NULL
      AND s.expires_at > v_now;
    IF v_elevation IS NULL THEN
        RAISE EXCEPTION 'fresh step-up required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v_elevation;
END
$$;

CREATE FUNCTION outbox.staff_backlog(p_actor uuid, p_elevation text)
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
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT b.* FROM outbox.backlog(p_actor) AS b;
END
$$;

CREATE FUNCTION outbox.staff_dead_letters(
    p_actor uuid, p_elevation text, p_after uuid, p_before uuid, p_limit integer
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
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT d.* FROM outbox.dead_letters(p_actor, p_after, p_before, p_limit) AS d;
END
$$;

CREATE FUNCTION outbox.staff_message_detail(p_actor uuid, p_elevation text, p_message_id uuid)
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
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT d.* FROM outbox.message_detail(p_actor, p_message_id) AS d;
END
$$;

CREATE FUNCTION outbox.staff_message_attempts(p_actor uuid, p_elevation text, p_message_id uuid)
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
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT a.* FROM outbox.message_attempts(p_actor, p_message_id) AS a;
END
$$;

-- Requeue and reissue as in 0007, and the audit row they write names the elevation that
-- allowed them (a replay writes no row, so none is touched).
CREATE FUNCTION outbox.staff_requeue_dead_letter(
    p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid,
    p_idempotency_key text
)
RETURNS TABLE (outcome text, new_message_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id
    FROM outbox.requeue_dead_letter(p_actor, p_message_id, p_new_message_id, p_idempotency_key)
        AS r;
    UPDATE outbox.staff_audit AS a
    SET elevation_id = v_elevation
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.elevation_id IS NULL;
END
$$;

CREATE FUNCTION outbox.staff_reissue_dead_letter(
    p_actor uuid,
    p_elevation text,
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
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id, r.expires_at
    FROM outbox.reissue_dead_letter(
        p_actor, p_message_id, p_new_message_id, p_sealed_secret, p_code_hash,
        p_idempotency_key
    ) AS r;
    UPDATE outbox.staff_audit AS a
    SET elevation_id = v_elevation
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.elevation_id IS NULL;
END
$$;

REVOKE ALL ON FUNCTION
    outbox.require_elevation(uuid, text),
    outbox.staff_backlog(uuid, text),
    outbox.staff_dead_letters(uuid, text, uuid, uuid, integer),
    outbox.staff_message_detail(uuid, text, uuid),
    outbox.staff_message_attempts(uuid, text, uuid),
    outbox.staff_requeue_dead_letter(uuid, text, uuid, uuid, text),
    outbox.staff_reissue_dead_letter(uuid, text, uuid, uuid, text, text, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    outbox.staff_backlog(uuid, text),
    outbox.staff_dead_letters(uuid, text, uuid, uuid, integer),
    outbox.staff_message_detail(uuid, text, uuid),
    outbox.staff_message_attempts(uuid, text, uuid),
    outbox.staff_requeue_dead_letter(uuid, text, uuid, uuid, text),
    outbox.staff_reissue_dead_letter(uuid, text, uuid, uuid, text, text, text)
TO identity_service;

-- A challenge's code changes only by a resend or a reissue -----------------------------------------
-- Both send the new code to the challenge's own identifier in the same transaction, and only
-- while the challenge is open. Any other change of the hash (a code set for someone else's
-- challenge and never sent to them, or a code put back on a challenge that ended) is refused
-- at commit with 23000. The check runs at commit because a resend may write the challenge
-- before or after it enqueues the message.
CREATE FUNCTION identity.refuse_unsent_code_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF OLD.state <> 'open' OR NEW.state <> 'open' OR NOT EXISTS (
        SELECT 1 FROM outbox.messages AS m
        WHERE m.subject_id = NEW.id
          AND m.purpose = NEW.purpose
          AND m.destination = NEW.identifier
          AND m.state = 'pending'
          AND m.created_at >= pg_catalog.transaction_timestamp()
    ) THEN
        RAISE EXCEPTION 'a challenge''s code changes only by a resend or a reissue, which send it'
            USING ERRCODE = 'integrity_constraint_violation',
                  SCHEMA = 'identity', TABLE = 'challenges',
                  CONSTRAINT = 'challenges_code_changes_are_sent';
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION identity.refuse_unsent_code_change() FROM PUBLIC;

CREATE CONSTRAINT TRIGGER challenges_code_changes_are_sent
AFTER UPDATE OF code_hash ON identity.challenges
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW
WHEN (OLD.code_hash IS DISTINCT FROM NEW.code_hash)
EXECUTE FUNCTION identity.refuse_unsent_code_change();

-- A retry time is in the future ------------------------------------------------------------------
-- outbox.record_outcomes is the only way a leased message becomes pending again (retry and
-- release); a time not after the database's clock would make the message due at once,
-- skipping the backoff. The whole call is refused with 22023, like its other argument checks;
-- its leases then expire and the messages are claimed again, so nothing is lost.
CREATE FUNCTION outbox.refuse_past_retry() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'p_retry_at: a retry time must be in the future'
        USING ERRCODE = 'invalid_parameter_value';
END
$$;
REVOKE ALL ON FUNCTION outbox.refuse_past_retry() FROM PUBLIC;

CREATE TRIGGER messages_retry_in_future
BEFORE UPDATE ON outbox.messages
FOR EACH ROW
WHEN (
    OLD.state = 'leased' AND NEW.state = 'pending'
    AND NEW.available_at <= pg_catalog.statement_timestamp()
)
EXECUTE FUNCTION outbox.refuse_past_retry();

-- Readiness is the API's -------------------------------------------------------------------------

GRANT EXECUTE ON FUNCTION outbox_meta.applied_migrations() TO identity_service;

RESET ROLE;

REVOKE ALL ON SCHEMA outbox_meta FROM outbox_runtime;
GRANT USAGE ON SCHEMA outbox_meta TO identity_service;
