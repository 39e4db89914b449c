-- The magic-link lookup probes one index by email whether or not the account exists, so an
-- unknown address costs the same as a known one (OX-S3). 0101's version filtered on
-- `identity_id IS NOT DISTINCT FROM NULL` for an unknown address, which no index serves.

SET LOCAL ROLE outbox_owner;

CREATE INDEX magic_links_open_by_email
    ON identity.magic_links (email, created_at) WHERE redeemed_at IS NULL;

-- CREATE OR REPLACE keeps the owner and the grants of 0101 (EXECUTE for outbox_runtime only).
CREATE OR REPLACE FUNCTION identity.find_magic_link_target(p_email text)
RETURNS TABLE (
    target_identity_id uuid, link_id uuid, link_email text, link_token_digest text,
    link_created_at timestamptz, link_expires_at timestamptz, link_redeemed_at timestamptz
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_link identity.magic_links%ROWTYPE;
BEGIN
    SELECT l.identity_id INTO target_identity_id
    FROM identity.login_identifiers AS l
    WHERE l.value = p_email AND l.verified_at IS NOT NULL AND l.channel = 'email';
    SELECT m.* INTO v_link
    FROM identity.magic_links AS m
    WHERE m.email = p_email AND m.redeemed_at IS NULL AND m.identity_id = target_identity_id
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT 1
    FOR UPDATE;
    link_id := v_link.id;
    link_email := v_link.email;
    link_token_digest := v_link.token_digest;
    link_created_at := v_link.created_at;
    link_expires_at := v_link.expires_at;
    link_redeemed_at := v_link.redeemed_at;
    RETURN NEXT;
END
$$;
REVOKE ALL ON FUNCTION identity.find_magic_link_target(text) FROM PUBLIC;
