#!/usr/bin/env bash
# Regenerate the initial migration from grobot/core/models.py (only while no release exists).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
rm -f alembic/versions/0001_initial_schema.py
DATABASE_URL="sqlite:///$tmp/regen.db" .venv/bin/alembic revision --autogenerate --rev-id 0001 -m "initial schema" >/dev/null
mv alembic/versions/*_0001_initial_schema.py alembic/versions/0001_initial_schema.py
rm -rf "$tmp"
echo "regenerated alembic/versions/0001_initial_schema.py"
