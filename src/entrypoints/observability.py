"""Logging and metrics set-up for every process (structlog, Prometheus)."""
