#!/usr/bin/env bash
# Headless Chromium and its driver (Debian's packages) for the report's browser tests.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-browser: no apt-get here; install Chromium and ChromeDriver by hand (the browser tests need them)" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
