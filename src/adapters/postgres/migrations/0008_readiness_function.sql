-- Readiness (/readyz) asks which migrations are applied. That is a concern of every process,
-- not of the Identity module's, so the function moves from identity (0005) to outbox_meta, the
-- ledger's own schema. The privilege model is unchanged: SECURITY DEFINER, owned by
-- outbox_owner, a fixed search_path, EXECUTE for outbox_runtime (the API) only; the ledger
-- table itself stays ungranted, so the API role learns versions and checksums and nothing else.

-- outbox_meta belongs to the migrator, which creates it with the ledger. outbox_owner may
-- create objects in it only while this transaction runs.
GRANT CREATE ON SCHEMA outbox_meta TO outbox_owner;

SET LOCAL ROLE outbox_owner;

CREATE FUNCTION outbox_meta.applied_migrations()
RETURNS TABLE (version integer, checksum text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.version, m.checksum FROM outbox_meta.migrations AS m ORDER BY m.version
$$;
REVOKE ALL ON FUNCTION outbox_meta.applied_migrations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_meta.applied_migrations() TO outbox_runtime;

DROP FUNCTION identity.applied_migrations();

RESET ROLE;

REVOKE CREATE ON SCHEMA outbox_meta FROM outbox_owner;
-- Calling the function needs USAGE on its schema; the worker gets none.
GRANT USAGE ON SCHEMA outbox_meta TO outbox_runtime;
