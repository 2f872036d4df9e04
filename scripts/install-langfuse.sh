#!/usr/bin/env bash
# The Langfuse Python SDK for the tests, in its own virtual environment (.langfuse-venv; it pins its own
# OpenTelemetry and protobuf). No Langfuse server can run here: the tests build what its API returns
# with the SDK's own data classes and import those files.
set -euo pipefail
exec bash "$(dirname "$0")/install-tool-venv.sh" "${LANGFUSE_VENV:-.langfuse-venv}" langfuse 5.2.0 python
