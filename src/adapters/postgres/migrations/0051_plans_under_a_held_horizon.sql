-- Plans that a held xmin horizon cannot turn into walks of a whole index (issue 31).
--
-- Under a held horizon, an autovacuum ANALYZE that samples no pending or leased message (the
-- hot table's live rows are mostly published ones, kept until retention) sets every partial
-- index over live messages to about one entry. Every such index then looks free to read
-- whole, and the planner picked one for statements it does not serve: the resend's UPDATE
-- by subject walked `messages_claim_by_priority`, a record's UPDATE by id a claim index, and
-- the envelopes' deletes the whole key index joined to the batch; each of them read every
-- dead version the hold kept (60,000 buffers a statement in docs/benchmarks.md's
-- reproduction). A 10-minute hold stalled the worker for 45 s after such an analyze.
--
-- Each claim index now carries a predicate that only the statements it serves imply:
-- `claimable_at IS NOT NULL` (implied by any condition on claimable_at) for the claim
-- order, `priority IS NOT NULL` (implied by `priority = …`) for the priority index. The
-- index contents are the same (both columns are set on every live message). The readers
-- that scanned live messages by the claim order without naming claimable_at now name it;
-- the envelopes are deleted by key (= ANY) instead of through a join (also in 0049).
-- Rebuilding the two indexes locks out writes to outbox.messages while they are built.
-- Last, the per-row triggers that look a row up by key always use the key's index.

SET LOCAL ROLE outbox_owner;

DROP INDEX outbox.messages_claim_order;
CREATE INDEX messages_claim_order ON outbox.messages (claimable_at, created_at, id)
    WHERE state IN ('pending', 'leased') AND claimable_at IS NOT NULL;

DROP INDEX outbox.messages_claim_by_priority;
CREATE INDEX messages_claim_by_priority ON outbox.messages (priority, claimable_at, created_at, id)
    WHERE state IN ('pending', 'leased') AND priority IS NOT NULL;

CREATE OR REPLACE FUNCTION outbox.health_work() RETURNS TABLE(lane text, due bigint, oldest_due_seconds double precision, last_published_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT 'security', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(m.available_at)),
           NULL::double precision
    FROM outbox.messages AS m
    WHERE m.state = 'pending' AND m.available_at <= pg_catalog.clock_timestamp()
      AND m.claimable_at <= pg_catalog.clock_timestamp()  -- the claim index (0051)
    UNION ALL
    SELECT 'events', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(r.available_at)),
           (SELECT EXTRACT(epoch FROM pg_catalog.clock_timestamp() - p.published_at)
            FROM events.domain_event_publications AS p
            ORDER BY p.publication_sequence DESC
            LIMIT 1)
    FROM events.outbox_records AS r
    WHERE r.state = 'pending' AND r.available_at <= pg_catalog.clock_timestamp()
    UNION ALL
    SELECT 'consumers', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(d.available_at)),
           NULL::double precision
    FROM events.consumer_deliveries AS d
    WHERE d.state = 'pending' AND d.available_at <= pg_catalog.clock_timestamp()
$$;

CREATE OR REPLACE FUNCTION outbox.workers(p_actor uuid) RETURNS TABLE(owner text, lane text, started_at timestamp with time zone, seen_at timestamp with time zone, stopped_at timestamp with time zone, running boolean, lag_seconds double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_security double precision;
    v_events double precision;
    v_consumers double precision;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    SELECT pg_catalog.date_part('epoch', v_now - pg_catalog.min(m.available_at))
    INTO v_security
    FROM outbox.messages AS m
    WHERE m.state = 'pending' AND m.available_at <= v_now
      AND m.claimable_at <= v_now;  -- the claim index (0051)
    SELECT pg_catalog.date_part('epoch', v_now - pg_catalog.min(r.claimable_at))
    INTO v_events
    FROM events.outbox_records AS r
    WHERE r.state IN ('pending', 'leased') AND r.claimable_at <= v_now;
    SELECT pg_catalog.max(l.oldest_undelivered_seconds) INTO v_consumers
    FROM events.consumer_lag() AS l;
    RETURN QUERY
    SELECT w.owner, w.lane, w.started_at, w.seen_at, w.stopped_at,
           w.stopped_at IS NULL AND w.seen_at > v_now - interval '30 seconds',
           CASE w.lane WHEN 'security' THEN v_security WHEN 'events' THEN v_events
                       ELSE v_consumers END
    FROM outbox.worker_lanes AS w
    ORDER BY w.stopped_at IS NULL AND w.seen_at > v_now - interval '30 seconds' DESC,
             w.owner, w.lane;
END
$$;

CREATE OR REPLACE FUNCTION outbox.reissue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text) RETURNS TABLE(outcome text, new_message_id uuid, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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
        WHERE m.state IN ('pending', 'leased') AND m.claimable_at IS NOT NULL  -- 0051
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

CREATE OR REPLACE FUNCTION outbox.record_outcomes_detailed(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[], p_details text[]) RETURNS TABLE(message_id uuid, result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_message_ids);
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_failure_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_providers) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_provider_message_ids) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempted) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_details) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'every array needs exactly one element per record'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (
            pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes),
            pg_catalog.unnest(p_retry_at)
        ) AS r (outcome, failure_class, retry_at)
        WHERE r.outcome IS NULL
           OR r.outcome NOT IN ('published', 'retry', 'release', 'dead_letter')
           OR (r.outcome = 'published') <> (r.failure_class IS NULL)
           OR (r.outcome IN ('retry', 'release')) <> (r.retry_at IS NOT NULL)
    ) THEN
        RAISE EXCEPTION 'a published outcome has no failure class, every other has one; '
            'retry and release name their retry time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY
    WITH input AS (
        SELECT r.*,
               r.outcome NOT IN ('release', 'dead_letter')
                   OR (r.outcome = 'dead_letter' AND r.attempted IS DISTINCT FROM false)
                   AS counted
        FROM ROWS FROM (
            pg_catalog.unnest(p_message_ids),
            pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts),
            pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes),
            pg_catalog.unnest(p_codes),
            pg_catalog.unnest(p_providers),
            pg_catalog.unnest(p_provider_message_ids),
            pg_catalog.unnest(p_retry_at),
            pg_catalog.unnest(p_attempted),
            pg_catalog.unnest(p_details)
        ) WITH ORDINALITY AS r (
            message_id, lease_token, attempt, outcome, failure_class,
            code, provider, provider_message_id, retry_at, attempted, detail, ord
        )
    ), recorded AS (
        UPDATE outbox.messages AS m
        SET state = CASE i.outcome
                WHEN 'published' THEN 'published'
                WHEN 'dead_letter' THEN 'dead_lettered'
                ELSE 'pending'
            END,
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            attempt_count = m.attempt_count + CASE WHEN i.counted THEN 1 ELSE 0 END,
            available_at = COALESCE(i.retry_at, m.available_at),
            published_at = CASE WHEN i.outcome = 'published' THEN v_now END,
            dead_lettered_at = CASE WHEN i.outcome = 'dead_letter' THEN v_now END,
            dead_letter_reason = CASE WHEN i.outcome = 'dead_letter' THEN i.failure_class END
        FROM input AS i
        WHERE m.id = i.message_id
          AND m.state = 'leased'
          AND m.lease_token = i.lease_token
          AND m.lease_expires_at > v_now
          AND (NOT i.counted OR i.attempt = m.attempt_count + 1)
        RETURNING i.ord, m.id, m.attempt_count, i.counted, i.outcome, i.failure_class, i.code,
                  i.provider, i.provider_message_id, i.retry_at, i.lease_token, i.detail
    ), history AS (
        INSERT INTO outbox.attempts (
            message_id, attempt, counted, outcome, failure_class, code, provider,
            provider_message_id, recorded_at, retry_at, lease_token, detail
        )
        SELECT r.id,
               CASE WHEN r.counted THEN r.attempt_count ELSE r.attempt_count + 1 END,
               r.counted, r.outcome, r.failure_class, COALESCE(r.code, ''),
               COALESCE(r.provider, ''), COALESCE(r.provider_message_id, ''), v_now, r.retry_at,
               r.lease_token, pg_catalog.left(COALESCE(r.detail, ''), 200)
        FROM recorded AS r
    ), dropped AS (
        -- Probed by key (= ANY), never joined (0051): see outbox.lease_picked.
        DELETE FROM outbox.envelopes AS e
        WHERE e.message_id = ANY (ARRAY(
            SELECT r.id FROM recorded AS r WHERE r.outcome IN ('published', 'dead_letter')
        ))
    )
    SELECT i.message_id, CASE WHEN r.ord IS NULL THEN 'lease_lost' ELSE 'recorded' END
    FROM input AS i
    LEFT JOIN recorded AS r ON r.ord = i.ord
    ORDER BY i.ord;
END
$$;

-- The attempt-sequence trigger (0040) looks up one message's counted attempts for every
-- attempt row recorded. Planned while outbox.attempts was small (a fresh database, or
-- statistics from before a drain), it read the table sequentially, and kept doing so as
-- the table grew: 0.73 ms a row after 10,000 attempts, three quarters of a record's time
-- (docs/benchmarks.md, "What limits us now"). It is a lookup by key; it always uses the
-- index.
ALTER FUNCTION outbox.check_attempt_sequence() SET enable_seqscan = off;
-- The same for every per-row trigger that looks a row up by key: a tenant event's outbox
-- record and its event, a publication's record, a consumer attempt's delivery.
ALTER FUNCTION events.require_one_outbox_record() SET enable_seqscan = off;
ALTER FUNCTION events.refuse_orphaned_event() SET enable_seqscan = off;
ALTER FUNCTION events.validate_publication_attempt_insert() SET enable_seqscan = off;
ALTER FUNCTION events.check_processing_attempt() SET enable_seqscan = off;
-- And the two statements of the events lane that look rows up by key once per event: the
-- append (its idempotency key, its aggregate's live head) and the publication's record.
ALTER FUNCTION events.append_domain_event(
    uuid, text, integer, text, text, text, jsonb, timestamptz, text
) SET enable_seqscan = off;
ALTER FUNCTION events.record_publication_attempt(
    uuid[], uuid[], integer[], text[], text[], text[], text[], timestamptz[]
) SET enable_seqscan = off;

RESET ROLE;
