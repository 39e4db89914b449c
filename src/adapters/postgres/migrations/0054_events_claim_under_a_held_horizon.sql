-- The events claim under a held xmin horizon (issue 31).
--
-- Every version of every former head stays in the heads indexes while a session holds the
-- horizon, below the live heads, and each scan that starts below them walks them all. After
-- 20,000 events published under a hold one claim of 64 read 180,576 entries of
-- `outbox_records_heads_due` and 20,008 of `outbox_records_heads_by_organization`
-- (`python -m bench.events_hold_walks`, docs/benchmarks.md): each organization's share was
-- planned on `heads_due` (claim order, every organization's dead heads) with the
-- organization as a filter, eight walks of all of them, and the last fill walked them
-- once more to find nothing.
--
-- - `heads_due` now carries `state IN ('pending', 'leased')` (every head is live, so its
--   entries are the same): only the fill names the state, so only the fill may read it and
--   the shares use `heads_by_organization`, walking their own organization's dead heads
--   only.
-- - The fill runs only when it can find something: the loop over organizations stopped
--   before it had seen them all, or an organization gave its whole share.
-- - The next organization and its soonest head come from one probe, not two. After the
--   loop wraps around, the probe includes the lowest id itself: an organization whose id
--   is the nil UUID (the platform's own events) was never visited by the loop, only found
--   by the fill, which may now be skipped.
-- - The lease's UPDATE finds the picked heads by primary key only.
--
-- The per-organization walks that remain grow with the hold: the design that removes them
-- (heads that are never updated in place) is in docs/benchmarks.md.

SET LOCAL ROLE outbox_owner;

DROP INDEX events.outbox_records_heads_due;
CREATE INDEX outbox_records_heads_due ON events.outbox_records (claimable_at, append_sequence)
    WHERE head AND state IN ('pending', 'leased');

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

RESET ROLE;
