"""Write the parsed copies of the shipped TOML files (envcheck/shipped.py): knowledge files and profiles."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envcheck import shipped

for package in ("envcheck.knowledge", "envcheck.profiles"):
    target = Path(str(resources.files(package).joinpath(shipped.PARSED)))
    target.write_text(shipped.parsed_file(package), encoding="utf-8")
