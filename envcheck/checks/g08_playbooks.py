"""G8: official playbooks that ship broken."""

from __future__ import annotations
