#!/usr/bin/env bash
# A real Label Studio server for the tests, in its own virtual environment (it pins openai<2 and
# pytz, which the project's environment cannot share). The tests start it on 127.0.0.1.
set -euo pipefail
exec bash "$(dirname "$0")/install-tool-venv.sh" "${LABEL_STUDIO_VENV:-.labelstudio-venv}" label-studio 1.23.2 label-studio
