"""Refresh the example outputs embedded in docs/dockerfiles.md (`<!-- example: PATH -->` blocks).

tests/test_dockerfile_parity.py fails when a block differs from what `envcheck PATH` prints.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "dockerfiles.md"


def refresh(text: str) -> str:
    def block(m: re.Match[str]) -> str:
        out = subprocess.run([sys.executable, "-m", "envcheck", m.group(1)], cwd=REPO, capture_output=True, text=True).stdout
        return f"<!-- example: {m.group(1)} -->\n```\n{out}```"

    return re.sub(r"<!-- example: (\S+) -->\n```\n(.*?)```", block, text, flags=re.S)


if __name__ == "__main__":
    DOC.write_text(refresh(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"refreshed {DOC.relative_to(REPO)}")
