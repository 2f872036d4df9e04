#!/usr/bin/env bash
# A real Phoenix server for the tests, in its own virtual environment (it pins its own FastAPI,
# SQLAlchemy, OpenTelemetry and pandas). The tests start it on 127.0.0.1 with a SQLite working
# directory, and log traces and annotations with Phoenix's own client from this environment's Python.
set -euo pipefail
VENV="${PHOENIX_VENV:-.phoenix-venv}"
VERSION="20.26.1"
if [ -x "$VENV/bin/phoenix" ] && "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('arize-phoenix') == '$VERSION'" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "arize-phoenix==$VERSION"
