"""The newest open issues of the DGX Spark playbooks repository (G8, ``preflight --online``), public API, no
token. The answer is bounded and read uncompressed (nothing inflates in memory); failures are data, never
exceptions."""

from __future__ import annotations

import json
from typing import Any

from envcheck.config import env

PLAYBOOKS_REPO = "NVIDIA/dgx-spark-playbooks"
PLAYBOOKS_URL = f"https://github.com/{PLAYBOOKS_REPO}/issues"
GITHUB_API_ENV = "ENVCHECK_GITHUB_API"  # lets tests (and GitHub Enterprise mirrors) point elsewhere
MAX_ANSWER_BYTES = 4 << 20  # a page of issues is tens of KiB


def fetch_playbook_issues(limit: int = 5, timeout: float = 5.0) -> dict[str, Any]:
    import requests
    api = (env(GITHUB_API_ENV) or "https://api.github.com").rstrip("/")
    url = f"{api}/repos/{PLAYBOOKS_REPO}/issues"

    def error(text: str) -> dict[str, Any]:
        return {"status": "error", "api": url, "url": PLAYBOOKS_URL, "error": text}

    try:
        response = requests.get(url, params={"state": "open", "sort": "created", "direction": "desc",
                                             "per_page": str(limit * 2)},
                                headers={"Accept": "application/vnd.github+json", "User-Agent": "envcheck",
                                         "Accept-Encoding": "identity"}, timeout=timeout, stream=True)
    except requests.RequestException as exc:
        return error(f"cannot reach {url}: {type(exc).__name__}")
    with response:
        if response.status_code != 200:
            return error(f"{url} answered HTTP {response.status_code}")
        encoding = response.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            return error(f"{url} answered in Content-Encoding {encoding[:40]!r}, which was not asked for")
        try:
            body = response.raw.read(MAX_ANSWER_BYTES + 1, decode_content=False)
        except Exception as exc:  # urllib3's errors on a cut or broken stream
            return error(f"{url} broke off its answer: {type(exc).__name__}")
    if len(body) > MAX_ANSWER_BYTES:
        return error(f"{url} answered more than {MAX_ANSWER_BYTES >> 20} MiB")
    try:
        items = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return error(f"{url} did not answer JSON")
    if not isinstance(items, list):
        return error(f"{url} answered an unexpected document")
    issues = [{"number": item.get("number"), "title": str(item.get("title", "")).strip(),
               "created_at": item.get("created_at"), "url": item.get("html_url")}
              for item in items if isinstance(item, dict) and "pull_request" not in item][:limit]
    return {"status": "ok", "api": url, "url": PLAYBOOKS_URL, "issues": issues}
