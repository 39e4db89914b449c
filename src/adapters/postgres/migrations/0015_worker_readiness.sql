-- The worker has its own /readyz (on its metrics listener): ready means, among other things,
-- that every migration is applied, so outbox_worker may ask which are, as the API does. It
-- learns versions and checksums only; the ledger table itself stays ungranted.

SET LOCAL ROLE outbox_owner;

GRANT EXECUTE ON FUNCTION outbox_meta.applied_migrations() TO outbox_worker;

RESET ROLE;

GRANT USAGE ON SCHEMA outbox_meta TO outbox_worker;
