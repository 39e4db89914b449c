"""Use cases of the tenant business-event outbox (SPEC §16, §17)."""
