#!/usr/bin/env bash
# Headless Chromium for the browser tests, from Debian's packages (installed once; needs root or sudo).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "browser tests need chromium + chromium-driver (apt); not root, skipping install" >&2; exit 0
    fi
fi
echo "installing chromium and chromium-driver from Debian ..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
