"""The tenant business-event outbox: domain events, their publication, consumers."""
