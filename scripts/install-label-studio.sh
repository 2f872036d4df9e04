#!/usr/bin/env bash
# A real Label Studio server for the tests, in its own virtual environment (it pins openai<2 and
# pytz, which the project's environment cannot share). The tests start it on 127.0.0.1.
set -euo pipefail
VENV="${LABEL_STUDIO_VENV:-.labelstudio-venv}"
VERSION="1.23.2"
if [ -x "$VENV/bin/label-studio" ] && "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('label-studio') == '$VERSION'" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "label-studio==$VERSION"
