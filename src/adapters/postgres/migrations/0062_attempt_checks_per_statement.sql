-- The events' attempt histories are checked once per statement, not once per row.
--
-- An attempt is recorded under its record's (or delivery's) live lease and token, numbered as
-- its next attempt (the seed's validate_publication_attempt_insert; 0019, 0021). A BEFORE
-- row trigger checked it: a trigger call, a SECURITY DEFINER switch and a lookup planned
-- alone for each of a batch's hundred attempts. Measured (issue 30, one connection, the
-- events' SQL-only ceiling): a record of 100 published events took 18.6 ms with it and
-- 17.2 ms with the trigger disabled. The same rule now runs once, at the end of the
-- statement that inserted the batch, over its transition table: each new row's record (or
-- delivery) looked up by primary key (the lateral subquery stays a per-row probe, whatever
-- the statistics), the first offending row named in the same error as before. Both records
-- insert their history before they update the records, so the check still sees each one
-- under the lease it names. tests/integration/postgres/test_attempt_checks_per_statement.py.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION events.validate_publication_attempt_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
AS $$
DECLARE
    v_bad record;
BEGIN
    SELECT n.attempt, r.attempt_count,
           r.state IS DISTINCT FROM 'leased' OR r.lease_token IS DISTINCT FROM n.lease_token
           OR r.lease_expires_at <= pg_catalog.statement_timestamp() AS lease_lost
    INTO v_bad
    FROM inserted AS n
    LEFT JOIN LATERAL (
        SELECT r.state, r.lease_token, r.lease_expires_at, r.attempt_count
        FROM events.outbox_records AS r
        WHERE r.id = n.outbox_record_id
        OFFSET 0
    ) AS r ON true
    WHERE r.state IS DISTINCT FROM 'leased' OR r.lease_token IS DISTINCT FROM n.lease_token
       OR r.lease_expires_at <= pg_catalog.statement_timestamp()
       OR n.attempt <> r.attempt_count + 1
    ORDER BY 3 DESC
    LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF v_bad.lease_lost THEN
        RAISE EXCEPTION 'an attempt is recorded under the record''s live lease'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RAISE EXCEPTION 'attempt % of a record with % attempts: expected %',
        v_bad.attempt, v_bad.attempt_count, v_bad.attempt_count + 1
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

DROP TRIGGER publication_attempts_in_sequence ON events.publication_attempts;
CREATE TRIGGER publication_attempts_in_sequence
    AFTER INSERT ON events.publication_attempts
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT
    EXECUTE FUNCTION events.validate_publication_attempt_insert();

CREATE OR REPLACE FUNCTION events.check_processing_attempt() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
AS $$
BEGIN
    IF EXISTS (
        SELECT 1
        FROM inserted AS n
        LEFT JOIN LATERAL (
            SELECT d.state, d.lease_token, d.lease_expires_at, d.attempt_count
            FROM events.consumer_deliveries AS d
            WHERE d.id = n.delivery_id
            OFFSET 0
        ) AS d ON true
        WHERE d.state IS DISTINCT FROM 'leased' OR d.lease_token IS DISTINCT FROM n.lease_token
           OR d.lease_expires_at <= pg_catalog.statement_timestamp()
           OR n.attempt <> d.attempt_count + 1
    ) THEN
        RAISE EXCEPTION 'a processing attempt must be its delivery''s next one, under its live lease'
            USING ERRCODE = 'integrity_constraint_violation',
                  SCHEMA = 'events', TABLE = 'consumer_processing_attempts',
                  CONSTRAINT = 'consumer_processing_attempts_in_sequence';
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER consumer_processing_attempts_in_sequence ON events.consumer_processing_attempts;
CREATE TRIGGER consumer_processing_attempts_in_sequence
    AFTER INSERT ON events.consumer_processing_attempts
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT
    EXECUTE FUNCTION events.check_processing_attempt();

RESET ROLE;
