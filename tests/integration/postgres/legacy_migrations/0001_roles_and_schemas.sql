-- Roles and schemas (SPEC §6).
--
-- outbox_owner owns every object; outbox_runtime (the API process) and outbox_worker (the
-- worker and sweeps) are NOLOGIN group roles that a deployment grants to its own login roles.
-- Roles are cluster-wide, so they are created only when absent: several databases of one
-- cluster (test copies, staging next to production) share them.

DO $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['outbox_owner', 'outbox_runtime', 'outbox_worker'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = role_name) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', role_name);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- a migration of another database in the cluster created it meanwhile
            END;
        END IF;
    END LOOP;
END
$$;

-- The migrator creates the objects as outbox_owner (SET ROLE in the next migrations), so it
-- must be a member; a superuser already is.
DO $$
BEGIN
    IF NOT pg_catalog.pg_has_role(current_user, 'outbox_owner', 'MEMBER') THEN
        EXECUTE pg_catalog.format('GRANT outbox_owner TO %I', current_user);
    END IF;
END
$$;

CREATE SCHEMA outbox AUTHORIZATION outbox_owner;
CREATE SCHEMA identity AUTHORIZATION outbox_owner;

-- Calling outbox.* functions needs USAGE on the schema; the tables themselves stay ungranted.
GRANT USAGE ON SCHEMA outbox TO outbox_runtime, outbox_worker;

-- Functions are executable by PUBLIC by default; every function outbox_owner creates from now
-- on starts with no grant at all, so a forgotten REVOKE cannot open one up.
ALTER DEFAULT PRIVILEGES FOR ROLE outbox_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
