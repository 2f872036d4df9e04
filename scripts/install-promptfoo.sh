#!/usr/bin/env bash
# promptfoo for the tests, from npm, in its own folder (.promptfoo-tool): the tests run a real
# `promptfoo eval` with a local provider and graders on the scripted judge server, rate results through
# a real `promptfoo view` server, and export the eval, then import what promptfoo wrote.
# 0.121.x is the last series that runs on Node.js 20 (0.122 needs Node.js 22.22).
set -euo pipefail
PREFIX="${PROMPTFOO_TOOL:-.promptfoo-tool}"
VERSION=0.121.20
if [ -x "$PREFIX/node_modules/.bin/promptfoo" ] && \
   [ "$(node -p "require('./$PREFIX/node_modules/promptfoo/package.json').version" 2>/dev/null)" = "$VERSION" ]; then
  exit 0
fi
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "promptfoo@$VERSION"
