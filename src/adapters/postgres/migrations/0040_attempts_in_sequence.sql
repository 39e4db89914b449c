-- A message's attempt history is in sequence, as both attempt tables of the events outbox
-- already are (0016, 0021).
--
-- outbox.attempts accepted any attempt number: a row could claim attempt 3 of a message tried
-- once, or count attempt 1 twice. Each new row must now name the attempt after the message's
-- last counted one: a counted row spends it, an uncounted one (a release, a suspended
-- provider) names the attempt it did not spend. outbox.record_outcomes already writes exactly
-- that, under the message's live lease, in the statement that updates the message; this
-- trigger reads only the history, so it does not depend on seeing that update.

SET LOCAL ROLE outbox_owner;

CREATE FUNCTION outbox.check_attempt_sequence() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_last integer;
BEGIN
    SELECT a.attempt INTO v_last
    FROM outbox.attempts AS a
    WHERE a.message_id = NEW.message_id AND a.counted
    ORDER BY a.attempt DESC
    LIMIT 1;
    IF NEW.attempt <> COALESCE(v_last, 0) + 1 THEN
        RAISE EXCEPTION 'attempt % of message % after counted attempt %: expected attempt %',
            NEW.attempt, NEW.message_id, COALESCE(v_last, 0), COALESCE(v_last, 0) + 1
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION outbox.check_attempt_sequence() FROM PUBLIC;

CREATE TRIGGER attempts_in_sequence BEFORE INSERT ON outbox.attempts
FOR EACH ROW EXECUTE FUNCTION outbox.check_attempt_sequence();
