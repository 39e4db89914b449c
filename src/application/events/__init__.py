"""Use cases of the tenant business-event outbox."""
