"""G4: sustained power plateau and thermal throttling."""

from __future__ import annotations
