-- Recent consumer claims: a consumer's claim that reads only what became due within a window.
--
-- The events claim's split (0058) for the consumers' claim. Under a held xmin horizon every
-- version of every delivery a consumer completed stays in its claim indexes, below the due
-- ones; each share of the claim reads an organization's entries from the oldest, so it walked
-- them all. A ten-minute held run (`python -m bench.held_horizon`, half rate, 50 events/s,
-- one consumer) put the consumer's claim at 5.2 ms of server time per call four minutes into
-- the hold, the most expensive call of the run per call.
--
-- `p_window_seconds` (NULL: a full claim, as before) bounds a claim below: it reads one range
-- of `consumer_deliveries_claim_order`, from the window's start to now, oldest first, then an
-- equal share per organization by rank among what it read, locked by primary key. The
-- runner makes a full claim at least every two seconds and after any claim that came back
-- full, and recent claims of five seconds between (`adapters/postgres/claim_window.py`):
-- what became due before the window and was not visible to the last full claim (a
-- publication's late commit) waits for the next full claim. A delivery handed on by its
-- aggregate's previous one, a retry and an expired lease are due from that moment, so they
-- lie in the window when they become due.
--
-- A lease or a window that is NaN or infinite is refused, as the events claim's.
--
-- The claim's signature changes, so it is dropped and created again, its EXECUTE grants
-- copied as 0058 copied the events claim's.

SET LOCAL ROLE outbox_owner;

SELECT pg_catalog.set_config(
    'outbox_migration.consumer_claim_grantees',
    COALESCE(pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ','), ''),
    true
)
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
WHERE p.oid = 'events.claim_consumer_deliveries(text, text, integer, double precision)'::pg_catalog.regprocedure
  AND a.privilege_type = 'EXECUTE' AND r.rolname <> 'outbox_owner';

DROP FUNCTION events.claim_consumer_deliveries(text, text, integer, double precision);

CREATE OR REPLACE FUNCTION events.claim_consumer_deliveries(p_consumer text, p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision DEFAULT NULL) RETURNS TABLE(delivery_id uuid, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, append_sequence bigint, publication_sequence bigint, replay_round integer, payload jsonb, occurred_at timestamp with time zone, trace_context text, attempt_count integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
    -- A recent claim's lower bound (p_window_seconds): only what became claimable since.
    v_since timestamptz;
    v_sort text;  -- the caller's enable_sort, while the recent claim's scan runs without it
    v_window_ids uuid[];
    v_window_orgs uuid[];
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its process' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0
       OR p_lease_seconds IN ('NaN', 'Infinity') THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_window_seconds IS NOT NULL AND NOT (p_window_seconds > 0 AND p_window_seconds <= 3600) THEN
        RAISE EXCEPTION 'p_window_seconds: from 0 to 3600 seconds, or NULL for a full claim'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_consumer := events.own_consumer(p_consumer);
    IF NOT v_consumer.active THEN
        RETURN;
    END IF;

    -- A recent claim: the oldest deliveries that became claimable within the window, in
    -- claim order off `consumer_deliveries_claim_order` (a range whose dead versions below
    -- the window it never reads), then an equal share per organization by rank among them,
    -- locked by primary key. More due deliveries than it reads come back as a full batch,
    -- and the runner's next claim is full.
    IF p_window_seconds IS NOT NULL THEN
        v_since := v_now - pg_catalog.make_interval(secs => p_window_seconds);
        -- After an analyze under a held horizon, which samples no live delivery, every
        -- partial index over live deliveries looks empty, and the planner would as soon read
        -- another one whole and sort; so this statement alone runs without sorts, which it
        -- never needs: the index is in the order it asks for (as the events claim's, 0058).
        v_sort := pg_catalog.current_setting('enable_sort');
        PERFORM pg_catalog.set_config('enable_sort', 'off', true);
        SELECT COALESCE(pg_catalog.array_agg(w.id), '{}'),
               COALESCE(pg_catalog.array_agg(w.organization_id), '{}')
        INTO v_window_ids, v_window_orgs
        FROM (
            SELECT d.id, d.organization_id
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = v_consumer.id
              AND d.state IN ('pending', 'leased')
              AND d.claimable_at >= v_since AND d.claimable_at <= v_now
            ORDER BY d.claimable_at, d.delivery_sequence
            LIMIT 8::bigint * p_limit
        ) AS w;
        PERFORM pg_catalog.set_config('enable_sort', v_sort, true);

        -- Among them an equal share per organization, by rank, locked by primary key.
        SELECT COALESCE(pg_catalog.array_agg(l.id ORDER BY l.ord), '{}') INTO v_ids
        FROM (
            SELECT r.id, c.ord
            FROM (
                SELECT t.id, pg_catalog.row_number() OVER (ORDER BY t.rank, t.pos) AS ord
                FROM (
                    SELECT u.id, u.pos, pg_catalog.row_number() OVER (
                               PARTITION BY u.organization_id ORDER BY u.pos
                           ) AS rank
                    FROM ROWS FROM (
                        pg_catalog.unnest(v_window_ids), pg_catalog.unnest(v_window_orgs)
                    ) WITH ORDINALITY AS u (id, organization_id, pos)
                ) AS t
            ) AS c
            JOIN events.consumer_deliveries AS r ON r.id = c.id
            -- Still due once locked; a CASE, which implies no partial index's predicate.
            WHERE CASE WHEN r.state IN ('pending', 'leased') THEN r.claimable_at <= v_now
                       ELSE false END
            ORDER BY c.ord
            LIMIT p_limit
            FOR UPDATE OF r SKIP LOCKED
        ) AS l;
    ELSE
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

REVOKE ALL ON FUNCTION events.claim_consumer_deliveries(
    text, text, integer, double precision, double precision
) FROM PUBLIC;

DO $grant$
BEGIN
    IF pg_catalog.current_setting('outbox_migration.consumer_claim_grantees') <> '' THEN
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION events.claim_consumer_deliveries(text, text, integer, '
            'double precision, double precision) TO %s',
            pg_catalog.current_setting('outbox_migration.consumer_claim_grantees')
        );
    END IF;
END
$grant$;

RESET ROLE;
