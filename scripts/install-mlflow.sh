#!/usr/bin/env bash
# A real MLflow tracking server for the tests, in its own virtual environment (its pins -- flask,
# sqlalchemy, alembic, protobuf, opentelemetry -- are not the project's business). The tests start it
# on 127.0.0.1 with a SQLite backend, and log traces and feedback with MLflow's own API from this
# environment's Python.
set -euo pipefail
VENV="${MLFLOW_VENV:-.mlflow-venv}"
VERSION="3.17.2"
if [ -x "$VENV/bin/mlflow" ] && "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('mlflow') == '$VERSION'" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "mlflow==$VERSION"
