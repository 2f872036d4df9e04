#!/usr/bin/env bash
# A real MLflow tracking server for the tests, in its own virtual environment (its pins -- flask,
# sqlalchemy, alembic, protobuf, opentelemetry -- are not the project's business). The tests start it
# on 127.0.0.1 with a SQLite backend, and log traces and feedback with MLflow's own API from this
# environment's Python.
set -euo pipefail
exec bash "$(dirname "$0")/install-tool-venv.sh" "${MLFLOW_VENV:-.mlflow-venv}" mlflow 3.17.2 mlflow
