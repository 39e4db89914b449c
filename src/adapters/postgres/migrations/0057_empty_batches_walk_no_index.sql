-- A claim that finds nothing, and a record that publishes nothing, walk no index.
--
-- At a steady load most claims find nothing due: each notification wakes every idle batch of
-- a lane. Such a claim ended in `UPDATE ... WHERE id = ANY ('{}')`. PostgreSQL proves that
-- an empty `= ANY` implies any predicate (an empty OR is false), so every partial index of
-- the table may serve it; after an analyze under a held horizon, which samples no live row,
-- every partial index over live rows looks empty, and the planner read one in full,
-- filtering by id: every version the hold kept. A held ten-minute run caught the codes'
-- empty claim reading 109,098 buffers of messages_live_expiry (59 ms) at the end of the hold,
-- a cost that grew with the hold. A record whose batch published nothing (the broker down)
-- had the same trap in its promotion. Each statement now runs only when its array holds
-- something. And the events record locked its batch with `state = 'leased'` among its
-- conditions, which implies the live records' partial index: under the same statistics it
-- read that index in full (602 entries after 300 records). It now goes by primary key, the
-- state re-checked in a CASE, as the codes' and the consumers' records do (0051, 0055). tests/integration/postgres/test_empty_batches_under_a_held_horizon.py and
-- test_plans_under_a_held_horizon.py check it from the transactions' own counters.

CREATE OR REPLACE FUNCTION outbox.lease_picked(
    p_ids uuid[],
    p_owner text,
    p_now timestamptz,
    p_lease_expires_at timestamptz,
    p_floor timestamptz
) RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    subject_id uuid,
    template text,
    params jsonb,
    locale text,
    sealed_secret text,
    attempt_count integer,
    expires_at timestamptz,
    lease_token uuid,
    lease_expires_at timestamptz,
    priority smallint,
    trace_context text
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    -- Nothing picked, nothing to lease (0057): an empty `= ANY` implies every partial
    -- index's predicate, so the UPDATE could read any of them in full.
    IF COALESCE(pg_catalog.cardinality(p_ids), 0) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE outbox.messages AS m
        SET state = CASE WHEN m.expires_at <= p_now THEN 'dead_lettered' ELSE 'leased' END,
            lease_owner = CASE WHEN m.expires_at <= p_now THEN NULL ELSE p_owner END,
            lease_token = CASE
                WHEN m.expires_at <= p_now THEN NULL ELSE pg_catalog.gen_random_uuid()
            END,
            lease_expires_at = CASE WHEN m.expires_at <= p_now THEN NULL ELSE p_lease_expires_at END,
            dead_lettered_at = CASE WHEN m.expires_at <= p_now THEN p_now END,
            dead_letter_reason = CASE WHEN m.expires_at <= p_now THEN
                CASE m.purpose WHEN 'invitation' THEN 'invitation_expired' ELSE 'challenge_expired' END
            END
        -- By primary key, whatever the statistics say (docs/benchmarks.md): the re-check is
        -- a CASE, which implies no partial index's predicate, so no claim index can be read
        -- in its stead (under a held horizon an analyze that sampled no live row made every
        -- claim index look empty, and the planner walked one whole).
        WHERE m.id = ANY (p_ids)
          AND CASE WHEN m.state IN ('pending', 'leased')
                   THEN m.claimable_at <= p_now AND m.claimable_at >= p_floor
                   ELSE false END
        RETURNING m.*
    ), dropped AS (
        -- Probed by key (= ANY), never joined: the planner cannot walk the whole key index.
        DELETE FROM outbox.envelopes AS e
        WHERE e.message_id = ANY (ARRAY(SELECT t.id FROM taken AS t WHERE t.state = 'dead_lettered'))
    )
    SELECT t.id, t.purpose, t.channel, t.destination, t.subject_id, t.template, t.params,
           t.locale,
           (SELECT e.sealed FROM outbox.envelopes AS e WHERE e.message_id = t.id),
           t.attempt_count, t.expires_at, t.lease_token, t.lease_expires_at,
           t.priority, t.trace_context
    FROM taken AS t
    WHERE t.state = 'leased'
    ORDER BY t.priority DESC, t.available_at, t.created_at, t.id;
END
$$;

CREATE OR REPLACE FUNCTION events.claim_outbox_batch(p_owner text, p_limit integer, p_lease_seconds double precision) RETURNS TABLE(record_id uuid, event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, append_sequence bigint, payload jsonb, occurred_at timestamp with time zone, appended_at timestamp with time zone, attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, trace_context text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
    v_vacancy record;
    v_start uuid := pg_catalog.gen_random_uuid();
    v_org uuid;
    v_next uuid;
    v_wrapped boolean := false;
    v_examined integer := 0;
    v_orgs uuid[] := '{}';
    v_share integer;
    v_ids uuid[];
    v_soonest timestamptz;
    -- With v_org, where the next probe starts: after v_org's heads ('infinity'), or at
    -- v_org's own heads once the loop wrapped to the lowest id ('-infinity'), so that an
    -- organization whose id is the nil UUID is visited too.
    v_after timestamptz := 'infinity';
    v_all_seen boolean := false;  -- the loop below visited every organization with a head
    v_share_filled boolean;  -- an organization gave its whole share: it may have more
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);

    FOR v_vacancy IN
        SELECT v.organization_id, v.aggregate_type, v.aggregate_id
        FROM events.head_vacancies AS v
        ORDER BY v.noted_at
        LIMIT 4 * p_limit
        FOR UPDATE SKIP LOCKED
    LOOP
        IF pg_catalog.pg_try_advisory_xact_lock(events.aggregate_lock_key(
            v_vacancy.organization_id, v_vacancy.aggregate_type, v_vacancy.aggregate_id
        )) THEN
            PERFORM events.promote_head(
                v_vacancy.organization_id, v_vacancy.aggregate_type, v_vacancy.aggregate_id
            );
            DELETE FROM events.head_vacancies AS v
            WHERE v.organization_id = v_vacancy.organization_id
              AND v.aggregate_type = v_vacancy.aggregate_type
              AND v.aggregate_id = v_vacancy.aggregate_id;
        END IF;
    END LOOP;

    -- The organizations with a due head, from a random one on, wrapping around once.
    v_org := v_start;
    LOOP
        EXIT WHEN pg_catalog.cardinality(v_orgs) >= p_limit OR v_examined >= 4 * p_limit;
        -- The next organization and its soonest head, in one probe of the index.
        SELECT r.organization_id, r.claimable_at INTO v_next, v_soonest
        FROM events.outbox_records AS r
        WHERE r.head AND (r.organization_id, r.claimable_at) > (v_org, v_after)
        ORDER BY r.organization_id, r.claimable_at
        LIMIT 1;
        IF v_next IS NULL THEN
            v_all_seen := v_wrapped;
            EXIT WHEN v_wrapped;
            v_wrapped := true;
            v_org := '00000000-0000-0000-0000-000000000000';  -- the lowest id, itself included
            v_after := '-infinity';
            CONTINUE;
        END IF;
        v_all_seen := v_wrapped AND v_next > v_start;
        EXIT WHEN v_all_seen;
        v_examined := v_examined + 1;
        IF v_soonest <= v_now THEN
            v_orgs := v_orgs || v_next;
        END IF;
        v_org := v_next;
        v_after := 'infinity';
    END LOOP;

    -- No due organization among those visited: the fill below still finds any due head
    -- (when the loop stopped before it had seen every organization).
    v_share := (p_limit + pg_catalog.cardinality(v_orgs) - 1)
        / GREATEST(pg_catalog.cardinality(v_orgs), 1);

    -- An equal share per organization, by rank: every organization's oldest first.
    SELECT COALESCE(pg_catalog.array_agg(s.id), '{}'),
           COALESCE(pg_catalog.bool_or(s.filled), false)
    INTO v_ids, v_share_filled
    FROM (
        SELECT t.id, t.rank >= v_share AS filled
        FROM (
            SELECT c.id, c.claimable_at, c.append_sequence,
                   pg_catalog.row_number() OVER (
                       PARTITION BY c.organization_id ORDER BY c.claimable_at, c.append_sequence
                   ) AS rank
            FROM pg_catalog.unnest(v_orgs) AS o (id)
            CROSS JOIN LATERAL (
                SELECT r.id, r.organization_id, r.claimable_at, r.append_sequence
                FROM events.outbox_records AS r
                WHERE r.head AND r.organization_id = o.id AND r.claimable_at <= v_now
                ORDER BY r.claimable_at, r.append_sequence
                LIMIT v_share
                FOR UPDATE SKIP LOCKED
            ) AS c
        ) AS t
        ORDER BY t.rank, t.claimable_at, t.append_sequence
        LIMIT p_limit
    ) AS s;

    -- The rest oldest first. SKIP LOCKED does not skip this transaction's own locks, so the
    -- shares already taken are left out by id. Only when it can find something: not when
    -- every organization was seen and none gave its whole share (the shares took every due
    -- head). `state` names the index this scan alone may read (0054).
    IF pg_catalog.cardinality(v_ids) < p_limit AND (v_share_filled OR NOT v_all_seen) THEN
        SELECT v_ids || COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
        FROM (
            SELECT r.id
            FROM events.outbox_records AS r
            WHERE r.head AND r.state IN ('pending', 'leased') AND r.claimable_at <= v_now
              AND r.id <> ALL (v_ids)
            ORDER BY r.claimable_at, r.append_sequence
            LIMIT p_limit - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS f;
    END IF;

    -- Nothing picked, nothing to lease (0057): an empty `= ANY` implies every partial
    -- index's predicate, so the UPDATE could read any of them in full.
    IF pg_catalog.cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE events.outbox_records AS r
        SET state = 'leased',
            lease_owner = p_owner,
            lease_token = pg_catalog.gen_random_uuid(),
            lease_expires_at = v_lease_expires_at
        -- By primary key, whatever the statistics say: the re-check is a CASE, which implies
        -- no partial index's predicate.
        WHERE r.id = ANY (v_ids)
          AND CASE WHEN r.head THEN r.claimable_at <= v_now ELSE false END
        RETURNING r.*
    )
    SELECT t.id, e.id, t.organization_id, e.event_type_code, e.contract_version,
           t.aggregate_type, t.aggregate_id, t.append_sequence, e.payload, e.occurred_at,
           e.appended_at, t.attempt_count, t.lease_token, t.lease_expires_at, e.trace_context
    FROM taken AS t
    JOIN events.domain_events AS e ON e.id = t.domain_event_id
    ORDER BY t.organization_id, t.append_sequence;
END
$$;

CREATE OR REPLACE FUNCTION events.claim_consumer_deliveries(p_consumer text, p_owner text, p_limit integer, p_lease_seconds double precision) RETURNS TABLE(delivery_id uuid, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, append_sequence bigint, publication_sequence bigint, replay_round integer, payload jsonb, occurred_at timestamp with time zone, trace_context text, attempt_count integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumer events.consumers%ROWTYPE;
    v_start uuid := pg_catalog.gen_random_uuid();
    v_organizations uuid[];
    v_share integer;
    v_ids uuid[];
    v_share_filled boolean;  -- an organization gave its whole share: it may have more
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its process' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_consumer := events.own_consumer(p_consumer);
    IF NOT v_consumer.active THEN
        RETURN;
    END IF;

    -- Organizations with due deliveries, by a loose index scan that reads each organization's
    -- entries down from now, where its newest due deliveries are: below them lie the dead
    -- versions a held horizon keeps, which a scan from the bottom would walk first. One probe
    -- each, from a random organization down, then from the highest down to it.
    WITH RECURSIVE from_start AS (
        (SELECT d.organization_id FROM events.consumer_deliveries AS d
         WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
           AND d.organization_id <= v_start
         ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
        UNION ALL
        SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
                  AND d.organization_id < a.organization_id
                ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
        FROM from_start AS a WHERE a.organization_id IS NOT NULL
    )
    SELECT pg_catalog.array_agg(o.organization_id) INTO v_organizations
    FROM (SELECT a.organization_id FROM from_start AS a WHERE a.organization_id IS NOT NULL
          LIMIT p_limit) AS o;
    v_organizations := COALESCE(v_organizations, '{}');
    IF pg_catalog.cardinality(v_organizations) < p_limit THEN
        WITH RECURSIVE from_top AS (
            (SELECT d.organization_id FROM events.consumer_deliveries AS d
             WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
               AND d.organization_id > v_start
             ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
            UNION ALL
            SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                    WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
                      AND d.organization_id < b.organization_id AND d.organization_id > v_start
                    ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
            FROM from_top AS b WHERE b.organization_id IS NOT NULL
        )
        SELECT v_organizations || COALESCE(pg_catalog.array_agg(o.organization_id), '{}')
        INTO v_organizations
        FROM (SELECT b.organization_id FROM from_top AS b
              WHERE b.organization_id IS NOT NULL
              LIMIT p_limit - pg_catalog.cardinality(v_organizations)) AS o;
    END IF;
    IF pg_catalog.cardinality(v_organizations) = 0 THEN
        RETURN;
    END IF;

    -- An equal share for each organization, then what is left in claim order.
    v_share := p_limit / pg_catalog.cardinality(v_organizations);
    -- (A share names no state: a claimable_at is set exactly while a delivery is pending or
    -- leased, and naming the state would let it read the claim order's index instead.)
    SELECT COALESCE(pg_catalog.array_agg(p.id), '{}'), COALESCE(pg_catalog.max(p.taken), 0) >= v_share
    INTO v_ids, v_share_filled
    FROM (
        SELECT x.id, pg_catalog.count(*) OVER (PARTITION BY o.organization_id) AS taken
        FROM pg_catalog.unnest(v_organizations) AS o (organization_id)
        CROSS JOIN LATERAL (
            SELECT d.id
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = v_consumer.id
              AND d.organization_id = o.organization_id
              AND d.claimable_at <= v_now
            ORDER BY d.claimable_at, d.delivery_sequence
            LIMIT v_share
            FOR UPDATE SKIP LOCKED
        ) AS x
    ) AS p;
    -- The fill can find something only when the probes stopped before they had seen every
    -- organization, or one gave its whole share.
    IF pg_catalog.cardinality(v_ids) < p_limit
        AND (pg_catalog.cardinality(v_organizations) >= p_limit OR v_share_filled)
    THEN
        SELECT v_ids || COALESCE(pg_catalog.array_agg(x.id), '{}') INTO v_ids
        FROM (
            SELECT d.id
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = v_consumer.id
              AND d.state IN ('pending', 'leased')
              AND d.claimable_at <= v_now
              AND d.id <> ALL (v_ids)
            ORDER BY d.claimable_at, d.delivery_sequence
            LIMIT p_limit - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS x;
    END IF;

    -- Nothing picked, nothing to lease (0057): an empty `= ANY` implies every partial
    -- index's predicate, so the UPDATE could read any of them in full.
    IF pg_catalog.cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE events.consumer_deliveries AS d
        SET state = 'leased',
            lease_owner = p_owner,
            lease_token = pg_catalog.gen_random_uuid(),
            lease_expires_at = v_now + pg_catalog.make_interval(secs => p_lease_seconds)
        -- By primary key, whatever the statistics say: the re-check is a CASE, which implies
        -- no partial index's predicate.
        WHERE d.id = ANY (v_ids)
          AND CASE WHEN d.state IN ('pending', 'leased') THEN d.claimable_at <= v_now
                   ELSE false END
        RETURNING d.*
    )
    SELECT t.id, e.id, e.organization_id, e.event_type_code, e.contract_version,
           e.aggregate_type, e.aggregate_id, e.append_sequence, t.publication_sequence,
           t.replay_round, e.payload, e.occurred_at, e.trace_context, t.attempt_count,
           v_consumer.max_attempts, t.lease_token, t.lease_expires_at
    FROM taken AS t
    JOIN events.domain_events AS e ON e.id = t.domain_event_id
    ORDER BY t.delivery_sequence;
END
$$;

CREATE OR REPLACE FUNCTION events.record_publication_attempt(p_record_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_targets text[], p_retry_at timestamp with time zone[]) RETURNS TABLE(result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_record_ids);
    v_ok bigint[];
    v_published uuid[];
    v_aggregate record;
    v_reopened boolean := false;
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_failure_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_targets) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'p_record_ids: every array needs exactly one element per record'
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
        RAISE EXCEPTION 'p_outcomes: a published outcome has no failure class, every other has '
            'one; retry and release name their retry time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (pg_catalog.unnest(p_outcomes), pg_catalog.unnest(p_failure_classes))
            AS r (outcome, failure_class)
        WHERE r.failure_class NOT IN (
                'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
                'unexpected_worker_error'
            )
           OR (r.outcome = 'dead_letter' AND r.failure_class = 'PROVIDER_SUSPENDED')
    ) THEN
        RAISE EXCEPTION 'p_failure_classes: REJECTED, THROTTLED, UNAVAILABLE, INDETERMINATE, '
            'PROVIDER_SUSPENDED (not for a dead letter) or unexpected_worker_error'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The records whose fence holds, locked; a record named twice counts once (the first).
    SELECT COALESCE(pg_catalog.array_agg(i.ord), '{}') INTO v_ok
    FROM (
        SELECT DISTINCT ON (u.record_id) u.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts)
        ) WITH ORDINALITY AS u (record_id, lease_token, attempt, ord)
        ORDER BY u.record_id, u.ord
    ) AS i
    JOIN LATERAL (
        -- By primary key, whatever the statistics say (0057): `state = 'leased'` implied the
        -- live records' partial index, which an analyze under a hold makes look empty.
        SELECT r.id FROM events.outbox_records AS r
        WHERE r.id = i.record_id
          AND CASE WHEN r.state = 'leased'
                   THEN r.lease_token = i.lease_token AND r.lease_expires_at > v_now
                        AND i.attempt = r.attempt_count + 1
                   ELSE false END
        FOR UPDATE
    ) AS locked ON true;

    -- The history first, while each record is still under its lease (the sequence trigger
    -- checks it against the record), then the records.
    INSERT INTO events.publication_attempts (
        outbox_record_id, attempt, counted, outcome, failure_class, code, target, recorded_at,
        retry_at, lease_token
    )
    SELECT i.record_id, i.attempt, i.outcome <> 'release', i.outcome, i.failure_class,
           pg_catalog.left(COALESCE(i.code, ''), 100), pg_catalog.left(COALESCE(i.target, ''), 100),
           v_now, i.retry_at, i.lease_token
    FROM ROWS FROM (
        pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_lease_tokens),
        pg_catalog.unnest(p_attempts), pg_catalog.unnest(p_outcomes),
        pg_catalog.unnest(p_failure_classes), pg_catalog.unnest(p_codes),
        pg_catalog.unnest(p_targets), pg_catalog.unnest(p_retry_at)
    ) WITH ORDINALITY AS i (
        record_id, lease_token, attempt, outcome, failure_class, code, target, retry_at, ord
    )
    WHERE i.ord = ANY (v_ok)
    ORDER BY i.ord;

    WITH input AS (
        SELECT i.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes), pg_catalog.unnest(p_retry_at)
        ) WITH ORDINALITY AS i (record_id, outcome, failure_class, retry_at, ord)
        WHERE i.ord = ANY (v_ok)
    ), recorded AS (
        UPDATE events.outbox_records AS r
        SET state = CASE i.outcome
                WHEN 'published' THEN 'published'
                WHEN 'dead_letter' THEN 'dead_lettered'
                ELSE 'pending'
            END,
            head = i.outcome IN ('retry', 'release'),
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            attempt_count = r.attempt_count + CASE WHEN i.outcome = 'release' THEN 0 ELSE 1 END,
            available_at = COALESCE(i.retry_at, r.available_at),
            published_at = CASE WHEN i.outcome = 'published' THEN v_now END,
            dead_lettered_at = CASE WHEN i.outcome = 'dead_letter' THEN v_now END,
            dead_letter_reason = CASE WHEN i.outcome = 'dead_letter' THEN i.failure_class END
        FROM input AS i
        WHERE r.id = i.record_id
        RETURNING r.id, i.outcome, i.failure_class, r.organization_id, r.aggregate_type,
                  r.aggregate_id, r.domain_event_id, r.append_sequence
    ), publications AS (
        INSERT INTO events.domain_event_publications (
            domain_event_id, outbox_record_id, organization_id, event_type_code,
            contract_version, published_at
        )
        SELECT e.id, d.id, e.organization_id, e.event_type_code, e.contract_version, v_now
        FROM recorded AS d
        JOIN events.domain_events AS e ON e.id = d.domain_event_id
        WHERE d.outcome = 'published'
        ORDER BY d.append_sequence
    ), parked AS (
        INSERT INTO events.dead_letters (
            outbox_record_id, domain_event_id, organization_id, aggregate_type, aggregate_id,
            append_sequence, reason, dead_lettered_at
        )
        SELECT d.id, d.domain_event_id, d.organization_id, d.aggregate_type, d.aggregate_id,
               d.append_sequence, d.failure_class, v_now
        FROM recorded AS d
        WHERE d.outcome = 'dead_letter'
    )
    SELECT COALESCE(pg_catalog.array_agg(d.id) FILTER (WHERE d.outcome = 'published'), '{}')
    INTO v_published
    FROM recorded AS d;

    -- Hand each published head on: now, when no producer holds the aggregate; else at the
    -- next claim. In lock-key order, though a try never waits.
    IF pg_catalog.cardinality(v_published) > 0 THEN  -- an empty = ANY: see outbox.lease_picked
        FOR v_aggregate IN
            SELECT d.organization_id, d.aggregate_type, d.aggregate_id,
                   events.aggregate_lock_key(d.organization_id, d.aggregate_type, d.aggregate_id)
                       AS lock_key,
                   pg_catalog.max(d.append_sequence) AS published_through
            FROM events.outbox_records AS d
            WHERE d.id = ANY (v_published)
            GROUP BY d.organization_id, d.aggregate_type, d.aggregate_id
            ORDER BY lock_key
        LOOP
            v_reopened := true;
            IF pg_catalog.pg_try_advisory_xact_lock(v_aggregate.lock_key) THEN
                PERFORM events.promote_head_after(
                    v_aggregate.organization_id, v_aggregate.aggregate_type, v_aggregate.aggregate_id,
                    v_aggregate.published_through
                );
            ELSE
                INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
                VALUES (
                    v_aggregate.organization_id, v_aggregate.aggregate_type, v_aggregate.aggregate_id
                )
                ON CONFLICT DO NOTHING;
            END IF;
        END LOOP;
    END IF;
    IF v_reopened THEN
        PERFORM pg_catalog.pg_notify('events_work', '');
    END IF;

    RETURN QUERY
    SELECT CASE WHEN i.ord = ANY (v_ok) THEN 'recorded' ELSE 'lease_lost' END
    FROM pg_catalog.unnest(p_record_ids) WITH ORDINALITY AS i (record_id, ord)
    ORDER BY i.ord;
END
$$;
