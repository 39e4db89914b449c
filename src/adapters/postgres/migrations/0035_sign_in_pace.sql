-- Failed sign-ins pace the identifier's next one (issue 28, finding 4).
--
-- The pace is identity.pace_destination's (0011): each failure of a streak is counted there
-- under the identifier's key and sets when the next sign-in may be evaluated. This function
-- reads that time without counting anything, so a sign-in asks it before the Argon2id work
-- and a paced guess is refused unevaluated.

SET LOCAL ROLE outbox_owner;

CREATE FUNCTION identity.pace_wait(p_key text, p_now timestamptz)
RETURNS interval
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p.next_send_at - p_now
    FROM identity.destination_paces AS p
    WHERE p.key = p_key AND p.next_send_at > p_now
$$;

REVOKE ALL ON FUNCTION identity.pace_wait(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.pace_wait(text, timestamptz) TO identity_service;
