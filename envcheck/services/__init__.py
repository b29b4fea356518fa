"""Clients of the outside services envcheck talks to, each owning its deadlines, size limits and redaction;
sources turn their answers into inventory, checks never import this package (docs/design.md)."""
