"""Clients of outside services (package indexes, registries, engines): deadlines, size limits and redaction in one place."""
