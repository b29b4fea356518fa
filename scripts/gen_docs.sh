#!/usr/bin/env bash
# Regenerate every generated file after changing a rule, an example or a recipe; tests check each is fresh.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m envcheck rules --format markdown > docs/rules.md
python3 scripts/gen_hooks.py
python3 scripts/gen_examples_doc.py
python3 scripts/gen_dockerfile_doc_examples.py
