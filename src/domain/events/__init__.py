"""The tenant business-event outbox (SPEC §16, §17): domain events, their publication, consumers."""
