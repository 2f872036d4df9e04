#!/usr/bin/env bash
# Install one pinned tool (a real server the tests start) in its own virtual environment, unless it is
# there already at that version: install-tool-venv.sh VENV DISTRIBUTION VERSION EXECUTABLE
set -euo pipefail
VENV="$1" DIST="$2" VERSION="$3" EXE="$4"
if [ -x "$VENV/bin/$EXE" ] && "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('$DIST') == '$VERSION'" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$DIST==$VERSION"
