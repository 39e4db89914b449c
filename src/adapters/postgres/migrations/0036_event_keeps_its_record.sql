-- An event keeps an outbox record while it exists (issue 28, read in the code).
--
-- Deleting an event's last outbox record (by the owner, a migration, a clean-up by hand) left
-- an event that nobody would ever publish, with no dead letter to say so. A constraint
-- trigger, checked at commit, refuses it; deleting the event itself (retention) cascades to
-- its records and passes, since the event is gone by then.

SET LOCAL ROLE outbox_owner;

CREATE FUNCTION events.refuse_orphaned_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM events.domain_events AS e WHERE e.id = OLD.domain_event_id)
        AND NOT EXISTS (
            SELECT 1 FROM events.outbox_records AS r WHERE r.domain_event_id = OLD.domain_event_id
        )
    THEN
        RAISE EXCEPTION 'event % would be left without an outbox record', OLD.domain_event_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION events.refuse_orphaned_event() FROM PUBLIC;

CREATE CONSTRAINT TRIGGER outbox_records_never_orphan_their_event
AFTER DELETE ON events.outbox_records
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION events.refuse_orphaned_event();
