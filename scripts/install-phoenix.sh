#!/usr/bin/env bash
# A real Phoenix server for the tests, in its own virtual environment (it pins its own FastAPI,
# SQLAlchemy, OpenTelemetry and pandas). The tests start it on 127.0.0.1 with a SQLite working
# directory, and log traces and annotations with Phoenix's own client from this environment's Python.
set -euo pipefail
exec bash "$(dirname "$0")/install-tool-venv.sh" "${PHOENIX_VENV:-.phoenix-venv}" arize-phoenix 20.26.1 phoenix
