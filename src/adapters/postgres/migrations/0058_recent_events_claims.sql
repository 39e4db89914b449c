-- Recent claims: an events claim that reads only what became claimable within a window.
--
-- At a steady load most events claims find little or nothing: each notification wakes every
-- idle batch, and each claims. Under a held xmin horizon each of those claims walked every
-- dead version of every former head: the next organization's probe reads its heads from the
-- oldest, and the dead ones lie there. `python -m bench.events_hold_walks` after 20,000
-- events published under a hold: an empty claim read 40,400 index entries and 40,378 heap
-- buffers (6.6 ms, 0.3 ms clean), a claim of 64 read 40,072 entries (23.9 ms, 3.0 ms clean).
-- A held ten-minute run put the events claim's p99 at 23-25x the clean run's.
--
-- `p_window_seconds` (NULL: a full claim, as before) bounds a claim below: it reads one
-- range of `heads_due`, from the window's start to now, oldest first and an equal share per
-- organization by rank, and only the vacancies noted within it. The dead versions a hold
-- keeps below the window are never read. The worker makes a full claim at least every two
-- seconds and after any claim that came back full, and recent claims of five seconds
-- between (docs/benchmarks.md): what became claimable before the window (a producer's late
-- commit, a head released unspent) waits for the next full claim.
--
-- A promoted head is claimable from its promotion: it kept its append's `available_at`,
-- which an aggregate with a backlog leaves below any window.
--
-- The claim's signature changes, so it is dropped and created again, its EXECUTE grants
-- copied as 0014 copied the codes' claim's.

SET LOCAL ROLE outbox_owner;

SELECT pg_catalog.set_config(
    'outbox_migration.events_claim_grantees',
    COALESCE(pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ','), ''),
    true
)
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
WHERE p.oid = 'events.claim_outbox_batch(text, integer, double precision)'::pg_catalog.regprocedure
  AND a.privilege_type = 'EXECUTE' AND r.rolname <> 'outbox_owner';

DROP FUNCTION events.claim_outbox_batch(text, integer, double precision);

CREATE OR REPLACE FUNCTION events.claim_outbox_batch(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision,
    p_window_seconds double precision DEFAULT NULL
) RETURNS TABLE (
    record_id uuid,
    event_id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    append_sequence bigint,
    payload jsonb,
    occurred_at timestamptz,
    appended_at timestamptz,
    attempts integer,
    lease_token uuid,
    lease_expires_at timestamptz,
    trace_context text
)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
    -- A recent claim's lower bound (p_window_seconds): only what became claimable since.
    v_since timestamptz := '-infinity';
    v_sort text;  -- the caller's enable_sort, while the recent claim's scan runs without it
    v_window_ids uuid[];
    v_window_orgs uuid[];
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0
       OR p_lease_seconds IN ('NaN', 'Infinity') THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_window_seconds IS NOT NULL AND NOT (p_window_seconds > 0 AND p_window_seconds <= 3600) THEN
        RAISE EXCEPTION 'p_window_seconds: from 0 to 3600 seconds, or NULL for a full claim'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);
    IF p_window_seconds IS NOT NULL THEN
        v_since := v_now - pg_catalog.make_interval(secs => p_window_seconds);
    END IF;

    FOR v_vacancy IN
        SELECT v.organization_id, v.aggregate_type, v.aggregate_id
        FROM events.head_vacancies AS v
        WHERE v.noted_at >= v_since
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

    -- A recent claim: the oldest heads that became claimable within the window, in claim
    -- order off `heads_due` (a range whose dead versions below the window it never reads;
    -- the order keeps the planner on it whatever the statistics say, as the fill), then an
    -- equal share per organization by rank among them, locked by primary key. More due
    -- heads than it reads come back as a full batch, and the worker's next claim is full.
    IF p_window_seconds IS NOT NULL THEN
        -- The oldest heads that became claimable within the window, in claim order off
        -- `heads_due`. After an analyze under a held horizon, which samples no live head,
        -- every partial index over heads looks empty, and the planner would as soon read
        -- another one whole and sort (`one_head_per_aggregate`, filtered: every dead head);
        -- so this statement alone runs without sorts, which it never needs: the index is in
        -- the order it asks for.
        v_sort := pg_catalog.current_setting('enable_sort');
        PERFORM pg_catalog.set_config('enable_sort', 'off', true);
        SELECT COALESCE(pg_catalog.array_agg(d.id), '{}'),
               COALESCE(pg_catalog.array_agg(d.organization_id), '{}')
        INTO v_window_ids, v_window_orgs
        FROM (
            SELECT w.id, w.organization_id
            FROM events.outbox_records AS w
            WHERE w.head AND w.state IN ('pending', 'leased')
              AND w.claimable_at >= v_since AND w.claimable_at <= v_now
            ORDER BY w.claimable_at, w.append_sequence
            LIMIT 8 * p_limit
        ) AS d;
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
            JOIN events.outbox_records AS r ON r.id = c.id
            -- Still a due head once locked; a CASE, which implies no partial index's predicate.
            WHERE CASE WHEN r.head THEN r.claimable_at <= v_now ELSE false END
            ORDER BY c.ord
            LIMIT p_limit
            FOR UPDATE OF r SKIP LOCKED
        ) AS l;
    ELSE

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

REVOKE ALL ON FUNCTION events.claim_outbox_batch(text, integer, double precision, double precision)
FROM PUBLIC;

DO $grant$
BEGIN
    IF pg_catalog.current_setting('outbox_migration.events_claim_grantees') <> '' THEN
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION events.claim_outbox_batch(text, integer, double precision, '
            'double precision) TO %s',
            pg_catalog.current_setting('outbox_migration.events_claim_grantees')
        );
    END IF;
END
$grant$;

CREATE OR REPLACE FUNCTION events.promote_head_after(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_after bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM events.dead_letters AS d
        WHERE d.resolution IS NULL AND d.organization_id = p_organization_id
          AND d.aggregate_type = p_aggregate_type AND d.aggregate_id = p_aggregate_id
    ) THEN
        RETURN false;
    END IF;
    -- Claimable from now on: a recent claim's window starts at most a few seconds ago, and
    -- a head promoted behind a backlog would lie below it until the next full claim.
    UPDATE events.outbox_records AS r
    SET head = true,
        available_at = GREATEST(r.available_at, pg_catalog.statement_timestamp())
    WHERE r.id = (
        SELECT n.id FROM events.outbox_records AS n
        WHERE n.state IN ('pending', 'leased') AND n.organization_id = p_organization_id
          AND n.aggregate_type = p_aggregate_type AND n.aggregate_id = p_aggregate_id
          AND n.append_sequence > p_after
        ORDER BY n.append_sequence
        LIMIT 1
    );
    RETURN FOUND;
END
$$;

RESET ROLE;
