#!/usr/bin/env bash
# Inspect AI for the tests, in its own virtual environment (.inspect-venv): the tests run a real
# `inspect eval` with its mockllm model (the application and the graders, each grader its own
# behaviour), edit scores with its own edit_score, and import the logs Inspect wrote.
set -euo pipefail
exec bash "$(dirname "$0")/install-tool-venv.sh" "${INSPECT_VENV:-.inspect-venv}" inspect-ai 0.3.285 inspect
